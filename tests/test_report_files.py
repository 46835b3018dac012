"""The contract report's files: `--report` values read into targets, each format rendered
(JUnit XML parsed back, Markdown), GitHub's job summary and annotations, and what a reviewer
fixes from: each rule broken of a live mock, its value sent, its nearest choice and a `curl`
line run by bash against the mock."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.contract import documents as contract
from mock_server.core import escape
from mock_server.http.mock import PlatformMock
from mock_server.http.server import BackgroundServer
from mock_server.reports import report_files
from mock_server.reports.explain import rules_broken
from mock_server.reports.report import ContractReport, Report, judge
from mock_server.reports.report_files import TargetError, targets
from tests.budget import budget
from tests.conftest import CONTROL_PLANE
from tests.corpus import unescaped, unmasked
from tests.test_report import bogus_token_request, entry, token_request


@pytest.fixture
def report() -> Report:
    """A valid request and one that broke the contract, to the same operation."""
    accumulated = ContractReport(contract.operations())
    accumulated.add(token_request())
    accumulated.add(bogus_token_request())
    return accumulated.to_dict()


# -- where each format goes ------------------------------------------------------------------


def test_a_directory_receives_every_format(tmp_path: Path):
    assert targets([str(tmp_path / "out")]) == {
        "json": tmp_path / "out" / "contract-report.json",
        "text": tmp_path / "out" / "contract-report.txt",
        "junit": tmp_path / "out" / "contract-report.xml",
        "markdown": tmp_path / "out" / "contract-report.md",
    }


@pytest.mark.parametrize(
    ("name", "format_"),
    [
        pytest.param("r.json", "json", id="json"),
        pytest.param("r.txt", "text", id="text"),
        pytest.param("r.xml", "junit", id="junit"),
        pytest.param("r.MD", "markdown", id="markdown-any-case"),
    ],
)
def test_a_file_suffix_names_its_format(name: str, format_: str):
    assert targets([name]) == {format_: Path(name)}


def test_format_equals_path_names_the_format_of_any_file():
    assert targets(["junit=results/contract", "markdown=summary.txt"]) == {
        "junit": Path("results/contract"),
        "markdown": Path("summary.txt"),
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(
            ["xml=r.xml"], "'xml=r.xml': no format 'xml'; one of json", id="no-such-format"
        ),
        pytest.param(["json="], "'json=': no path after json=", id="no-path"),
        pytest.param([""], "an empty path", id="empty"),
        pytest.param(
            ["a.json", "b.json"], "the json report is named twice: a.json and b.json", id="twice"
        ),
        pytest.param(
            ["r.json", "text=R.JSON"],
            "the json and text reports would both be written to R.JSON",
            id="one-file-two-formats",
        ),
    ],
)
def test_unusable_targets_are_refused(values: list[str], message: str):
    with pytest.raises(TargetError) as refused:
        targets(values)
    assert str(refused.value).startswith(message)


def test_write_puts_each_format_at_its_path(report: Report, tmp_path: Path):
    chosen = targets([str(tmp_path / "nested" / "dir")])
    written = report_files.write(report, chosen)
    assert written == list(chosen.values())
    assert json.loads(chosen["json"].read_text()) == report
    assert chosen["text"].read_text() == report_files.text(report)
    assert chosen["markdown"].read_text() == report_files.markdown(report)
    assert chosen["junit"].read_text() == report_files.junit(report)


# -- JUnit XML -------------------------------------------------------------------------------


def judged(report: Report, **checks) -> Report:
    """The report with its verdict, as a run writes it."""
    options = {"fail_on_violation": False, "min_coverage": None, **checks}
    return {"verdict": judge(report, **options), **report}


def cases(report: Report) -> dict[str, ET.Element]:
    root = ET.fromstring(report_files.junit(report))
    return {case.get("name", ""): case for case in root.iter("testcase")}


def test_junit_validates_against_the_junit_schema(report: Report, junit_schema):
    junit_schema.validate(report_files.junit(judged(report, fail_on_violation=True)))


def test_junit_with_every_kind_of_case_validates_against_the_junit_schema(junit_schema):
    accumulated = ContractReport(contract.operations())
    accumulated.add(bogus_token_request())
    accumulated.add(entry(None, "/api/svc/v1/\x00\x1b[31m\ufffe", status=404, code=40401))
    checked = judged(accumulated.to_dict(), fail_on_violation=True, min_coverage=99)
    junit_schema.validate(report_files.junit(checked))


def test_junit_has_a_case_per_operation_and_one_per_rule_broken(report: Report):
    names = set(cases(report))
    assert names == {
        *(f"{op} keeps the contract" for op in contract.operations()),
        "getOrCreatePersonalAccessToken: query bogus",
    }


def test_junit_case_names_are_the_same_whatever_the_ids_in_the_requests():
    def run(job: str) -> set[str]:
        accumulated = ContractReport(contract.operations())
        accumulated.add(
            entry(
                "listJobRuns",
                f"/api/svc/v1/jobs/{job}/runs",
                status=400,
                code=40001,
                query={"limit": ["0"]},
                path_params={"jobId": job},
                details=[{"location": "query", "field": "limit", "message": "too small"}],
            )
        )
        return set(cases(accumulated.to_dict()))

    assert run("application-0000000000000001") == run("application-00000000000000ff")


def test_junit_skips_only_the_operations_never_called(report: Report):
    skipped = [name for name, case in cases(report).items() if case.find("skipped") is not None]
    assert sorted(skipped) == sorted(
        f"{op} keeps the contract"
        for op in contract.operations()
        if op != "getOrCreatePersonalAccessToken"
    )


def test_junit_fails_the_rule_broken_naming_its_tests_and_requests(report: Report):
    case = cases(report)["getOrCreatePersonalAccessToken: query bogus"]
    failure = case.find("failure")
    assert failure is not None
    assert case.get("classname") == "contract.getOrCreatePersonalAccessToken"
    assert failure.get("message") == "1 request(s) broke query bogus"
    assert "sent by tests/test_client.py::test_it" in (failure.text or "")
    assert "GET /api/svc/v1/personal-access-tokens/ci -> 400" in (failure.text or "")
    assert 'query: {"bogus": ["1"]}' in (failure.text or "")


@pytest.mark.parametrize(
    ("checks", "name"),
    [
        pytest.param(
            {"fail_on_violation": True}, "no request breaks the contract", id="violations"
        ),
        pytest.param(
            {"min_coverage": 50.0}, "the contract coverage reaches --min-coverage", id="coverage"
        ),
    ],
)
def test_junit_fails_a_case_for_each_failing_check(report: Report, checks: dict, name: str):
    case = cases(judged(report, **checks))[name]
    assert case.get("classname") == "contract.verdict"
    assert case.find("failure") is not None


def test_junit_passes_a_check_that_passed(report: Report):
    case = cases(judged(report, min_coverage=0.0))["the contract coverage reaches --min-coverage"]
    assert list(case) == []


def test_junit_counts_match_its_cases(report: Report):
    root = ET.fromstring(report_files.junit(judged(report, fail_on_violation=True)))
    suite = root.find("testsuite")
    assert suite is not None
    all_cases = list(suite.iter("testcase"))
    assert int(suite.get("tests", "")) == len(all_cases)
    assert int(suite.get("failures", "")) == sum(c.find("failure") is not None for c in all_cases)
    assert int(suite.get("skipped", "")) == sum(c.find("skipped") is not None for c in all_cases)
    assert (root.get("tests"), root.get("failures")) == (suite.get("tests"), suite.get("failures"))


def test_junit_stays_well_formed_with_control_characters_in_a_request():
    accumulated = ContractReport(contract.operations())
    accumulated.add(
        entry(
            None,
            "/api/svc/v1/\x00\x1b[31m",
            status=404,
            code=40401,
            message="No route for GET /api/svc/v1/\x00\x1b[31m",
        )
    )
    root = ET.fromstring(report_files.junit(accumulated.to_dict()))  # raises if malformed
    failure = root.find(".//failure")
    assert failure is not None and "\\x00\\x1b[31m" in (failure.text or "")


# -- Markdown --------------------------------------------------------------------------------


def test_markdown_has_a_table_row_per_operation(report: Report):
    lines = report_files.markdown(report).splitlines()
    header = lines.index(
        "| Operation | Calls | Coverage | Statuses returned | Never exercised | Violations |"
    )
    rows = [line for line in lines[header + 2 :] if line.startswith("| ")]
    assert len(rows[: len(contract.operations())]) == len(contract.operations())
    assert all(f"`{op}`" in row for op, row in zip(contract.operations(), rows, strict=False))


@pytest.mark.parametrize(
    ("checks", "heading"),
    [
        pytest.param({}, "### Platform API contract: ✅ PASSED", id="nothing-asked"),
        pytest.param(
            {"fail_on_violation": True}, "### Platform API contract: ❌ FAILED", id="violation"
        ),
    ],
)
def test_markdown_opens_with_the_verdict(report: Report, checks: dict, heading: str):
    assert report_files.markdown(judged(report, **checks)).splitlines()[0] == heading


def test_markdown_lists_each_check_with_its_outcome(report: Report):
    lines = report_files.markdown(judged(report, fail_on_violation=True, min_coverage=0.0))
    assert "- ❌ 1 of 2 request(s) broke the contract (--fail-on-violation)" in lines
    assert any(line.startswith("- ✅ contract coverage") for line in lines.splitlines())


def test_markdown_names_the_rule_broken_and_the_test(report: Report):
    shown = report_files.markdown(report)
    assert (
        "| `getOrCreatePersonalAccessToken` | `query bogus` | 1 | "
        "`tests/test_client.py::test_it` |" in shown
    )


def test_markdown_keeps_what_a_client_sent_in_code_spans():
    accumulated = ContractReport(contract.operations())
    accumulated.add(
        entry(
            None,
            "/api/svc/v1/a|b<script>@team",
            status=404,
            code=40401,
            message="No route for GET /api/svc/v1/a|b<script>@team",
        )
    )
    shown = report_files.markdown(accumulated.to_dict())
    assert "`No route for GET /api/svc/v1/a\\|b<script>@team`" in shown
    assert all("<script>" not in part for part in shown.split("`")[::2])  # outside code spans


# -- sizes on a bad day --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flood() -> Report:
    """3,500 requests that broke the contract, each its own way, from 700 tests."""
    accumulated = ContractReport(contract.operations())
    for i in range(3500):
        accumulated.add(
            token_request(
                status=400,
                code=40001,
                message="bad " + "x" * 2000,
                query={f"k{i}": ["v" * 500]},
                details=[{"location": "query", "field": f"k{i % 40}", "message": "y" * 2000}],
                body=b'{"a": "' + b"z" * 60_000 + b'"}',
                test=f"tests/test_{i % 700}.py::test_it",
            )
        )
    return judged(accumulated.to_dict(), fail_on_violation=True)


def test_flood_json_counts_every_violation_in_a_few_hundred_kib(flood: Report):
    written = report_files.to_json(flood)
    assert json.loads(written)["summary"]["violations"] == 3500
    assert len(written.encode()) < 320 * 1024  # 300 KiB measured


def test_flood_step_summary_stays_far_under_githubs_limit(flood: Report):
    assert len(report_files.markdown(flood).encode()) < 100 * 1024


def test_flood_annotations_are_ten_short_lines_at_most(flood: Report):
    found = report_files.error_annotations(flood)
    assert len(found) <= report_files.MAX_ANNOTATIONS
    assert all(len(line) < 2000 and "\n" not in line for line in found)
    assert "more rule(s) broken" in found[-1]


# -- GitHub ----------------------------------------------------------------------------------


def test_github_appends_the_markdown_to_the_job_summary(report: Report, tmp_path: Path):
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    report_files.ci(report, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text() == "before\n" + report_files.markdown(report)


def test_github_annotates_each_rule_broken_under_actions(report: Report):
    (annotation,) = report_files.ci(report, {"GITHUB_ACTIONS": "true"})
    assert annotation.startswith(
        "::error title=Contract violation%3A getOrCreatePersonalAccessToken::"
        "1 request(s) broke query bogus, sent by tests/test_client.py::test_it%0Ae.g. GET "
    )
    assert "\n" not in annotation


def test_github_annotates_each_failing_check_first(report: Report):
    found = report_files.ci(
        judged(report, fail_on_violation=True, min_coverage=90.0), {"GITHUB_ACTIONS": "true"}
    )
    assert [line.split("::")[1] for line in found] == [
        "error title=Platform API contract%3A FAILED",
        "error title=Platform API contract%3A FAILED",
        "error title=Contract violation%3A getOrCreatePersonalAccessToken",
    ]


def test_github_does_nothing_outside_actions(report: Report):
    assert report_files.ci(report, {}) == []


# -- a report a reviewer fixes from ----------------------------------------------------------

TEST = "tests/test_sdk.py::test_lists"


@dataclass
class Reviewed:
    """A live mock a client broke the contract of, its report in text and Markdown."""

    mock: PlatformMock
    url: str
    token: str
    text: str
    markdown: str


# The requests a client sent, each breaking one rule (named as the report names it).
BROKEN: dict[str, tuple[str, str, dict[str, str], Any]] = {
    "query sortBy": ("GET", "/jobs/app-trainer/runs", {"sortBy": "startTme"}, None),
    "query page_size": ("GET", "/personal-access-tokens/ci", {"page_size": "5"}, None),
    "query limt": ("POST", "/secrets/deployments", {"limt": "3"}, {"secretIds": []}),
    "body manifest.nmae": (
        "POST",
        "/artifact-versions/stage",
        {},
        {"manifest": {"type": "artifact-version", "nmae": "m", "ml_repo": "demo-repo"}},
    ),
    "40401: No route for this path": ("GET", "/personal-acess-tokens/ci", {}, None),
}


@pytest.fixture(scope="module")
def reviewed() -> Iterator[Reviewed]:
    mock = PlatformMock()
    with BackgroundServer(mock) as served:
        token = mock.auth.dev_token()
        headers = {"Authorization": f"Bearer {token}", "X-Platform-Mock-Test": TEST}
        with httpx.Client(base_url=served.url + CONTROL_PLANE, headers=headers) as client:
            for method, path, query, body in BROKEN.values():
                client.request(method, path, params=query, json=body)
            httpx.get(served.url + CONTROL_PLANE + "/personal-access-tokens/ci")  # no token
            httpx.get(  # a token that is no JWT
                served.url + CONTROL_PLANE + "/personal-access-tokens/ci",
                headers={"Authorization": "Bearer not-a-jwt"},
            )
        report = judged(mock.report.to_dict(), fail_on_violation=True)
        yield Reviewed(
            mock, served.url, token, report_files.text(report), report_files.markdown(report)
        )


def rules_broken_by_the_last(mock: PlatformMock) -> list[str]:
    return rules_broken(list(mock.journal)[-1])


def markdown_row(reviewed: Reviewed, rule: str) -> str:
    (row,) = [line for line in reviewed.markdown.splitlines() if f"| `{rule}` |" in line]
    return row


def curl_lines(reviewed: Reviewed) -> dict[str, str]:
    """The text report's `curl` line of each rule broken, as printed."""
    lines = reviewed.text.splitlines()
    found = {}
    for index, line in enumerate(lines):
        if line.startswith("    VIOLATION "):
            rule = line.removeprefix("    VIOLATION ").rsplit(": ", 1)[0]
            after = lines[index + 1 :]
            ends = next(i for i, one in enumerate([*after, "    "]) if not one.startswith("      "))
            (curl,) = [one for one in after[:ends] if one.startswith("      reproduce: ")]
            found[rule] = curl.removeprefix("      reproduce: ")
    return found


@pytest.mark.parametrize("rule", [*BROKEN, "40101: No bearer token", "40102: Bearer"], ids=str)
def test_each_rules_curl_line_run_by_bash_breaks_the_same_rule_again(reviewed: Reviewed, rule):
    (curl,) = [line for name, line in curl_lines(reviewed).items() if name.startswith(rule)]
    env = {**os.environ, "PLATFORM_MOCK_URL": reviewed.url, "PLATFORM_MOCK_TOKEN": reviewed.token}
    before = len(list(reviewed.mock.journal))
    done = subprocess.run(["bash", "-c", curl], env=env, capture_output=True, timeout=budget(60))
    assert done.returncode == 0, done.stderr
    assert len(list(reviewed.mock.journal)) == before + 1
    assert any(again.startswith(rule) for again in rules_broken_by_the_last(reviewed.mock))


def test_the_curl_lines_name_no_credential_but_token(reviewed: Reviewed):
    shown = curl_lines(reviewed)
    assert reviewed.token not in reviewed.text and reviewed.token not in reviewed.markdown
    assert '"Authorization: Bearer $PLATFORM_MOCK_TOKEN"' in shown["query page_size"]
    assert "Authorization" not in next(v for k, v in shown.items() if k.startswith("40101"))


def test_the_markdown_lists_each_rules_curl_line_in_a_code_span(reviewed: Reviewed):
    for rule, curl in curl_lines(reviewed).items():
        assert f"{report_files.cell(rule)}: {escape.markdown_code(curl)}" in reviewed.markdown


@pytest.mark.parametrize(
    ("rule", "sent", "nearest"),
    [
        pytest.param("query sortBy", '"startTme"', "did you mean 'startTime'?", id="enum-value"),
        pytest.param(
            "query limt", '"3"', "did you mean 'limit'? listSecretDeployments takes: limit, offset",
            id="unknown-parameter",
        ),
        pytest.param("body manifest.nmae", '"m"', "did you mean 'name'?", id="unknown-field"),
    ],
)  # fmt: skip
def test_a_markdown_row_shows_the_test_the_value_sent_and_the_nearest_choice(
    reviewed: Reviewed, rule: str, sent: str, nearest: str
):
    row = markdown_row(reviewed, rule)
    assert f"| `{TEST}` |" in row
    assert row.endswith(f"| {escape.markdown_code(sent, in_table=True)} | `{nearest}` |")


def test_a_markdown_row_names_the_nearest_route_of_a_path_no_route_takes(reviewed: Reviewed):
    row = markdown_row(reviewed, "40401: No route for this path")
    assert "`the nearest route: GET /api/svc/v1/personal-access-tokens/{name}" in row


def test_the_text_report_shows_the_value_sent_and_the_nearest_choice(reviewed: Reviewed):
    lines = reviewed.text.splitlines()
    found = lines.index(f"    VIOLATION query sortBy: 1 request(s) by {TEST}")
    assert lines[found + 2 : found + 4] == [
        '      sent: "startTme"',
        "      nearest: did you mean 'startTime'?",
    ]


@pytest.mark.parametrize("render", ["text", "markdown"])
def test_rules_broken_come_before_coverage(reviewed: Reviewed, render: str):
    shown = getattr(reviewed, render)
    rules, coverage = (
        ("Rules broken", "Coverage, per operation:")
        if render == "text"
        else ("#### Rules broken", "#### Coverage")
    )
    assert 0 < shown.index(rules) < shown.index(coverage)


@pytest.mark.parametrize("render", ["text", "markdown"])
def test_the_contracts_common_prefix_is_said_once(reviewed: Reviewed, render: str):
    assert getattr(reviewed, render).count("Request does not conform to the API contract") == 1


def test_a_curl_line_sends_a_clients_text_inert_and_masked():
    accumulated = ContractReport(contract.operations())
    hostile = "\x1b[31m##vso[task.setvariable variable=x]1\u202e"
    accumulated.add(
        token_request(
            status=400, code=40001, message="bad", query={hostile: [hostile]},
            details=[{"location": "query", "field": hostile, "message": "is not a parameter"}],
        )
    )  # fmt: skip
    accumulated.add(
        entry(
            "stageArtifactVersion", "/api/svc/v1/artifact-versions/stage", method="POST",
            status=400, code=40001, message="bad",
            body={"note": hostile, "password": "SEKRIT-1234"},
            details=[{"location": "body", "field": "note", "message": "is not a field"}],
        )
    )  # fmt: skip
    shown = report_files.text(accumulated.to_dict())
    curls = [line for line in shown.splitlines() if "reproduce: curl" in line]
    assert len(curls) == 2
    assert (unescaped("\n".join(curls)), unmasked("\n".join(curls))) == ([], [])
    assert "%1B%5B31m%23%23vso%5Btask" in curls[1]  # the query as sent on the wire
    assert '"note":"\\u001b[31m##vso\\u005btask' in curls[0]  # the body as the same JSON


def test_every_failure_and_skip_of_the_junit_has_text(junit_schema):
    accumulated = ContractReport(contract.operations())
    accumulated.add(bogus_token_request())
    accumulated.add(entry(None, "/api/svc/v1/nope", status=404, code=40401, message="No route"))
    xml = report_files.junit(judged(accumulated.to_dict(), fail_on_violation=True, min_coverage=99))
    junit_schema.validate(xml)
    outcomes = [e for tag in ("failure", "error", "skipped") for e in ET.fromstring(xml).iter(tag)]
    assert {e.tag for e in outcomes} == {"failure", "skipped"}
    assert [e.get("message") for e in outcomes if not (e.text or "").strip()] == []
