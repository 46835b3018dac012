"""pytest plugin: one platform mock per test session, and a clean world for every test.

Installing the package registers it (entry point `pytest11`). The `platform_mock` fixture
resets the world, the journal and the faults *before* each test and hands the test
everything it needs; the `platform_mock` marker picks extra fixture files and a seed for
one test. With `--platform-mock-report` the session writes the contract report (in the
formats `mock_server.reports.report_files` names); with `--platform-mock-fail-on-violation` a
request that broke the contract fails the test that sent it, and with
`--platform-mock-min-coverage` too little of the contract exercised fails the session.
Under pytest-xdist each worker has its own server; the controller merges their reports into
one, which it writes, prints and judges as a single session would.

Under `platform-mock run` (its coordinates in the environment), the session uses run's mock
instead of serving one: every test, whether it asks for `platform_mock` or not, is named to
that mock as it starts, so its requests are reported as its own, and run's
`--fail-on-violation` fails the test that broke the contract. A pytest-xdist worker there
gets a world of its own served beside run's mock, and its environment names that world.
The run writes the reports and the CI summary, and gives the verdict.

A session that never asks for the fixture pays nothing: the web stack (and the deprecation
warnings some of its imports raise, which are not the user's to act on) is imported only
when the first test asks for the mock.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import json
import os
import re
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import pytest

if TYPE_CHECKING:
    import ssl

    import httpx

    from mock_server.core.coordinates import Coordinates
    from mock_server.core.jsonvalue import JsonObject
    from mock_server.fixtures.loader import Fixture
    from mock_server.http.mock import PlatformMock
    from mock_server.http.remote import RemoteMock
    from mock_server.http.server import BackgroundServer
    from mock_server.reports.report import ContractReport, Report
    from mock_server.services.faults import Fault
    from mock_server.services.journal import Entry, Journal
    from mock_server.state import Store

# Read of `platform-mock run`'s environment without importing the mock
# (mock_server.core.coordinates).
FAIL_ON_VIOLATION = "PLATFORM_MOCK_FAIL_ON_VIOLATION"
_BACKEND = pytest.StashKey["_Backend"]()
MARKER_OPTIONS = frozenset({"fixtures", "seed", "expect_violations"})
# Under pytest-xdist: each worker's report, handed to the controller, and their merge.
_WORKER_OUTPUT = "platform_mock_report"
_WORKER_REPORTS = pytest.StashKey[list["Report"]]()
_OUTCOME = pytest.StashKey["_Outcome"]()
_LOST = pytest.StashKey[int]()  # workers that went down without handing a report over
_REPORTED = pytest.StashKey[set[int]]()  # a test's violating requests its report has named
_TARGETS = pytest.StashKey[dict[str, Path]]()  # where each format of the report goes
_MIN_COVERAGE = pytest.StashKey[float]()


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    """Around an import of the mock on first use: without the deprecation warnings its
    third-party imports raise (Connexion's use of jsonschema's RefResolver), which are for
    the mock's maintainers and would show in every user's warnings summary."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        yield


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One SSL context for every client the plugin builds: httpx otherwise loads the
    certificate bundle for each new client (about 20 ms), even for plain-HTTP URLs. It is
    httpx's own default context, made once; pass it as `verify=` to share it, and build
    another for client certificates rather than changing this one."""
    import httpx

    return httpx.create_ssl_context()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("platform-mock", "platform API mock")
    group.addoption(
        "--platform-mock-seed",
        default=None,
        help="seed of the mock's world (default: ini platform_mock_seed, else 0)",
    )
    group.addoption(
        "--platform-mock-fixtures",
        action="append",
        default=[],
        metavar="PATH",
        help="fixture file loaded after the defaults in every test (repeatable)",
    )
    group.addoption(
        "--platform-mock-report",
        action="append",
        default=[],
        metavar="DIR|FILE|FORMAT=FILE",
        help="write the contract report: into a directory (contract-report.json, .txt, .xml "
        "and .md), to a file whose suffix names its format, or as FORMAT=FILE with FORMAT one "
        "of json, text, junit, markdown (repeatable)",
    )
    group.addoption(
        "--platform-mock-fail-on-violation",
        action="store_true",
        help="fail each test that sent a request that broke the contract, and the session",
    )
    group.addoption(
        "--platform-mock-min-coverage",
        metavar="PERCENT",
        default=None,
        help="fail the session if its requests exercised less than PERCENT of the contract's "
        "documented statuses, query parameters and enum values",
    )
    parser.addini(
        "platform_mock_seed", "seed of the mock's world (default: the served world's, else 0)"
    )
    parser.addini(
        "platform_mock_fixtures", "fixture files loaded in every test", type="paths", default=[]
    )


# The plugin's options that take a value, which `--option VALUE` gives as a word of its own.
_VALUED = frozenset(
    {
        "--platform-mock-seed",
        "--platform-mock-fixtures",
        "--platform-mock-report",
        "--platform-mock-min-coverage",
    }
)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    _find_rootdir_again(early_config, args)


def _find_rootdir_again(config: pytest.Config, args: list[str]) -> None:
    """pytest finds its rootdir and ini file before it loads the plugins of installed
    packages: the value of `--platform-mock-report DIR`, not yet known as an option's, counts
    as a path to collect, and a DIR outside the project moves the rootdir (every test id and
    JUnit class name changes) and loses the project's ini file. Here, with the options known,
    they are found again; where they differ, the rootdir, the ini file, its `addopts` and
    what pytest derives from them at that point are set as pytest would have set them.

    This reaches pytest's private parts (`_pytest.config.findpaths.determine_setup`, the
    config's `_rootpath`, `_inipath`, `_inicfg`, `_inicache`, `_parser`, `_validate_args`,
    `_configure_python_path`); where any is gone, pytest's own finding stands.
    tests/test_pytest_plugin.py checks both that they exist and that the rootdir stays."""
    if not any(arg in _VALUED for arg in args):  # only the space form adds words
        return
    try:
        from _pytest.config.findpaths import determine_setup

        known = config.known_args_namespace
        rootpath, inipath, inicfg, ignored = determine_setup(
            inifile=known.inifilename,
            override_ini=known.override_ini,
            args=known.file_or_dir,
            rootdir_cmd_arg=known.rootdir or None,
            invocation_dir=config.invocation_params.dir,
        )
        if (rootpath, inipath) == (config.rootpath, config.inipath):
            return
        had_ini = config.inipath is not None
        config._rootpath, config._inipath = rootpath, inipath
        config._inicfg, config._ignored_config_files = inicfg, ignored
        config._parser.extra_info["rootdir"] = str(rootpath)
        config._parser.extra_info["inifile"] = str(inipath)
        config._inicache.clear()
        if not had_ini:  # the project's addopts were never applied
            added = config._validate_args(config.getini("addopts"), "via addopts config")
            args[:0] = added
            config.pluginmanager.consider_preparse(added, exclude_only=False)
        config.known_args_namespace = config._parser.parse_known_args(
            args, namespace=copy.copy(config.option)
        )
        if config.known_args_namespace.confcutdir is None:
            config.known_args_namespace.confcutdir = str(inipath.parent if inipath else rootpath)
        config._configure_python_path()
    except (ImportError, AttributeError, TypeError):
        return


def pytest_configure(config: pytest.Config) -> None:
    # The options are checked before any test runs, as the command checks them.
    try:
        _session_seed(config)
    except ValueError as exc:
        raise pytest.UsageError(
            f"--platform-mock-seed (or ini platform_mock_seed): {exc}"
        ) from None
    minimum = config.getoption("--platform-mock-min-coverage")
    if minimum is not None:
        try:
            with _quietly():
                from mock_server.reports import report
            config.stash[_MIN_COVERAGE] = report.percentage(minimum)
        except ValueError as exc:
            raise pytest.UsageError(f"--platform-mock-min-coverage: {exc}") from None
    if config.getoption("--platform-mock-report"):
        with _quietly():
            from mock_server.reports import report_files
        try:
            targets = report_files.targets(config.getoption("--platform-mock-report"))
        except report_files.TargetError as exc:
            raise pytest.UsageError(f"--platform-mock-report: {exc}") from None
        for path in targets.values():
            problem = report_files.target_problem(path)
            if problem:
                raise pytest.UsageError(f"--platform-mock-report: {problem}")
        config.stash[_TARGETS] = targets
    config.addinivalue_line(
        "markers",
        "platform_mock(fixtures=[...], seed=N, expect_violations=False): extra fixture files "
        "(relative to the test file) and a seed for this test's platform mock world; "
        "expect_violations=True for a test that breaks the contract on purpose",
    )
    if "PLATFORM_MOCK_ADMIN_TOKEN" in os.environ and not _xdist_controller(config):
        _use_served_mock(config)


def _xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands the tests to pytest-xdist workers and runs none itself."""
    workers = getattr(config.option, "numprocesses", None)
    return not _is_xdist_worker(config) and bool(workers) and config.option.dist != "no"


def _use_served_mock(config: pytest.Config) -> None:
    """Use the mock `platform-mock run` serves around this session: itself, or for a
    pytest-xdist worker a world of its own beside it, which the worker's environment then
    names (`TFY_HOST`, `OPENAI_BASE_URL`, ...) for the clients its tests build from it."""
    with _quietly():
        from mock_server.core.coordinates import Coordinates
        from mock_server.http.remote import RemoteMock
    where = Coordinates.from_environment(os.environ)
    if where is None:
        raise pytest.UsageError(
            "PLATFORM_MOCK_ADMIN_TOKEN is set but the mock's coordinates are not all there "
            "(PLATFORM_MOCK_URL, PLATFORM_MOCK_GATEWAY_URL, PLATFORM_MOCK_SEED): run the "
            "session under platform-mock run, or unset it"
        )
    if not _is_xdist_worker(config):
        config.stash[_BACKEND] = _Remote(where)
        return
    parent = RemoteMock(where, verify=ssl_context())
    world, own = parent.create_world()
    os.environ.update(own.environment())
    config.stash[_BACKEND] = _Remote(own, world, parent)


def pytest_unconfigure(config: pytest.Config) -> None:
    backend = config.stash.get(_BACKEND, None)
    if backend is not None:
        del config.stash[_BACKEND]
        backend.close()


def _fail_on_violation(config: pytest.Config) -> bool:
    """The option, or `platform-mock run --fail-on-violation` around the session."""
    return bool(
        config.getoption("--platform-mock-fail-on-violation")
        or os.environ.get(FAIL_ON_VIOLATION) == "1"
    )


class MarkerOptions(TypedDict, total=False):
    """What a platform_mock marker may set (`MARKER_OPTIONS`)."""

    fixtures: list[str]  # fixture files, relative to the test's module
    seed: int | None
    expect_violations: bool


def _marker_names(item: pytest.Item) -> set[str]:
    """Every option any platform_mock marker of the test names, known or not."""
    return {name for marker in item.iter_markers("platform_mock") for name in marker.kwargs}


def _marker_options(item: pytest.Item) -> MarkerOptions:
    """The options of every platform_mock marker of the test, its class and its module: the
    closest wins for each, so a module can mark every test and one test add its own."""
    options: MarkerOptions = {}
    for marker in reversed(list(item.iter_markers("platform_mock"))):
        # pytest hands a marker's keywords over untyped: each known one is taken as given.
        given = marker.kwargs
        if "fixtures" in given:
            options["fixtures"] = given["fixtures"]
        if "seed" in given:
            options["seed"] = given["seed"]
        if "expect_violations" in given:
            options["expect_violations"] = given["expect_violations"]
    return options


def _expecting(item: pytest.Item) -> bool:
    return bool(_marker_options(item).get("expect_violations", False))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Name the test to the session's mock before anything of it runs, fixtures included:
    its requests are journaled and reported as its own, whether it asks for
    `platform_mock` or calls the mock some other way (the coordinates that `platform-mock
    run` puts in the environment)."""
    backend = item.config.stash.get(_BACKEND, None)
    if backend is not None:
        backend.begin_test(item.nodeid, expecting=_expecting(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """With `--platform-mock-fail-on-violation` (or under `platform-mock run
    --fail-on-violation`), a test that passed but sent a request that broke the contract
    fails, its report naming each such request and the rule it broke: CI's test views
    (JUnit XML) then show which test is at fault. A request sent while tearing down fails
    the teardown. Once the test has ended, it is no longer the mock's current test and its
    fault rules are removed: a fault never outlives the test that armed it."""
    report = yield
    backend = item.config.stash.get(_BACKEND, None)
    if backend is None or call.when == "setup":
        return report
    broken = backend.end_test() if call.when == "teardown" else None
    if not report.passed or not _fail_on_violation(item.config):
        return report
    if broken is None:
        broken = backend.violations(item.nodeid)
    reported = item.stash.setdefault(_REPORTED, set())
    fresh = [entry for entry in broken if entry.seq not in reported]
    if fresh:
        reported.update(entry.seq for entry in fresh)
        report.outcome = "failed"
        report.longrepr = violations_text(fresh)
    return report


def violations_text(entries: list[Any]) -> str:
    """Each request that broke the contract, and every rule it broke (what the client sent
    shown escaped: a test's report is read on terminals and in CI logs)."""
    from mock_server.core import escape

    lines = [f"{len(entries)} request(s) of this test broke the platform API's contract:"]
    for entry in entries:
        lines.append(f"  {escape.text(entry.describe())}: {escape.text(entry.message)}")
        lines += [
            "    "
            + escape.text(f"{d.get('location', '')} {d.get('field', '')}: ")
            + escape.text(d.get("message", ""))
            for d in entry.details
        ]
    lines.append(
        "(--platform-mock-fail-on-violation; mark a test that does so on purpose with "
        "@pytest.mark.platform_mock(expect_violations=True))"
    )
    return "\n".join(lines)


def _session_seed(config: pytest.Config) -> int | None:
    """The seed the session asks for (option, else ini), or None where it asks for none: the
    served world's own (0 for a mock of the session's own)."""
    given = config.getoption("--platform-mock-seed")
    if given is None:
        given = config.getini("platform_mock_seed") or None
    if given is None:
        return None
    # The one seed rule of the command line and the admin API (mock_server.state.sources),
    # read without importing the mock: ASCII digits, from 0 to 2^53 - 1.
    if not re.fullmatch(r"[0-9]+", given) or int(given) > 2**53 - 1:
        raise ValueError(f"a seed is a whole number from 0 to 2^53 - 1, not {given!r}")
    return int(given)


class _Backend(Protocol):
    """The session's mock as the plugin drives it: in this process, or (under `platform-mock
    run`) in another, through its admin API. `_Local` and `_Remote` are the two; what a
    backend must do itself is left bare here, and mypy refuses a backend that lacks one."""

    seed: int  # of the world the mock started with, which each test starts from
    in_process: bool = False  # whether clients reach the mock without a socket

    @property
    def coordinates(self) -> Coordinates:
        """Where the mock is served (for a mock of this process, served from here on)."""
        ...

    @property
    def server(self) -> BackgroundServer | None:
        """The server, when the mock runs in this process (started from here on)."""
        return None

    def http_client(self, **options: Any) -> httpx.Client:
        """A client that reaches the mock (in process when it runs here)."""
        import httpx

        options.setdefault("base_url", self.coordinates.url)
        return httpx.Client(verify=ssl_context(), **options)

    def async_http_client(self, **options: Any) -> httpx.AsyncClient:
        import httpx

        options.setdefault("base_url", self.coordinates.url)
        return httpx.AsyncClient(verify=ssl_context(), **options)

    def begin_test(self, name: str, *, expecting: bool) -> None: ...

    def violations(self, test: str) -> list[Entry]: ...

    def end_test(self) -> list[Entry]: ...

    def reset(self, seed: int | None, extra: list[Fixture]) -> None: ...

    def journal(self) -> Journal: ...

    def store(self) -> Store: ...

    def load(self, document: JsonObject) -> None: ...

    def fault(self, operation_id: str, **effect: Any) -> Fault: ...

    def token_for(self, subject: str) -> str: ...

    def token(self) -> str:
        """The default user's token in the world as it is (a marker may re-seed it)."""
        ...

    def report(self) -> Report: ...

    def close(self) -> None: ...


class _Local(_Backend):
    """A mock of the session's own, in this process: its clients call it in process, and it
    is served on a free loopback port once something asks where it is."""

    in_process = True

    def __init__(self, config: pytest.Config):
        paths = [*config.getini("platform_mock_fixtures")]
        paths += config.getoption("--platform-mock-fixtures")
        with _quietly():
            from mock_server.http.mock import MockConfig, PlatformMock
            from mock_server.http.transport import AsyncMockTransport, MockTransport
        self.seed = _session_seed(config) or 0
        self.mock = PlatformMock(MockConfig(seed=self.seed, fixtures=paths))
        self._server: BackgroundServer | None = None
        self._starting = threading.Lock()
        self._transport = MockTransport(self.mock)
        self._async_transport = AsyncMockTransport(self.mock)
        # What is alive now (the web stack, the contract, the session's mock and world) stays
        # alive until the session ends: moved out of the collector's reach, as `serve` does,
        # so no later full collection walks it again. pytest collects twice as it ends and
        # the interpreter once more as it exits, each ~50 ms over these objects: a third of
        # what a session with one in-process test costs over its floor (bench/start.py).
        gc.freeze()

    @property
    def serving(self) -> bool:
        """Whether the mock is served over TCP yet."""
        return self._server is not None

    @property
    def server(self) -> BackgroundServer:
        with self._starting:
            if self._server is None:
                with _quietly():
                    from mock_server.http.server import BackgroundServer

                self._server = BackgroundServer(self.mock).start()
            return self._server

    @property
    def coordinates(self) -> Coordinates:
        found: Coordinates = self.server.coordinates
        return found

    def http_client(self, **options: Any) -> httpx.Client:
        import httpx

        from mock_server.http.transport import IN_PROCESS_URL

        options.setdefault("base_url", IN_PROCESS_URL)
        return httpx.Client(transport=self._transport, **options)

    def async_http_client(self, **options: Any) -> httpx.AsyncClient:
        import httpx

        from mock_server.http.transport import IN_PROCESS_URL

        options.setdefault("base_url", IN_PROCESS_URL)
        return httpx.AsyncClient(transport=self._async_transport, **options)

    def begin_test(self, name: str, *, expecting: bool) -> None:
        self.mock.journal.begin_test(name, expecting=expecting)

    def violations(self, test: str) -> list[Entry]:
        return [e for e in self.mock.journal if e.test == test and e.violation and not e.expected]

    def end_test(self) -> list[Entry]:
        ended = self.mock.journal.label
        self.mock.journal.end_test()
        self.mock.faults.clear()
        return self.violations(ended) if ended else []

    def reset(self, seed: int | None, extra: list[Fixture]) -> None:
        self.mock.reset(seed=seed, extra=extra)

    def journal(self) -> Journal:
        return self.mock.journal

    def store(self) -> Store:
        return self.mock.store

    def load(self, document: JsonObject) -> None:
        from mock_server.fixtures import loader

        self.mock.store.load(loader.check(document, "platform_mock.load"))

    def fault(self, operation_id: str, **effect: Any) -> Fault:
        return self.mock.faults.add(operation_id, **effect)

    def token_for(self, subject: str) -> str:
        return self.mock.auth.dev_token(self.mock.store.identity.subject_by_reference(subject))

    def token(self) -> str:
        return self.mock.auth.dev_token()

    def report(self) -> Report:
        return self.mock.report.to_dict()

    def close(self) -> None:
        self._transport.close()
        if self._server is not None:
            self._server.stop()


class _Remote(_Backend):
    """The mock of another process (`platform-mock run`), or a world of its own served beside
    it (for a pytest-xdist worker, whose `parent` is then the admin API of that mock)."""

    def __init__(
        self, where: Coordinates, world: str | None = None, parent: RemoteMock | None = None
    ):
        with _quietly():
            from mock_server.http.remote import RemoteMock
        self.remote = RemoteMock(where, verify=ssl_context())
        self._where = where
        self.seed = where.seed
        self._world, self._parent = world, parent

    @property
    def coordinates(self) -> Coordinates:
        return self._where

    def begin_test(self, name: str, *, expecting: bool) -> None:
        self.remote.begin_test(name, expecting=expecting)

    def violations(self, test: str) -> list[Entry]:
        return self.remote.violations(test)

    def end_test(self) -> list[Entry]:
        return self.remote.end_test()

    def reset(self, seed: int | None, extra: list[Fixture]) -> None:
        self.remote.reset(seed, extra)

    def journal(self) -> Journal:
        return self.remote.journal

    def store(self) -> Store:
        return self.remote.store()

    def load(self, document: JsonObject) -> None:
        self.remote.load(document)

    def fault(self, operation_id: str, **effect: Any) -> Fault:
        return self.remote.fault(operation_id, **effect)

    def token_for(self, subject: str) -> str:
        return self.remote.token_for(subject)

    def token(self) -> str:
        return self.remote.token

    def report(self) -> Report:
        return self.remote.report()

    def close(self) -> None:
        self.remote.close()
        if self._world is not None and self._parent is not None:
            self._parent.delete_world(self._world)
            self._parent.close()


def _backend(config: pytest.Config) -> _Backend:
    """The session's mock, made on first use: the one `platform-mock run` serves (a world of
    its own beside it for a pytest-xdist worker, made as the worker starts), else one of
    the session's own."""
    backend = config.stash.get(_BACKEND, None)
    if backend is None:
        backend = config.stash[_BACKEND] = _Local(config)
    return backend


@pytest.fixture(scope="session")
def platform_mock_backend(pytestconfig: pytest.Config) -> _Backend:
    """The session's mock, in this process or another (internal: tests use platform_mock)."""
    return _backend(pytestconfig)


@pytest.fixture(scope="session")
def platform_mock_server(platform_mock_backend: _Backend) -> BackgroundServer:
    """The session's mock server, when it runs in this process (not under `platform-mock
    run`, whose mock lives in the `run` process)."""
    if platform_mock_backend.server is None:
        raise pytest.UsageError(_ELSEWHERE)
    return platform_mock_backend.server


_ELSEWHERE = (
    "the platform mock of this session is served by another process (platform-mock run): "
    "use platform_mock's url, clients, journal, store, fault() and token_for()"
)


@dataclass
class MockHandle:
    """What a test gets from the `platform_mock` fixture: the session's mock, reset for the
    test. Under `platform-mock run` the mock lives in the `run` process: the same calls reach
    it there, and `journal` and `store` are copies taken when read."""

    backend: _Backend

    @property
    def server(self) -> BackgroundServer:
        """The server, when the mock runs in this process."""
        if self.backend.server is None:
            raise RuntimeError(_ELSEWHERE)
        return self.backend.server

    @property
    def mock(self) -> PlatformMock:
        """The mock itself, when it runs in this process."""
        return self.server.mock

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return self.backend.coordinates.url

    @property
    def api_url(self) -> str:
        """Base URL of the control plane (`.../api/svc/v1`)."""
        return self.backend.coordinates.api_url

    @property
    def gateway_url(self) -> str:
        """Base URL of the gateway, for `openai.OpenAI(base_url=...)`."""
        return self.backend.coordinates.gateway_url

    @property
    def admin_url(self) -> str:
        return self.backend.coordinates.admin_url

    @property
    def token(self) -> str:
        """A token of the default user (alice, tenant admin, in the default fixtures)."""
        return self.backend.token()

    @property
    def admin_token(self) -> str:
        return self.backend.coordinates.admin_token

    def token_for(self, subject: str) -> str:
        """A token for another subject of the world: a user's e-mail or `type:name`."""
        return self.backend.token_for(subject)

    @property
    def store(self) -> Store:
        """The world, to read or to seed records from Python (`store.identity`, ...). Under
        `platform-mock run`, a copy of the served world taken when read: add records with
        `load()`, which works in both cases."""
        return self.backend.store()

    def load(self, document: JsonObject) -> None:
        """Add the records of a fixture document (a dict, as a fixture file holds it) to the
        world, whole or not at all."""
        self.backend.load(document)

    def script_reply(
        self,
        *replies: str | JsonObject,
        model: str | None = None,
        input: str | None = None,
        pattern: str | None = None,
    ) -> None:
        """Script what the gateway's models answer, for this test: a chat completion or a
        response created whose model (`model`; None: any) and last user message (`input`
        exactly, or `pattern` searched in it; neither: any) match gets the next of
        `replies`, the last one staying once the others are used. A reply is its text, or
        a dict as a fixture's `scriptedReplies` writes it: `{"toolCalls": [{"name": ...,
        "arguments": {...}}]}`, `{"fault": "rate-limit"}` (a 429), `{"text": ...,
        "chunkDelayMs": 50, "fault": "drop", "afterChunks": 3}`."""
        script: JsonObject = {
            "replies": [{"text": r} if isinstance(r, str) else dict(r) for r in replies]
        }
        for key, value in (("model", model), ("input", input), ("pattern", pattern)):
            if value is not None:
                script[key] = value
        self.load({"scriptedReplies": [script]})

    @property
    def journal(self) -> Journal:
        """Every request of this test: `calls()`, `assert_called()`, `last`, ..."""
        return self.backend.journal()

    def fault(self, operation_id: str, **effect: Any) -> Fault:
        """Add a fault rule: `status=424`, `delay_ms=...`, `drop=True`, `match={...}`,
        `after=1`, `times=None` (always). See `mock_server.services.faults.Faults.add`. It is
        removed when the test ends."""
        return self.backend.fault(operation_id, **effect)

    def http_client(self, **httpx_options: Any) -> httpx.Client:
        """An `httpx.Client` (the options are httpx's) whose transport calls the mock in
        this process, through every layer a request over TCP goes through; any URL reaches
        the mock. For the platform SDK (`httpx_client=`) and `openai` (`http_client=`).
        Under `platform-mock run`, a client of run's mock over TCP."""
        return self.backend.http_client(**httpx_options)

    def async_http_client(self, **httpx_options: Any) -> httpx.AsyncClient:
        """`http_client` as an `httpx.AsyncClient`, calling the mock on the caller's loop."""
        return self.backend.async_http_client(**httpx_options)

    def client(self, token: str | None = None) -> httpx.Client:
        """An httpx client of the control plane, authenticated (default: `token`), in
        process where the mock runs here."""
        bearer = token or self.token
        from mock_server.core.coordinates import CONTROL_PLANE_PREFIX
        from mock_server.http.transport import IN_PROCESS_URL

        base = IN_PROCESS_URL if self.backend.in_process else self.backend.coordinates.url
        return self.http_client(
            base_url=base + CONTROL_PLANE_PREFIX,
            headers={"Authorization": f"Bearer {bearer}"},
        )


@pytest.fixture
def platform_mock(
    platform_mock_backend: _Backend, request: pytest.FixtureRequest
) -> Iterator[MockHandle]:
    """The session's mock, reset before this test: fresh world, empty journal, no faults."""
    node = request.node
    options = _marker_options(node)
    arguments = [arg for marker in node.iter_markers("platform_mock") for arg in marker.args]
    unknown = [*map(repr, arguments), *sorted(_marker_names(node) - MARKER_OPTIONS)]
    if unknown:  # a misspelt option would otherwise leave the test without its fixtures
        raise TypeError(
            "the platform_mock marker takes only fixtures=[...], seed=N and "
            f"expect_violations=True, not {', '.join(unknown)}"
        )
    base = Path(node.path).parent
    with _quietly():
        from mock_server.fixtures import loader
    extra = [loader.load(base / path) for path in options.get("fixtures", [])]
    seed = options.get("seed", _session_seed(request.config))
    if seed is None:  # the world's own seed: a marker's seed does not outlive its test
        seed = platform_mock_backend.seed
    platform_mock_backend.reset(seed, extra)
    # The test was named before its fixtures were set up, unless this fixture made the mock.
    platform_mock_backend.begin_test(node.nodeid, expecting=_expecting(node))
    yield MockHandle(platform_mock_backend)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist, in the controller: keep the report a worker hands over as it ends, or
    count it lost if the worker went down without handing one over."""
    handed = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT)
    if handed is None:
        node.config.stash[_LOST] = node.config.stash.get(_LOST, 0) + 1
    elif handed:  # empty: the worker ran no test with the mock
        node.config.stash.setdefault(_WORKER_REPORTS, []).append(json.loads(handed))


def _session_report(config: pytest.Config) -> Report | None:
    """The session's report (`to_dict()`): its mock's, or (xdist controller) the workers'
    merged; None if no test used the mock."""
    backend = config.stash.get(_BACKEND, None)
    if backend is not None:
        return backend.report()
    reports = config.stash.get(_WORKER_REPORTS, [])
    if not reports:
        return None
    merged = _empty_report()
    for report in reports:
        merged.absorb(report)
    return merged.to_dict()


def _empty_report() -> ContractReport:
    with _quietly():
        from mock_server.contract import documents
        from mock_server.reports.report import ContractReport
    return ContractReport(documents.operations())


@dataclass
class _Outcome:
    """What the session's end made of the report, for its terminal summary."""

    report: Report  # with its verdict
    written: list[Path]
    annotations: list[str]  # GitHub's, to print
    problems: list[str]  # files that could not be written


def _asked(config: pytest.Config) -> bool:
    """Whether the session asked for the contract report or for its checks."""
    return bool(
        config.getoption("--platform-mock-report")
        or config.getoption("--platform-mock-fail-on-violation")
        or _MIN_COVERAGE in config.stash
    )


def _under_run() -> bool:
    """Whether `platform-mock run` serves the mock, and so judges it and speaks to CI."""
    return "PLATFORM_MOCK_ADMIN_TOKEN" in os.environ


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_xdist_worker(config):
        # The controller writes, prints and judges the merged report. JSON text, because
        # xdist's own serialiser gives up on deeply nested values (request bodies).
        report = _session_report(config)
        handed = json.dumps(report) if report is not None else ""
        config.workeroutput[_WORKER_OUTPUT] = handed  # type: ignore[attr-defined]
        return
    fail_on_violation = config.getoption("--platform-mock-fail-on-violation")
    failed = bool(config.stash.get(_LOST, 0) and fail_on_violation)  # lost: not vouched for
    report = _session_report(config)
    if report is None and _MIN_COVERAGE in config.stash:
        report = _empty_report().to_dict()  # no test used the mock: nothing was covered
    if report is not None:
        from mock_server.reports import report_files
        from mock_server.reports.report import judge

        verdict = judge(
            report,
            fail_on_violation=fail_on_violation,
            min_coverage=config.stash.get(_MIN_COVERAGE, None),
            option_prefix="--platform-mock-",
        )
        report = {"verdict": verdict, **report}
        outcome = _Outcome(report, [], [], [])
        try:
            outcome.written = report_files.write(report, config.stash.get(_TARGETS, {}))
        except OSError as exc:  # checked at start; the disk may have changed since
            outcome.problems.append(f"cannot write the contract report: {exc}")
        if _asked(config) and not _under_run():  # under run, the run speaks to CI
            try:
                outcome.annotations = report_files.ci(report)
            except OSError as exc:
                outcome.problems.append(f"cannot write the job summary: {exc}")
        failed = failed or not verdict["passed"] or bool(outcome.problems)
        config.stash[_OUTCOME] = outcome
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _is_xdist_worker(config):
        return
    lost = config.stash.get(_LOST, 0)
    if lost:
        terminalreporter.write_line(
            f"platform mock: the contract report of {lost} xdist worker(s) was lost "
            "(the worker went down); the report covers the others only",
            red=True,
        )
    outcome = config.stash.get(_OUTCOME, None)
    if outcome is None:
        return
    violations = outcome.report["summary"]["violations"]
    from mock_server.reports import report, report_files

    if _asked(config):
        terminalreporter.section("platform mock contract report")
        terminalreporter.write(report_files.text(outcome.report))
        if outcome.written:
            terminalreporter.write_line(f"written to {', '.join(map(str, outcome.written))}")
        for line in outcome.annotations:
            terminalreporter.write_line(line)
        for problem in outcome.problems:
            terminalreporter.write_line(f"platform mock: {problem}", red=True)
        verdict = outcome.report["verdict"]
        terminalreporter.write_line(
            f"platform mock: contract check {report.verdict_line(verdict)}",
            red=not verdict["passed"],
            green=verdict["passed"],
        )
    elif violations and not _under_run():
        terminalreporter.write_line(
            f"platform mock: {violations} request(s) broke the contract "
            "(--platform-mock-report PATH names them)"
        )
