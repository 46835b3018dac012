"""The platform error body on every failure path: auth, contract, routing, methods and bodies.

Every error, whoever raises it (the security layer, request validation, routing, the body
reader), must leave as `{"statusCode", "message", "code", "details"}` with
`Content-Type: application/json`, never Connexion's `application/problem+json`, and never as
a 500.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.contract import documents as contract
from mock_server.contract.validation import MAX_BODY_BYTES
from mock_server.handlers import catalog
from tests.conftest import CONTROL_PLANE, assert_error

# Contract report: each test sends a request the contract refuses, on purpose.
pytestmark = pytest.mark.platform_mock(expect_violations=True)

DEMO_RESPONSE = "resp_0000000000000000000000000000demo"


@dataclass
class Call:
    """One well-formed request of an operation, addressed by absolute URL."""

    method: str
    url: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None

    def send(self, client: httpx.Client, **overrides: Any) -> httpx.Response:
        kwargs: dict[str, Any] = {"params": self.params}
        if self.json is not None:
            kwargs["json"] = self.json
        kwargs.update(overrides)
        return client.request(self.method, self.url, **kwargs)


def _calls(server, store) -> dict[str, Call]:
    """The catalog's valid request of each operation, filled from the default world."""
    calls = {}
    for operation_id, operation in contract.operations().items():
        request = catalog.example(operation_id).request(store)
        root = server.gateway_url if operation.document == contract.GATEWAY_SPEC else server.url
        calls[operation_id] = Call(request.method, root + request.path, request.query, request.body)
    return calls


def _each(operation_ids) -> list:
    return [pytest.param(op, id=op) for op in operation_ids]


OPERATIONS = _each(contract.operations())
BODY_OPERATIONS = _each(op for op, operation in contract.operations().items() if operation.body)
GET_OPERATIONS = _each(op for op, o in contract.operations().items() if o.method == "GET")
TOKEN_OPERATIONS = _each(op for op, o in contract.operations().items() if o.token)
OPEN_OPERATIONS = _each(op for op, o in contract.operations().items() if not o.token)


def _other_method(operation_id: str) -> tuple[str, set[str]]:
    """A method no operation of this operation's path takes, and the methods it does take."""
    operation = contract.operations()[operation_id]
    allowed = {
        o.method
        for o in contract.operations().values()
        if (o.document, o.path) == (operation.document, operation.path)
    }
    return next(m for m in ("DELETE", "PUT", "POST", "GET") if m not in allowed), allowed


@pytest.fixture
def client(token: str) -> Iterator[httpx.Client]:
    """An authenticated client of the whole server (control plane and gateway), as the
    default user: the tenant admin, whom every grant allows."""
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as authenticated:
        yield authenticated


@pytest.fixture
def calls(server, store) -> dict[str, Call]:
    return _calls(server, store)


def platform_error(response: httpx.Response, status: int, code: int) -> dict:
    """Not a 500, not a problem+json: the platform error body with this status and code."""
    assert response.status_code < 500, response.text
    assert "problem" not in response.headers.get("content-type", ""), response.headers
    return assert_error(response, status, code)


def _world(store) -> tuple:
    """What the mutating operations could change: groups, versions and tags, tokens."""
    world = store.world
    return (
        sorted(world.secret_groups),
        sorted((v.id, tuple(v.tags)) for v in world.artifact_versions.values()),
        sorted(world.tokens),
    )


def _raw_post(client: httpx.Client, url: str, body: bytes, **headers: str) -> httpx.Response:
    """POST raw bytes with exactly the given extra headers (httpx adds no Content-Type)."""
    return client.post(url, content=body, headers=headers)


def _chunks(body: bytes) -> Iterator[bytes]:
    """A body streamed without Content-Length (Transfer-Encoding: chunked)."""
    step = 64 * 1024
    for start in range(0, len(body), step):
        yield body[start : start + step]


# -- the requests used below are valid -----------------------------------------------------


@pytest.mark.parametrize("operation", OPERATIONS)
def test_well_formed_request_of_each_operation_succeeds(mock, calls, operation):
    caller = mock.store.identity.subject_named("user", catalog.example(operation).caller)
    with httpx.Client(headers={"Authorization": f"Bearer {mock.auth.dev_token(caller)}"}) as client:
        response = calls[operation].send(client)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"


# -- 401 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", TOKEN_OPERATIONS)
def test_request_without_token_is_401_error_body(anonymous, calls, operation):
    body = platform_error(calls[operation].send(anonymous), 401, 40101)
    assert "token" in body["message"].lower()


@pytest.mark.parametrize("operation", OPEN_OPERATIONS)
def test_operation_taking_no_token_answers_without_one(anonymous, calls, operation):
    response = calls[operation].send(anonymous)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("operation", OPERATIONS)
def test_request_without_token_changes_nothing(anonymous, store, calls, operation):
    before = _world(store)
    calls[operation].send(anonymous)
    assert _world(store) == before


# -- 400: the contract ---------------------------------------------------------------------


@pytest.mark.parametrize("operation", OPERATIONS)
def test_unknown_query_parameter_is_400_naming_it(client, calls, operation):
    call = calls[operation]
    response = call.send(client, params={**call.params, "bogus": "1"})
    body = platform_error(response, 400, 40001)
    assert len(body["details"]) == 1, body
    detail = body["details"][0]
    assert (detail["location"], detail["field"]) == ("query", "bogus")
    assert isinstance(detail["message"], str) and detail["message"]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_request_breaking_the_contract_changes_nothing(client, store, calls, operation):
    call = calls[operation]
    before = _world(store)
    platform_error(call.send(client, params={**call.params, "bogus": "1"}), 400, 40001)
    assert _world(store) == before


def test_several_query_violations_are_all_listed(client, calls):
    call = calls["listJobRuns"]
    response = call.send(client, params={"limit": "0", "offset": "-1", "order": "sideways"})
    body = platform_error(response, 400, 40001)
    assert sorted((d["location"], d["field"]) for d in body["details"]) == [
        ("query", "limit"),
        ("query", "offset"),
        ("query", "order"),
    ]
    assert all(d["message"] for d in body["details"])


def test_several_body_violations_are_all_listed(client, calls):
    call = calls["applyArtifactVersionTags"]
    response = call.send(client, json={"tags": "x", "force": "yes", "colour": "red"})
    body = platform_error(response, 400, 40001)
    assert sorted((d["location"], d["field"]) for d in body["details"]) == [
        ("body", "artifact_version_id"),
        ("body", "colour"),
        ("body", "force"),
        ("body", "tags"),
    ]


def test_query_and_body_violations_are_listed_together(client, calls):
    call = calls["listSecretDeployments"]
    response = call.send(client, params={"limit": "0"}, json={"secretIds": "not-a-list"})
    body = platform_error(response, 400, 40001)
    assert sorted((d["location"], d["field"]) for d in body["details"]) == [
        ("body", "secretIds"),
        ("query", "limit"),
    ]


# -- 404 and 405: routing ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(CONTROL_PLANE + "/no-such-thing", id="under-control-plane-prefix"),
        pytest.param(CONTROL_PLANE + "/jobs", id="prefix-of-a-known-path"),
        pytest.param("/no-such-thing", id="outside-any-prefix"),
    ],
)
def test_unknown_path_is_404_40401(client, server, path):
    body = platform_error(client.get(server.url + path), 404, 40401)
    assert body["details"] == []


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/no-such-thing", id="unknown-resource"),
        pytest.param("/models/gpt-4o-mini/versions", id="below-a-known-path"),
        pytest.param(f"/v1/responses/{DEMO_RESPONSE}", id="with-version-segment"),
    ],
)
def test_unknown_path_under_gateway_prefix_is_404_40401(client, server, path):
    platform_error(client.get(server.gateway_url + path), 404, 40401)


@pytest.mark.parametrize(
    "suffix",
    [pytest.param("/", id="trailing-slash"), pytest.param("%2F", id="trailing-encoded-slash")],
)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_path_with_a_trailing_slash_is_404_not_a_redirect(client, store, calls, operation, suffix):
    call = calls[operation]
    before = _world(store)
    response = client.request(
        call.method, call.url + suffix, params=call.params, json=call.json, follow_redirects=False
    )
    platform_error(response, 404, 40401)
    assert _world(store) == before


def test_unknown_path_without_token_is_still_404(anonymous, server):
    platform_error(anonymous.get(server.url + CONTROL_PLANE + "/no-such-thing"), 404, 40401)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_wrong_method_on_known_path_is_405_40501(client, store, calls, operation):
    method, allowed = _other_method(operation)
    before = _world(store)
    response = client.request(method, calls[operation].url)
    platform_error(response, 405, 40501)
    assert set(response.headers.get("allow", "").replace(" ", "").split(",")) >= allowed
    assert _world(store) == before


@pytest.mark.parametrize("operation", GET_OPERATIONS)
def test_head_answers_as_get_without_the_body(client, calls, operation):
    call = calls[operation]
    call.send(client)  # get-or-create answers `created: true` only the first time
    response = client.head(call.url, params=call.params)
    got = call.send(client)
    assert response.status_code == 200, response.headers
    assert response.headers["content-length"] == str(len(got.content))
    assert response.headers["content-type"] == "application/json"


# -- bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"secretIds": [', id="malformed-json"),
        pytest.param(b'{"secretIds": ["\xff\xfe\xc3"]}', id="not-utf8"),
        pytest.param(b"[]", id="array"),
        pytest.param(b'"x"', id="string"),
        pytest.param(b"3", id="number"),
        pytest.param(b"null", id="null"),
        pytest.param(b"true", id="boolean"),
    ],
)
@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_body_that_is_not_a_json_object_is_400_in_body(client, calls, operation, raw):
    call = calls[operation]
    response = client.request(
        call.method, call.url, content=raw, headers={"Content-Type": "application/json"}
    )
    body = platform_error(response, 400, 40001)
    assert [d["location"] for d in body["details"]] == ["body"]


@pytest.mark.parametrize(
    "content_type",
    [
        pytest.param("text/plain", id="text-plain"),
        pytest.param("application/x-www-form-urlencoded", id="form"),
        pytest.param("application/xml", id="xml"),
    ],
)
@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_body_not_sent_as_json_is_415_41501(client, store, calls, operation, content_type):
    call = calls[operation]
    before = _world(store)
    response = client.request(
        call.method,
        call.url,
        content=httpx.Request("POST", "/", json=call.json).content,
        headers={"Content-Type": content_type},
    )
    platform_error(response, 415, 41501)
    assert _world(store) == before


@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_body_without_content_type_is_415_41501(client, calls, operation):
    call = calls[operation]
    raw = httpx.Request("POST", "/", json=call.json).content
    request = client.build_request(call.method, call.url, content=raw)
    assert "content-type" not in request.headers
    platform_error(client.send(request), 415, 41501)


def test_streamed_body_without_content_type_is_415_41501(client, calls):
    call = calls["listSecretDeployments"]
    raw = httpx.Request("POST", "/", json=call.json).content
    request = client.build_request("POST", call.url, content=_chunks(raw))
    assert "content-type" not in request.headers
    assert request.headers.get("transfer-encoding") == "chunked"
    platform_error(client.send(request), 415, 41501)


def _secret_ids_body(size: int) -> bytes:
    """A valid operation-2 body of exactly `size` bytes (one long, unknown secret id)."""
    head, tail = b'{"secretIds": ["', b'"]}'
    return head + b"s" * (size - len(head) - len(tail)) + tail


def test_body_of_exactly_1_mib_is_accepted(client, calls):
    url = calls["listSecretDeployments"].url
    response = _raw_post(
        client, url, _secret_ids_body(MAX_BODY_BYTES), **{"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text[:500]
    assert response.json()["pagination"]["total"] == 0


@pytest.mark.parametrize(
    "streamed",
    [
        pytest.param(False, id="with-content-length"),
        pytest.param(True, id="chunked"),
    ],
)
def test_body_larger_than_1_mib_is_413_41301(client, calls, streamed):
    url = calls["listSecretDeployments"].url
    raw = _secret_ids_body(MAX_BODY_BYTES + 1)
    response = client.post(
        url,
        content=_chunks(raw) if streamed else raw,
        headers={"Content-Type": "application/json"},
    )
    platform_error(response, 413, 41301)


@pytest.mark.parametrize(
    "size",
    [
        pytest.param(7, id="small"),
        pytest.param(MAX_BODY_BYTES + 1, id="over-1-mib"),
    ],
)
def test_body_sent_to_an_operation_without_body_is_ignored(client, calls, size):
    call = calls["listJobRuns"]
    response = client.request("GET", call.url, params=call.params, content=b"x" * size)
    assert response.status_code == 200, response.text
    assert response.json()["data"]


@pytest.mark.parametrize(
    "content_type",
    [
        pytest.param("APPLICATION/JSON", id="upper-case"),
        pytest.param("Application/Json; charset=UTF-8", id="mixed-case-with-charset"),
        pytest.param("application/json;charset=utf-8", id="charset-without-space"),
        pytest.param("application/json; charset=us-ascii", id="ascii-is-utf-8"),
    ],
)
def test_media_type_and_charset_are_case_insensitive(client, calls, content_type):
    call = calls["listSecretDeployments"]
    raw = httpx.Request("POST", "/", json=call.json).content
    response = _raw_post(client, call.url, raw, **{"Content-Type": content_type})
    assert response.status_code == 200, response.text
    assert response.json()["pagination"]["total"] == len(call.json["secretIds"])


def test_streamed_valid_body_is_read_not_reported_missing(client, calls):
    call = calls["listSecretDeployments"]
    raw = httpx.Request("POST", "/", json=call.json).content
    response = client.post(
        call.url, content=_chunks(raw), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_missing_required_body_is_400_in_body(client, store, calls, operation):
    call = calls[operation]
    before = _world(store)
    response = client.request(call.method, call.url, headers={"Content-Type": "application/json"})
    body = platform_error(response, 400, 40001)
    assert [d["location"] for d in body["details"]] == ["body"]
    assert _world(store) == before


@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_empty_object_body_lists_missing_required_fields(client, calls, operation):
    call = calls[operation]
    body = platform_error(call.send(client, json={}), 400, 40001)
    assert body["details"], body
    assert {d["location"] for d in body["details"]} == {"body"}
    assert all(d["message"] == "is required" for d in body["details"]), body
    assert {d["field"] for d in body["details"]} == set(call.json)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/svc/v1//personal-access-tokens/ci", id="inner-double-slash"),
        pytest.param("//api/svc/v1/personal-access-tokens/ci", id="leading-double-slash"),
        pytest.param("/api/svc/v1/personal-access-tokens//ci", id="double-slash-before-param"),
    ],
)
def test_path_with_a_double_slash_is_404_40401(server, token, path):
    response = httpx.get(server.url + path, headers={"Authorization": f"Bearer {token}"})
    platform_error(response, 404, 40401)


# The one writer of the error body on the wire is `errors.error_answer` (and `send_error`
# over ASGI); a door that writes the body itself would drift from it.
ONE_WRITER = "mock_server/core/errors.py"


def second_writers(source: str) -> list[str]:
    """Where a module writes the platform error body itself: it builds the body's dict (a
    literal with `statusCode`), or takes an error's body (`.body()`, `.gateway_body()`,
    `error_body(...)`) to write it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and any(
            isinstance(key, ast.Constant) and key.value == "statusCode" for key in node.keys
        ):
            found.append(f"line {node.lineno}: a dict with statusCode")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("error_body", "gateway_body") or (
                name == "body" and isinstance(node.func, ast.Attribute) and not node.args
            ):
                found.append(f"line {node.lineno}: {name}(...)")
    return found


def test_only_the_errors_module_writes_the_error_body():
    root = Path(__file__).resolve().parent.parent
    writers = {
        str(path.relative_to(root)): found
        for path in sorted((root / "mock_server").rglob("*.py"))
        if str(path.relative_to(root)) != ONE_WRITER
        and (found := second_writers(path.read_text(encoding="utf-8")))
    }
    assert writers == {}, f"write the error body through errors.error_answer: {writers}"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("body = orjson.dumps(error.body())", id="an-error's-body"),
        pytest.param("body = orjson.dumps(error.gateway_body())", id="a-gateway-body"),
        pytest.param("body = errors.error_body(404, 40401, 'no', [])", id="error_body"),
        pytest.param('body = {"statusCode": 404, "message": "no"}', id="a-literal"),
    ],
)
def test_the_second_writer_check_finds_a_hand_written_body(source):
    assert second_writers(source) != []


def test_the_second_writer_check_passes_the_one_writer():
    assert second_writers("status, headers, body = errors.error_answer(error)") == []
