"""pytest plugin: one platform mock per test session, and a clean world for every test.

Installing the package registers it (entry point `pytest11`). The `platform_mock` fixture
resets the world, the journal and the faults *before* each test and hands the test
everything it needs; the `platform_mock` marker picks extra fixture files and a seed for
one test. With `--platform-mock-report PATH` the session writes the contract report, and
with `--platform-mock-fail-on-violation` a request that broke the contract fails the run.
Under pytest-xdist each worker has its own server; the controller merges their reports into
one, which it writes, prints and judges as a single session would.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mock_server import contract, fixtures
from mock_server.app import ADMIN_PREFIX, CONTROL_PLANE_PREFIX, MockConfig, PlatformMock
from mock_server.faults import Fault
from mock_server.journal import Journal
from mock_server.report import ContractReport
from mock_server.server import BackgroundServer
from mock_server.state import Store

if TYPE_CHECKING:
    import ssl

    import httpx

_SERVER = pytest.StashKey[BackgroundServer]()
MARKER_OPTIONS = frozenset({"fixtures", "seed", "expect_violations"})
# Under pytest-xdist: each worker's report, handed to the controller, and their merge.
_WORKER_OUTPUT = "platform_mock_report"
_WORKER_REPORTS = pytest.StashKey[list[dict[str, Any]]]()
_MERGED = pytest.StashKey[ContractReport]()
_LOST = pytest.StashKey[int]()  # workers that went down without handing a report over
_REPORTED = pytest.StashKey[set[int]]()  # a test's violating requests its report has named


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
        type=int,
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
        metavar="PATH",
        help="write the contract report as JSON to PATH, and a summary beside it",
    )
    group.addoption(
        "--platform-mock-fail-on-violation",
        action="store_true",
        help="fail the session if any request broke the contract",
    )
    parser.addini("platform_mock_seed", "seed of the mock's world", default="0")
    parser.addini(
        "platform_mock_fixtures", "fixture files loaded in every test", type="paths", default=[]
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "platform_mock(fixtures=[...], seed=N, expect_violations=False): extra fixture files "
        "(relative to the test file) and a seed for this test's platform mock world; "
        "expect_violations=True for a test that breaks the contract on purpose",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """With `--platform-mock-fail-on-violation`, a test that passed but sent a request that
    broke the contract fails, its report naming each such request and the rule it broke:
    CI's test views (JUnit XML) then show which test is at fault. A request its fixtures
    send while tearing down fails the teardown."""
    report = yield
    if call.when not in ("call", "teardown") or not report.passed:
        return report
    if not item.config.getoption("--platform-mock-fail-on-violation"):
        return report
    server = item.config.stash.get(_SERVER, None)
    if server is None or "platform_mock" not in getattr(item, "fixturenames", ()):
        return report
    reported = item.stash.setdefault(_REPORTED, set())
    broken = [
        entry
        for entry in server.mock.journal
        if entry.test == item.nodeid
        and entry.violation
        and not entry.expected
        and entry.seq not in reported
    ]
    if broken:
        reported.update(entry.seq for entry in broken)
        report.outcome = "failed"
        report.longrepr = violations_text(broken)
    return report


def violations_text(entries: list[Any]) -> str:
    """Each request that broke the contract, and every rule it broke."""
    lines = [f"{len(entries)} request(s) of this test broke the platform API's contract:"]
    for entry in entries:
        lines.append(f"  {entry.describe()}: {entry.message}")
        lines += [
            f"    {d.get('location', '')} {d.get('field', '')}: {d.get('message', '')}"
            for d in entry.details
        ]
    lines.append(
        "(--platform-mock-fail-on-violation; mark a test that does so on purpose with "
        "@pytest.mark.platform_mock(expect_violations=True))"
    )
    return "\n".join(lines)


def _session_seed(config: pytest.Config) -> int:
    option = config.getoption("--platform-mock-seed")
    return int(config.getini("platform_mock_seed")) if option is None else option


@pytest.fixture(scope="session")
def platform_mock_server(pytestconfig: pytest.Config) -> Iterator[BackgroundServer]:
    """The mock for the whole session, served on a free loopback port."""
    paths = [*pytestconfig.getini("platform_mock_fixtures")]
    paths += pytestconfig.getoption("--platform-mock-fixtures")
    mock = PlatformMock(MockConfig(seed=_session_seed(pytestconfig), fixtures=paths))
    with BackgroundServer(mock) as server:
        pytestconfig.stash[_SERVER] = server
        yield server


@dataclass
class MockHandle:
    """What a test gets from the `platform_mock` fixture."""

    server: BackgroundServer

    @property
    def mock(self) -> PlatformMock:
        return self.server.mock

    @property
    def url(self) -> str:
        """Base URL of the server."""
        return self.server.url

    @property
    def api_url(self) -> str:
        """Base URL of the control plane (`.../api/svc/v1`)."""
        return self.server.url + CONTROL_PLANE_PREFIX

    @property
    def gateway_url(self) -> str:
        """Base URL of the gateway, for `openai.OpenAI(base_url=...)`."""
        return self.server.gateway_url

    @property
    def admin_url(self) -> str:
        return self.server.url + ADMIN_PREFIX

    @property
    def token(self) -> str:
        """A token of the default user (alice, tenant admin, in the default fixtures)."""
        return self.mock.auth.dev_token()

    @property
    def admin_token(self) -> str:
        return self.mock.auth.admin_token()

    def token_for(self, subject: str) -> str:
        """A token for another subject of the world: a user's e-mail or `type:name`."""
        return self.mock.auth.dev_token(self.mock.store.identity.subject_by_reference(subject))

    @property
    def store(self) -> Store:
        """The world, to read or to seed records from Python (`store.identity`, ...)."""
        return self.mock.store

    @property
    def journal(self) -> Journal:
        """Every request of this test: `calls()`, `assert_called()`, `last`, ..."""
        return self.mock.journal

    def fault(self, operation_id: str, **effect: Any) -> Fault:
        """Add a fault rule: `status=424`, `delay_ms=...`, `drop=True`, `match={...}`,
        `after=1`, `times=None` (always). See `mock_server.faults.Faults.add`."""
        return self.mock.faults.add(operation_id, **effect)

    def client(self, token: str | None = None) -> httpx.Client:
        """An httpx client of the control plane, authenticated (default: `token`)."""
        import httpx

        bearer = token or self.token
        return httpx.Client(
            base_url=self.api_url,
            headers={"Authorization": f"Bearer {bearer}"},
            verify=ssl_context(),
        )


@pytest.fixture
def platform_mock(
    platform_mock_server: BackgroundServer, request: pytest.FixtureRequest
) -> Iterator[MockHandle]:
    """The session's mock, reset before this test: fresh world, empty journal, no faults."""
    mock = platform_mock_server.mock
    # Every platform_mock marker of the test, its class and its module: the closest wins
    # for each option, so a module can mark every test and one test add its fixtures.
    markers = list(request.node.iter_markers("platform_mock"))
    options: dict[str, Any] = {}
    for marker in reversed(markers):
        options.update(marker.kwargs)
    arguments = [arg for marker in markers for arg in marker.args]
    unknown = [*map(repr, arguments), *sorted(set(options) - MARKER_OPTIONS)]
    if unknown:  # a misspelt option would otherwise leave the test without its fixtures
        raise TypeError(
            "the platform_mock marker takes only fixtures=[...], seed=N and "
            f"expect_violations=True, not {', '.join(unknown)}"
        )
    base = Path(request.node.path).parent
    extra = [fixtures.load(base / path) for path in options.get("fixtures", [])]
    mock.reset(seed=options.get("seed", _session_seed(request.config)), extra=extra)
    mock.journal.label = request.node.nodeid
    # A test that breaks the contract on purpose (a client's own negative tests) says so:
    # its requests are reported apart, and fail neither the test nor the session.
    mock.journal.expecting = bool(options.get("expect_violations", False))
    yield MockHandle(platform_mock_server)
    # A request a later test sends without this fixture is not this test's.
    mock.journal.label, mock.journal.expecting = None, False


def _report_path(config: pytest.Config) -> Path | None:
    path = config.getoption("--platform-mock-report")
    return Path(path) if path else None


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


def _session_report(config: pytest.Config) -> ContractReport | None:
    """The session's report: its own mock's, or (xdist controller) the workers' merged."""
    server = config.stash.get(_SERVER, None)
    if server is not None:
        return server.mock.report
    if _MERGED not in config.stash:
        reports = config.stash.get(_WORKER_REPORTS, [])
        if not reports:
            return None
        merged = ContractReport(contract.operations())
        for report in reports:
            merged.absorb(report)
        config.stash[_MERGED] = merged
    return config.stash[_MERGED]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_xdist_worker(config):
        # The controller writes, prints and judges the merged report. JSON text, because
        # xdist's own serialiser gives up on deeply nested values (request bodies).
        server = config.stash.get(_SERVER, None)
        handed = json.dumps(server.mock.report.to_dict()) if server is not None else ""
        config.workeroutput[_WORKER_OUTPUT] = handed  # type: ignore[attr-defined]
        return
    fail_on_violation = config.getoption("--platform-mock-fail-on-violation")
    if config.stash.get(_LOST, 0) and fail_on_violation:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # what was lost cannot be vouched for
    report = _session_report(config)
    if report is None:
        return
    path = _report_path(config)
    if path is not None:
        report.write(path)
    if report.violation_count and fail_on_violation:
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
    report = _session_report(config)
    if report is None:
        return
    path = _report_path(config)
    fail_on_violation = config.getoption("--platform-mock-fail-on-violation")
    if path is not None or fail_on_violation:
        terminalreporter.section("platform mock contract report")
        terminalreporter.write(report.text())
        if path is not None:
            terminalreporter.write_line(f"written to {path} and {path.with_suffix('.txt')}")
        if fail_on_violation and report.violation_count:
            terminalreporter.write_line(
                f"the session fails: {report.violation_count} request(s) broke the contract "
                "(--platform-mock-fail-on-violation)",
                red=True,
            )
    elif report.violation_count:
        terminalreporter.write_line(
            f"platform mock: {report.violation_count} request(s) broke the contract "
            "(--platform-mock-report PATH names them)"
        )
