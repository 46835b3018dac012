"""Shared fixtures: the project's own pytest plugin's server (one per session, over loopback
HTTP), reset before each test, with clients and helpers on top."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server import PlatformMock
from mock_server.fixtures.loader import Fixture
from mock_server.http.server import BackgroundServer
from mock_server.pytest_plugin import MockHandle, ssl_context
from mock_server.services.auth import Signer, new_key
from mock_server.state import Store
from tests.budget import budget

CONTROL_PLANE = "/api/svc/v1"

# The servers the tests start record themselves for `platform-mock token`
# (mock_server/cli/runtime.py): in a directory of this process's own, not in the user's.
os.environ["PLATFORM_MOCK_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="platform-mock-runtime-")
atexit.register(shutil.rmtree, os.environ["PLATFORM_MOCK_RUNTIME_DIR"], ignore_errors=True)
# The suite starts hundreds of processes of the mock (serve, run, the command line, pytest
# sessions): each keeps the bytecode it compiles, as a user's interpreter does, where the
# environment says not to (a CI image's PYTHONDONTWRITEBYTECODE), instead of compiling the
# mock's modules again at every start.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="session")
def server(platform_mock_server: BackgroundServer) -> BackgroundServer:
    return platform_mock_server


@pytest.fixture
def mock(platform_mock: MockHandle) -> PlatformMock:
    """The served mock, with its world, journal and faults reset before the test."""
    return platform_mock.mock


@pytest.fixture
def store(mock: PlatformMock) -> Store:
    return mock.store


@pytest.fixture
def token(mock: PlatformMock) -> str:
    """A development token of the default user (alice, tenant admin)."""
    return mock.auth.dev_token()


def new_store(seed: int, documents: list[Fixture]) -> Store:
    """A world of its own, built from checked fixture documents, signing with a key of its
    own (as a mock's store does)."""
    return Store(seed, documents, Signer(new_key()))


def until_closed(server: BackgroundServer, sent: bytes) -> bytes:
    """Everything a server answers on a connection that sends `sent` (byte for byte: httpx
    always sends a Host) and then waits."""
    with socket.create_connection((server.host, server.port), timeout=budget(10)) as sock:
        sock.sendall(sent)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.fixture(scope="module")
def impatient() -> Iterator[BackgroundServer]:
    """A mock that closes idle connections after 0.3 s and waits 0.6 s for a request."""
    with BackgroundServer(PlatformMock(), idle_seconds=0.3, request_seconds=0.6) as server:
        yield server


@pytest.fixture(scope="module")
def inner_runs() -> dict[str, Any]:
    """The inner pytest sessions a test module has run, by key (`tests.inner.run_once`)."""
    return {}


def http_client(**options) -> httpx.Client:
    """An httpx client sharing the plugin's SSL context, which a new client would otherwise
    build anew at a cost of about 20 ms."""
    return httpx.Client(verify=ssl_context(), **options)


def token_of(mock: PlatformMock, email: str) -> str:
    """A token for another user of the fixtures."""
    return mock.auth.dev_token(mock.store.identity.subject_named("user", email))


@pytest.fixture
def api(server: BackgroundServer, token: str) -> Iterator[httpx.Client]:
    """httpx client of the control plane, authenticated as the default user."""
    with http_client(
        base_url=server.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        yield client


@pytest.fixture
def gateway(server: BackgroundServer, token: str) -> Iterator[httpx.Client]:
    """httpx client of the gateway, authenticated as the default user."""
    with http_client(
        base_url=server.gateway_url, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        yield client


@pytest.fixture
def admin(server: BackgroundServer, mock: PlatformMock) -> Iterator[httpx.Client]:
    """httpx client of the admin API, with the admin token."""
    with http_client(
        base_url=server.url + "/__admin",
        headers={"Authorization": f"Bearer {mock.auth.admin_token()}"},
    ) as client:
        yield client


@pytest.fixture
def anonymous(server: BackgroundServer, mock: PlatformMock) -> Iterator[httpx.Client]:
    """httpx client of the whole server with no credentials."""
    with http_client(base_url=server.url) as client:
        yield client


@pytest.fixture
def as_user(server: BackgroundServer, mock: PlatformMock) -> Iterator:
    """Factory of control-plane clients authenticated as a given fixture user."""
    clients: list[httpx.Client] = []

    def make(email: str) -> httpx.Client:
        client = http_client(
            base_url=server.url + CONTROL_PLANE,
            headers={"Authorization": f"Bearer {token_of(mock, email)}"},
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def assert_error(response: httpx.Response, status: int, code: int) -> dict:
    """The response is the platform error body with this status and code; returns the body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    platform = {"statusCode", "message", "code", "details"}
    # The gateway speaks OpenAI's dialect too (its `error` object); the rest the platform's.
    try:
        path = response.request.url.path
    except RuntimeError:  # a response read off a socket by hand: no request of httpx's
        path = ""
    on_gateway = path == "/gateway" or path.startswith("/gateway/")
    assert set(body) == (platform | {"error"} if on_gateway else platform), body
    assert (body["statusCode"], body["code"]) == (status, code), body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], list)
    if on_gateway:
        error = body["error"]
        assert set(error) == {"message", "type", "param", "code"}, error
        assert error["message"] == body["message"]
        assert isinstance(error["code"], str) and isinstance(error["type"], str), error
    return body


# Modules whose tests share an expensive module-scoped setup (a virtual environment, a built
# wheel, inner pytest sessions, a command run once): under `-n`, each runs on one worker,
# which builds it once, and they are collected first, so that their long setups overlap
# the rest of the suite instead of trailing it.
SHARED_SETUP_FIRST = (
    "test_truefoundry_library.py",
    "test_gateway_clients.py",  # the library's environment too, for `openai` 2.x
    "test_readme_examples.py",
    "test_packaging.py",
    "test_pytest_plugin.py",
    "test_plugin_ci.py",
    "test_run_command.py",
    "test_run_ci.py",
    "test_drift_command.py",
    "test_drift.py",
    "test_hostile_texts.py",
    "test_recording.py",
    "test_live_view_browser.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    last = len(SHARED_SETUP_FIRST)
    items.sort(  # stable: each module keeps its own order
        key=lambda item: (
            SHARED_SETUP_FIRST.index(item.path.name)
            if item.path.name in SHARED_SETUP_FIRST
            else last
        )
    )


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker more than the cores this process may run on. A fifth to a third
    of a worker's time is spent waiting on the processes its tests start (a server coming
    up, Chromium rendering Swagger UI, pip), which another worker fills: on 2 quiet cores,
    with the environments kept, the suite took 4:16 with 2 workers, 3:48 with 3 and 4:03
    with 4. PYTEST_XDIST_AUTO_NUM_WORKERS, when set, still decides."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if hasattr(os, "sched_getaffinity"):  # Linux: the cores this process may run on
        return len(os.sched_getaffinity(0)) + 1
    return (os.cpu_count() or 1) + 1


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n` alone (`--dist load`) hands tests out one by one, except each module of
    SHARED_SETUP_FIRST, handed out whole. An explicit other `--dist` is kept."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedSetupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module.rsplit("/", 1)[-1] in SHARED_SETUP_FIRST else nodeid

    return SharedSetupScheduling(config, log)


@pytest.fixture(scope="session")
def junit_schema(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The JUnit XML schema that Jenkins, GitLab and pytest's own tests validate against
    (junit-10.xsd), taken from the source distribution of the pytest installed (the package
    index is the one place a fresh machine reaches), and kept in pytest's cache."""
    import xmlschema

    # In pytest's cache when it has one (-p no:cacheprovider: this session's own folder).
    folder = (
        pytestconfig.cache.mkdir("junit-schema")
        if getattr(pytestconfig, "cache", None) is not None
        else tmp_path_factory.mktemp("junit-schema")
    )
    kept = folder / f"junit-10-pytest-{pytest.__version__}.xsd"
    if not kept.exists():
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                 ":all:", "-d", scratch, f"pytest=={pytest.__version__}"],
                check=True, timeout=budget(300),
            )  # fmt: skip
            (archive,) = Path(scratch).glob("pytest-*.tar.gz")
            with tarfile.open(archive) as sdist:
                member = sdist.extractfile(
                    f"pytest-{pytest.__version__}/testing/example_scripts/junit-10.xsd"
                )
                assert member is not None
                # Written whole, then renamed: another worker may be reading it.
                part = kept.with_name(f"{kept.name}.{os.getpid()}")
                part.write_bytes(member.read())
                os.replace(part, kept)
    return xmlschema.XMLSchema(str(kept))
