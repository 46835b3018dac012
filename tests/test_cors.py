"""CORS (`MockConfig.cors`, `serve --cors`): a browser client on an allowed origin may use the
mock as its backend; preflights are answered and every response, errors included, carries
the headers. Off by default. Each mock here is served over loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.core.addresses import origin_problem
from mock_server.http.server import BackgroundServer
from tests.conftest import CONTROL_PLANE, assert_error

CONSOLE = "http://localhost:3000"
OTHER = "https://evil.example"
TOKEN_PATH = CONTROL_PLANE + "/personal-access-tokens/ci"
DEMO_RESPONSE = "resp_0000000000000000000000000000demo"
ALLOW_ORIGIN = "access-control-allow-origin"


def preflight(client: httpx.Client, path: str, origin: str, method: str = "GET") -> httpx.Response:
    return client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )


def served(*origins: str) -> Iterator[tuple[PlatformMock, httpx.Client]]:
    mock = PlatformMock(MockConfig(cors=list(origins)))
    with BackgroundServer(mock) as server, httpx.Client(base_url=server.url) as client:
        yield mock, client


@pytest.fixture(scope="module")
def console() -> Iterator[tuple[PlatformMock, httpx.Client]]:
    """A mock allowing the console's origin (and a second one)."""
    yield from served(CONSOLE, "http://127.0.0.1:5173")


@pytest.fixture(scope="module")
def anyone() -> Iterator[tuple[PlatformMock, httpx.Client]]:
    yield from served("*")


@pytest.fixture(scope="module")
def closed() -> Iterator[tuple[PlatformMock, httpx.Client]]:
    """A mock as configured by default: no CORS."""
    yield from served()


def bearer(mock: PlatformMock) -> dict[str, str]:
    return {"Authorization": f"Bearer {mock.auth.dev_token()}"}


@pytest.mark.parametrize(
    ("path", "method"),
    [
        pytest.param(TOKEN_PATH, "GET", id="control-plane"),
        pytest.param(CONTROL_PLANE + "/secret-groups/group-0", "DELETE", id="delete"),
        pytest.param(f"/gateway/responses/{DEMO_RESPONSE}", "GET", id="gateway"),
    ],
)
def test_preflight_from_an_allowed_origin_is_answered(console, path: str, method: str):
    _, client = console
    response = preflight(client, path, CONSOLE, method)
    assert response.status_code == 200
    assert response.headers[ALLOW_ORIGIN] == CONSOLE
    assert method in response.headers["access-control-allow-methods"]
    allowed_headers = response.headers["access-control-allow-headers"].lower()
    assert {"authorization", "content-type"} <= {h.strip() for h in allowed_headers.split(",")}


def test_preflight_is_not_journaled_as_a_request_of_the_contract(console):
    mock, client = console
    before = mock.journal.call_count
    assert preflight(client, TOKEN_PATH, CONSOLE).status_code == 200
    assert mock.journal.call_count == before


def test_each_allowed_origin_is_answered_with_itself(console):
    _, client = console
    response = preflight(client, TOKEN_PATH, "http://127.0.0.1:5173")
    assert response.headers[ALLOW_ORIGIN] == "http://127.0.0.1:5173"


def test_preflight_from_a_refused_origin_gets_no_allow_origin(console):
    _, client = console
    response = preflight(client, TOKEN_PATH, OTHER)
    assert ALLOW_ORIGIN not in response.headers
    assert_error(response, 405, 40501)


def test_response_to_an_allowed_origin_carries_the_headers(console):
    mock, client = console
    response = client.get(TOKEN_PATH, headers={"Origin": CONSOLE, **bearer(mock)})
    assert response.status_code == 200
    assert response.headers[ALLOW_ORIGIN] == CONSOLE
    assert "x-platform-mock-fault" in response.headers["access-control-expose-headers"]


@pytest.mark.parametrize(
    ("path", "authenticated", "status", "code"),
    [
        pytest.param(TOKEN_PATH, False, 401, 40101, id="401-no-token"),
        pytest.param(CONTROL_PLANE + "/no-such-thing", True, 404, 40401, id="404-no-route"),
        pytest.param(TOKEN_PATH + "?page_size=1", True, 400, 40001, id="400-contract"),
    ],
)
def test_error_response_carries_the_headers(console, path, authenticated, status, code):
    mock, client = console
    headers = {"Origin": CONSOLE, **(bearer(mock) if authenticated else {})}
    response = client.get(path, headers=headers)
    assert_error(response, status, code)
    assert response.headers[ALLOW_ORIGIN] == CONSOLE


def test_response_to_a_refused_origin_has_no_allow_origin(console):
    mock, client = console
    response = client.get(TOKEN_PATH, headers={"Origin": OTHER, **bearer(mock)})
    assert response.status_code == 200
    assert ALLOW_ORIGIN not in response.headers


def test_a_dropped_connection_is_still_dropped(console):
    mock, client = console
    mock.faults.add("getOrCreatePersonalAccessToken", drop=True)
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(TOKEN_PATH, headers={"Origin": CONSOLE, **bearer(mock)})
    finally:
        mock.faults.clear()


def test_any_origin_with_a_star(anyone):
    mock, client = anyone
    assert preflight(client, TOKEN_PATH, OTHER).headers[ALLOW_ORIGIN] == "*"
    response = client.get(TOKEN_PATH, headers={"Origin": OTHER, **bearer(mock)})
    assert response.headers[ALLOW_ORIGIN] == "*"


def test_off_by_default_options_stays_405_with_allow(closed):
    _, client = closed
    response = preflight(client, TOKEN_PATH, CONSOLE)
    assert_error(response, 405, 40501)
    assert response.headers["allow"] == "GET, HEAD"
    assert ALLOW_ORIGIN not in response.headers


def test_off_by_default_responses_carry_no_cors_headers(closed):
    mock, client = closed
    response = client.get(TOKEN_PATH, headers={"Origin": CONSOLE, **bearer(mock)})
    assert response.status_code == 200
    assert not [h for h in response.headers if h.startswith("access-control-")]


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param("localhost:3000", id="no-scheme"),
        pytest.param("http://localhost:3000/", id="trailing-slash"),
        pytest.param("http://localhost:3000/app", id="path"),
        pytest.param("HTTP://Localhost:3000", id="upper-case"),
        pytest.param("ftp://localhost", id="not-http"),
        pytest.param("http://localhost:99999", id="port-out-of-range"),
        pytest.param("", id="empty"),
        pytest.param("http://localhost:80", id="http-default-port"),
        pytest.param("https://console.acme.example:443", id="https-default-port"),
        pytest.param("http://localhost:", id="empty-port"),
        pytest.param("http://exa%20mple.com", id="escaped-host"),
        pytest.param("http://exa_mple.com", id="underscore-host"),
        pytest.param("http://localhost:3000?x=1", id="query"),
        pytest.param("http://user@localhost:3000", id="user"),
    ],
)
def test_an_origin_no_browser_sends_is_refused(origin: str):
    with pytest.raises(ValueError, match="CORS origin"):
        PlatformMock(MockConfig(cors=[origin]))


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param("http://localhost:3000", id="name-and-port"),
        pytest.param("https://console.acme.example", id="https-name"),
        pytest.param("http://127.0.0.1:5173", id="ipv4"),
        pytest.param("http://[::1]:3000", id="ipv6"),
        pytest.param("*", id="any"),
    ],
)
def test_an_origin_a_browser_sends_is_accepted(origin: str):
    assert origin_problem(origin) is None


@pytest.mark.parametrize(
    "request_headers",
    [
        pytest.param({"Access-Control-Request-Method": "PROPFIND"}, id="method-it-refuses"),
        pytest.param(
            {
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Private-Network": "true",
            },
            id="private-network",
        ),
    ],
)
def test_preflight_the_policy_refuses_is_a_platform_error(console, request_headers):
    _, client = console
    response = client.options(TOKEN_PATH, headers={"Origin": CONSOLE, **request_headers})
    assert_error(response, 405, 40501)
