"""Every hook of mock_server/http/ into Connexion, Flask, a2wsgi and uvicorn, and of the
command's server into uvicorn, still exists and still bites.

An upgrade of one of them that renames or drops a private part fails here, in CI, rather
than quietly in users' hands (validation skipped, or a 500 at import)."""

from __future__ import annotations

import contextlib
import copy
import inspect
import json

import flask
import httpx
import pytest
import uvicorn
from a2wsgi.wsgi import build_environ
from connexion.apps.flask import FlaskApp, FlaskOperation
from connexion.exceptions import InvalidSpecification
from connexion.json_schema import Draft4RequestValidator, Draft4ResponseValidator, resolve_refs
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.context import ContextMiddleware
from connexion.middleware.request_validation import RequestValidationMiddleware
from connexion.middleware.response_validation import ResponseValidationMiddleware
from connexion.middleware.routing import RoutingMiddleware
from connexion.middleware.security import SecurityMiddleware
from connexion.middleware.swagger_ui import SwaggerUIAPI, SwaggerUIMiddleware
from connexion.security import BearerSecurityHandler
from connexion.spec import Specification
from connexion.validators import JSONRequestBodyValidator, JSONResponseBodyValidator
from flask.ctx import RequestContext

from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.contract import validation
from mock_server.handlers import catalog
from mock_server.handlers.context import Answer
from mock_server.http import app as http_app
from mock_server.http import middleware as http_middleware
from mock_server.http import validators
from mock_server.http.protocol import PlatformHttpProtocol
from mock_server.http.server import PlatformConfig, uvicorn_config
from mock_server.http.transport import MockTransport
from mock_server.http.wsgi import InlineWSGI
from tests.conftest import assert_error, until_closed

REPLACED = [
    SwaggerUIMiddleware,
    RoutingMiddleware,
    RequestValidationMiddleware,
    ResponseValidationMiddleware,
    ContextMiddleware,
]


@pytest.mark.parametrize("middleware", REPLACED, ids=lambda m: m.__name__)
def test_connexion_default_stack_still_has_the_middleware_the_mock_replaces(middleware):
    assert middleware in ConnexionMiddleware.default_middlewares


def test_the_pipeline_has_every_replacement_and_the_mock_layers_in_order():
    names = [getattr(m, "func", m).__name__ for m in http_app.middlewares(PlatformMock())]
    assert names.index("PathGuard") < names.index("SwaggerUIMiddleware")
    assert names.index("SwaggerUIMiddleware") < names.index("RoutingMiddleware")
    assert names.index("RoutingMiddleware") < names.index("SecurityMiddleware")
    assert names.index("RequestValidationMiddleware") < names.index("FaultInjection")
    assert names.index("FaultInjection") < names.index("ResponseValidationMiddleware")
    assert "ContextMiddleware" not in names


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        (ConnexionMiddleware, "_build_middleware_stack"),
        (JSONResponseBodyValidator, "_parse"),
        (JSONResponseBodyValidator, "_validate"),
        (JSONRequestBodyValidator, "_validate"),
        (RequestContext, "match_request"),
        (flask.Flask, "request_context"),
        (BearerSecurityHandler, "get_fn"),
        (SwaggerUIAPI, "_spec_for_prefix"),
        (SwaggerUIAPI, "_base_path_for_prefix"),
        (SwaggerUIMiddleware, "default_fn"),
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_hooked_method_still_exists(owner, name):
    assert callable(getattr(owner, name))


@pytest.mark.parametrize(
    "layer",
    [SecurityMiddleware, RequestValidationMiddleware, ResponseValidationMiddleware],
    ids=lambda m: m.__name__,
)
def test_each_routed_layer_finds_every_operation_where_the_router_says(layer):
    # Connexion's routed layers find the operation by the routing context's base path and
    # operationId, which the contract's router fills: a key they do not hold would let the
    # request through unchecked.
    mock = PlatformMock()
    stack = mock.app.middleware.middleware_stack
    middleware = next(m for m in stack if isinstance(m, layer))
    router = next(m for m in stack if isinstance(m, http_middleware.RoutingMiddleware)).router
    unknown = [
        (route.base_path, route.operation.operation_id)
        for route in router.routes()
        if not any(
            route.operation.operation_id in api.operations
            for api in middleware.apis.get(route.base_path, ())
        )
    ]
    assert unknown == []


@pytest.mark.parametrize("attribute", ["_operation", "_validator_map"])
def test_request_validation_operation_still_keeps(attribute):
    mock = PlatformMock()
    stack = mock.app.middleware.middleware_stack
    middleware = next(m for m in stack if isinstance(m, RequestValidationMiddleware))
    operation = next(
        api.operations["listJobRuns"]
        for apis in middleware.apis.values()
        for api in apis
        if "listJobRuns" in api.operations
    )
    assert hasattr(operation, attribute)


def test_body_validator_still_keeps_schema_required_and_encoding():
    signature = inspect.signature(JSONRequestBodyValidator.__init__)
    assert {"schema", "required", "nullable", "encoding", "strict_validation"} <= set(
        signature.parameters
    )
    body = JSONRequestBodyValidator(
        schema={"type": "object"}, required=True, encoding="utf-8", strict_validation=True
    )
    assert (body._schema, body._required, body._encoding) == ({"type": "object"}, True, "utf-8")


def test_flask_operation_still_names_its_operation():
    assert "operation_id" in inspect.signature(FlaskOperation.__init__).parameters


def test_flask_app_still_serves_through_its_middleware_app():
    mock = PlatformMock()
    assert isinstance(mock.app._middleware_app.asgi_app, InlineWSGI)
    assert isinstance(mock.app, FlaskApp)


def test_a2wsgi_still_builds_an_environ_with_the_scope():
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/x",
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 80),
        "http_version": "1.1",
        "scheme": "http",
    }
    import io

    environ = build_environ(scope, io.BytesIO(b""))  # type: ignore[arg-type]
    assert dict(environ)["asgi.scope"] is scope  # a key a2wsgi's Environ type does not list


def test_every_operation_view_is_planned():
    mock = PlatformMock()
    views = mock.app.app.view_functions
    planned = {v.operation_id for v in views.values() if isinstance(v, http_app.PlannedView)}
    assert not [v for v in views.values() if isinstance(v, FlaskOperation)]
    assert "listJobRuns" in planned and "adminReset" in planned


# -- what the mock does as Connexion does, without importing it outside the fence ---------


@pytest.mark.parametrize("document", [*contract.PLATFORM_SPECS, contract.ADMIN_SPEC])
def test_the_contracts_references_resolve_as_connexion_resolves_them(document):
    assert contract.resolved(contract.spec(document)) == resolve_refs(contract.spec(document))


# Instances each dialect has a rule for: `nullable`, `x-nullable`, an enum, `writeOnly`.
DIALECT_CASES = [
    ({"type": "string", "nullable": True}, None),
    ({"type": "string"}, None),
    ({"type": "string", "x-nullable": True}, None),
    ({"type": "string", "enum": ["a"], "nullable": True}, None),
    ({"type": "string", "enum": ["a"]}, "b"),
    ({"type": "object", "properties": {"p": {"type": "string", "writeOnly": True}}}, {"p": "x"}),
    ({"type": "object", "properties": {"p": {"x-writeOnly": True}}}, {"p": "x"}),
    ({"type": "object", "required": ["p"]}, {}),
    ({"type": "integer", "format": "int32"}, 1.5),
]


@pytest.mark.parametrize(
    ("ours", "connexions"),
    [
        (validation.RequestValidator, Draft4RequestValidator),
        (validation.ResponseValidator, Draft4ResponseValidator),
    ],
    ids=["request", "response"],
)
@pytest.mark.parametrize(("schema", "instance"), DIALECT_CASES, ids=str)
def test_each_schema_dialect_judges_as_connexions(ours, connexions, schema, instance):
    found = sorted(e.message for e in ours(schema).iter_errors(instance))
    assert found == sorted(e.message for e in connexions(schema).iter_errors(instance))


# -- and they bite, over real HTTP --------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
def test_a_request_the_spec_rejects_is_refused_with_every_violation(api):
    response = api.get(
        "/jobs/app-0000000000000001/runs", params={"limit": "abc", "sortBy": "nonsense"}
    )
    body = assert_error(response, 400, 40001)
    assert {d["field"] for d in body["details"]} == {"limit", "sortBy"}


def test_a_response_that_breaks_the_contract_is_the_mocks_own_500(api, store):
    alice = store.identity.subject_named("user", "alice@acme.example")
    store.identity.add_grant(alice, "r" * 256, store.identity.tenant)
    response = api.get(
        "/role-bindings/generate-manifest", params={"subjectType": "user", "subjectId": alice.id}
    )
    assert_error(response, 500, 50001)


def test_the_handler_gets_the_parameters_validation_parsed(api, mock):
    job = next(a for a in mock.store.world.applications.values() if a.type == "job")
    response = api.get(f"/jobs/{job.id}/runs", params={"limit": "2", "offset": "1"})
    assert response.status_code == 200, response.text
    assert response.json()["pagination"]["limit"] == 2
    assert response.json()["pagination"]["offset"] == 1


def test_the_docs_are_still_served_on_their_paths(anonymous):
    assert anonymous.get("/docs/").status_code == 200
    assert anonymous.get("/openapi.json").json()["info"]["version"] == "0.1.0"


def test_validators_module_is_the_one_in_the_pipeline():
    mock = PlatformMock()
    stack = mock.app.middleware.middleware_stack
    assert any(isinstance(m, validators.RequestValidationMiddleware) for m in stack)
    assert any(isinstance(m, validators.ResponseValidationMiddleware) for m in stack)


def test_connexion_still_validates_documents_in_the_hooked_method():
    assert "self._validate_spec(" in inspect.getsource(Specification.__init__)


def test_the_mocks_documents_are_validated_once_per_process(monkeypatch):
    PlatformMock()  # validated here, if no test of this process has built a mock yet
    calls = []
    original = http_app._connexion_validate_spec

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(http_app, "_connexion_validate_spec", counted)
    PlatformMock()
    assert calls == []


INVALID_DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "not the mock's", "version": "1"},
    "paths": {"/x": {"get": {"responses": "none"}}},
}


@pytest.mark.parametrize("attempt", [1, 2], ids=["first", "again"])
def test_another_document_is_still_validated_every_time(attempt):
    with pytest.raises(InvalidSpecification):
        FlaskApp(__name__).add_api(copy.deepcopy(INVALID_DOCUMENT))


# -- uvicorn: the httptools protocol (mock_server/http/protocol.py) and the command's server --


# Each overridden or read part of HttpToolsProtocol, and a connection that goes through it.
PROTOCOL_HOOKS = [
    # connection_made, timeout_keep_alive(_task, _handler), transport: armed before any byte
    pytest.param(b"", b"", id="connection_made-idle-timer"),
    # data_received, cycle: bytes that begin no request leave the connection idle
    pytest.param(b"\r\n\r\n", b"", id="data_received-still-idle"),
    # on_message_begin, loop, config.request_seconds: a head that never ends is a 408
    pytest.param(b"GET /docs/ HTTP/1.1\r\nHost: x\r\n", b"HTTP/1.1 408 ", id="on_message_begin"),
    # on_header, send_400_response: headers over 64 KiB are a 431 in the platform's body
    pytest.param(
        b"GET /docs/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
        b"HTTP/1.1 431 ",
        id="on_header",
    ),
    # send_400_response: what the parser cannot read is a 400 in the platform's body
    pytest.param(b"NOT HTTP AT ALL\r\n\r\n", b"HTTP/1.1 400 ", id="send_400_response"),
    # on_message_complete, cycle.response_complete: answered, then idle again and closed
    pytest.param(
        b"GET /docs/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"HTTP/1.1 200 ",
        id="on_message_complete",
    ),
]


@pytest.mark.parametrize(("sent", "answered"), PROTOCOL_HOOKS)
def test_each_hook_of_uvicorns_protocol_still_bites(impatient, sent, answered):
    answer = until_closed(impatient, sent)  # returns only once the server closes
    assert answer.startswith(answered) if answered else answer == b""
    if answered and not answered.endswith(b"200 "):
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["statusCode"] == int(answered[9:12])


def test_uvicorn_still_builds_its_protocol_with_the_config():
    assert isinstance(uvicorn_config(PlatformMock()), PlatformConfig)
    assert uvicorn_config(PlatformMock()).http is PlatformHttpProtocol


def test_uvicorn_still_serves_inside_capture_signals():
    """The command's server overrides `capture_signals` (uvicorn's, less raising the stop
    signal again once stopped): uvicorn must still serve inside it."""
    entered: list[str] = []

    class Probe(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            entered.append("in")
            yield
            entered.append("out")

        async def startup(self, sockets=None):
            await super().startup(sockets)
            self.should_exit = True

    Probe(uvicorn.Config(PlatformMock(), port=0, log_level="error", lifespan="off")).run()
    assert entered == ["in", "out"]


@pytest.mark.parametrize("times", [1, 2], ids=["first-answer", "remembered"])
def test_an_answer_of_a_media_type_the_operation_does_not_produce_is_the_mocks_error(
    monkeypatch: pytest.MonkeyPatch, times: int
) -> None:
    real = catalog.handler

    def handler(operation_id: str) -> object:
        if operation_id != "getSession":
            return real(operation_id)
        return lambda: Answer(b"plain words", "text/plain")

    monkeypatch.setattr(catalog, "handler", handler)
    mock = PlatformMock()
    client = httpx.Client(transport=MockTransport(mock), base_url="http://localhost")
    headers = {"Authorization": f"Bearer {mock.auth.dev_token()}"}
    with client:
        statuses = [client.get("/api/svc/v1/session", headers=headers) for _ in range(times)]
    assert [r.status_code for r in statuses] == [500] * times
