"""The mock server app: the three OpenAPI documents on one Connexion FlaskApp, with its state.

Connexion routes every request by the specs, authenticates it (`auth`), validates it in both
directions (`validation`) and calls the handler named by its operationId (`handlers`). Every
error on the way, Connexion's and Starlette's included, leaves as the platform error body.
Around that, the mock journals each platform request and injects faults (`middleware`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import connexion
import orjson
from connexion.datastructures import MediaTypeDict
from connexion.exceptions import (
    NonConformingResponse,
    OAuthProblem,
    ProblemException,
    UnsupportedMediaTypeProblem,
)
from connexion.jsonifier import Jsonifier
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import ConnexionMiddleware, MiddlewarePosition
from connexion.middleware.request_validation import (
    RequestValidationMiddleware as ConnexionRequestValidationMiddleware,
)
from connexion.middleware.routing import RoutingMiddleware as ConnexionRoutingMiddleware
from connexion.options import SwaggerUIOptions
from connexion.resolver import Resolver
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, Mount, Router
from starlette.types import Receive, Scope, Send

from mock_server import contract, errors, fixtures, handlers, wsgi
from mock_server.auth import Authenticator
from mock_server.faults import Faults
from mock_server.handlers.context import EXTENSION
from mock_server.journal import DEFAULT_BUDGET, Journal
from mock_server.middleware import (
    FaultInjection,
    PathGuard,
    RouteNotes,
    RoutingMiddleware,
    journaled,
    notes,
)
from mock_server.report import ContractReport
from mock_server.state import Store
from mock_server.validation import (
    VALIDATOR_MAP,
    JSONBodyValidator,
    RepeatedKeysURIParser,
    RequestValidationMiddleware,
    invalid_request,
)

logger = logging.getLogger(__name__)

ADMIN_PREFIX = "/__admin"
CONTROL_PLANE_PREFIX = "/api/svc/v1"  # in the control plane's paths, which carry it in full
API_ROOT = "/api/"  # where the platform's API lives, whatever its version
# Fixture documents are written in YAML; the admin API takes them as such (spec/admin.yaml).
YAML_MEDIA_TYPES = ("application/yaml", "text/yaml", "application/x-yaml")


@dataclass
class MockConfig:
    """How to build a mock: its world (fixtures and seed) and where the gateway lives."""

    seed: int = 0
    fixtures: list[str | Path] = field(default_factory=list)
    default_fixtures: bool = True
    gateway_prefix: str = "/gateway"
    signing_key: str | None = None
    journal_budget: int = DEFAULT_BUDGET  # bytes the request journal may hold


class PlatformMock:
    """One mock server: an ASGI app with its own store, token authority, request journal,
    fault rules and contract report. Two instances in one process share nothing."""

    def __init__(self, config: MockConfig | None = None):
        self.config = config or MockConfig()
        documents = fixtures.default_fixtures() if self.config.default_fixtures else []
        documents += [fixtures.load(path) for path in self.config.fixtures]
        self.store = Store(self.config.seed, documents, self.config.signing_key)
        self.auth = Authenticator(self.store)
        self.journal = Journal(self.config.journal_budget, operations=contract.operations())
        self.faults = Faults(contract.operations())
        self.report = ContractReport(contract.operations())
        self.report.journal_stats = self.journal.stats
        self.journal.observers.append(self.report.add)
        self.gateway_prefix = "/" + self.config.gateway_prefix.strip("/")
        self._gateway_docs = f"{self.gateway_prefix}/docs"
        self.app = build_connexion_app(self)

    def reset(self, seed: int | None = None, extra: Iterable[fixtures.Fixture] = ()) -> None:
        """Back to the initial world (with another seed, or extra fixture documents, if
        given), with an empty journal and no faults. The report keeps accumulating."""
        self.store.reset(seed, extra)
        self.journal.clear()
        self.faults.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "http" and self.is_platform_path(scope["path"]):
            return await journaled(self.app, self.journal, scope, receive, send)
        await self.app(scope, receive, send)
        return None

    def is_platform_path(self, path: str) -> bool:
        """Whether a request is one for the platform's API, to journal and report: under
        `/api/` or the gateway's prefix. The API docs, the admin API, a browser's favicon or
        a readiness probe are answered but are not a client's use of the contract."""
        if path.startswith(API_ROOT):
            return True
        return _under(path, self.gateway_prefix) and not _under(path, self._gateway_docs)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


class _CompactJSON:
    """orjson behind the interface of the `json` module that Connexion's Jsonifier calls:
    compact output, several times faster than `json` with separators."""

    @staticmethod
    def dumps(data: Any, **_: Any) -> str:
        return orjson.dumps(data).decode()

    @staticmethod
    def loads(data: str | bytes) -> Any:
        return orjson.loads(data)


class YAMLTextValidator(JSONBodyValidator):
    """A YAML request body gets the size, media type and encoding checks of a JSON one, and
    reaches its handler as text: the handler reads it with the fixture reader, whose errors
    give the line of each problem, which the data parsed here would no longer know."""

    def _decode(self, raw: bytes) -> Any:
        if not raw and self._required:
            raise _body_problem("a YAML request body is required")
        if not raw:
            return super()._decode(raw)
        try:
            return raw.decode(self._encoding)
        except (UnicodeDecodeError, LookupError):
            raise _body_problem(f"is not valid {self._encoding} text") from None

    def _validate(self, body: Any) -> None:
        pass  # the handler checks the document against the fixture schema


def _body_problem(message: str) -> errors.InvalidRequest:
    return invalid_request([{"location": "body", "field": "", "message": message}])


BODY_VALIDATORS = MediaTypeDict(
    {**VALIDATOR_MAP["body"], **dict.fromkeys(YAML_MEDIA_TYPES, YAMLTextValidator)}
)


class _MediaTypeChosen(logging.Filter):
    """Drops Connexion's warning, on each request to an operation that takes several media
    types (the admin API's fixtures), that it reads the body by one of them: it reads it by
    the request's own."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("this operation accepts multiple content types")


logging.getLogger("connexion.operations.openapi3").addFilter(_MediaTypeChosen())


def build_connexion_app(mock: PlatformMock) -> connexion.FlaskApp:
    app = connexion.FlaskApp(
        __name__,
        middlewares=[
            {
                ConnexionRequestValidationMiddleware: RequestValidationMiddleware,
                ConnexionRoutingMiddleware: RoutingMiddleware,
            }.get(m, m)
            for m in ConnexionMiddleware.default_middlewares
        ],
        strict_validation=True,
        validate_responses=True,
        validator_map={**VALIDATOR_MAP, "body": BODY_VALIDATORS},
        security_map=mock.auth.security_map(),
        resolver=Resolver(function_resolver=handlers.resolve),
        pythonic_params=False,  # handlers.resolve converts the names
        jsonifier=Jsonifier(_CompactJSON),
        uri_parser_class=RepeatedKeysURIParser,
        swagger_ui_options=SwaggerUIOptions(swagger_ui_path="/docs"),
    )
    app.add_api(contract.spec(contract.CONTROL_PLANE_SPEC), base_path="")
    app.add_api(contract.spec(contract.GATEWAY_SPEC), base_path=mock.gateway_prefix)
    app.add_api(contract.spec(contract.ADMIN_SPEC), base_path=ADMIN_PREFIX)
    app.add_middleware(PathGuard, position=MiddlewarePosition.BEFORE_SWAGGER)
    app.add_middleware(RouteNotes, position=MiddlewarePosition.BEFORE_SECURITY)
    # After security and request validation: a faulty request is still a valid one.
    app.add_middleware(
        FaultInjection, position=MiddlewarePosition.BEFORE_CONTEXT, faults=mock.faults
    )
    app.app.extensions[EXTENSION] = mock
    wsgi.install(app)  # Flask on the event loop's thread, not in a2wsgi's pool
    # Starlette picks the handler by the exception's class hierarchy: Connexion registers its
    # own for ProblemException, so each base is claimed here.
    for condition in (Exception, HTTPException, ProblemException, errors.PlatformError):
        app.add_error_handler(condition, render_error)
    return app


def as_platform_error(
    exc: Exception, request: ConnexionRequest | None = None
) -> errors.PlatformError:
    """The platform error condition for anything raised while serving a request."""
    if isinstance(exc, errors.PlatformError):
        return exc
    detail = str(getattr(exc, "detail", "") or exc)
    if isinstance(exc, UnsupportedMediaTypeProblem):
        return errors.UnsupportedMediaType(detail)
    if isinstance(exc, OAuthProblem):
        return errors.MissingToken()
    if isinstance(exc, NonConformingResponse):
        return errors.MockFailure(
            f"The mock produced a response that breaks its contract: {detail}"
        )
    status = getattr(exc, "status_code", 500)
    where = f"{request.method} {request.url.path}" if request is not None else "this request"
    if status == 404:
        return errors.RouteNotFound(f"No route for {where}")
    if status == 405:
        return errors.MethodNotAllowed(f"Method not allowed: {where}")
    if isinstance(exc, HTTPException) and 400 <= status < 500:
        return invalid_request([{"location": "request", "field": "", "message": detail}])
    logger.error("Unexpected error serving %s", where, exc_info=exc)
    return errors.MockFailure()


def render_error(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    error = as_platform_error(exc, request)
    notes(request.scope)["error"] = error
    headers: dict[str, Any] = dict(getattr(exc, "headers", None) or {})
    headers.pop("Content-Type", None)
    if isinstance(error, errors.MethodNotAllowed):
        allowed = allowed_methods(request.scope)
        if allowed:
            headers["Allow"] = ", ".join(allowed)
    return ConnexionResponse(
        status_code=error.status,
        mimetype="application/json",
        content_type="application/json",
        body=orjson.dumps(error.body()),
        headers=headers,
    )


def allowed_methods(scope: Scope) -> list[str]:
    """Every method the request's path takes (HEAD wherever GET is), read from Connexion's
    router. Starlette's 405 names only the methods of the first route that matched the path,
    and each operation is a route of its own: `/faults` would allow GET but not POST."""
    stack = getattr(scope.get("app"), "middleware_stack", None) or ()
    routing = next((m for m in stack if isinstance(m, ConnexionRoutingMiddleware)), None)
    if routing is None:
        return []
    # A scope of its own: on the request's, routing may have moved root_path to a mount.
    root = scope.get("app_root_path", scope.get("root_path", ""))
    probe: Scope = {"type": "http", "method": "", "path": scope["path"], "root_path": root}
    return sorted(_methods_of(routing.router, probe))


def _methods_of(router: Router, scope: Scope) -> set[str]:
    """The methods of the routes the path matches where Starlette would look for them: in
    the first mount that takes the path, else in the router a mount passes unmatched paths
    on to (an API mounted on the base path of another)."""
    methods: set[str] = set()
    route: BaseRoute
    for route in router.routes:
        match, child = route.matches(scope)
        if match is Match.NONE:
            continue
        if isinstance(route, Mount):
            if isinstance(route.app, Router):
                return _methods_of(route.app, {**scope, **child})
            return methods
        methods.update(getattr(route, "methods", None) or ())
    if not methods and isinstance(router.default, Router):
        return _methods_of(router.default, scope)
    return methods
