"""The pytest plugin (`platform_mock` fixture, marker, options, contract report), run in
inner pytest sessions with `pytester`.

Each inner session starts its own mock server in a subprocess (about 1-2 s), so independent
behaviours share one inner session: an inner session runs once per module (the first outer
test that needs it runs it, the others reuse its result), and each outer test checks the
outcome of the inner tests that show its one behaviour. One more inner session runs under
pytest-xdist, to show one server per worker and one report for the session.
"""

from __future__ import annotations

import json
import ssl
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from mock_server.fixtures import loader as fixtures
from tests.conftest import new_store
from tests.inner import INNER_TIMEOUT, run_once, run_session

pytest_plugins = ["pytester"]

TOKENS_PATH = "/api/svc/v1/personal-access-tokens/ci"

# A fixture file of the inner sessions: one user more than the default world.
EXTRA_YAML = """\
users:
  - email: dana@acme.example
    displayName: Dana Extra
"""


def tenant_id(seed: int) -> str:
    """The tenant id the default world gets with this seed."""
    return new_store(seed, fixtures.default_fixtures()).identity.tenant.id


# -- inner test modules ----------------------------------------------------------------------

INNER_HELPERS = """
import httpx
import openai
import pytest

TOKENS = "/personal-access-tokens/ci"
shared = {}


def caller(platform_mock, token=None):
    \"\"\"The subject the token authenticates as, through operation 5.\"\"\"
    with platform_mock.client(token) as api:
        response = api.get(TOKENS)
    assert response.status_code == 200, response.text
    return response.json()["data"]["createdBySubject"]
"""

BEHAVIOURS = """
def test_client_calls_control_plane(platform_mock):
    assert caller(platform_mock)["subjectSlug"] == "alice@acme.example"


def test_token_authenticates_plain_httpx(platform_mock):
    response = httpx.get(
        platform_mock.api_url + TOKENS,
        headers={"Authorization": f"Bearer {platform_mock.token}"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["createdBySubject"]["subjectSlug"] == "alice@acme.example"


def test_openai_client_reads_gateway(platform_mock):
    gateway = openai.OpenAI(
        base_url=platform_mock.gateway_url, api_key=platform_mock.token, max_retries=0
    )
    with gateway:
        response = gateway.responses.retrieve("resp_0000000000000000000000000000demo")
    assert response.id == "resp_0000000000000000000000000000demo"
    assert response.output_text == "Hello! This is a stored response from the platform mock."


def test_reset_first_deletes_llm_keys(platform_mock):
    group_id = platform_mock.store.secrets.group_named("llm-keys").resource.id
    shared["llm-keys"] = group_id
    with platform_mock.client() as api:
        assert api.delete(f"/secret-groups/{group_id}").status_code == 200
        assert api.delete(f"/secret-groups/{group_id}").status_code == 404


def test_reset_second_finds_llm_keys(platform_mock):
    group_id = shared["llm-keys"]
    assert platform_mock.store.secrets.group_named("llm-keys").resource.id == group_id
    with platform_mock.client() as api:
        assert api.delete(f"/secret-groups/{group_id}").status_code == 200


def test_journal_first_makes_requests(platform_mock):
    caller(platform_mock)
    caller(platform_mock)
    assert len(platform_mock.journal) == 2


def test_journal_second_starts_empty(platform_mock):
    assert len(platform_mock.journal) == 0
    assert platform_mock.journal.calls() == []


def test_assert_called_counts_this_tests_calls(platform_mock):
    caller(platform_mock)
    found = platform_mock.journal.assert_called("getOrCreatePersonalAccessToken", times=1)
    assert [entry.status for entry in found] == [200]
    with pytest.raises(AssertionError, match="2 time.s., found 1"):
        platform_mock.journal.assert_called("getOrCreatePersonalAccessToken", times=2)


def test_assert_called_failure_lists_closest(platform_mock):
    caller(platform_mock)
    platform_mock.journal.assert_called("getOrCreatePersonalAccessToken", name="deploy")


def test_token_for_user(platform_mock):
    bob = platform_mock.store.identity.subject_named("user", "bob@acme.example")
    subject = caller(platform_mock, platform_mock.token_for("bob@acme.example"))
    assert (subject["subjectType"], subject["subjectId"], subject["subjectSlug"]) == (
        "user",
        bob.id,
        "bob@acme.example",
    )


def test_token_for_virtual_account(platform_mock):
    bot = platform_mock.store.identity.subject_named("virtualaccount", "ci-bot")
    subject = caller(platform_mock, platform_mock.token_for("virtualaccount:ci-bot"))
    assert (subject["subjectType"], subject["subjectId"], subject["subjectSlug"]) == (
        "virtualaccount",
        bot.id,
        "ci-bot",
    )


def test_fault_applies_within_test(platform_mock):
    fault = platform_mock.fault("deleteSecretGroup", status=424, after=1)
    llm_keys = platform_mock.store.secrets.group_named("llm-keys").resource.id
    legacy = platform_mock.store.secrets.group_named("legacy-vault").resource.id
    with platform_mock.client() as api:
        first = api.delete(f"/secret-groups/{llm_keys}")
        second = api.delete(f"/secret-groups/{legacy}", params={"forceDelete": "true"})
    assert first.status_code == 200, first.text
    assert second.status_code == 424, second.text
    assert second.json()["code"] == 42401
    assert second.headers["x-platform-mock-fault"] == fault.id
    assert legacy in platform_mock.store.world.secret_groups


def test_fault_gone_in_next_test(platform_mock):
    admin = {"Authorization": f"Bearer {platform_mock.admin_token}"}
    assert httpx.get(platform_mock.admin_url + "/faults", headers=admin).json()["data"] == []
    llm_keys = platform_mock.store.secrets.group_named("llm-keys").resource.id
    legacy = platform_mock.store.secrets.group_named("legacy-vault").resource.id
    with platform_mock.client() as api:
        first = api.delete(f"/secret-groups/{llm_keys}")
        second = api.delete(f"/secret-groups/{legacy}", params={"forceDelete": "true"})
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text


def test_fault_armed_with_the_fixture(platform_mock):
    platform_mock.fault("getOrCreatePersonalAccessToken", status=503, after=1, times=1)
    shared["coordinates"] = (platform_mock.api_url, platform_mock.token)
    assert caller(platform_mock)["subjectSlug"] == "alice@acme.example"


def test_fault_gone_for_a_test_without_the_fixture():
    api_url, token = shared["coordinates"]
    headers = {"Authorization": f"Bearer {token}"}
    statuses = [httpx.get(api_url + TOKENS, headers=headers).status_code for _ in range(2)]
    assert statuses == [200, 200]


def test_load_adds_records_to_the_world(platform_mock):
    platform_mock.load({"users": [{"email": "erin@acme.example"}]})
    assert caller(platform_mock, platform_mock.token_for("erin@acme.example"))["subjectSlug"] == (
        "erin@acme.example"
    )


@pytest.mark.platform_mock(fixtures=["extra.yaml"])
def test_marker_fixtures_load(platform_mock):
    token = platform_mock.token_for("dana@acme.example")
    shared["dana"] = token
    assert caller(platform_mock, token)["subjectSlug"] == "dana@acme.example"


def test_marker_fixtures_gone_next(platform_mock):
    assert platform_mock.store.identity.find_subject("user", "dana@acme.example") is None
    with platform_mock.client(shared["dana"]) as api:
        response = api.get(TOKENS)
    assert response.status_code == 401, response.text
    assert response.json()["code"] == 40105


@pytest.mark.platform_mock(seed=5)
def test_marker_seed_changes_ids(platform_mock):
    assert platform_mock.store.identity.tenant.id == SEED_5_TENANT
    assert platform_mock.store.seed == 5
    assert caller(platform_mock)["subjectSlug"] == "alice@acme.example"


def test_marker_seed_gone_next(platform_mock):
    assert platform_mock.store.identity.tenant.id == SEED_0_TENANT
"""

KEEPS_CONTRACT = """
def test_keeps_the_contract(platform_mock):
    assert caller(platform_mock)["subjectSlug"] == "alice@acme.example"
"""

BREAKS_CONTRACT = """
def test_breaks_the_contract(platform_mock):
    with platform_mock.client() as api:
        response = api.get(TOKENS, params={"bogus": "1"})
    assert response.status_code == 400, response.text
"""

WORLD_OPTIONS = """
def test_seed_sets_ids(platform_mock):
    print("tenant id:", platform_mock.store.identity.tenant.id)
    assert platform_mock.store.identity.tenant.id == SEED_3_TENANT


def test_fixtures_first(platform_mock):
    assert caller(platform_mock, platform_mock.token_for("dana@acme.example"))["subjectSlug"] == (
        "dana@acme.example"
    )


def test_fixtures_second(platform_mock):
    assert caller(platform_mock, platform_mock.token_for("dana@acme.example"))["subjectSlug"] == (
        "dana@acme.example"
    )
"""


# -- running inner sessions once per module --------------------------------------------------


@dataclass
class InnerRun:
    result: pytest.RunResult
    files: dict[str, str] = field(default_factory=dict)  # files the session wrote, by name


def write_module(pytester: pytest.Pytester, name: str, *parts: str, **constants: str) -> None:
    header = "".join(f"{k} = {v!r}\n" for k, v in constants.items())
    pytester.makepyfile(**{name: header + INNER_HELPERS + "".join(parts)})


def passed(result: pytest.RunResult, *names: str) -> None:
    """Each named inner test passed (the session ran with -v)."""
    result.stdout.fnmatch_lines([f"*::{name} PASSED*" for name in names], consecutive=False)


@pytest.fixture(params=["own-mock", "under-run"])
def behaviours(
    pytester: pytest.Pytester, inner_runs: dict[str, Any], request: pytest.FixtureRequest
) -> pytest.RunResult:
    """One inner session of independent behaviours of the fixture and the marker: with a
    mock of its own, and under `platform-mock run`, whose mock lives in the run's process."""

    def run() -> InnerRun:
        pytester.makefile(".yaml", extra=EXTRA_YAML)
        write_module(
            pytester,
            "test_behaviours",
            BEHAVIOURS,
            SEED_0_TENANT=tenant_id(0),
            SEED_5_TENANT=tenant_id(5),
        )
        if request.param == "own-mock":
            return InnerRun(run_session(pytester, "-v", timeout=INNER_TIMEOUT))
        return InnerRun(run_under_run(pytester, "-v"))

    return run_once(inner_runs, f"behaviours-{request.param}", run).result


def run_under_run(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    """An inner session as `platform-mock run -- pytest` runs it (plugins loaded by name, as
    `run_session` loads them)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        return pytester.run(
            sys.executable, "-m", "mock_server", "run", "--",
            sys.executable, "-m", "pytest", "-p", "mock_server.pytest_plugin", *options,
            timeout=INNER_TIMEOUT,
        )  # fmt: skip


def contract_session(pytester: pytest.Pytester, *options: str, violation: bool = True) -> InnerRun:
    parts = [KEEPS_CONTRACT, BREAKS_CONTRACT] if violation else [KEEPS_CONTRACT]
    write_module(pytester, "test_contract", *parts)
    result = run_session(pytester, "-v", *options, timeout=INNER_TIMEOUT)
    written = [pytester.path / name for name in ("report.json", "report.txt", "junit.xml")]
    return InnerRun(result, {path.name: path.read_text() for path in written if path.exists()})


@pytest.fixture
def reported(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> InnerRun:
    """Two inner tests, the second breaking the contract, with the report option."""
    return run_once(
        inner_runs,
        "reported",
        lambda: contract_session(
            pytester,
            "--platform-mock-report",
            "report.json",
            "--platform-mock-report",
            "report.txt",
        ),
    )


def world_session(pytester: pytest.Pytester, *options: str) -> InnerRun:
    pytester.makefile(".yaml", extra=EXTRA_YAML)
    write_module(pytester, "test_world", WORLD_OPTIONS, SEED_3_TENANT=tenant_id(3))
    return InnerRun(run_session(pytester, "-v", *options, timeout=INNER_TIMEOUT))


@pytest.fixture
def command_line_world(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> pytest.RunResult:
    """Inner tests run with --platform-mock-seed 3 --platform-mock-fixtures extra.yaml."""
    options = ("--platform-mock-seed", "3", "--platform-mock-fixtures", "extra.yaml")
    return run_once(inner_runs, "command-line", lambda: world_session(pytester, *options)).result


@pytest.fixture
def ini_world(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> pytest.RunResult:
    """Inner tests run with the ini options platform_mock_seed = 3 and
    platform_mock_fixtures = extra.yaml."""

    def run() -> InnerRun:
        pytester.makeini("[pytest]\nplatform_mock_seed = 3\nplatform_mock_fixtures = extra.yaml\n")
        return world_session(pytester)

    return run_once(inner_runs, "ini", run).result


def test_seeds_used_here_give_different_tenant_ids():
    assert len({tenant_id(0), tenant_id(3), tenant_id(5)}) == 3


# -- the platform_mock fixture ---------------------------------------------------------------


def test_behaviour_session_fails_only_the_deliberately_failing_test(behaviours):
    behaviours.assert_outcomes(passed=19, failed=1)
    behaviours.stdout.fnmatch_lines(["*::test_assert_called_failure_lists_closest FAILED*"])


def test_client_calls_the_control_plane_as_the_default_user(behaviours):
    passed(behaviours, "test_client_calls_control_plane")


def test_token_authenticates_a_plain_httpx_request(behaviours):
    passed(behaviours, "test_token_authenticates_plain_httpx")


def test_openai_client_reads_a_stored_response_from_the_gateway(behaviours):
    passed(behaviours, "test_openai_client_reads_gateway")


def test_world_is_reset_before_each_test(behaviours):
    passed(behaviours, "test_reset_first_deletes_llm_keys", "test_reset_second_finds_llm_keys")


def test_journal_is_empty_at_the_start_of_each_test(behaviours):
    passed(behaviours, "test_journal_first_makes_requests", "test_journal_second_starts_empty")


def test_assert_called_counts_the_calls_of_this_test(behaviours):
    passed(behaviours, "test_assert_called_counts_this_tests_calls")


def test_failing_assert_called_shows_the_closest_requests(behaviours):
    behaviours.stdout.fnmatch_lines(
        [
            "*_ test_assert_called_failure_lists_closest _*",
            "E*AssertionError: expected getOrCreatePersonalAccessToken name='deploy' "
            "at least once, found 0.",
            "E*Closest requests recorded:",
            f"E*#* GET {TOKENS_PATH} -> 200 [[]getOrCreatePersonalAccessToken]",
        ]
    )


def test_token_for_a_user_authenticates_as_that_user(behaviours):
    passed(behaviours, "test_token_for_user")


def test_token_for_a_virtual_account_authenticates_as_it(behaviours):
    passed(behaviours, "test_token_for_virtual_account")


def test_clients_share_one_ssl_context(platform_mock, monkeypatch):
    platform_mock.client().close()  # the plugin's shared context exists from here on
    made = []
    create = ssl.create_default_context

    def counted(*a, **k):
        made.append(a or k)
        return create(*a, **k)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    with platform_mock.client(), platform_mock.client(platform_mock.admin_token):
        pass
    assert made == []


def test_fault_applies_within_the_test(behaviours):
    passed(behaviours, "test_fault_applies_within_test")


def test_fault_is_gone_in_the_next_test(behaviours):
    passed(behaviours, "test_fault_applies_within_test", "test_fault_gone_in_next_test")


def test_fault_is_gone_for_a_next_test_without_the_fixture(behaviours):
    passed(
        behaviours,
        "test_fault_armed_with_the_fixture",
        "test_fault_gone_for_a_test_without_the_fixture",
    )


def test_load_adds_a_fixture_documents_records(behaviours):
    passed(behaviours, "test_load_adds_records_to_the_world")


# -- the platform_mock marker ----------------------------------------------------------------


def test_marker_fixtures_load_for_that_test_only(behaviours):
    passed(behaviours, "test_marker_fixtures_load", "test_marker_fixtures_gone_next")


def test_marker_seed_changes_ids_for_that_test_only(behaviours):
    passed(behaviours, "test_marker_seed_changes_ids", "test_marker_seed_gone_next")


# -- the contract report ---------------------------------------------------------------------


def test_report_option_writes_json_and_text(reported):
    assert set(reported.files) == {"report.json", "report.txt"}
    assert json.loads(reported.files["report.json"])["summary"]["requests"] == 2
    lines = reported.files["report.txt"].splitlines()
    assert lines[0].startswith("Contract check PASSED (no check was asked for): 1 of 2 request")
    assert lines[1].startswith("Contract report: 2 request(s), 1 contract")


def test_report_names_the_violating_request_and_its_test(reported):
    report = json.loads(reported.files["report.json"])
    assert report["summary"]["violations"] == 1
    violating = {
        op: usage["violationGroups"]
        for op, usage in report["operations"].items()
        if usage["violationGroups"]
    }
    assert list(violating) == ["getOrCreatePersonalAccessToken"]
    (group,) = violating["getOrCreatePersonalAccessToken"]
    assert group["tests"] == {"test_contract.py::test_breaks_the_contract": 1}
    (request,) = group["examples"]
    assert request["test"] == "test_contract.py::test_breaks_the_contract"
    assert request["request"] == f"GET {TOKENS_PATH}"
    assert request["query"] == {"bogus": ["1"]}
    assert (request["status"], request["code"]) == (400, 40001)
    assert "bogus" in request["message"]


def test_violation_without_fail_flag_passes_the_session(reported):
    reported.result.assert_outcomes(passed=2)
    assert reported.result.ret == pytest.ExitCode.OK


def test_terminal_summary_names_the_violating_request(reported):
    reported.result.stdout.fnmatch_lines(
        [
            "*platform mock contract report*",
            "Contract report: 2 request(s), 1 contract violation(s)*",
            "*VIOLATION query bogus: 1 request(s) by test_contract.py::test_breaks_the_contract",
            "*problem: is not a parameter of this operation",
            f"*request: GET {TOKENS_PATH} -> 400",
            "*reproduce: curl -sS *bogus=1*",
            "written to report.json, report.txt",
            "platform mock: contract check PASSED (no check was asked for): 1 of 2 request(s)*",
        ]
    )


@pytest.fixture
def failing_on_violation(pytester: pytest.Pytester, inner_runs: dict[str, Any]) -> InnerRun:
    """The two inner tests with --platform-mock-fail-on-violation and JUnit XML."""
    return run_once(
        inner_runs,
        "failing_on_violation",
        lambda: contract_session(
            pytester, "--platform-mock-fail-on-violation", "--junitxml", "junit.xml"
        ),
    )


def test_fail_on_violation_fails_the_test_that_sent_the_request(failing_on_violation):
    failing_on_violation.result.assert_outcomes(passed=1, failed=1)
    assert failing_on_violation.result.ret == pytest.ExitCode.TESTS_FAILED
    failing_on_violation.result.stdout.fnmatch_lines(
        ["FAILED test_contract.py::test_breaks_the_contract*"]
    )


def test_the_failed_test_names_the_request_and_the_rule_it_broke(failing_on_violation):
    failing_on_violation.result.stdout.fnmatch_lines(
        [
            "*1 request(s) of this test broke the platform API's contract:",
            f"*GET {TOKENS_PATH}?bogus=1 -> 400 code 40001*",
            "*query bogus: is not a parameter of this operation",
        ]
    )


def test_junit_xml_shows_the_violating_test_as_failed(failing_on_violation):
    import xml.etree.ElementTree as ElementTree

    suite = ElementTree.fromstring(failing_on_violation.files["junit.xml"]).find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert cases["test_breaks_the_contract"].find("failure") is not None
    assert cases["test_keeps_the_contract"].find("failure") is None
    assert suite.get("failures") == "1"


TEARDOWN_VIOLATION = """
@pytest.fixture
def leaves_badly(platform_mock):
    yield
    with platform_mock.client() as api:
        api.get(TOKENS, params={"bogus": "1"})


def test_whose_fixture_breaks_the_contract_on_teardown(leaves_badly):
    pass
"""


def test_a_violation_sent_in_teardown_fails_the_teardown(pytester: pytest.Pytester):
    write_module(pytester, "test_contract", TEARDOWN_VIOLATION)
    result = run_session(pytester, "-v", "--platform-mock-fail-on-violation", timeout=INNER_TIMEOUT)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*1 request(s) of this test broke the platform API's contract:"])


EXPECTS_VIOLATIONS = """
@pytest.mark.platform_mock(expect_violations=True)
def test_breaks_the_contract_on_purpose(platform_mock):
    with platform_mock.client() as api:
        response = api.get(TOKENS, params={"bogus": "1"})
    assert response.status_code == 400, response.text
"""


def test_a_test_marked_expect_violations_fails_nothing(pytester: pytest.Pytester):
    write_module(pytester, "test_contract", KEEPS_CONTRACT, EXPECTS_VIOLATIONS)
    result = run_session(
        pytester,
        "-v", "--platform-mock-fail-on-violation", "--platform-mock-report", "report.json",
        timeout=INNER_TIMEOUT,
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    summary = json.loads((pytester.path / "report.json").read_text())["summary"]
    assert (summary["violations"], summary["expectedViolations"]) == (0, 1)


def test_fail_on_violation_passes_a_session_that_kept_the_contract(pytester):
    run = contract_session(pytester, "--platform-mock-fail-on-violation", violation=False)
    run.result.assert_outcomes(passed=1)
    assert run.result.ret == pytest.ExitCode.OK


# -- session options: seed and fixtures ------------------------------------------------------


def test_seed_option_sets_the_worlds_ids(command_line_world):
    passed(command_line_world, "test_seed_sets_ids")


def test_fixtures_option_loads_the_file_in_every_test(command_line_world):
    passed(command_line_world, "test_fixtures_first", "test_fixtures_second")


def test_seed_ini_option_sets_the_worlds_ids(ini_world):
    passed(ini_world, "test_seed_sets_ids")


def test_fixtures_ini_option_loads_the_file_in_every_test(ini_world):
    passed(ini_world, "test_fixtures_first", "test_fixtures_second")


XDIST_TESTS = """
import json
import os

import pytest


@pytest.mark.parametrize("n", range(8))
def test_worker_has_its_own_clean_mock(platform_mock, n):
    with platform_mock.client() as api:
        api.get("/personal-access-tokens/ci", params={"bogus": n})  # one violation each
    assert platform_mock.journal.call_count == 1
    record = {"worker": os.environ["PYTEST_XDIST_WORKER"], "port": platform_mock.server.port}
    with open(f"seen-{n}.json", "w") as handle:  # in the inner session's folder
        json.dump(record, handle)


def test_deeply_nested_body_breaks_the_contract(platform_mock):
    with platform_mock.client() as api:
        deep = b"[" * 500 + b"]" * 500  # kept as sent in the report
        response = api.post(
            "/secrets/deployments", content=deep, headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
"""


@pytest.fixture
def under_xdist(pytester: pytest.Pytester, inner_runs: dict[str, Any]):
    """One inner session under pytest-xdist (run once per module): its result, and what
    each inner test saw, with the files the session wrote."""

    def run() -> InnerRun:
        pytester.makepyfile(test_workers=XDIST_TESTS)
        result = run_session(
            pytester,
            "-p", "no:cacheprovider", "-n", "2", "--platform-mock-report", "report.json",
            timeout=INNER_TIMEOUT,
        )  # fmt: skip
        written = {p.name: p.read_text() for p in pytester.path.glob("*.json")}
        return InnerRun(result, written)

    inner = run_once(inner_runs, "xdist", run)
    seen = [json.loads(text) for name, text in inner.files.items() if name.startswith("seen-")]
    return inner.result, seen, inner.files


def test_under_xdist_each_worker_has_its_own_server(under_xdist):
    result, seen, _ = under_xdist
    result.assert_outcomes(passed=9)
    ports = {record["worker"]: record["port"] for record in seen}
    assert len(seen) == 8 and len(ports) == 2 and len(set(ports.values())) == 2


def test_under_xdist_one_report_merges_every_workers_requests(under_xdist):
    result, _, files = under_xdist
    result.assert_outcomes(passed=9)
    assert [name for name in files if name.startswith("report")] == ["report.json"]
    report = json.loads(files["report.json"])
    tokens = report["operations"]["getOrCreatePersonalAccessToken"]
    assert (report["summary"]["requests"], report["summary"]["violations"]) == (9, 9)
    assert tokens["statuses"] == {"400": 8}
    assert sorted(tokens["parametersExercised"]["bogus"]) == [str(n) for n in range(8)]


def test_under_xdist_the_terminal_summary_shows_the_merged_report(under_xdist):
    under_xdist[0].stdout.fnmatch_lines(
        ["*platform mock contract report*", "Contract report: 9 request(s), 9 contract*"]
    )


def test_under_xdist_fail_on_violation_fails_the_session(pytester: pytest.Pytester):
    pytester.makepyfile(test_workers=XDIST_TESTS)
    result = run_session(
        pytester,
        "-p", "no:cacheprovider", "-n", "2", "--platform-mock-fail-on-violation",
        timeout=INNER_TIMEOUT,
    )  # fmt: skip
    result.assert_outcomes(failed=9)  # each of them sent a request that broke the contract
    assert result.ret == pytest.ExitCode.TESTS_FAILED


CRASHING_WORKER = """
import os


def test_uses_the_mock_then_its_worker_dies(platform_mock):
    with platform_mock.client() as api:
        api.get("/personal-access-tokens/ci")
    os._exit(1)
"""


def test_under_xdist_a_report_lost_with_its_worker_is_reported(pytester: pytest.Pytester):
    pytester.makepyfile(test_crash=CRASHING_WORKER)
    result = run_session(
        pytester,
        "-p", "no:cacheprovider", "-n", "2", timeout=INNER_TIMEOUT
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*contract report of 1 xdist worker(s) was lost*"])


MISSPELT_MARKER = """
import pytest



@pytest.mark.platform_mock(fixture=["extra.yaml"])
def test_with_a_misspelt_marker_option(platform_mock):
    pass
"""


def test_misspelt_marker_option_is_an_error_naming_it(pytester: pytest.Pytester):
    pytester.makepyfile(test_marker=MISSPELT_MARKER)
    result = run_session(pytester, "-p", "no:cacheprovider", timeout=INNER_TIMEOUT)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*marker takes only fixtures=[[]...[]], seed=N and expect_violations=True, not fixture*"]
    )


FROZEN = """
import gc


def test_the_mock_is_out_of_the_collectors_reach(platform_mock, platform_mock_backend):
    mock = platform_mock_backend.mock
    assert not any(found is mock for found in gc.get_objects())
    assert gc.get_freeze_count() > 0
"""


def test_the_session_mock_is_never_walked_by_the_collector_again(pytester: pytest.Pytester):
    """The session's in-process mock lives as long as the session: the collector's full
    passes (pytest's two at its end, the interpreter's at exit) do not walk it again."""
    write_module(pytester, "test_frozen", FROZEN)
    result = run_session(pytester, "-v", timeout=INNER_TIMEOUT)
    passed(result, "test_the_mock_is_out_of_the_collectors_reach")
