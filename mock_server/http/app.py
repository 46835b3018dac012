"""The Connexion FlaskApp of one mock: its middleware stack, error rendering and planned views.

Connexion routes every request by the specs, authenticates it, validates it in both
directions and hands it to Flask; every error on the way, Connexion's and Starlette's
included, leaves as the platform error body. Each operation's Flask view is planned at
start-up (`PlannedView`): it calls the handler with what request validation parsed, where
Connexion's view would rebuild its decorators and parse the request again on every call.
"""

from __future__ import annotations

import contextvars
import functools
import importlib.metadata
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import connexion
import flask
import orjson
from connexion.apps.flask import FlaskOperation
from connexion.datastructures import MediaTypeDict
from connexion.decorators.parameter import pythonic
from connexion.exceptions import (
    NonConformingResponse,
    OAuthProblem,
    ProblemException,
    UnsupportedMediaTypeProblem,
)
from connexion.jsonifier import Jsonifier
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.context import ContextMiddleware as ConnexionContextMiddleware
from connexion.middleware.request_validation import (
    RequestValidationMiddleware as ConnexionRequestValidationMiddleware,
)
from connexion.middleware.response_validation import (
    ResponseValidationMiddleware as ConnexionResponseValidationMiddleware,
)
from connexion.middleware.routing import RoutingMiddleware as ConnexionRoutingMiddleware
from connexion.middleware.swagger_ui import SwaggerUIAPI
from connexion.middleware.swagger_ui import SwaggerUIMiddleware as ConnexionSwaggerUIMiddleware
from connexion.options import SwaggerUIOptions
from connexion.resolver import Resolver
from connexion.spec import OpenAPISpecification
from flask.ctx import RequestContext
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send
from werkzeug.routing import Rule

from mock_server.contract import documents as contract
from mock_server.contract.routing import Router
from mock_server.contract.validation import invalid_request
from mock_server.core import errors, escape, start_cache, wire
from mock_server.core.coordinates import base_url, reached_url
from mock_server.core.jsonvalue import JsonObject
from mock_server.handlers import catalog
from mock_server.handlers.context import Answer, Call, Mock, serving
from mock_server.http import wsgi
from mock_server.http.events import EventStream
from mock_server.http.faulting import FaultInjection
from mock_server.http.middleware import PathGuard, RoutingMiddleware
from mock_server.http.scope import on_gateway, operation_id
from mock_server.http.security import security_map
from mock_server.http.validators import (
    VALIDATOR_MAP,
    RequestValidationMiddleware,
    ResponseValidationMiddleware,
    YAMLTextValidator,
)
from mock_server.http.view_page import ViewPage, secured
from mock_server.services.exchange import exchange

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment  # Flask's own type of a WSGI environ

logger = logging.getLogger(__name__)

# Fixture documents are written in YAML; the admin API takes them as such (spec/admin.yaml).
YAML_MEDIA_TYPES = ("application/yaml", "text/yaml", "application/x-yaml")
DOCS_PATH = "/docs"
ROUTED = "platform_mock.rule"  # the WSGI environ's key of the Flask rule routing chose


class _CompactJSON:
    """orjson behind the interface of the `json` module that Connexion's Jsonifier calls:
    compact output, several times faster than `json` with separators."""

    @staticmethod
    def dumps(data: Any, **_: Any) -> str:
        return orjson.dumps(data).decode()

    @staticmethod
    def loads(data: str | bytes) -> Any:
        return orjson.loads(data)


BODY_VALIDATORS = MediaTypeDict(
    {**VALIDATOR_MAP["body"], **dict.fromkeys(YAML_MEDIA_TYPES, YAMLTextValidator)}
)


class _MediaTypeChosen(logging.Filter):
    """Drops Connexion's warning, on each operation that takes several media types (the
    admin API's fixtures), that it reads the body by one of them: it reads it by the
    request's own."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("this operation accepts multiple content types")


logging.getLogger("connexion.operations.openapi3").addFilter(_MediaTypeChosen())


class _ServedSwaggerUIAPI(SwaggerUIAPI):
    """Connexion's docs of one document, whose served document names the mock's own URL in
    `servers` (`http://127.0.0.1:8080/gateway`), as the browser reached it: Connexion's
    names the base path alone, which Swagger UI shows as an empty server for the control
    plane (base path `/`)."""

    def _spec_for_prefix(self, request: Any) -> JsonObject:
        served: JsonObject = dict(super()._spec_for_prefix(request))
        base = self._base_path_for_prefix(request)
        served["servers"] = [{"url": own_url(request.scope) + base, "description": "this mock"}]
        return served


def own_url(scope: Scope) -> str:
    """The mock's URL as a request reached it (`coordinates.reached_url`): its Host header
    when it is one, else the address the connection came in on."""
    server = scope.get("server") or ("127.0.0.1", 80)
    host = Headers(scope=scope).get("host", "")
    return reached_url(scope.get("scheme", "http"), host, base_url(server[0], server[1] or 80))


class SwaggerUIMiddleware(ConnexionSwaggerUIMiddleware):
    """Connexion's API docs, whose router is run only for a path under one of the docs'
    prefixes (`{base}/docs`, `{base}/openapi.json`, `{base}/openapi.yaml`): Connexion runs
    it, and every route of it, on every request of the API. Each document served names the
    mock's own URL in its `servers` (`_ServedSwaggerUIAPI`); every answer of theirs carries
    the live view's security headers (`view_page.secured`)."""

    def __init__(self, app: ASGIApp):
        super().__init__(app)
        self.prefixes: list[str] = []

    def add_api(self, specification: Any, base_path: str | None = None, **kwargs: Any) -> None:
        # As Connexion's add_api, with the API class that names the mock's URL.
        api = _ServedSwaggerUIAPI(
            specification, base_path=base_path, default=self.default_fn, **kwargs
        )
        self.router.mount(api.base_path, app=api.router)
        base = (base_path or "").rstrip("/")
        self.prefixes += [base + DOCS_PATH, base + "/openapi.json", base + "/openapi.yaml"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and not any(map(path.startswith, self.prefixes)):
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, secured(send))


# Connexion's default stack with its four replaced middlewares; `middlewares()` adds the
# mock's own around them.
REPLACED = {
    ConnexionSwaggerUIMiddleware: SwaggerUIMiddleware,
    ConnexionRoutingMiddleware: RoutingMiddleware,
    ConnexionRequestValidationMiddleware: RequestValidationMiddleware,
    ConnexionResponseValidationMiddleware: ResponseValidationMiddleware,
}


def middlewares(mock: Mock) -> list[Any]:
    """The pipeline every request goes through, outermost first: Connexion's defaults, with
    the four of `REPLACED`, the mock's own layers at their places, and without Connexion's
    ContextMiddleware, whose context only Connexion's own views read (PlannedView does not)."""
    stack: list[Any] = []
    router = Router(mock.gateway_prefix, admin_prefix=mock.admin_prefix)

    async def checked(authorization: str | None) -> object:
        # The world's to say who a token names: read under its lock, never waiting on the loop.
        return await wsgi.when_free(mock.store.lock, lambda: mock.auth.authenticate(authorization))

    for middleware in ConnexionMiddleware.default_middlewares:
        middleware = REPLACED.get(middleware, middleware)
        if middleware is SwaggerUIMiddleware:
            stack.append(PathGuard)  # even the docs are not served a path no client means
            stack.append(ViewPage)  # the live view's page, beside the docs
        if middleware is ResponseValidationMiddleware:
            # After security and request validation (a faulty request is still a valid
            # one), and outside response validation: a fault is delivered as armed.
            stack.append(functools.partial(FaultInjection, faults=mock.faults))
            # The live view's stream, checked on its way in, never held to be checked whole.
            stack.append(functools.partial(EventStream, hub=mock.live))
        if middleware is ConnexionContextMiddleware:
            continue
        if middleware is RoutingMiddleware:
            middleware = functools.partial(RoutingMiddleware, router=router, gateway=checked)
        stack.append(middleware)
    return stack


# Connexion validates each document against the OpenAPI schema whenever an API is added:
# about 0.1 s each, three per mock. The mock's documents are package data that change only
# with a release, so each is validated the first time this exact document meets this
# Connexion (a mark in the start cache, by their hashes: `core.start_cache`), and once per
# process at most; any other document (an application of the user's, in the same process) is
# validated every time, as before.
_VALIDATED: set[str] = set()  # the marks of the mock's documents validated in this process
_OWN_DOCUMENTS: contextvars.ContextVar[bool] = contextvars.ContextVar("own", default=False)
_connexion_validate_spec = OpenAPISpecification._validate_spec.__func__


def _validate_spec_once(cls: type[OpenAPISpecification], spec: JsonObject) -> None:
    if not _OWN_DOCUMENTS.get():
        _connexion_validate_spec(cls, spec)
        return
    document = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
    mark = start_cache.key("valid-openapi", document, *_VALIDATORS)
    if mark in _VALIDATED:
        return
    if start_cache.read(mark) is None:
        _connexion_validate_spec(cls, spec)  # raises for a document that is not valid
        start_cache.write(mark, b"")
    _VALIDATED.add(mark)


# The code whose verdict a mark records: another version of either validates afresh.
_VALIDATORS = (importlib.metadata.version("connexion"), importlib.metadata.version("jsonschema"))
OpenAPISpecification._validate_spec = classmethod(_validate_spec_once)


def build_connexion_app(mock: Mock) -> connexion.FlaskApp:
    """The mock's Connexion FlaskApp: the three documents, each operation planned."""
    app = connexion.FlaskApp(
        __name__,
        middlewares=middlewares(mock),
        strict_validation=True,
        validate_responses=True,
        validator_map={**VALIDATOR_MAP, "body": BODY_VALIDATORS},
        security_map=security_map(mock.auth),
        resolver=Resolver(function_resolver=catalog.handler),
        pythonic_params=False,  # each PlannedView converts the names, once
        jsonifier=Jsonifier(_CompactJSON),
        swagger_ui_options=SwaggerUIOptions(swagger_ui_path=DOCS_PATH),
    )
    own = _OWN_DOCUMENTS.set(True)
    try:
        app.add_api(contract.spec(contract.CONTROL_PLANE_SPEC), base_path="")
        app.add_api(contract.spec(contract.GATEWAY_SPEC), base_path=mock.gateway_prefix)
        app.add_api(contract.spec(contract.ADMIN_SPEC), base_path=mock.admin_prefix)
    finally:
        _OWN_DOCUMENTS.reset(own)
    # Starlette picks the handler by the exception's class hierarchy: Connexion registers its
    # own for ProblemException, so each base is claimed here.
    rendered = functools.partial(render_error, gateway_prefix=mock.gateway_prefix)
    for condition in (Exception, HTTPException, ProblemException, errors.PlatformError):
        app.add_error_handler(condition, rendered)
    # Built now rather than on the first request (which would pay for it), so that the
    # operations' Flask views exist to be planned.
    middleware = app.middleware
    middleware.app, middleware.middleware_stack = middleware._build_middleware_stack()
    rules = plan_views(app.app, mock)
    app.app.request_context = _routed_context(app.app, rules)
    wsgi.install(
        app,
        environ_from=lambda scope: {ROUTED: _rule_of(scope, rules)},
        world_lock=mock.store.lock,
    )
    return app


def argument_name(passed: str) -> str:
    """A handler's argument for a parameter of the spec: snake_case, with what an identifier
    cannot hold stripped and `_` after a builtin (`sortBy` is `sort_by`, `id` is `id_`)."""
    name: str = pythonic(passed)
    return name


class PlannedView:
    """The Flask view of one operation: the handler called with the parameters and body
    request validation parsed, under its own argument names (`sortBy` as `sort_by`, `id` as
    `id_`), converted once here, with the request's `Call` set (`handlers.context`), and its
    result answered as compact JSON (or, for an `Answer`, as it is: the gateway's
    server-sent events). The admin API's JSON is inert as text (`escape.json_bytes`): what
    it quotes of clients, targets and fixture files reads back the same, and a CI step that
    prints it prints nothing a terminal or CI acts on."""

    def __init__(
        self, operation_id: str, handler: Callable[..., Any], mock: Mock, *, admin: bool = False
    ):
        self.operation_id = operation_id
        self.handler = handler
        self.dumps: Callable[[Any], bytes] = escape.json_bytes if admin else wire.json_bytes
        self.mock = mock
        self.accepted = frozenset(inspect.signature(handler).parameters)
        self.names: dict[str, str | None] = {}
        self.__name__ = operation_id

    def _name(self, passed: str) -> str | None:
        if passed not in self.names:
            name = argument_name(passed)
            self.names[passed] = name if name in self.accepted else None
        return self.names[passed]

    def __call__(self, **_: Any) -> flask.Response:
        request = flask.request
        scope = request.environ["asgi.scope"]
        mine = exchange(scope)
        arguments: JsonObject = {}
        for passed, value in mine.arguments.items():
            name = self._name(passed)
            if name is not None:
                arguments[name] = value
        call = Call(
            self.mock,
            mine,
            Headers(scope=scope),
            request.scheme,
            f"{request.environ['SERVER_NAME']}:{request.environ['SERVER_PORT']}",
        )
        with serving(call):
            if mine.token is None:
                result = self.handler(**arguments)
            else:  # its last use is this request, unless the handler refuses it
                with self.mock.store.tokens.in_use(mine.token):
                    result = self.handler(**arguments)
        if isinstance(result, Answer):  # a body of another media type, made whole
            mine.pace = result.pace  # delivered at its pace by the fault layer
            return flask.Response(result.body, mimetype=result.media_type, headers=result.headers)
        body, status = result if isinstance(result, tuple) else (result, 200)
        written = self.dumps(body) + b"\n"
        mine.written = (written, body)
        return flask.Response(written, status=status, mimetype="application/json")


def plan_views(flask_app: flask.Flask, mock: Mock) -> dict[str, Rule]:
    """Puts a PlannedView in place of each operation's Connexion view; returns each
    operation's Flask rule, by operationId."""
    rules: dict[str, Rule] = {}
    admin = contract.admin_operations()
    for rule in flask_app.url_map.iter_rules():
        view = flask_app.view_functions.get(rule.endpoint)
        if isinstance(view, FlaskOperation):
            operation_id = view.operation_id
            handler = catalog.handler(operation_id)
            planned = PlannedView(operation_id, handler, mock, admin=operation_id in admin)
            flask_app.view_functions[rule.endpoint] = planned
            rules[operation_id] = rule
    return rules


def _rule_of(scope: Scope, rules: dict[str, Rule]) -> Rule | None:
    return rules.get(operation_id(scope) or "")


def _routed_context(
    flask_app: flask.Flask, rules: dict[str, Rule]
) -> Callable[[WSGIEnvironment], RequestContext]:
    """Flask's `request_context`, for a request Connexion has routed already: the context
    takes the rule routing chose, and Flask neither binds its URL map to the request nor
    matches it again (a second walk of every rule, on every request)."""
    unrouted = flask_app.create_url_adapter

    def create_url_adapter(request: flask.Request | None) -> Any:
        if request is not None and request.environ.get(ROUTED) is not None:
            return None  # and so RequestContext.push() does not match the request
        return unrouted(request)

    flask_app.create_url_adapter = create_url_adapter  # type: ignore[method-assign]

    class RoutedContext(RequestContext):
        def __init__(self, environ: WSGIEnvironment):
            super().__init__(flask_app, environ)
            rule = environ.get(ROUTED)
            if rule is not None:
                self.request.url_rule, self.request.view_args = rule, {}

    return RoutedContext


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


def render_error(
    request: ConnexionRequest, exc: Exception, gateway_prefix: str = ""
) -> ConnexionResponse:
    """The platform error body of whatever was raised; on the gateway (the paths under
    `gateway_prefix`), in OpenAI's dialect too (`PlatformError.gateway_body`)."""
    error = as_platform_error(exc, request)
    exchange(request.scope).error = error
    headers: dict[str, str] = dict(getattr(exc, "headers", None) or {})
    headers.pop("Content-Type", None)
    if isinstance(error, errors.MethodNotAllowed):
        allowed = allowed_methods(request.scope)
        if allowed:
            headers["Allow"] = ", ".join(allowed)
    answer = errors.error_answer(error, gateway=on_gateway(request.scope, gateway_prefix))
    return ConnexionResponse(
        status_code=answer.status,
        mimetype="application/json",
        content_type="application/json",
        body=answer.body,
        headers=headers,
    )


def allowed_methods(scope: Scope) -> list[str]:
    """Every method the request's path takes (HEAD wherever GET is), read from the router
    the request was routed by."""
    stack = getattr(scope.get("app"), "middleware_stack", None) or ()
    routing = next((m for m in stack if isinstance(m, RoutingMiddleware)), None)
    return [] if routing is None else routing.router.methods(scope["path"])
