"""The API docs a newcomer opens first: every "Try it out" of the three documents answers 2xx
in the default world, and each document's Servers list names the mock's own URL.

A request is built from the document the docs page serves (`{base}/openapi.json`) as Swagger
UI fills it in: each parameter takes its `example` (else its schema's `example`, else its
schema's `default`), the body is its media type's `example`, and the token is the one the
Authorize button is given (the printed token, or the admin token for the admin API)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.http.mock import MockConfig
from mock_server.http.server import BackgroundServer
from tests.budget import budget

DOCUMENTS = {"control plane": "", "gateway": "/gateway", "admin API": "/__admin"}
METHODS = ("get", "put", "post", "delete", "patch")
# Operations whose example names what another operation's example makes first, in a world
# just started: the first fault rule, the first world served beside the mock, the first
# request journaled.
PREREQUISITES = {
    "adminDeleteFault": ["adminAddFault"],
    "adminDeleteWorld": ["adminCreateWorld"],
    "adminGetRequest": ["getSession"],
}


BASES = {contract.CONTROL_PLANE_SPEC: "", contract.GATEWAY_SPEC: "/gateway"}
OPERATIONS = [
    *(
        pytest.param(BASES[op.document], op_id, id=f"{op.document}-{op_id}")
        for op_id, op in contract.operations().items()
    ),
    *(
        pytest.param("/__admin", op_id, id=f"admin.yaml-{op_id}")
        for op_id in contract.admin_operations()
    ),
]


def _served(url: str, base: str) -> dict[str, Any]:
    response = httpx.get(f"{url}{base}/openapi.json")
    assert response.status_code == 200, response.text
    return response.json()


def _find(document: dict[str, Any], operation_id: str) -> tuple[str, str, dict[str, Any]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS and operation["operationId"] == operation_id:
                return method.upper(), path, operation
    raise KeyError(operation_id)


def _resolved(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def _filled(parameter: dict[str, Any], schema: dict[str, Any]) -> Any:
    """The value Swagger UI puts in a parameter's field when "Try it out" is pressed."""
    for source, key in ((parameter, "example"), (schema, "example"), (schema, "default")):
        if key in source:
            value = source[key]
            return str(value).lower() if isinstance(value, bool) else value
    return None


def try_it_out(
    client: httpx.Client, mock: PlatformMock, base: str, operation_id: str
) -> httpx.Response:
    """Send an operation's "Try it out" request as the docs page would."""
    document = _served(str(client.base_url).rstrip("/"), base)
    method, path, operation = _find(document, operation_id)
    query: dict[str, Any] = {}
    headers: dict[str, str] = {}
    for parameter in operation.get("parameters", []):
        parameter = _resolved(document, parameter)
        value = _filled(parameter, _resolved(document, parameter.get("schema", {})))
        if value is None:
            continue
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", str(value))
        elif parameter["in"] == "query":
            query[parameter["name"]] = value
        elif parameter["in"] == "header":
            headers[parameter["name"]] = str(value)
    assert "{" not in path, f"{operation_id}: a path parameter has no example"
    security = operation.get("security", document.get("security", []))
    if security:
        (scheme,) = security[0]
        admin = scheme == "adminAuth"
        headers["Authorization"] = (
            f"Bearer {mock.auth.admin_token() if admin else mock.auth.dev_token()}"
        )
    body = None
    if "requestBody" in operation:
        media_type, content = next(iter(operation["requestBody"]["content"].items()))
        assert "example" in content, f"{operation_id}: its body has no example"
        body, headers["Content-Type"] = content["example"], media_type
    url = document["servers"][0]["url"] + path
    request = client.build_request(method, url, params=query, headers=headers, json=body)
    response = client.send(request, stream=True)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        response.close()  # a live stream: it has answered, and would go on
    else:
        response.read()
    return response


@pytest.fixture(scope="module")
def fresh() -> Iterator[tuple[httpx.Client, PlatformMock]]:
    mock = PlatformMock()
    with (
        BackgroundServer(mock) as server,
        httpx.Client(base_url=server.url, timeout=budget(30)) as client,
    ):
        yield client, mock


def _base_of(operation_id: str) -> str:
    return next(str(p.values[0]) for p in OPERATIONS if p.values[1] == operation_id)


@pytest.mark.parametrize(
    ("base", "operation_id"), [p for p in OPERATIONS if p.values[1] not in PREREQUISITES]
)
def test_try_it_out_answers_2xx_in_the_default_world(fresh, base, operation_id):
    client, mock = fresh
    mock.reset()

    response = try_it_out(client, mock, base, operation_id)

    assert response.is_success, f"{response.status_code} {response.text[:500]}"


@pytest.mark.parametrize("operation_id", PREREQUISITES)
def test_try_it_out_after_the_example_it_names_answers_2xx_in_a_mock_just_started(
    operation_id,
):
    mock = PlatformMock()
    with (
        BackgroundServer(mock) as server,
        httpx.Client(base_url=server.url, timeout=budget(30)) as client,
    ):
        for needed in PREREQUISITES[operation_id]:
            assert try_it_out(client, mock, _base_of(needed), needed).is_success
        response = try_it_out(client, mock, _base_of(operation_id), operation_id)
    assert response.is_success, f"{response.status_code} {response.text[:500]}"


def test_try_it_out_examples_name_records_whatever_the_seed():
    mock = PlatformMock(MockConfig(seed=7))
    with (
        BackgroundServer(mock) as server,
        httpx.Client(base_url=server.url, timeout=budget(30)) as client,
    ):
        response = try_it_out(client, mock, "", "listJobRuns")
    assert response.status_code == 200


@pytest.mark.parametrize(("document", "base"), DOCUMENTS.items())
def test_servers_name_the_mocks_own_url(fresh, document, base):
    client, _ = fresh
    served = _served(str(client.base_url).rstrip("/"), base)
    assert [server["url"] for server in served["servers"]] == [
        f"{client.base_url}".rstrip("/") + base
    ]


def test_servers_name_the_host_the_browser_used(fresh):
    client, _ = fresh
    port = client.base_url.port
    served = client.get("/openapi.json", headers={"Host": f"localhost:{port}"}).json()
    assert served["servers"][0]["url"] == f"http://localhost:{port}"


def test_servers_name_the_address_when_the_host_header_is_no_host(fresh):
    client, _ = fresh
    served = client.get("/openapi.json", headers={"Host": 'a"<b>'}).json()
    assert served["servers"][0]["url"] == str(client.base_url).rstrip("/")
