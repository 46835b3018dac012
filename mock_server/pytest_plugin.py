"""pytest plugin: one platform mock per test session, and a clean world for every test.

Installing the package registers it (entry point `pytest11`). The `platform_mock` fixture
resets the world, the journal and the faults *before* each test and hands the test
everything it needs; the `platform_mock` marker picks extra fixture files and a seed for
one test. With `--platform-mock-report` the session writes the contract report (in the
formats `mock_server.report_files` names); with `--platform-mock-fail-on-violation` a
request that broke the contract fails the test that sent it, and with
`--platform-mock-min-coverage` too little of the contract exercised fails the session.
Under pytest-xdist each worker has its own server; the controller merges their reports into
one, which it writes, prints and judges as a single session would.

A session that never asks for the fixture pays nothing: the web stack (and the deprecation
warnings some of its imports raise, which are not the user's to act on) is imported only
when the first test asks for the mock.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import ssl

    import httpx

    from mock_server.app import PlatformMock
    from mock_server.faults import Fault
    from mock_server.journal import Journal
    from mock_server.report import ContractReport
    from mock_server.server import BackgroundServer
    from mock_server.state import Store

_SERVER = pytest.StashKey["BackgroundServer"]()
MARKER_OPTIONS = frozenset({"fixtures", "seed", "expect_violations"})
# Under pytest-xdist: each worker's report, handed to the controller, and their merge.
_WORKER_OUTPUT = "platform_mock_report"
_WORKER_REPORTS = pytest.StashKey[list[dict[str, Any]]]()
_OUTCOME = pytest.StashKey["_Outcome"]()
_LOST = pytest.StashKey[int]()  # workers that went down without handing a report over
_REPORTED = pytest.StashKey[set[int]]()  # a test's violating requests its report has named
_TARGETS = pytest.StashKey[dict[str, Path]]()  # where each format of the report goes
_MIN_COVERAGE = pytest.StashKey[float]()


def _quietly(module: str) -> ModuleType:
    """A module of the mock, imported on first use without the deprecation warnings its
    third-party imports raise (Connexion's use of jsonschema's RefResolver): those are for
    the mock's maintainers, and would show in every user's warnings summary."""
    if module not in sys.modules:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
            __import__(module)
    return sys.modules[module]


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
    parser.addini("platform_mock_seed", "seed of the mock's world", default="0")
    parser.addini(
        "platform_mock_fixtures", "fixture files loaded in every test", type="paths", default=[]
    )


def pytest_configure(config: pytest.Config) -> None:
    # The report's options are checked before any test runs, as the command checks them.
    minimum = config.getoption("--platform-mock-min-coverage")
    if minimum is not None:
        try:
            config.stash[_MIN_COVERAGE] = _quietly("mock_server.report").percentage(minimum)
        except ValueError as exc:
            raise pytest.UsageError(f"--platform-mock-min-coverage: {exc}") from None
    if config.getoption("--platform-mock-report"):
        report_files = _quietly("mock_server.report_files")
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
    app = _quietly("mock_server.app")
    mock = app.PlatformMock(app.MockConfig(seed=_session_seed(pytestconfig), fixtures=paths))
    with _quietly("mock_server.server").BackgroundServer(mock) as server:
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
        return self.server.url + _quietly("mock_server.app").CONTROL_PLANE_PREFIX

    @property
    def gateway_url(self) -> str:
        """Base URL of the gateway, for `openai.OpenAI(base_url=...)`."""
        return self.server.gateway_url

    @property
    def admin_url(self) -> str:
        return self.server.url + _quietly("mock_server.app").ADMIN_PREFIX

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
    fixtures = _quietly("mock_server.fixtures")
    extra = [fixtures.load(base / path) for path in options.get("fixtures", [])]
    mock.reset(seed=options.get("seed", _session_seed(request.config)), extra=extra)
    mock.journal.label = request.node.nodeid
    # A test that breaks the contract on purpose (a client's own negative tests) says so:
    # its requests are reported apart, and fail neither the test nor the session.
    mock.journal.expecting = bool(options.get("expect_violations", False))
    yield MockHandle(platform_mock_server)
    # A request a later test sends without this fixture is not this test's.
    mock.journal.label, mock.journal.expecting = None, False


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


def _session_report(config: pytest.Config) -> dict[str, Any] | None:
    """The session's report (`to_dict()`): its own mock's, or (xdist controller) the
    workers' merged; None if no test used the mock."""
    server = config.stash.get(_SERVER, None)
    if server is not None:
        return server.mock.report.to_dict()
    reports = config.stash.get(_WORKER_REPORTS, [])
    if not reports:
        return None
    merged = _empty_report()
    for report in reports:
        merged.absorb(report)
    return merged.to_dict()


def _empty_report() -> ContractReport:
    contract = _quietly("mock_server.contract")
    return _quietly("mock_server.report").ContractReport(contract.operations())


@dataclass
class _Outcome:
    """What the session's end made of the report, for its terminal summary."""

    report: dict[str, Any]
    written: list[Path]
    reasons: list[str]  # why the session fails on the report, if it does
    annotations: list[str]  # GitHub's, to print
    problems: list[str]  # files that could not be written


def _asked(config: pytest.Config) -> bool:
    """Whether the session asked for the contract report or for its checks."""
    return bool(
        config.getoption("--platform-mock-report")
        or config.getoption("--platform-mock-fail-on-violation")
        or _MIN_COVERAGE in config.stash
    )


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
    failed = bool(config.stash.get(_LOST, 0) and fail_on_violation)  # lost: not vouched for
    report = _session_report(config)
    if report is None and _MIN_COVERAGE in config.stash:
        report = _empty_report().to_dict()  # no test used the mock: nothing was covered
    if report is not None:
        report_files = _quietly("mock_server.report_files")
        outcome = _Outcome(report, [], [], [], [])
        try:
            outcome.written = report_files.write(report, config.stash.get(_TARGETS, {}))
        except OSError as exc:  # checked at start; the disk may have changed since
            outcome.problems.append(f"cannot write the contract report: {exc}")
        if _asked(config):
            try:
                outcome.annotations = report_files.github(report)
            except OSError as exc:
                outcome.problems.append(f"cannot write the job summary: {exc}")
        outcome.reasons = _quietly("mock_server.report").failures(
            report,
            fail_on_violation=fail_on_violation,
            min_coverage=config.stash.get(_MIN_COVERAGE, None),
            option_prefix="--platform-mock-",
        )
        failed = failed or bool(outcome.reasons or outcome.problems)
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
    if _asked(config):
        terminalreporter.section("platform mock contract report")
        terminalreporter.write(_quietly("mock_server.report_files").text(outcome.report))
        if outcome.written:
            terminalreporter.write_line(f"written to {', '.join(map(str, outcome.written))}")
        for line in outcome.annotations:
            terminalreporter.write_line(line)
        for problem in outcome.problems:
            terminalreporter.write_line(f"platform mock: {problem}", red=True)
        if outcome.reasons:
            terminalreporter.write_line("the session fails:", red=True)
            for reason in outcome.reasons:
                terminalreporter.write_line(f"  {reason}", red=True)
    elif violations:
        terminalreporter.write_line(
            f"platform mock: {violations} request(s) broke the contract "
            "(--platform-mock-report PATH names them)"
        )
