"""The docs' CI recipe (`docs/ci.md`), `platform-mock run ... -- COMMAND`, around test suites
as users write them: a pytest suite (alone and under pytest-xdist), a Node suite and a shell
script, each with one test that breaks the contract. Each run is one real process tree, shared
by the tests of one of its outcomes."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import pages
from tests.test_ci_recipes import recipe as ci_recipe

RUN_TIMEOUT = 180

PYTEST_SUITE = """
import os

import httpx

API = os.environ["PLATFORM_MOCK_API_URL"]
HEADERS = {"Authorization": f"Bearer {os.environ['TFY_API_KEY']}"}


def test_keeps_the_contract():
    assert httpx.get(f"{API}/personal-access-tokens/ci", headers=HEADERS).status_code == 200


def test_breaks_the_contract():
    # A client sending a parameter the API does not have, not checking the answer.
    httpx.get(f"{API}/personal-access-tokens/ci", headers=HEADERS, params={"page_size": 5})


def test_with_the_fixture(platform_mock):
    group = platform_mock.store.secrets.group_named("llm-keys").resource.id
    with platform_mock.client() as api:
        assert api.delete(f"/secret-groups/{group}").status_code == 200
    platform_mock.journal.assert_called("deleteSecretGroup", times=1, id=group)
"""
# Under pytest-xdist: tests that each change the world and see it fresh, on every worker.
ISOLATED = """
import os


def test_world_is_this_workers_own_{n}(platform_mock):
    assert os.environ["TFY_HOST"] == platform_mock.url
    group = platform_mock.store.secrets.group_named("llm-keys").resource.id
    with platform_mock.client() as api:
        assert api.delete(f"/secret-groups/{{group}}").status_code == 200
        assert api.delete(f"/secret-groups/{{group}}").status_code == 404
"""
# Node test files, each the docs' recipe then its own tests: one keeps the contract, the
# other breaks it, both in flight at once (each waits until the other's request arrived).
NODE_TESTS = {
    "keeps.test.mjs": """
test("keeps the contract", async (t) => {
  const response = await call(t, `${api}/personal-access-tokens/ci`);
  assert.equal(response.status, 200);
  await together(t);
});
""",
    "breaks.test.mjs": """
test("breaks the contract", async (t) => {
  await call(t, `${api}/personal-access-tokens/ci?page_size=5`);
  await together(t);
});
""",
}
# Until both files' requests are in the journal: the two tests overlap in time.
NODE_TOGETHER = """
const together = async (t) => {
  for (let i = 0; i < 600; i++) {
    const found = await (await fetch(`${admin}/journal`, { headers: root })).json();
    if (found.data.length >= 2) return;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error("the other file's test never ran alongside");
};
"""


def node_recipe() -> str:
    """The docs' Node recipe: the hooks at the top of each test file."""
    _, text = pages.holding("<!-- recipe: node -->")
    found = re.search(r"<!-- recipe: node -->\n```js\n(.*?)```", text, re.DOTALL)
    assert found, "the Node recipe is not a js block"
    return found[1]


SHELL_SUITE = """
set -e
curl -s -o /dev/null -H "Authorization: Bearer $PLATFORM_MOCK_TOKEN" \\
  "$PLATFORM_MOCK_API_URL/personal-access-tokens/ci?page_size=5"
"""


def recipe() -> list[str]:
    """The `platform-mock run` line of the docs' GitHub Actions recipe, less its command."""
    lines = [line.strip() for line in ci_recipe("github").splitlines()]
    (line,) = [line for line in lines if line.startswith("- run: platform-mock run ")]
    words = shlex.split(line.removeprefix("- run: "))
    return [
        sys.executable,
        "-m",
        "mock_server",
        *words[1 : words.index("--")],
    ]


@dataclass
class Ran:
    done: subprocess.CompletedProcess
    path: Path  # where the suite ran, with its reports

    @property
    def summary(self) -> str:
        return (self.path / "step-summary.md").read_text()

    @property
    def report(self) -> dict:
        return json.loads((self.path / "contract" / "contract-report.json").read_text())

    def junit(self) -> dict[str, ET.Element]:
        root = ET.parse(self.path / "junit.xml").getroot()
        return {case.get("name", ""): case for case in root.iter("testcase")}


# The variables each CI system sets that `run` reads (the rest of the environment is the test's).
CI_VARIABLES = ("GITHUB_", "PLATFORM_MOCK", "TF_BUILD", "AGENT_", "GITLAB_CI")


def github_actions(path: Path) -> dict[str, str]:
    return {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(path / "step-summary.md")}


def run_ci(path: Path, *command: str, ci=github_actions) -> Ran:
    """The docs' recipe around `command`, in `path`, as the CI system whose variables
    `ci(path)` gives runs it (GitHub Actions by default). Its output is read as it was
    written, carriage returns kept (GitLab's section markers hold them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CI_VARIABLES)}
    done = subprocess.run(
        [*recipe(), "--", *command],
        cwd=path,
        capture_output=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=env | ci(path),
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    return Ran(subprocess.CompletedProcess(done.args, done.returncode, out, err), path)


def pytest_command(*options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--junitxml=junit.xml",
        *options,
    ]


@pytest.fixture(scope="module")
def around_pytest(tmp_path_factory) -> Ran:
    path = tmp_path_factory.mktemp("pytest-suite")
    (path / "test_sdk.py").write_text(PYTEST_SUITE)
    return run_ci(path, *pytest_command())


@pytest.fixture(scope="module")
def around_xdist(tmp_path_factory) -> Ran:
    return xdist_suite(tmp_path_factory.mktemp("xdist-suite"))


# Tests that break one rule alike, more of them than the report keeps examples of: which
# are kept must not follow which worker came first.
SAME_RULE = """
import os

import httpx
import pytest

API = os.environ["PLATFORM_MOCK_API_URL"]
HEADERS = {"Authorization": f"Bearer {os.environ['TFY_API_KEY']}"}


@pytest.mark.parametrize("n", range(6))
def test_same_rule(n):
    httpx.get(f"{API}/personal-access-tokens/ci", headers=HEADERS, params={"pageSize": n})
"""


def xdist_suite(path: Path) -> Ran:
    (path / "test_sdk.py").write_text(PYTEST_SUITE)
    (path / "test_same_rule.py").write_text(SAME_RULE)
    for n in range(4):
        (path / f"test_isolated_{n}.py").write_text(ISOLATED.format(n=n))
    return run_ci(path, *pytest_command("-n", "2"))


def node_suite(path: Path) -> Ran:
    for name, tests in NODE_TESTS.items():
        (path / name).write_text(node_recipe() + NODE_TOGETHER + tests)
    # Node runs files in parallel, one fewer than the machine's cores at once by default:
    # at least two here, whatever the machine.
    return run_ci(path, "node", "--test", "--test-concurrency=2")


@pytest.fixture(scope="module")
def around_node(tmp_path_factory) -> Ran:
    if shutil.which("node") is None:
        pytest.fail("Node.js is needed: every machine this project runs on has Node 20")
    return node_suite(tmp_path_factory.mktemp("node-suite"))


@pytest.fixture(scope="module")
def around_shell(tmp_path_factory) -> Ran:
    path = tmp_path_factory.mktemp("shell-suite")
    (path / "suite.sh").write_text(SHELL_SUITE)
    return run_ci(path, "sh", "suite.sh")


def last_line(ran: Ran) -> str:
    return ran.done.stderr.splitlines()[-1]


# -- a pytest suite ----------------------------------------------------------------------------


def test_recipe_around_a_pytest_suite_that_breaks_the_contract_exits_1(around_pytest: Ran):
    assert around_pytest.done.returncode == 1, around_pytest.done.stderr


def test_pytests_junit_fails_the_violating_test_and_only_it(around_pytest: Ran):
    cases = around_pytest.junit()
    failed = sorted(name for name, case in cases.items() if case.find("failure") is not None)
    assert failed == ["test_breaks_the_contract"]
    message = cases["test_breaks_the_contract"].find("failure").get("message", "")  # type: ignore[union-attr]
    assert "query page_size: is not a parameter of this operation" in message


def test_step_summary_names_the_violating_test_under_a_failed_verdict(around_pytest: Ran):
    summary = around_pytest.summary
    assert summary.startswith("### Platform API contract: ❌ FAILED\n")
    assert "| `query page_size` | 1 | `test_sdk.py::test_breaks_the_contract` |" in summary


def test_runs_last_line_is_the_verdict_with_its_reasons(around_pytest: Ran):
    assert last_line(around_pytest).startswith(
        "platform-mock: contract check FAILED: the command (python -m pytest "
    )
    assert "1 of 3 request(s) broke the contract (--allow-violations lets them pass)" in last_line(
        around_pytest
    )


def test_runs_report_counts_every_request_of_the_suite(around_pytest: Ran):
    assert around_pytest.report["summary"]["requests"] == 3


def test_each_failing_check_is_an_error_annotation(around_pytest: Ran):
    titles = [
        line.split("::")[1]
        for line in around_pytest.done.stdout.splitlines()
        if line.startswith("::error ")
    ]
    assert (
        titles.count("error title=Platform API contract%3A FAILED") == 3
    )  # command, violation, coverage


def test_the_fixture_reads_and_changes_runs_world(around_pytest: Ran):
    statuses = around_pytest.report["operations"]["deleteSecretGroup"]["statuses"]
    assert statuses == {"200": 1}


# -- the same under pytest-xdist ---------------------------------------------------------------


def test_xdist_workers_each_change_a_world_of_their_own(around_xdist: Ran):
    cases = around_xdist.junit()
    isolated = [name for name in cases if name.startswith("test_world_is_this_workers_own")]
    assert len(isolated) == 4
    assert all(cases[name].find("failure") is None for name in isolated)


def test_xdist_workers_requests_all_reach_runs_report(around_xdist: Ran):
    assert around_xdist.report["summary"]["requests"] == 3 + 4 * 2 + 6


def test_xdist_violating_test_fails_in_junit(around_xdist: Ran):
    cases = around_xdist.junit()
    failed = sorted(name for name, case in cases.items() if case.find("failure") is not None)
    assert failed == ["test_breaks_the_contract", *(f"test_same_rule[{n}]" for n in range(6))]


def test_xdist_run_fails_naming_the_violating_test(around_xdist: Ran):
    assert around_xdist.done.returncode == 1, around_xdist.done.stderr
    assert "`test_sdk.py::test_breaks_the_contract`" in around_xdist.summary


# -- a Node suite and a shell script -----------------------------------------------------------


def test_recipe_around_a_node_suite_fails_the_violating_test(around_node: Ran):
    assert around_node.done.returncode == 1, around_node.done.stderr
    # Numbered in the order the parallel files finished.
    assert re.search(r"^not ok \d - breaks the contract$", around_node.done.stdout, re.M)
    assert re.search(r"^ok \d - keeps the contract$", around_node.done.stdout, re.M)


def test_step_summary_names_the_node_test_that_broke_the_contract(around_node: Ran):
    assert "| `query page_size` | 1 | `breaks.test.mjs > breaks the contract` |" in (
        around_node.summary
    )


def test_recipe_around_a_passing_shell_script_that_broke_the_contract_exits_1(around_shell: Ran):
    assert around_shell.done.returncode == 1, around_shell.done.stderr
    assert last_line(around_shell).startswith(
        "platform-mock: contract check FAILED: 1 of 1 request(s) broke the contract"
    )


# -- the same suite, the same reports ----------------------------------------------------------

REPORTS = [f"contract-report.{suffix}" for suffix in ("json", "md", "txt", "xml")]


def _reports(ran: Ran) -> dict[str, bytes]:
    return {name: (ran.path / "contract" / name).read_bytes() for name in REPORTS}


def test_a_parallel_node_suite_run_twice_writes_the_same_reports(around_node: Ran, tmp_path):
    assert _reports(node_suite(tmp_path)) == _reports(around_node)


def test_an_xdist_suite_run_twice_writes_the_same_reports(around_xdist: Ran, tmp_path):
    assert _reports(xdist_suite(tmp_path)) == _reports(around_xdist)


# -- Azure Pipelines and GitLab CI -------------------------------------------------------------

# More rules broken than a CI system is shown failures: each request a parameter of its own.
MANY_RULES = """
import os

import httpx
import pytest

API = os.environ["PLATFORM_MOCK_API_URL"]
HEADERS = {"Authorization": f"Bearer {os.environ['TFY_API_KEY']}"}


@pytest.mark.parametrize("n", range(12))
def test_many_rules(n):
    httpx.get(f"{API}/personal-access-tokens/ci", headers=HEADERS, params={f"made_up_{n}": 1})
"""


def azure_pipelines(path: Path) -> dict[str, str]:
    (path / "agent-temp").mkdir()
    return {"TF_BUILD": "True", "AGENT_TEMPDIRECTORY": str(path / "agent-temp")}


def gitlab_ci(path: Path) -> dict[str, str]:
    return {"GITLAB_CI": "true"}


def many_rules_suite(path: Path, ci) -> Ran:
    (path / "test_sdk.py").write_text(PYTEST_SUITE)
    (path / "test_many_rules.py").write_text(MANY_RULES)
    return run_ci(path, *pytest_command(), ci=ci)


@pytest.fixture(scope="module")
def around_azure(tmp_path_factory) -> Ran:
    return many_rules_suite(tmp_path_factory.mktemp("azure-suite"), azure_pipelines)


@pytest.fixture(scope="module")
def around_gitlab(tmp_path_factory) -> Ran:
    return many_rules_suite(tmp_path_factory.mktemp("gitlab-suite"), gitlab_ci)


AZURE_ISSUE = "##vso[task.logissue type=error]"
UPLOAD_SUMMARY = "##vso[task.uploadsummary]"


def lines_starting(ran: Ran, prefix: str) -> list[str]:
    return [line for line in ran.done.stdout.split("\n") if line.startswith(prefix)]


def test_azure_run_fails_the_job(around_azure: Ran):
    assert around_azure.done.returncode == 1, around_azure.done.stderr


def test_azure_logs_ten_issues_at_most_the_last_counting_the_rest(around_azure: Ran):
    issues = lines_starting(around_azure, AZURE_ISSUE)
    assert len(issues) == 10
    assert "more rule(s) broken" in issues[-1]


def test_azure_logs_the_failing_checks_first_then_the_rules_broken(around_azure: Ran):
    issues = [line.removeprefix(AZURE_ISSUE) for line in lines_starting(around_azure, AZURE_ISSUE)]
    assert issues[0].startswith("Platform API contract: FAILED: the command (python -m pytest ")
    assert any(
        issue.startswith("Contract violation: getOrCreatePersonalAccessToken: ")
        and "query made_up_" in issue
        for issue in issues
    )


def test_azure_issue_data_is_escaped_as_its_agent_reads_it(around_azure: Ran):
    # A `]` or `;` of the data would end the command's properties; a line break would end it.
    data = [line.removeprefix(AZURE_ISSUE) for line in lines_starting(around_azure, AZURE_ISSUE)]
    assert all("]" not in one and ";" not in one and "\r" not in one for one in data)
    assert any("%0Ae.g. GET /api/svc/v1/personal-access-tokens/ci" in one for one in data)


def test_azure_uploads_the_summary_written_in_the_agents_temp_directory(around_azure: Ran):
    (upload,) = lines_starting(around_azure, UPLOAD_SUMMARY)
    written = Path(upload.removeprefix(UPLOAD_SUMMARY))
    assert written.parent == around_azure.path / "agent-temp"
    assert (
        written.read_text() == (around_azure.path / "contract" / "contract-report.md").read_text()
    )


def test_azure_summary_opens_with_the_verdict(around_azure: Ran):
    (upload,) = lines_starting(around_azure, UPLOAD_SUMMARY)
    summary = Path(upload.removeprefix(UPLOAD_SUMMARY)).read_text()
    assert summary.startswith("### Platform API contract: ❌ FAILED\n")


def test_azure_gets_no_github_annotation(around_azure: Ran):
    assert lines_starting(around_azure, "::") == []


SECTION_START = re.compile(
    r"\x1b\[0Ksection_start:(\d+):platform_api_contract\[collapsed=false\]\r\x1b\[0K"
    r"Platform API contract"
)
SECTION_END = re.compile(r"\x1b\[0Ksection_end:(\d+):platform_api_contract\r\x1b\[0K")


def gitlab_section(ran: Ran) -> list[str]:
    """The lines of the run's GitLab section, its markers included."""
    lines = ran.done.stdout.split("\n")
    (start,) = [i for i, line in enumerate(lines) if SECTION_START.fullmatch(line)]
    (end,) = [i for i, line in enumerate(lines) if SECTION_END.fullmatch(line)]
    assert start < end
    return lines[start : end + 1]


def test_gitlab_run_fails_the_job(around_gitlab: Ran):
    assert around_gitlab.done.returncode == 1, around_gitlab.done.stderr


def test_gitlab_section_opens_and_closes_under_one_name(around_gitlab: Ran):
    section = gitlab_section(around_gitlab)
    opened, closed = SECTION_START.fullmatch(section[0]), SECTION_END.fullmatch(section[-1])
    assert opened and closed and int(opened[1]) <= int(closed[1])


def test_gitlab_section_holds_ten_failures_at_most_the_last_counting_the_rest(around_gitlab: Ran):
    failures = [line for line in gitlab_section(around_gitlab) if line.startswith("ERROR ")]
    assert len(failures) == 10
    assert "more rule(s) broken" in failures[-1]
    assert failures[0].startswith("ERROR Platform API contract: FAILED: the command")


def test_gitlab_gets_neither_annotations_nor_azure_commands(around_gitlab: Ran):
    assert lines_starting(around_gitlab, "::") == []
    assert "##vso[" not in around_gitlab.done.stdout


# -- the JUnit report every CI system reads -----------------------------------------------------


def junit_outcomes(ran: Ran) -> list[ET.Element]:
    root = ET.parse(ran.path / "contract" / "contract-report.xml").getroot()
    return [e for tag in ("failure", "error", "skipped") for e in root.iter(tag)]


def test_every_failure_and_skip_of_the_runs_junit_has_text(around_azure: Ran):
    outcomes = junit_outcomes(around_azure)
    assert {e.tag for e in outcomes} == {"failure", "skipped"}
    assert [e.get("message") for e in outcomes if not (e.text or "").strip()] == []


def test_the_runs_junit_validates_against_the_junit_schema(around_azure: Ran, junit_schema):
    junit_schema.validate(str(around_azure.path / "contract" / "contract-report.xml"))
