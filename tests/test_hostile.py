"""Hostile input at every door: a corpus of attacks, as an attacker or an unlucky user would
try them, each bounded in time and memory (child processes run under resource limits).

Doors: credentials (no token can be made from public facts), the admin API's host and
origin, the request log's reader, fixture files and uploads, signals and the processes
`run` starts, idle and half-sent connections, refused requests (which change nothing) and
the cost of a request against the data at rest.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import jwt
import pytest
from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.types import Message, Receive, Scope, Send

from mock_server import MockConfig, PlatformMock, cli
from mock_server.cli.watch import FixtureWatcher
from mock_server.fixtures import loader as fixtures
from mock_server.fixtures.loader import dump
from mock_server.http import events
from mock_server.http import server as server_module
from mock_server.http.hosts import HostGuard
from mock_server.http.protocol import REQUEST_SECONDS
from mock_server.http.server import IDLE_SECONDS, BackgroundServer, uvicorn_config
from mock_server.http.transport import IN_PROCESS_URL, MockTransport
from mock_server.proxy import forward
from mock_server.reports.drift import ProxiedExchange
from mock_server.services.auth import ALGORITHM, ISSUER
from mock_server.view import live
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, assert_error, http_client, until_closed
from tests.test_cli import SERVE_OUTPUT
from tests.test_watch import DANA, DANA_AND_ERIN, Watched

MEMORY_LIMIT = 1024 * 1024 * 1024  # bytes of address space a child server may map
CPU_SECONDS = 120  # of processor time a child may use, whatever it is fed


def bounded(memory: int = MEMORY_LIMIT, files: int | None = None) -> Callable[[], None]:
    """A `preexec_fn` putting a child under limits: address space, CPU time and, if given,
    the hard limit of open files (the soft one left as it is, for the child to raise)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, files), files))

    return limit


def serve(*args: str, env: dict[str, str] | None = None, **limits) -> tuple[subprocess.Popen, dict]:
    """`serve --port 0 ARGS` under limits, stdout a pipe read up to the banner's end and no
    further: its URLs and tokens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=bounded(**limits),
    )
    assert process.stdout is not None
    banner = b""
    while b"Press Ctrl-C" not in banner:
        line = process.stdout.readline()
        assert line, f"serve ended early: {banner!r} {process.stderr.read()!r}"  # type: ignore[union-attr]
        banner += line
    match = SERVE_OUTPUT.search(banner.decode())
    assert match, banner
    urls = match.groupdict()
    urls["base"] = urls["control"].removesuffix(CONTROL_PLANE)
    return process, urls


def stop(process: subprocess.Popen, timeout: float = budget(20)) -> tuple[int, str]:
    """SIGTERM, then the exit status and standard error, within `timeout` seconds."""
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"the server did not stop within {timeout} s") from None
    return process.returncode, err.decode()


# -- refused requests change nothing -----------------------------------------------------


@pytest.fixture
def pat(api, server) -> tuple[str, httpx.Client]:
    """A personal access token of alice's, and a control-plane client using it."""
    issued = api.get("/personal-access-tokens/ci").json()
    client = http_client(
        base_url=server.url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {issued['token']}"},
    )
    return issued["data"]["id"], client


def _last_use(store, token_id: str):
    (token,) = [t for t in store.world.tokens.values() if t.id == token_id]
    return token.last_accessed_at


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        pytest.param("GET", "/personal-access-tokens/x", {"params": {"bogus": 1}}, 400, id="400"),
        pytest.param(
            "POST",
            "/secrets/deployments",
            {"content": b"{", "headers": {"Content-Type": "application/json"}},
            400,
            id="400-body",
        ),
        pytest.param("POST", "/secrets/deployments", {"content": b"{}"}, 415, id="415"),
        pytest.param("GET", "/jobs/no-such-job/runs", {}, 404, id="404-in-handler"),
        pytest.param(
            "GET", "/personal-access-tokens/x", {"params": {"teamName": "nope"}}, 400, id="400-team"
        ),
        pytest.param("PATCH", "/personal-access-tokens/x", {}, 405, id="405"),
    ],
)
def test_a_refused_request_leaves_its_tokens_last_use_as_it_was(
    pat, store, method, path, kwargs, status
):
    token_id, client = pat
    before = dump(store)
    assert client.request(method, path, **kwargs).status_code == status
    assert _last_use(store, token_id) is None
    assert dump(store) == before


def test_a_faulted_request_leaves_its_tokens_last_use_as_it_was(pat, store, mock):
    token_id, client = pat
    mock.faults.add("getOrCreatePersonalAccessToken", status=400)
    assert client.get("/personal-access-tokens/x").status_code == 400
    assert _last_use(store, token_id) is None


def test_a_served_request_records_its_tokens_last_use(pat, store):
    token_id, client = pat
    assert client.get("/personal-access-tokens/other").status_code == 200
    assert _last_use(store, token_id) is not None


# -- cost by index: a request walks no container of the world ------------------------------


class _Unwalkable(dict):
    """A container of the world that a request may look into but never walk."""

    def _walked(self, *_):
        raise AssertionError("a request walked every entry of the world's container")

    __iter__ = values = items = keys = _walked


class _UnwalkableList(list):
    def __iter__(self):
        raise AssertionError("a request walked every grant of the world")


def _unwalkable(world) -> None:
    """The world's tokens, grants, subjects, resources, secret groups and deployments, as
    containers a request may only look into."""
    for name in ("tokens", "subjects", "resources", "secret_groups", "deployments"):
        setattr(world, name, _Unwalkable(getattr(world, name)))
    world.grants = _UnwalkableList(world.grants)


def test_requests_of_every_kind_look_things_up_by_index(pat, store, api, gateway):
    _, with_pat = pat
    tenant = store.identity.tenant.id
    secrets = list(store.secrets.group_named("llm-keys").secrets)
    alice = store.identity.default_user().id
    trainer = store.deployments.application_named("trainer").id
    manifests = "/role-bindings/generate-manifest"
    with store.lock:
        _unwalkable(store.world)
    calls = [
        with_pat.get("/personal-access-tokens/ci"),
        api.get(manifests, params={"resourceType": "tenant", "resourceId": tenant}),
        api.get(manifests, params={"subjectType": "user", "subjectId": alice}),
        api.post("/secrets/deployments", json={"secretIds": secrets}),
        api.get(f"/jobs/{trainer}/runs", params={"limit": 5}),
        gateway.get("/responses/resp_0000000000000000000000000000demo"),
    ]
    assert [call.status_code for call in calls] == [200] * len(calls)


# Texts the masking rule reads, each a run it once tried from every character: a path of
# 16,000 (the most a target may hold) held every request for 20 seconds; a body's 60,000
# would be minutes. Each is answered well within the wait of one request.
def _runs(length: int) -> list[Any]:
    return [
        pytest.param("token" + "a" * length, id="a-word-the-rule-seeks-then-a-run"),
        pytest.param("eyJ" * (length // 3), id="jwt-starts-with-no-dot"),
        pytest.param("token-" + "a1" * (length // 2), id="a-run-of-letters-and-digits"),
    ]


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize("text", _runs(16_000))
def test_a_long_run_in_a_path_is_masked_without_holding_the_server(anonymous, text):
    answered = anonymous.get(f"{CONTROL_PLANE}/jobs/{text}/runs", timeout=budget(4))
    assert answered.status_code == 401


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize("text", _runs(60_000))
def test_a_long_run_in_a_body_is_masked_and_read_back_without_holding_the_server(api, admin, text):
    sent = api.post("/artifact-versions/stage", json={"note": text}, timeout=budget(10))
    assert sent.status_code == 400
    journal = admin.get("/journal", timeout=budget(10))
    assert journal.status_code == 200


def test_a_token_is_found_by_its_id_among_many(api, store, server):
    alice = store.identity.caller(*_ids(store.identity.default_user()))
    for n in range(2000):
        store.tokens.get_or_create(alice, f"bulk-{n}", None)
    issued = store.tokens.get_or_create(alice, "bulk-1999", None).token
    with http_client(
        base_url=server.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {issued.token}"}
    ) as client:
        assert client.get("/personal-access-tokens/ci").status_code == 200
    store.tokens.revoke(alice.subject_id, "bulk-1999")
    with http_client(
        base_url=server.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {issued.token}"}
    ) as client:
        assert_error(client.get("/personal-access-tokens/ci"), 401, 40105)


def _ids(subject) -> tuple[str, str]:
    return subject.type, subject.id


# -- credentials nobody can derive -----------------------------------------------------------


def _forged_admin_token(key: str) -> str:
    claims = {
        "iss": ISSUER,
        "sub": "platform-mock-admin",
        "subjectType": "admin",
        "subjectSlug": "admin",
        "iat": 0,
        "exp": 253402300800,
    }

    # Signed by hand: PyJWT refuses an empty key and warns about a short one.
    def part(value: dict) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")

    signed = part({"alg": ALGORITHM, "typ": "JWT"}) + b"." + part(claims)
    signature = hmac.new(key.encode(), signed, hashlib.sha256).digest()
    return (signed + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


@pytest.mark.parametrize(
    "key",
    [
        # What the key used to be: derived from the seed, which is documented.
        pytest.param(
            hashlib.sha256(b"platform-mock-signing-key:0").hexdigest(), id="old-derivation"
        ),
        pytest.param("platform-mock-signing-key:0", id="seed-text"),
        pytest.param("", id="empty-key"),
        pytest.param("0", id="the-seed"),
    ],
)
def test_an_admin_token_signed_with_a_public_guess_is_refused(anonymous, key):
    forged = _forged_admin_token(key)
    response = anonymous.post("/__admin/reset", headers={"Authorization": f"Bearer {forged}"})
    assert_error(response, 401, 40104)


def test_a_token_printed_offline_for_the_same_seed_is_refused(anonymous):
    offline = PlatformMock(MockConfig(seed=0))  # `platform-mock token --admin --seed 0`
    admin_token = offline.auth.admin_token()
    response = anonymous.get("/__admin/journal", headers={"Authorization": f"Bearer {admin_token}"})
    assert_error(response, 401, 40104)
    user = offline.auth.dev_token()
    response = anonymous.get(
        CONTROL_PLANE + "/personal-access-tokens/ci", headers={"Authorization": f"Bearer {user}"}
    )
    assert_error(response, 401, 40104)


def _admin_token_with(mock: PlatformMock, **times: int) -> str:
    """An admin token signed with the server's own key, with these time claims."""
    claims = {
        "iss": ISSUER,
        "sub": "platform-mock-admin",
        "subjectType": "admin",
        "subjectSlug": "admin",
        "iat": 0,
        "exp": 253402300800,
        **times,
    }
    return jwt.encode(claims, mock.store.signer.key, algorithm=ALGORITHM)


@pytest.mark.parametrize(
    "times",
    [
        pytest.param({"exp": 86400}, id="exp-in-1970"),
        pytest.param({"exp": int(time.time()) - 60}, id="exp-a-minute-ago"),
        pytest.param({"nbf": 7258118400}, id="nbf-in-2200"),
    ],
)
def test_an_admin_token_out_of_its_time_is_refused_as_a_users_is(anonymous, mock, times):
    token = _admin_token_with(mock, **times)
    response = anonymous.get("/__admin/journal", headers={"Authorization": f"Bearer {token}"})
    assert_error(response, 401, 40103)


@pytest.mark.parametrize("clock", ["2036-01-02T00:00:00Z", "1999-01-02T00:00:00Z"])
def test_an_admin_tokens_time_is_the_wall_clocks_not_the_worlds(admin, anonymous, mock, clock):
    assert admin.post("/fixtures", json={"clock": clock}).status_code == 200
    now = int(time.time())
    token = _admin_token_with(mock, nbf=now - 60, exp=now + 3600)
    response = anonymous.get("/__admin/journal", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200


def test_the_key_is_the_servers_for_its_life_a_reseed_keeps_it(admin, mock):
    key = mock.store.signer.key
    assert admin.post("/reset", json={"seed": 9}).status_code == 200
    assert mock.store.signer.key == key
    assert admin.get("/journal").status_code == 200


# -- every page the mock serves carries the live view's security headers ------------------

SECURITY_HEADERS = (
    "x-content-type-options",
    "referrer-policy",
    "x-frame-options",
    "cross-origin-opener-policy",
)


def _directives(policy: str) -> dict[str, str]:
    return dict((part.strip() + " ").split(" ", 1) for part in policy.split(";"))


@pytest.mark.parametrize("path", ["/docs/", "/gateway/docs/", "/__admin/docs/"])
def test_the_api_docs_carry_the_live_views_security_headers(anonymous, path):
    page, view = anonymous.get(path), anonymous.get("/__admin/ui")
    assert page.status_code == view.status_code == 200
    assert [page.headers.get(n) for n in SECURITY_HEADERS] == [
        view.headers[n] for n in SECURITY_HEADERS
    ]
    policy = page.headers["content-security-policy"]
    found = _directives(policy)
    assert {k: found[k].strip() for k in ("default-src", "frame-ancestors", "form-action")} == {
        "default-src": "'none'",
        "frame-ancestors": "'none'",
        "form-action": "'none'",
    }
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    inline = re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL)
    assert inline  # Swagger UI is started by an inline script: named by its hash, or refused
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in found["script-src"]


# -- the admin API answers only its own host, never a page of another origin ---------------


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("evil.example", id="rebound-name"),
        pytest.param("evil.example:{port}", id="rebound-name-and-port"),
        pytest.param("127.0.0.1.evil.example:{port}", id="loopback-prefix"),
        pytest.param("localhost.evil.example:{port}", id="localhost-prefix"),
        pytest.param("localhost:1", id="loopback-name-another-port"),
        pytest.param("localhost.:{port}", id="trailing-dot"),
        pytest.param("10.0.0.1:{port}", id="another-address"),
        pytest.param("127.0.0.1:{port}@evil.example", id="user-info"),
        pytest.param("", id="empty"),
    ],
)
def test_admin_request_under_a_host_not_the_servers_is_403_and_changes_nothing(
    admin, server, store, host
):
    before = dump(store)
    response = admin.post(
        "/reset", json={"seed": 5}, headers={"Host": host.format(port=server.port)}
    )
    assert_error(response, 403, 40302)
    assert store.seed == 0 and dump(store) == before


def test_admin_request_without_a_host_is_403(server, mock):
    head = (
        b"GET /__admin/journal HTTP/1.0\r\nAuthorization: Bearer "
        + mock.auth.admin_token().encode()
        + b"\r\n\r\n"
    )
    assert until_closed(server, head).startswith(b"HTTP/1.1 403 ")


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("127.0.0.1:{port}", id="address"),
        pytest.param("localhost:{port}", id="localhost"),
        pytest.param("LOCALHOST:{port}", id="any-case"),
        pytest.param("[::1]:{port}", id="ipv6-loopback"),
    ],
)
def test_admin_request_under_a_loopback_name_at_the_port_is_answered(admin, server, host):
    response = admin.get("/journal", headers={"Host": host.format(port=server.port)})
    assert response.status_code == 200


def test_platform_request_under_another_host_is_answered_by_default(api):
    response = api.get("/personal-access-tokens/ci", headers={"Host": "evil.example"})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "https://evil.example"}, id="other-origin"),
        pytest.param({"Origin": "null"}, id="opaque-origin"),
        pytest.param({"Origin": "http://localhost:3000"}, id="another-local-port"),
        pytest.param({"Sec-Fetch-Site": "cross-site"}, id="cross-site"),
        pytest.param({"Sec-Fetch-Site": "same-site"}, id="same-site"),
    ],
)
def test_admin_request_from_a_page_of_another_origin_is_403(admin, store, headers):
    before = dump(store)
    assert_error(admin.post("/reset", json={"seed": 5}, headers=headers), 403, 40303)
    assert dump(store) == before


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "http://127.0.0.1:{port}"}, id="own-origin"),
        pytest.param({"Sec-Fetch-Site": "same-origin"}, id="same-origin"),
        pytest.param({"Sec-Fetch-Site": "none"}, id="typed-by-the-user"),
    ],
)
def test_admin_request_from_its_own_page_is_answered(admin, server, headers):
    filled = {k: v.format(port=server.port) for k, v in headers.items()}
    assert admin.get("/journal", headers=filled).status_code == 200


@pytest.fixture(scope="module")
def open_server():
    """A mock with CORS open to any origin, checking the host on every path, that also
    answers as `mock.internal` (any port) and `proxy.example:9000`."""
    config = MockConfig(
        cors=["*"], allowed_hosts=["mock.internal", "proxy.example:9000"], host_check="all"
    )
    mock = PlatformMock(config)
    with BackgroundServer(mock) as server:
        yield server


@pytest.fixture
def open_admin(open_server):
    token = open_server.mock.auth.admin_token()
    with http_client(
        base_url=open_server.url + "/__admin", headers={"Authorization": f"Bearer {token}"}
    ) as client:
        yield client


def test_cors_never_applies_to_the_admin_api_even_open_to_any_origin(open_admin, open_server):
    own = {"Origin": f"http://127.0.0.1:{open_server.port}"}
    response = open_admin.get("/journal", headers=own)
    assert response.status_code == 200
    assert not [name for name in response.headers if name.startswith("access-control-")]


@pytest.mark.parametrize("origin", ["https://evil.example", "null"], ids=["other", "opaque"])
def test_a_preflight_to_the_admin_api_is_refused_without_cors_headers(open_admin, origin):
    response = open_admin.options(
        "/reset",
        headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
    )
    assert response.status_code == 403
    assert not [name for name in response.headers if name.startswith("access-control-")]


def test_cors_still_applies_to_the_platform_api(open_server):
    token = open_server.mock.auth.dev_token()
    response = httpx.get(
        open_server.url + CONTROL_PLANE + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {token}", "Origin": "https://app.example"},
    )
    assert response.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("host", "status"),
    [
        pytest.param("mock.internal", 200, id="named-any-port"),
        pytest.param("mock.internal:1234", 200, id="named-other-port"),
        pytest.param("proxy.example:9000", 200, id="named-with-its-port"),
        pytest.param("proxy.example:9001", 403, id="named-other-than-its-port"),
        pytest.param("evil.example", 403, id="not-named"),
    ],
)
def test_allowed_hosts_extend_the_servers_names(open_admin, host, status):
    assert open_admin.get("/journal", headers={"Host": host}).status_code == status


def test_with_host_check_all_every_path_checks_the_host(open_server):
    token = open_server.mock.auth.dev_token()
    before = open_server.mock.journal.call_count
    response = httpx.get(
        open_server.url + CONTROL_PLANE + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {token}", "Host": "evil.example"},
    )
    assert_error(response, 403, 40302)
    assert open_server.mock.journal.call_count == before


@pytest.mark.parametrize(
    ("host", "local", "own"),
    [
        pytest.param("192.168.1.5:8080", ("192.168.1.5", 8080), True, id="its-address"),
        pytest.param(
            "localhost:8080", ("192.168.1.5", 8080), False, id="loopback-name-off-loopback"
        ),
        pytest.param("192.168.1.6:8080", ("192.168.1.5", 8080), False, id="another-address"),
        pytest.param("[fe80::1]:8080", ("fe80::1", 8080), True, id="ipv6-address"),
        pytest.param("127.0.0.1:8080", ("::ffff:127.0.0.1", 8080), True, id="mapped-loopback"),
        pytest.param("localhost:8080", ("127.0.0.2", 8080), True, id="other-loopback"),
        pytest.param("localhost", ("127.0.0.1", 80), True, id="default-port"),
        pytest.param("localhost", ("127.0.0.1", 8080), False, id="default-port-not-its-port"),
        pytest.param("0.0.0.0:8080", ("127.0.0.1", 8080), True, id="unspecified-from-itself"),
        pytest.param("0.0.0.0:8080", ("192.168.1.5", 8080), False, id="unspecified-from-afar"),
    ],
)
def test_a_server_bound_beyond_loopback_answers_at_its_own_address(host, local, own):
    async def nothing(*_: Any) -> None:
        return None

    guard = HostGuard(nothing, "/__admin", [])
    assert guard.own_host(host, local) is own


def test_a_server_bound_to_every_address_answers_loopback_names(mock):
    with BackgroundServer(mock, host="0.0.0.0") as anywhere:
        response = httpx.get(
            f"http://127.0.0.1:{anywhere.port}/__admin/journal",
            headers={
                "Authorization": f"Bearer {mock.auth.admin_token()}",
                "Host": f"localhost:{anywhere.port}",
            },
        )
    assert response.status_code == 200


# -- no write waits on a reader -------------------------------------------------------------


def test_serve_goes_on_answering_while_nobody_reads_its_output():
    process, urls = serve()  # stdout: a pipe read no further than the banner
    try:
        bearer = {"Authorization": f"Bearer {urls['token']}"}
        # Lines of about 8 kB each: five megabytes of log, far past the pipe and the budget.
        query = {"bogus": "x" * 8000}
        with httpx.Client(headers=bearer, timeout=budget(10)) as client:
            statuses = [
                client.get(urls["control"] + "/personal-access-tokens/ci", params=query).status_code
                for _ in range(600)
            ]
        assert statuses == [400] * 600
        journal = httpx.get(
            urls["base"] + "/__admin/journal",
            headers={"Authorization": f"Bearer {urls['admin']}"},
        ).json()
        assert journal["logDropped"] > 0
    finally:
        status, err = stop(process)
    assert status == 0
    dropped = re.search(r"the request log dropped (\d+) line\(s\)", err)
    assert dropped and int(dropped.group(1)) >= journal["logDropped"], err


# -- fixtures: bounded in time and memory at every door ------------------------------------

KEYED = {**os.environ, "PLATFORM_MOCK_SIGNING_KEY": "k" * 32}
WORLD = "tenant: acme\nusers:\n  - email: ada@acme.example\n"
HUGE_DIGITS = "9" * 5000  # past Python's 4,300-digit limit of int()


def token_with(
    *args: str, stdin: Any = subprocess.DEVNULL, timeout: float = budget(60)
) -> subprocess.CompletedProcess:
    """`platform-mock token ARGS` under limits: the cheapest command that loads fixtures."""
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "token", "--no-default-fixtures", *args],
        capture_output=True,
        text=True,
        env=KEYED,
        stdin=stdin,
        timeout=timeout,
        preexec_fn=bounded(),
    )


def _refused(result: subprocess.CompletedProcess, *expected: str) -> None:
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/dev/zero", "it is a device or socket, not a file or a pipe", id="dev-zero"),
        pytest.param("/dev/urandom", "it is a device or socket", id="dev-urandom"),
        pytest.param("/", "it is a directory", id="directory"),
        pytest.param("/nonexistent/world.yaml", "No such file or directory", id="missing"),
    ],
)
def test_fixture_path_that_is_no_file_is_refused_before_reading(path, expected):
    _refused(token_with("--fixtures", path), f"{path}: cannot read fixture file: {expected}")


def test_fixture_file_over_the_cap_is_refused_before_reading(tmp_path):
    sparse = tmp_path / "huge.yaml"
    with open(sparse, "wb") as file:
        file.truncate(65 * 1024 * 1024)  # a size, no data: reading it would take 65 MiB
    _refused(token_with("--fixtures", str(sparse)), f"{sparse}: a fixture is at most 64 MiB")


def test_fixture_pipe_that_never_ends_is_refused_at_the_cap(tmp_path):
    fifo = tmp_path / "world.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        ["sh", "-c", f"yes 'a: b' > {fifo}"], stderr=subprocess.DEVNULL, preexec_fn=bounded()
    )
    try:
        _refused(token_with("--fixtures", str(fifo)), f"{fifo}: a fixture is at most 64 MiB")
    finally:
        writer.kill()
        writer.wait()


def test_fixture_from_a_pipe_is_read_to_its_end():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mock_server",
            "token",
            "--no-default-fixtures",
            "--fixtures",
            "/dev/stdin",
        ],
        input=WORLD,
        capture_output=True,
        text=True,
        env=KEYED,
        timeout=budget(60),
        preexec_fn=bounded(),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(".") == 2  # a JWT


def test_a_named_pipe_nobody_writes_is_refused_within_the_deadline(tmp_path, monkeypatch):
    fifo = tmp_path / "silent.fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(fixtures, "PIPE_SECONDS", 0.2)
    with pytest.raises(fixtures.FixtureError, match="the pipe did not end within"):
        fixtures.read_text(fifo)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            WORLD + f"clusters:\n  - {{name: c, id: {HUGE_DIGITS}}}\n",
            "h.yaml:5: clusters[0].id: an integer of 5000 digits is past the largest integer",
            id="5000-digits",
        ),
        pytest.param(
            WORLD + f"clusters:\n  - {{name: c, id: 0x{'f' * 5000}}}\n",
            "h.yaml:5: clusters[0].id: an integer of about 6021 digits is past the largest",
            id="5000-hex-digits",
        ),
        pytest.param(
            WORLD + "clusters:\n  - {name: c, id: 2024-13-45}\n",
            "h.yaml:5: clusters[0].id: '2024-13-45' cannot be read as a timestamp",
            id="date-that-is-none",
        ),
        pytest.param(
            WORLD + "<<: {clusters: []}\n", "h.yaml:4: not valid YAML: merge keys", id="merge"
        ),
        pytest.param(
            WORLD + "clusters: !!set {a}\n", "h.yaml:4: not valid YAML: the tag", id="set"
        ),
        pytest.param(
            WORLD + "clusters: !x [a]\n", "h.yaml:4: not valid YAML: the tag !x", id="tag"
        ),
        pytest.param(
            WORLD + "? [a]\n: 1\n", "h.yaml:4: not valid YAML: a key must be text", id="key"
        ),
        pytest.param(WORLD + "1: x\n", "h.yaml:4: (document): the key 1 is not text", id="int-key"),
        pytest.param(
            "[" + "1, " * 100_000 + "1]\n",
            "h.yaml: a fixture document must be a mapping",
            id="root-list",
        ),
        pytest.param(
            "x" * 1_000_000 + "\n", "h.yaml: a fixture document must be a mapping", id="root-text"
        ),
        pytest.param(
            WORLD + "---\nusers: []\n", "h.yaml:4: not valid YAML: expected a single", id="two"
        ),
        pytest.param(
            WORLD + "a: " + "[" * 100 + "]" * 100 + "\n", "h.yaml:4: nested more than 64", id="deep"
        ),
    ],
)
def test_fixture_text_that_cannot_be_a_fixture_is_a_field_error(text, expected):
    with pytest.raises(fixtures.FixtureError) as raised:
        fixtures.parse(text, "h.yaml")
    assert str(raised.value).startswith(expected), str(raised.value)


def test_a_huge_integer_in_a_fixture_file_is_one_line_of_status_2(tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text(WORLD + f"clusters:\n  - {{name: c, id: {HUGE_DIGITS}}}\n")
    _refused(
        token_with("--fixtures", str(world)),
        f"{world}:5: clusters[0].id: an integer of 5000 digits is past the largest integer",
    )


@pytest.mark.parametrize("media_type", ["application/json", "application/yaml"])
def test_a_huge_integer_in_an_uploaded_fixture_is_a_400(admin, store, media_type):
    before = dump(store)
    document = '{"clusters": [{"name": "c", "id": ' + HUGE_DIGITS + "}]}"
    response = admin.post("/fixtures", content=document, headers={"Content-Type": media_type})
    body = assert_error(response, 400, 40001)
    assert "an integer of 5000 digits" in body["message"]
    assert "set_int_max_str_digits" not in response.text
    assert dump(store) == before


def _runs_document(runs: int, *, tail: str = "") -> str:
    """A YAML document of one job of `runs` runs, and `tail` after it."""
    lines = [
        "applications:",
        "  - {name: big, type: job, workspace: ml-team, deployments: "
        "[{manifest: {image: {type: image, image_uri: 'r/b:1'}, trigger: {type: manual}}}],",
        "     runs: [",
    ]
    lines += [
        "       {status: FAILED, createdAt: '2025-01-01T00:00:00Z', durationSeconds: 5},"
    ] * runs
    lines.append("     ]}")
    return "\n".join(lines) + "\n" + tail


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        pytest.param(
            "applications: []\n",
            "request body:30005: not valid YAML: the key 'applications' appears twice",
            id="repeated-key-at-the-end",
        ),
        pytest.param(
            "x: &a 1\ny: *a\n",
            "request body:30006: not valid YAML: the alias *a is not allowed",
            id="alias-at-the-end",
        ),
        pytest.param(
            "users: [{email: 5}]\n",
            "request body:30005: users[0].email: 5 is not of type 'string'",
            id="one-bad-record-at-the-end",
        ),
    ],
)
def test_a_big_upload_refused_late_is_a_400_with_its_line(admin, store, tail, expected):
    before = dump(store)
    document = _runs_document(30_000, tail=tail)  # about 2 MB
    response = admin.post(
        "/fixtures", content=document, headers={"Content-Type": "application/yaml"}, timeout=60
    )
    body = assert_error(response, 400, 40001)
    assert body["message"].startswith(f"Fixture document is not valid: {expected}")
    assert dump(store) == before


def test_the_mock_answers_while_a_big_upload_is_read(admin, server, monkeypatch):
    document = _runs_document(30_000, tail="users: [{email: 5}]\n")
    reading: dict[str, float] = {}
    parse = fixtures.parse

    def timed_parse(text: str, source: str) -> fixtures.Fixture:
        reading["start"] = time.monotonic()
        try:
            return parse(text, source)
        finally:
            reading["end"] = time.monotonic()

    monkeypatch.setattr(fixtures, "parse", timed_parse)
    upload: dict[str, Any] = {}
    sender = threading.Thread(
        target=lambda: upload.setdefault(
            "response",
            admin.post(
                "/fixtures",
                content=document,
                headers={"Content-Type": "application/yaml"},
                timeout=budget(60),
            ),
        )
    )
    answered: list[float] = []
    sender.start()
    with http_client(base_url=server.url) as other:
        while sender.is_alive():
            if other.get("/docs/").status_code == 200:
                answered.append(time.monotonic())
    sender.join()
    assert upload["response"].status_code == 400
    assert [t for t in answered if reading["start"] < t < reading["end"]]


def test_big_uploads_sent_together_are_read_one_at_a_time_and_all_answered(admin, store):
    # Each over 1 MiB of JSON: read and checked off the event loop, one at a time.
    documents = [
        json.dumps(
            {
                "users": [
                    {"email": f"u{n}-{i}@acme.example", "displayName": "x" * 1000}
                    for i in range(1200)
                ]
            }
        )
        for n in range(3)
    ]
    assert all(len(document) > 1024 * 1024 for document in documents)
    answers: list[int] = []

    def send(document: str) -> None:
        headers = {"Content-Type": "application/json"}
        answers.append(
            admin.post(
                "/fixtures", content=document, headers=headers, timeout=budget(60)
            ).status_code
        )

    senders = [threading.Thread(target=send, args=(document,)) for document in documents]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    assert answers == [200, 200, 200]
    assert store.identity.find_subject("user", "u2-1199@acme.example") is not None


JOB = "{name: j%d, type: job, workspace: w, deployments: [{manifest: {}}], runs: [{generate: %d}]}"


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            "applications:\n" + "".join(f"  - {JOB % (n, 1_000_000)}\n" for n in range(3)),
            "g.yaml:2: applications: asks for up to 3,000,000 generated runs in all; one "
            "document may ask for at most 1,000,000",
            id="runs",
        ),
        pytest.param(
            "applications:\n" + "  - {generate: 10000, workspace: w}\n" * 2,
            "g.yaml:2: applications: asks for up to 20,000 generated applications in all",
            id="applications",
        ),
        pytest.param(
            "modelResponses: [{generate: 100000}, {generate: 100000}]\n",
            "g.yaml:1: modelResponses: asks for up to 200,000 generated model responses in all",
            id="model-responses",
        ),
    ],
)
def test_a_few_lines_may_not_ask_for_more_generated_records_than_memory_holds(document, expected):
    with pytest.raises(fixtures.FixtureError) as raised:
        fixtures.parse(document, "g.yaml")
    assert str(raised.value).startswith(expected)


def test_many_records_at_fault_are_explained_in_part_and_counted(store):
    document = "tenant: acme\nusers:\n" + "".join(f"  - {{email: {n}}}\n" for n in range(5000))
    with pytest.raises(fixtures.FixtureError) as raised:
        fixtures.parse(document, "many.yaml")
    lines = str(raised.value).splitlines()
    assert lines[0] == "many.yaml:3: users[0].email: 0 is not of type 'string'"
    assert lines[-1].endswith(", and more in records not looked into")
    assert len(lines) == fixtures.MAX_SHOWN_PROBLEMS + 1


# -- signals end what they started -------------------------------------------------------

# `run_command` on its own, in a process of its own, with a short grace before SIGKILL.
RUNNER = """
import os, sys
from mock_server.cli import supervision
supervision.KILL_AFTER_SECONDS = float(sys.argv[1])
sys.exit(supervision.run_command(sys.argv[2:], dict(os.environ)).status)
"""
# A process that says it is ready, ignores SIGTERM (and SIGINT) and sleeps.
STUBBORN = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "signal.signal(signal.SIGINT, signal.SIG_IGN); open(sys.argv[1], 'w').write('ready'); "
    "time.sleep(300)"
)


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(path, process: subprocess.Popen, timeout: float = budget(30)) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "never ready"
        time.sleep(0.02)
    return path.read_text()


def _started(*command: str, grace: float = 1.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(grace), *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=bounded(),
    )


@contextlib.contextmanager
def _reaped(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The process, killed and reaped on the way out if it still runs: a test that fails
    leaves nothing running."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_shells_background_job_does_not_outlive_the_run(tmp_path, sig):
    pid_file = tmp_path / "pid"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mock_server",
            "run",
            "--quiet",
            "--",
            "sh",
            "-c",
            f"sleep 300 & echo $! > {pid_file}; wait",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=bounded(),
    )
    with _reaped(process):
        sleeper = int(_wait_for(pid_file, process))
        process.send_signal(sig)
        _, err = process.communicate(timeout=budget(30))
    assert process.returncode == 128 + sig, err
    assert not _alive(sleeper)


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    ready = tmp_path / "ready"
    process = _started(sys.executable, "-c", STUBBORN, str(ready))
    with _reaped(process):
        _wait_for(ready, process)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=budget(30))
    assert process.returncode == 128 + signal.SIGKILL
    assert "did not stop within 1.0 s of SIGTERM: killed (SIGKILL)" in err


def test_a_second_stop_signal_kills_at_once(tmp_path):
    ready = tmp_path / "ready"
    process = _started(sys.executable, "-c", STUBBORN, str(ready), grace=300)
    with _reaped(process):
        _wait_for(ready, process)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=budget(30))
    assert process.returncode == 128 + signal.SIGKILL
    assert "second stop signal" in err


def test_what_a_command_leaves_running_is_ended_even_if_it_ignores_sigterm(tmp_path):
    ready = tmp_path / "ready"
    pid_file = tmp_path / "pid"
    script = f"{sys.executable} -c '{STUBBORN}' {ready} & echo $! > {pid_file}; exit 3"
    process = _started("sh", "-c", script)
    with _reaped(process):
        _, err = process.communicate(timeout=budget(30))
    assert process.returncode == 3  # the command's own status
    assert not _alive(int(pid_file.read_text()))
    assert "ended what sh left running in its process group" in err


# The session of a terminal: it runs the run (the terminal's foreground job), writes the
# run's status to a file, and stays a while: a session leader that ends hangs up its
# terminal, whose SIGHUP would end what the run left, hiding whether the run ended it.
SESSION = """
import subprocess, sys, time
status = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(status))
time.sleep(30)
"""


def _on_a_terminal(command: list[str], ready: Any, tmp_path: Any) -> int:
    """Run `run_command(command)` as the foreground job of a new pseudo-terminal, type
    Ctrl-C once `ready` has content, and return the run's exit status."""
    import pty

    ended = tmp_path / "status"
    pid, master = pty.fork()
    if pid == 0:  # the child: the terminal is its controlling one, its group the foreground
        runner = [sys.executable, "-c", RUNNER, "5", *command]
        os.execv(sys.executable, [sys.executable, "-c", SESSION, str(ended), *runner])
    try:
        deadline = time.monotonic() + budget(30)
        while not (ready.exists() and ready.read_text()):
            assert time.monotonic() < deadline, "never ready"
            time.sleep(0.02)
        os.write(master, b"\x03")  # Ctrl-C, as typed
        while not (ended.exists() and ended.read_text()):
            assert time.monotonic() < deadline, "the run did not end"
            if select.select([master], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):  # what it prints: it never waits on us
                    os.read(master, 4096)
        return int(ended.read_text())
    finally:
        os.close(master)
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


# Counts the SIGINTs it gets: it writes `ready`, waits for one, leaves time for a second,
# and writes how many came.
COUNTER = """
import signal, sys, time
seen = []
signal.signal(signal.SIGINT, lambda *_: seen.append(1))
open(sys.argv[1], "w").write("ready")
deadline = time.monotonic() + 20
while not seen and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(0.5)
open(sys.argv[1], "w").write(str(len(seen)))
sys.exit(5)
"""


def test_ctrl_c_on_a_terminal_reaches_the_command_once(tmp_path):
    counted = tmp_path / "count"
    status = _on_a_terminal([sys.executable, "-c", COUNTER, str(counted)], counted, tmp_path)
    assert status == 5
    assert counted.read_text() == "1"


def test_ctrl_c_on_a_terminal_leaves_no_background_job(tmp_path):
    pid_file = tmp_path / "pid"
    command = ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"]
    status = _on_a_terminal(command, pid_file, tmp_path)
    assert status == 128 + signal.SIGINT
    assert not _alive(int(pid_file.read_text()))


# -- options checked alike everywhere -------------------------------------------------------


@pytest.fixture
def refused(capsys, monkeypatch) -> Callable[..., str]:
    """`serve --port 0 ARGS` in this process, which must refuse them before serving (status
    2): its one line on stderr. (Options only: the doors that read files run in a child.)"""

    def served(args: Any) -> int:
        raise AssertionError(f"served with {args}")

    monkeypatch.setattr(cli, "serve", served)

    def refuse(*args: str) -> str:
        assert cli.main(["serve", "--port", "0", *args]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "Traceback" not in err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("platform-mock: "), err
        return lines[0]

    return refuse


def test_a_report_target_that_is_a_pipe_is_refused_before_serving(refused, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    line = refused("--report", f"json={fifo}")
    assert (
        line
        == f"platform-mock: --report: {fifo} is not a regular file (a pipe, a device or a socket)"
    )


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_report_target_that_is_a_device_is_refused_before_serving(refused, device):
    assert "is not a regular file" in refused("--report", f"text={device}")


def test_a_report_file_name_over_255_bytes_is_one_line_of_usage_error(refused, tmp_path):
    long_name = tmp_path / ("r" * 300 + ".json")
    line = refused("--report", str(long_name))
    assert line.startswith("platform-mock: --report: ") and line.endswith("File name too long")


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_two_report_formats_through_a_link_to_one_file_are_refused(refused, tmp_path, link):
    target = tmp_path / "report.json"
    target.write_text("{}")
    other = tmp_path / "other.txt"
    (os.symlink if link == "symlink" else os.link)(target, other)
    line = refused("--report", str(target), "--report", f"text={other}")
    assert (
        line
        == f"platform-mock: --report: the json and text reports would both be written to {other}"
    )


def test_a_report_through_a_dangling_link_to_another_target_is_refused(refused, tmp_path):
    other = tmp_path / "other.txt"
    os.symlink(tmp_path / "report.json", other)  # to a file not written yet
    line = refused("--report", str(tmp_path / "report.json"), "--report", f"text={other}")
    assert "would both be written to" in line


def test_a_report_over_a_fixture_file_is_refused(refused, tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text("users: []\n")
    line = refused("--fixtures", str(world), "--report", f"json={world}")
    assert line == f"platform-mock: --report: {world} is the fixture file {world}"


def test_writing_a_report_over_a_pipe_made_since_the_start_fails_at_once(tmp_path):
    fifo = tmp_path / "late.fifo"
    os.mkfifo(fifo)
    script = (
        "import sys; from pathlib import Path; from mock_server.reports import report_files\n"
        "try:\n"
        f"    report_files.write({{}}, {{'json': Path({str(fifo)!r})}})\n"
        "except OSError as exc:\n"
        "    print('refused', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=budget(30),
        preexec_fn=bounded(),
    )
    assert done.stdout.startswith("refused"), done.stderr


@pytest.mark.parametrize(
    "seed", ["-1", "9007199254740992", "99999999999999999999999"], ids=["negative", "2^53", "huge"]
)
def test_a_seed_outside_0_to_2_53_minus_1_is_a_usage_error(capsys, seed):
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--port", "0", "--seed", seed])
    assert exited.value.code == 2
    assert "a seed is a whole number from 0 to 2^53 - 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("seed", "status"),
    [
        pytest.param(-1, 400, id="negative"),
        pytest.param(2**53, 400, id="2^53"),
        pytest.param(2**53 - 1, 200, id="2^53-1"),
        pytest.param("5", 400, id="text"),
        pytest.param(True, 400, id="boolean"),
    ],
)
def test_the_admin_api_takes_the_seeds_the_command_line_takes(admin, store, seed, status):
    assert admin.post("/reset", json={"seed": seed}).status_code == status
    assert store.seed == (seed if status == 200 else 0)


def test_a_null_seed_is_no_seed(admin, store):
    assert admin.post("/reset", json={"seed": 7}).status_code == 200
    assert admin.post("/reset", json={"seed": None}).status_code == 200
    assert store.seed == 7


@pytest.mark.parametrize("seed", [-1, 2**53, True], ids=["negative", "2^53", "boolean"])
def test_python_and_the_pytest_plugin_take_the_same_seeds(seed):
    with pytest.raises(ValueError, match="a seed is a whole number"):
        MockConfig(seed=seed).world()
    with pytest.raises(ValueError, match="a seed is a whole number"):
        PlatformMock().reset(seed=seed)  # what the plugin's marker and option do


def test_an_allowed_host_that_names_no_host_is_a_usage_error(refused):
    line = refused("--allowed-host", "evil example")
    assert line.startswith("platform-mock: --allowed-host 'evil example': a host is a name")


# -- connections have timeouts -----------------------------------------------------------


@pytest.mark.parametrize(
    "sent",
    [pytest.param(b"", id="silent"), pytest.param(b"\r\n\r\n", id="line-breaks-only")],
)
def test_a_connection_that_sends_no_request_is_closed_when_idle(impatient, sent):
    assert until_closed(impatient, sent) == b""


def test_a_connection_idle_after_its_response_is_closed(impatient):
    head = b"GET /docs/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    assert until_closed(impatient, head).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"G", id="one-byte"),
        pytest.param(b"GET /docs/ HTTP/1.1\r\nHost: 127.0.0.1\r\n", id="half-the-headers"),
    ],
)
def test_a_request_whose_head_does_not_arrive_in_time_is_408(impatient, sent):
    answer = until_closed(impatient, sent)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head
    assert json.loads(body)["code"] == 40801


def test_a_request_whose_body_does_not_arrive_in_time_is_408_and_changes_nothing(impatient):
    mock = impatient.mock
    before = dump(mock.store)
    token = mock.auth.dev_token().encode()
    head = (
        b"PUT /api/svc/v1/artifact-versions/tags HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + token + b"\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"tags": '
    )
    answer = until_closed(impatient, head)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert dump(mock.store) == before


def test_the_documented_timeouts_are_the_commands():
    config = uvicorn_config(PlatformMock())
    assert (config.timeout_keep_alive, config.request_seconds) == (5, 30)
    assert (IDLE_SECONDS, REQUEST_SECONDS) == (5, 30)


def test_serve_keeps_answering_new_clients_while_1200_sit_idle():
    # The server starts with the usual soft limit of 1,024 open files, and a hard one
    # above: it raises its own. This process needs as many for its side of the connections.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1200 + 100
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    process, urls = serve("--quiet", files=4096)
    idle: list[socket.socket] = []
    try:
        host, port = urls["base"].removeprefix("http://").rsplit(":", 1)
        for _ in range(1200):
            idle.append(socket.create_connection((host, int(port)), timeout=budget(10)))
        response = httpx.get(urls["base"] + "/docs/", timeout=budget(10))
        assert response.status_code == 200
    finally:
        for sock in idle:
            sock.close()
        stop(process)


# -- worlds: a cap across every world ---------------------------------------------------------


def test_a_world_makes_no_worlds_of_its_own(admin):
    made = admin.post("/worlds", json={})
    assert made.status_code == 201, made.text
    world = made.json()
    try:
        with http_client(
            base_url=world["adminUrl"], headers={"Authorization": f"Bearer {world['adminToken']}"}
        ) as own:
            body = assert_error(own.post("/worlds", json={}), 404, 40410)
        assert "makes no worlds of its own" in body["message"]
    finally:
        admin.delete(f"/worlds/{world['id']}")


def test_worlds_asked_for_at_once_never_pass_the_cap(server, mock, monkeypatch):
    monkeypatch.setattr(server_module, "MAX_WORLDS", 3)
    statuses: list[int] = []
    made: list[str] = []
    headers = {"Authorization": f"Bearer {mock.auth.admin_token()}"}

    def ask() -> None:
        with http_client(
            base_url=server.url + "/__admin", headers=headers, timeout=budget(60)
        ) as own:
            answer = own.post("/worlds", json={})
        statuses.append(answer.status_code)
        if answer.status_code == 201:
            made.append(answer.json()["id"])

    askers = [threading.Thread(target=ask) for _ in range(6)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    for world_id in made:
        server.worlds.remove(world_id)
    assert sorted(statuses) == [201] * 3 + [400] * 3


# -- event streams: a byte budget per stream, bounded writes ------------------------------------


def test_a_streams_queue_holds_a_budget_of_bytes_not_a_count_of_events():
    async def fill() -> tuple[int, int]:
        hub = live.Hub()
        subscriber = hub.subscribe()
        assert subscriber is not None
        for _ in range(100):  # 10 MB: far fewer events than any count a queue would keep
            hub.publish("faults", {"padding": "x" * 100_000})
        return sum(map(len, subscriber.queue)), subscriber.missed

    held, missed = asyncio.run(fill())
    assert held <= live.QUEUE_BYTES
    assert missed >= 100 - live.QUEUE_BYTES // 100_000


def test_a_resumed_stream_writes_its_backlog_a_part_at_a_time():
    """A reader that stalled while a megabyte of events queued for it is sent them in writes
    of at most WRITE_BYTES, each waiting on the reader, never in one write of the queue."""
    hub = live.Hub()
    written: list[int] = []

    async def stream() -> None:
        leave = asyncio.Event()
        stalled = asyncio.Event()

        async def receive() -> Message:
            await leave.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                written.append(len(message["body"]))
                if len(written) == 1:  # the hello: the reader stalls while events queue
                    await stalled.wait()

        scope = {
            "type": "http",
            "method": "GET",
            "extensions": {ROUTING_CONTEXT: {"operation_id": events.OPERATION}},
        }

        async def no_other_layer(scope: Scope, receive: Receive, send: Send) -> None:
            raise AssertionError("the stream went past its own layer")

        stream = events.EventStream(no_other_layer, hub)
        task = asyncio.ensure_future(stream(scope, receive, send))
        while not hub.subscribers:
            await asyncio.sleep(0)
        for _ in range(60):  # about 1 MB, within the queue's budget
            hub.publish("faults", {"padding": "x" * 16_000})
        stalled.set()  # the reader reads again
        deadline = time.monotonic() + budget(30)
        while sum(written) < 60 * 16_000:
            assert time.monotonic() < deadline, written
            await asyncio.sleep(0.01)
        leave.set()
        await task

    asyncio.run(stream())
    assert len(written) > 2 and max(written[1:]) <= live.WRITE_BYTES


# -- drift: every answer of the target bounded in bytes and in time -----------------------------


class HostileTarget(PlatformMock):
    """A platform that keeps the contract, but answers `min-cli-version` with `ANSWER`: 256
    MiB at once, a byte every 0.5 s, or JSON of 300,000 values in 1 MB."""

    answer = "huge"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].endswith("/min-cli-version"):
            return await super().__call__(scope, receive, send)
        values = b"[" + b"{}," * 299_999 + b"{}]"
        length = {"huge": 256 * 1024 * 1024, "trickle": 10_000}.get(self.answer, len(values))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(length).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if self.answer == "values":
            await send({"type": "http.response.body", "body": values})
            return None
        chunk, step = (b"0" * (1024 * 1024), 0.0) if self.answer == "huge" else (b"0", 0.5)
        gone = asyncio.ensure_future(events._disconnected(receive))
        try:
            for _ in range(length // len(chunk)):
                if gone.done():  # the proxy stopped reading: the answer ends with it
                    return None
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await asyncio.sleep(step)
            await send({"type": "http.response.body", "body": b""})
        finally:
            gone.cancel()
        return None


@pytest.fixture(scope="module")
def hostile_target() -> Iterator[BackgroundServer]:
    with BackgroundServer(HostileTarget()) as served:
        yield served


def _drift_against(served: BackgroundServer, answer: str, tmp_path, *options: str) -> tuple:
    """`platform-mock drift` under limits against the hostile target: its exit status, and
    its report's entry of getMinCliVersion (the budget of time is generous: an unbounded
    drift, here, would take hours)."""
    assert isinstance(served.mock, HostileTarget)
    served.mock.answer = answer
    report = tmp_path / "drift.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "mock_server", "drift", "--target", served.url,
            "--report", f"json={report}", *options,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "TFY_API_KEY": served.coordinates.token or ""},
        timeout=CPU_SECONDS,
        preexec_fn=bounded(),
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(report.read_text())["operations"]["getMinCliVersion"]


@pytest.mark.parametrize(
    ("answer", "options", "kind"),
    [
        pytest.param("huge", [], "too large", id="256-mib"),
        pytest.param("values", [], "too large", id="300000-values-in-1-mb"),
        pytest.param("trickle", ["--timeout", "2"], "too slow", id="a-byte-every-half-second"),
    ],
)
def test_a_hostile_answer_is_the_targets_failure_never_drift(
    hostile_target, tmp_path, answer, options, kind
):
    status, operation = _drift_against(hostile_target, answer, tmp_path, *options)
    assert [failure["kind"] for failure in operation["failures"]] == [kind]
    assert (status, operation["differences"], operation["statuses"]) == (4, [], {kind: 1})


def test_the_proxy_passes_an_answer_of_too_many_values_on_unchecked(hostile_target):
    assert isinstance(hostile_target.mock, HostileTarget)
    hostile_target.mock.answer = "values"
    proxy = forward.Proxy(hostile_target.url)
    with forward.BackgroundProxy(proxy) as front:
        answer = httpx.get(front.url + CONTROL_PLANE + "/min-cli-version", timeout=budget(60))
    assert (answer.status_code, len(answer.content)) == (200, 3 * 300_000 + 1)
    last = proxy.journal.last
    assert isinstance(last, ProxiedExchange) and last.unchecked


# -- serve --watch: path errors said as an edit refused, and the watcher goes on ---------------

WATCH_SECONDS = 60.0  # generous: a reload takes a fraction of a second


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WATCH_SECONDS
    while not check():
        assert time.monotonic() < deadline, f"not within {WATCH_SECONDS:g} s: {what}"
        time.sleep(0.05)


@pytest.fixture
def watching(tmp_path) -> Iterator[Watched]:
    folder = tmp_path / "world"
    folder.mkdir()
    path = folder / "people.yaml"
    path.write_text(DANA)
    found = Watched(path)
    found.watcher.start()
    assert found.watcher.ready.wait(WATCH_SECONDS)
    yield found
    found.watcher.stop()


def _erin_loads(watched: Watched) -> None:
    watched.edit(DANA_AND_ERIN)
    _until(lambda: "erin@acme.example" in watched.users(), "a valid edit loaded")


def test_a_symlink_loop_beside_the_files_leaves_the_watcher_watching(watching):
    os.symlink("loop.yaml", watching.path.parent / "loop.yaml")
    _erin_loads(watching)
    assert watching.complaints == []


@pytest.mark.parametrize(
    ("unreadable", "said"),
    [
        pytest.param(
            lambda path: os.symlink(path.name, path), "Too many levels of symbolic links", id="loop"
        ),
        pytest.param(lambda path: path.mkdir(), "it is a directory", id="directory"),
    ],
)
def test_a_fixture_file_that_cannot_be_read_is_said_as_an_edit_refused(watching, unreadable, said):
    watching.path.unlink()
    unreadable(watching.path)
    _until(lambda: any(said in c for c in watching.complaints), "the problem said")
    outcome = watching.mock.live.last_reload
    assert outcome is not None and outcome["reloaded"] is False
    assert "dana@acme.example" in watching.users()  # the world as it was
    (os.rmdir if watching.path.is_dir() else os.unlink)(watching.path)
    _erin_loads(watching)


def test_a_folder_that_is_gone_is_said_and_watched_again_when_it_is_back(watching):
    shutil.rmtree(watching.path.parent)
    _until(lambda: any("the folder is gone" in c for c in watching.complaints), "the folder gone")
    watching.path.parent.mkdir()
    _erin_loads(watching)


def test_a_watcher_that_stops_says_so_on_the_terminal_and_in_the_live_view(tmp_path, monkeypatch):
    def fails(self: FixtureWatcher) -> None:
        raise RuntimeError("the events broke")

    monkeypatch.setattr(FixtureWatcher, "_follow", fails)
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    watched = Watched(path)
    with BackgroundServer(watched.mock) as served:
        watched.watcher.start()
        _until(lambda: bool(watched.complaints), "the stop said")
        world = httpx.get(
            served.url + "/__admin/world",
            headers={"Authorization": f"Bearer {watched.mock.auth.admin_token()}"},
        )
    assert "the fixture watcher stopped (RuntimeError: the events broke)" in watched.complaints[0]
    assert world.status_code == 200, world.text
    assert (world.json()["reload"]["watching"], world.json()["reload"]["reloaded"]) == (
        False,
        False,
    )


# -- in process as over TCP: one rule of limits and framing for every transport -----------------

SECRETS = CONTROL_PLANE + "/secrets/deployments"
BODY = b'{"secretIds": []}'


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


# Each hostile request: its target, headers beside Host, Authorization and Connection, and
# how its body is framed on the wire (a length, or chunks); its answer (status, code), the
# same in process and over TCP, and whether it is journaled.
HOSTILE = [
    pytest.param(SECRETS, [(b"Content-Length", b"17")], "length", 200, None, id="plain"),
    pytest.param(SECRETS, [(b"Transfer-Encoding", b"chunked")], "chunks", 200, None, id="chunked"),
    pytest.param(
        SECRETS,
        [(b"Transfer-Encoding", b"gzip, chunked")],
        "chunks",
        200,
        None,
        id="coding-then-chunked",
    ),
    pytest.param(
        SECRETS,
        [(b"Transfer-Encoding", b"chunked"), (b"Content-Length", b"17")],
        "chunks",
        400,
        40006,
        id="transfer-encoding-and-content-length",
    ),
    pytest.param(
        SECRETS, [(b"Transfer-Encoding", b"gzip")], "length", 400, 40006, id="gzip-not-chunked"
    ),
    pytest.param(
        SECRETS,
        [(b"Transfer-Encoding", b"chunked"), (b"Transfer-Encoding", b"chunked")],
        "chunks",
        400,
        40006,
        id="chunked-twice",
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), (b"Content-Length", b"17")],
        "length",
        400,
        40006,
        id="content-length-twice",
    ),
    pytest.param(
        SECRETS, [(b"Content-Length", b"+17")], "length", 400, 40006, id="content-length-signed"
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), (b"X-Note", b"a\x01b")],
        "length",
        400,
        40006,
        id="control-character-in-a-value",
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), (b"X Note", b"a")],
        "length",
        400,
        40006,
        id="space-in-a-name",
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), (b"X-Note", b"a\tb\xe9")],
        "length",
        200,
        None,
        id="tab-and-8-bit-in-a-value",
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), (b"X-Padding", b"a" * 100 * 1024)],
        "length",
        431,
        43101,
        id="a-100-kib-header",
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), *((b"X-Padding-%d" % n, b"a" * 7 * 1024) for n in range(10))],
        "length",
        431,
        43101,
        id="ten-7-kib-headers",
    ),
    pytest.param(
        SECRETS,
        [(b"Content-Length", b"17"), *((b"X-%d" % n, b"a") for n in range(100))],
        "length",
        431,
        43101,
        id="over-100-headers",
    ),
    pytest.param(
        SECRETS + "?q=" + "x" * 17 * 1024,
        [(b"Content-Length", b"17")],
        "length",
        414,
        41401,
        id="a-17-kib-query",
    ),
    pytest.param(
        CONTROL_PLANE + "/jobs/" + "x" * 60_000 + "/runs",
        [],
        "length",
        414,
        41401,
        id="a-60-kb-path",
    ),
]


def _answered(status: int, body: bytes, mock: PlatformMock, before: int) -> tuple:
    """What a transport made of a request: its status, its error code, and the journal's
    entry of it (None when it was not journaled)."""
    code = json.loads(body).get("code") if status >= 400 else None
    entries = list(mock.journal)[before:]
    assert len(entries) <= 1
    entry = [(e.method, e.path, e.status, e.code, e.operation_id) for e in entries]
    return status, code, entry[0] if entry else None


def _over_tcp(server, mock, target: str, headers: list, framing: str) -> tuple:
    before = len(mock.journal)
    body = _chunked(BODY) if framing == "chunks" else BODY
    head = (
        b"POST "
        + target.encode()
        + b" HTTP/1.1\r\n"
        + b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    )
    answer = until_closed(server, head + b"\r\n" + body)
    status_line, _, rest = answer.partition(b"\r\n")
    return _answered(int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2], mock, before)


def _in_process(mock, target: str, headers: list) -> tuple:
    before = len(mock.journal)
    request = httpx.Request(
        "POST", IN_PROCESS_URL + target, headers=headers, stream=httpx.ByteStream(BODY)
    )
    with httpx.Client(transport=MockTransport(mock)) as client:
        response = client.send(request)
    return _answered(response.status_code, response.content, mock, before)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(("target", "extra", "framing", "status", "code"), HOSTILE)
def test_a_hostile_request_is_answered_alike_in_process_and_over_tcp(
    server, mock, target, extra, framing, status, code
):
    headers = [
        (b"Host", b"127.0.0.1:%d" % server.port),
        (b"Authorization", b"Bearer " + mock.auth.dev_token().encode()),
        (b"Content-Type", b"application/json"),
        (b"Connection", b"close"),
        *extra,
    ]
    tcp = _over_tcp(server, mock, target, headers, framing)
    in_process = _in_process(mock, target, headers)
    assert tcp == in_process
    assert tcp[:2] == (status, code)
    assert (tcp[2] is None) == (status != 200)  # a refusal before the mock is not journaled


def test_in_process_a_body_its_content_length_misstates_is_not_sent_as_over_tcp(mock):
    with (
        httpx.Client(transport=MockTransport(mock), base_url=IN_PROCESS_URL) as client,
        pytest.raises(httpx.LocalProtocolError, match="Too little data"),
    ):
        client.post(SECRETS, content=BODY, headers={"Content-Length": "18"})


@pytest.mark.parametrize("size", [70_000, 1_000_000], ids=["70-kb", "1-mb"])
def test_a_target_past_what_the_parser_holds_is_414_over_tcp(server, size):
    """Past 64 KiB, uvicorn's parser could not read a target at all (400); the connection
    holds its first bytes only, for the limits to judge (httpx sends no URL that long)."""
    line = b"GET " + SECRETS.encode() + b"?q=" + b"x" * size + b" HTTP/1.1\r\n"
    answer = until_closed(server, line + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 414 ")
    assert json.loads(body)["code"] == 41401


def test_a_head_that_never_ends_is_refused_once_past_what_the_connection_holds(server):
    head = b"GET /docs/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 1_000_000
    answer = until_closed(server, head)
    assert answer.startswith(b"HTTP/1.1 431 ")
