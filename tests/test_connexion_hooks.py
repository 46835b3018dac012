"""Every hook of mock_server/http/ into Connexion, Flask and a2wsgi, and of mock_server/server.py
into uvicorn, still exists and still bites.

An upgrade of one of them that renames or drops a private part fails here, in CI, rather
than quietly in users' hands (validation skipped, or a 500 at import)."""

from __future__ import annotations

import copy
import inspect

import flask
import pytest
from a2wsgi.wsgi import build_environ
from connexion.apps.flask import FlaskApp, FlaskOperation
from connexion.exceptions import InvalidSpecification
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.context import ContextMiddleware
from connexion.middleware.request_validation import RequestValidationMiddleware
from connexion.middleware.response_validation import ResponseValidationMiddleware
from connexion.middleware.routing import RoutingMiddleware
from connexion.middleware.swagger_ui import SwaggerUIAPI, SwaggerUIMiddleware
from connexion.security import BearerSecurityHandler
from connexion.spec import Specification
from connexion.uri_parsing import OpenAPIURIParser
from connexion.validators import JSONRequestBodyValidator, JSONResponseBodyValidator
from flask.ctx import RequestContext
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from mock_server import PlatformMock
from mock_server.http import app as http_app
from mock_server.http import validators
from mock_server.http.wsgi import InlineWSGI
from mock_server.server import PlatformConfig, uvicorn_config
from tests.conftest import assert_error

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
    assert names.index("RoutingMiddleware") < names.index("RouteNotes")
    assert names.index("RouteNotes") < names.index("SecurityMiddleware")
    assert names.index("ResponseValidationMiddleware") < names.index("FaultInjection")
    assert names[-1] == "FaultInjection"
    assert "ContextMiddleware" not in names


@pytest.mark.parametrize(
    ("owner", "name"),
    [
        (ConnexionMiddleware, "_build_middleware_stack"),
        (OpenAPIURIParser, "_resolve_param_duplicates"),
        (OpenAPIURIParser, "_split"),
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
    assert environ["asgi.scope"] is scope


def test_every_operation_view_is_planned():
    mock = PlatformMock()
    views = mock.app.app.view_functions
    planned = {v.operation_id for v in views.values() if isinstance(v, http_app.PlannedView)}
    assert not [v for v in views.values() if isinstance(v, FlaskOperation)]
    assert "listJobRuns" in planned and "adminReset" in planned


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
    monkeypatch.setattr(
        http_app, "_connexion_validate_spec", lambda *args: calls.append(1) or original(*args)
    )
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


# -- uvicorn's httptools protocol (mock_server/server.py) ----------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "connection_made",
        "connection_lost",
        "data_received",
        "on_message_begin",
        "on_header",
        "on_message_complete",
        "send_400_response",
        "timeout_keep_alive_handler",
    ],
)
def test_uvicorns_protocol_still_has_the_hooked_method(name):
    assert callable(getattr(HttpToolsProtocol, name))


def test_uvicorns_protocol_still_keeps_what_the_mock_reads():
    source = inspect.getsource(HttpToolsProtocol)
    for attribute in ("self.timeout_keep_alive_task", "self.timeout_keep_alive ", "self.cycle"):
        assert attribute in source
    cycle = inspect.getsource(RequestResponseCycle)
    assert "self.response_started" in cycle and "self.response_complete" in cycle


def test_uvicorn_still_builds_its_protocol_with_the_config():
    assert "config" in inspect.signature(HttpToolsProtocol.__init__).parameters
    assert isinstance(uvicorn_config(PlatformMock()), PlatformConfig)
