"""The contract report's files: `--report` values read into targets, each format rendered
(JUnit XML parsed back, Markdown), and GitHub's job summary and annotations."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mock_server import contract, report_files
from mock_server.report import ContractReport
from mock_server.report_files import TargetError, targets
from tests.test_report import bogus_token_request, entry, token_request


@pytest.fixture
def report() -> dict:
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


def test_write_puts_each_format_at_its_path(report: dict, tmp_path: Path):
    chosen = targets([str(tmp_path / "nested" / "dir")])
    written = report_files.write(report, chosen)
    assert written == list(chosen.values())
    assert json.loads(chosen["json"].read_text()) == report
    assert chosen["text"].read_text() == report_files.text(report)
    assert chosen["markdown"].read_text() == report_files.markdown(report)
    assert chosen["junit"].read_text() == report_files.junit(report)


# -- JUnit XML -------------------------------------------------------------------------------


def cases(report: dict) -> dict[str, ET.Element]:
    root = ET.fromstring(report_files.junit(report))
    return {case.get("name", ""): case for case in root.iter("testcase")}


def test_junit_has_a_case_per_operation_and_documented_status(report: dict):
    names = set(cases(report))
    for op in contract.operations().values():
        assert {f"{op.operation_id} returns {s}" for s in op.statuses} <= names


def test_junit_status_returned_passes_and_one_never_returned_is_skipped(report: dict):
    found = cases(report)
    assert list(found["getOrCreatePersonalAccessToken returns 200"]) == []
    (skipped,) = found["getOrCreatePersonalAccessToken returns 401"]
    assert (skipped.tag, skipped.get("message")) == ("skipped", "no request was answered 401")


def test_junit_fails_a_case_per_violation_naming_the_request(report: dict):
    failed = [case for case in cases(report).values() if case.find("failure") is not None]
    (case,) = failed
    failure = case.find("failure")
    assert failure is not None
    assert case.get("classname") == "contract.getOrCreatePersonalAccessToken"
    assert "GET /api/svc/v1/personal-access-tokens/ci -> 400" in failure.get("message", "")
    assert 'query: {"bogus": ["1"]}' in (failure.text or "")
    assert "sent by tests/test_client.py::test_it" in (failure.text or "")


def test_junit_counts_match_its_cases(report: dict):
    root = ET.fromstring(report_files.junit(report))
    suite = root.find("testsuite")
    assert suite is not None
    all_cases = list(suite.iter("testcase"))
    assert int(suite.get("tests", "")) == len(all_cases)
    assert int(suite.get("failures", "")) == sum(c.find("failure") is not None for c in all_cases)
    assert int(suite.get("skipped", "")) == sum(c.find("skipped") is not None for c in all_cases)
    assert root.get("tests") == suite.get("tests")


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
    assert failure is not None and "\\x00\\x1b[31m" in failure.get("message", "")


# -- Markdown --------------------------------------------------------------------------------


def test_markdown_has_a_table_row_per_operation(report: dict):
    rows = [line for line in report_files.markdown(report).splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(contract.operations())  # the header, then each operation


def test_markdown_heading_gives_coverage_and_violations(report: dict):
    percent = report["summary"]["coverage"]["percent"]
    first = report_files.markdown(report).splitlines()[0]
    assert first == f"### Platform API contract: coverage {percent}%, 1 violation(s)"


def test_markdown_escapes_what_a_client_sent():
    accumulated = ContractReport(contract.operations())
    accumulated.add(
        entry(
            None,
            "/api/svc/v1/a|b<script>",
            status=404,
            code=40401,
            message="No route for GET /api/svc/v1/a|b<script>",
        )
    )
    shown = report_files.markdown(accumulated.to_dict())
    assert "<script>" not in shown
    assert "a\\|b&lt;script&gt;" in shown


# -- GitHub ----------------------------------------------------------------------------------


def test_github_appends_the_markdown_to_the_job_summary(report: dict, tmp_path: Path):
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    report_files.github(report, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text() == "before\n" + report_files.markdown(report)


def test_github_annotates_each_violation_under_actions(report: dict):
    (annotation,) = report_files.github(report, {"GITHUB_ACTIONS": "true"})
    assert annotation.startswith(
        "::error title=Contract violation%3A getOrCreatePersonalAccessToken::"
        "GET /api/svc/v1/personal-access-tokens/ci -> 400"
    )
    assert "\n" not in annotation and "%0A" in annotation  # one line, its lines escaped


def test_github_does_nothing_outside_actions(report: dict):
    assert report_files.github(report, {}) == []
