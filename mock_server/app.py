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
    RepeatedKeysURIParser,
    RequestValidationMiddleware,
    invalid_request,
)

logger = logging.getLogger(__name__)

ADMIN_PREFIX = "/__admin"
CONTROL_PLANE_PREFIX = "/api/svc/v1"  # in the control plane's paths, which carry it in full
API_ROOT = "/api/"  # where the platform's API lives, whatever its version


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
        validator_map=VALIDATOR_MAP,
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
    return ConnexionResponse(
        status_code=error.status,
        mimetype="application/json",
        content_type="application/json",
        body=orjson.dumps(error.body()),
        headers=headers,
    )
