"""The contract report: per-operation calls, statuses, violating requests and parameters, fed
journal entries directly; and `platform-mock serve --report` writing it when stopped."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.contract import documents as contract
from mock_server.core.errors import Violation
from mock_server.reports import report_files
from mock_server.reports.report import (
    MAX_EXAMPLES,
    MAX_RULES,
    MAX_TESTS,
    MAX_VALUES,
    OTHER_RULES,
    UNROUTED,
    ContractReport,
    Report,
    gaps,
    judge,
    percent,
    reasons,
    verdict_line,
)
from mock_server.services.journal import Entry, Journal
from tests.budget import budget
from tests.test_catalog import send_example
from tests.test_cli import start

TOKENS_PATH = "/api/svc/v1/personal-access-tokens/ci"
JOB_ID = "application-0123456789abcdef"
JOB_RUNS_PATH = f"/api/svc/v1/jobs/{JOB_ID}/runs"
BOGUS_MESSAGE = (
    "Request does not conform to the API contract: query bogus: is not a parameter of this "
    "operation"
)
BOGUS_DETAILS = [
    {"location": "query", "field": "bogus", "message": "is not a parameter of this operation"}
]

_seq = itertools.count(1)


def text(report: ContractReport) -> str:
    return report_files.text(report.to_dict())


def entry(
    operation_id: str | None,
    path: str,
    *,
    method: str = "GET",
    status: int | None = 200,
    query: dict[str, list[str]] | None = None,
    path_params: dict[str, str] | None = None,
    body: object = None,
    code: int | None = None,
    message: str | None = None,
    details: list[Violation] | None = None,
    test: str | None = None,
) -> Entry:
    return Entry(
        seq=next(_seq),
        method=method,
        path=path,
        query=query or {},
        path_params=path_params or {},
        raw_headers={},
        raw_body=body if isinstance(body, bytes) else json.dumps(body).encode() if body else b"",
        operation_id=operation_id,
        status=status,
        code=code,
        message=message,
        details=details or [],
        test=test,
    )


def token_request(**kwargs) -> Entry:
    return entry(
        "getOrCreatePersonalAccessToken", TOKENS_PATH, path_params={"name": "ci"}, **kwargs
    )


def bogus_token_request(test: str | None = "tests/test_client.py::test_it") -> Entry:
    """A request that broke the contract: an unknown query parameter."""
    return token_request(
        status=400,
        query={"bogus": ["1"]},
        code=40001,
        message=BOGUS_MESSAGE,
        details=BOGUS_DETAILS,
        test=test,
    )


def unrouted_request() -> Entry:
    return entry(
        None,
        "/api/svc/v1/nope",
        status=404,
        code=40401,
        message="No route for GET /api/svc/v1/nope",
        test="tests/test_client.py::test_typo",
    )


@pytest.fixture
def report() -> ContractReport:
    return ContractReport(contract.operations())


def fed(report: ContractReport, *entries: Entry) -> Report:
    for one in entries:
        report.add(one)
    return report.to_dict()


# -- per operation ---------------------------------------------------------------------------


def test_calls_and_statuses_are_counted_per_operation(report):
    job_runs: dict[str, Any] = {"path_params": {"jobId": JOB_ID}}
    result = fed(
        report,
        entry("listJobRuns", JOB_RUNS_PATH, **job_runs),
        entry("listJobRuns", JOB_RUNS_PATH, **job_runs),
        entry("listJobRuns", JOB_RUNS_PATH, status=404, code=40406, message="No job", **job_runs),
        token_request(),
    )
    operations = result["operations"]
    assert (operations["listJobRuns"]["calls"], operations["listJobRuns"]["statuses"]) == (
        3,
        {"200": 2, "404": 1},
    )
    assert operations["getOrCreatePersonalAccessToken"]["statuses"] == {"200": 1}
    assert operations["deleteSecretGroup"]["calls"] == 0
    assert operations["deleteSecretGroup"]["statuses"] == {}


def test_dropped_connection_is_counted_as_dropped(report):
    dropped = dataclasses.replace(token_request(status=None), dropped=True)
    result = fed(report, dropped)
    assert result["operations"]["getOrCreatePersonalAccessToken"]["statuses"] == {"dropped": 1}


def test_request_left_unanswered_is_counted_as_unanswered(report):
    result = fed(report, token_request(status=None))  # its client left, and no fault
    assert result["operations"]["getOrCreatePersonalAccessToken"]["statuses"] == {"unanswered": 1}


def test_violating_request_is_kept_in_full_with_its_test_under_the_rule_it_broke(report):
    body = {"manifest": {"type": "model-version", "name": "m"}}
    details: list[Violation] = [
        {"location": "body", "field": "manifest", "message": "'ml_repo' is required"}
    ]
    result = fed(
        report,
        entry(
            "stageArtifactVersion",
            "/api/svc/v1/artifact-versions/stage",
            method="POST",
            status=400,
            query={"dryRun": ["true"]},
            body=body,
            code=40001,
            message="Request does not conform to the API contract",
            details=details,
            test="tests/test_sdk.py::test_stage",
        ),
    )
    stage = result["operations"]["stageArtifactVersion"]
    assert stage["violations"] == 1
    (group,) = stage["violationGroups"]
    assert (group["rule"], group["count"], group["tests"]) == (
        "body manifest",
        1,
        {"tests/test_sdk.py::test_stage": 1},
    )
    assert group["examples"] == [
        {
            "test": "tests/test_sdk.py::test_stage",
            "request": "POST /api/svc/v1/artifact-versions/stage",
            "query": {"dryRun": ["true"]},
            "body": body,
            "status": 400,
            "code": 40001,
            "message": "Request does not conform to the API contract",
            "details": [{**details[0], "hint": "", "sent": json.dumps(body["manifest"])}],
            "hint": "",
            "curl": (
                """curl -sS -X POST "$PLATFORM_MOCK_URL"'/api/svc/v1/artifact-versions/stage"""
                """?dryRun=true' -H "Authorization: Bearer $PLATFORM_MOCK_TOKEN" """
                """-H 'content-type:' """
                """--data-binary '{"manifest":{"type":"model-version","name":"m"}}'"""
            ),
        }
    ]


@pytest.mark.parametrize(
    ("status", "code"),
    [
        pytest.param(403, 40301, id="permission-denied"),
        pytest.param(404, 40406, id="job-not-found"),
        pytest.param(422, 42201, id="not-a-job"),
        pytest.param(503, 50301, id="injected-unavailable"),
    ],
)
def test_platform_error_that_keeps_the_contract_is_no_violation(report, status, code):
    result = fed(
        report,
        entry(
            "listJobRuns",
            JOB_RUNS_PATH,
            status=status,
            code=code,
            message="refused",
            path_params={"jobId": JOB_ID},
        ),
    )
    job_runs = result["operations"]["listJobRuns"]
    assert (job_runs["calls"], job_runs["violations"], job_runs["violationGroups"]) == (1, 0, [])
    assert result["summary"]["violations"] == 0


def test_made_up_parameter_names_are_kept_up_to_a_cap(report):
    flood = {str(i): [""] for i in range(1000)}
    result = fed(report, token_request(status=400, code=40001, query=flood))
    kept = result["operations"]["getOrCreatePersonalAccessToken"]["parametersExercised"]
    assert len([name for name in kept if name.isdigit()]) == MAX_VALUES
    assert "name" in kept  # the operation's own parameters are kept whatever came before


def test_large_offending_body_is_shown_cut_with_its_size(report):
    body = b'{"secretIds": ["' + b"x" * 10_000 + b'"]}'
    offending = entry(
        "listSecretDeployments", "/api/svc/v1/secrets/deployments", method="POST",
        body=body, status=400, code=40001, message="bad",
    )  # fmt: skip
    shown = fed(report, offending)["operations"]["listSecretDeployments"]["violationGroups"]
    assert str(shown[0]["examples"][0]["body"]).endswith(f"... ({len(body)} bytes in all)")


def test_report_says_when_the_journal_dropped_entries(report):
    journal = Journal(budget=1)
    report.journal_stats = journal.stats
    for _ in range(3):
        journal.record(token_request())
    assert report.to_dict()["journal"] == {"budgetBytes": 1, "droppedEntries": 2}
    assert "journal: dropped its 2 oldest entries" in text(report)


def test_requests_that_broke_one_rule_are_counted_in_one_group_with_a_few_examples(report):
    result = fed(report, *(bogus_token_request() for _ in range(MAX_EXAMPLES + 5)))
    tokens = result["operations"]["getOrCreatePersonalAccessToken"]
    (group,) = tokens["violationGroups"]
    assert (tokens["violations"], group["count"]) == (MAX_EXAMPLES + 5, MAX_EXAMPLES + 5)
    assert len(group["examples"]) == MAX_EXAMPLES
    assert report.violation_count == MAX_EXAMPLES + 5


def test_rule_of_an_item_names_the_field_without_its_index(report):
    details: list[Violation] = [
        {"location": "body", "field": f"secretIds[{i}]", "message": "is too long"} for i in range(3)
    ]
    offending = entry(
        "listSecretDeployments", "/api/svc/v1/secrets/deployments", method="POST",
        status=400, code=40001, message="bad", details=details,
    )  # fmt: skip
    groups = fed(report, offending)["operations"]["listSecretDeployments"]["violationGroups"]
    assert [(g["rule"], g["count"]) for g in groups] == [("body secretIds[]", 1)]


def test_rules_past_the_cap_are_counted_as_one(report):
    floods = [
        token_request(
            status=400,
            code=40001,
            message="bad",
            query={f"made-up-{i}": ["1"]},
            details=[{"location": "query", "field": f"made-up-{i}", "message": "unknown"}],
        )
        for i in range(MAX_RULES + 7)
    ]
    tokens = fed(report, *floods)["operations"]["getOrCreatePersonalAccessToken"]
    groups = {g["rule"]: g["count"] for g in tokens["violationGroups"]}
    assert len(groups) == MAX_RULES + 1
    assert groups[OTHER_RULES] == 7
    assert sum(groups.values()) == tokens["violations"] == MAX_RULES + 7


def test_tests_past_the_cap_are_counted_not_named(report):
    result = fed(report, *(bogus_token_request(f"t.py::test_{i}") for i in range(MAX_TESTS + 4)))
    (group,) = result["operations"]["getOrCreatePersonalAccessToken"]["violationGroups"]
    assert (len(group["tests"]), group["otherTests"]) == (MAX_TESTS, 4)


def test_a_request_without_violations_listed_is_grouped_by_its_condition(report):
    result = fed(report, unrouted_request())
    (group,) = result["operations"][UNROUTED]["violationGroups"]
    assert group["rule"] == "40401: No route for this path"


# -- parameters ------------------------------------------------------------------------------


def test_parameters_exercised_and_not_exercised(report):
    result = fed(
        report,
        entry(
            "listJobRuns",
            JOB_RUNS_PATH,
            query={"limit": ["10"], "status": ["RUNNING", "FAILED"]},
            path_params={"jobId": JOB_ID},
        ),
    )
    job_runs = result["operations"]["listJobRuns"]
    assert job_runs["parametersExercised"] == {
        "jobId": [JOB_ID],
        "limit": ["10"],
        "status": ["FAILED", "RUNNING"],
    }
    # The other parameters listJobRuns declares in spec/control-plane.yaml, in its order.
    assert job_runs["parametersNotExercised"] == [
        "offset",
        "searchPrefix",
        "sortBy",
        "order",
        "triggeredBy",
        "versionNumbers",
    ]


def test_parameter_values_are_collected_once_each(report):
    result = fed(
        report,
        *(
            entry("listJobRuns", JOB_RUNS_PATH, query={"limit": [v]}, path_params={"jobId": JOB_ID})
            for v in ("20", "10", "20")
        ),
    )
    assert result["operations"]["listJobRuns"]["parametersExercised"]["limit"] == ["10", "20"]


def test_operation_never_called_exercised_no_parameter(report):
    result = fed(report, token_request())
    job_runs = result["operations"]["listJobRuns"]
    assert job_runs["parametersExercised"] == {}
    assert job_runs["parametersNotExercised"] == list(
        contract.operations()["listJobRuns"].parameters
    )


# -- coverage --------------------------------------------------------------------------------


def job_runs_request(query: dict[str, list[str]], **kwargs) -> Entry:
    return entry("listJobRuns", JOB_RUNS_PATH, query=query, path_params={"jobId": JOB_ID}, **kwargs)


def test_coverage_counts_each_documented_status_returned(report):
    result = fed(report, token_request(), token_request(status=401, code=40101, message="No"))
    coverage = result["operations"]["getOrCreatePersonalAccessToken"]["coverage"]
    assert (coverage["statusesReturned"], coverage["statusesNotReturned"]) == (
        [200, 401],
        [400, 500, 503],
    )


def test_coverage_counts_query_parameters_sent_not_path_parameters(report):
    result = fed(report, job_runs_request({"limit": ["10"], "order": ["asc"]}))
    coverage = result["operations"]["listJobRuns"]["coverage"]
    assert coverage["parametersSent"] == ["limit", "order"]
    assert "jobId" not in coverage["parametersSent"] + coverage["parametersNotSent"]


def test_coverage_counts_each_enum_value_sent(report):
    result = fed(report, job_runs_request({"status": ["RUNNING", "FAILED"], "order": ["asc"]}))
    coverage = result["operations"]["listJobRuns"]["coverage"]
    assert coverage["enumValuesSent"] == {"order": ["asc"], "status": ["RUNNING", "FAILED"]}
    assert coverage["enumValuesNotSent"]["order"] == ["desc"]


def test_coverage_ignores_what_a_violating_request_sent(report):
    violating = job_runs_request(
        {"order": ["asc"], "bogus": ["1"]}, status=400, code=40001, message=BOGUS_MESSAGE
    )
    result = fed(report, violating)
    coverage = result["operations"]["listJobRuns"]["coverage"]
    assert (coverage["parametersSent"], coverage["enumValuesSent"]) == ([], {})
    assert coverage["statusesReturned"] == [400]  # the client did see the 400


def test_coverage_figure_is_covered_over_total_across_the_contract(report):
    result = fed(report, token_request(), job_runs_request({"order": ["desc"]}))
    operations = result["operations"]
    covered = sum(operations[op]["coverage"]["covered"] for op in contract.operations())
    total = sum(operations[op]["coverage"]["total"] for op in contract.operations())
    assert (covered, total) == (4, len_contract_items())  # 200 twice, order, order=desc
    assert result["summary"]["coverage"] == {
        "covered": 4,
        "total": total,
        "percent": math.floor(1000 * 4 / total) / 10,
    }


def len_contract_items() -> int:
    """Documented statuses, query parameters and enum values of the whole contract."""
    return sum(
        len(op.statuses) + len(op.query) + sum(len(values) for _, values in op.enums)
        for op in contract.operations().values()
    )


@pytest.mark.parametrize(
    ("part", "whole", "shown"),
    [
        pytest.param(1, 3, 33.3, id="rounded-down"),
        pytest.param(2, 3, 66.6, id="never-rounded-up"),
        pytest.param(999, 1000, 99.9, id="never-100-with-a-gap"),
        pytest.param(0, 0, 100.0, id="nothing-to-cover"),
    ],
)
def test_percent_rounds_down_to_a_tenth(part, whole, shown):
    assert percent(part, whole) == shown


def test_absorbed_reports_merge_their_coverage(report):
    first = ContractReport(contract.operations())
    first.add(job_runs_request({"order": ["asc"]}))
    second = ContractReport(contract.operations())
    second.add(job_runs_request({"order": ["desc"]}, status=404, code=40406, message="No job"))
    report.absorb(first.to_dict())
    report.absorb(second.to_dict())
    coverage = report.to_dict()["operations"]["listJobRuns"]["coverage"]
    assert coverage["enumValuesSent"] == {"order": ["asc", "desc"]}
    assert coverage["statusesReturned"] == [200, 404]


def test_absorbed_report_with_an_unrouted_request_merges(report):
    worker = ContractReport(contract.operations())
    worker.add(unrouted_request())
    report.absorb(worker.to_dict())
    assert report.to_dict()["operations"][UNROUTED]["calls"] == 1


@pytest.mark.parametrize(
    ("fail_on_violation", "min_coverage", "expected"),
    [
        pytest.param(False, None, [], id="nothing-asked"),
        pytest.param(
            True, None, ["1 of 2 request(s) broke the contract (--fail-on-violation)"],
            id="violation",
        ),
        pytest.param(False, 50.0, ["contract coverage"], id="below-min-coverage"),
        pytest.param(False, 0.0, [], id="at-min-coverage"),
    ],
)  # fmt: skip
def test_verdict_names_each_check_that_failed(report, fail_on_violation, min_coverage, expected):
    result = fed(report, token_request(), bogus_token_request())
    verdict = judge(result, fail_on_violation=fail_on_violation, min_coverage=min_coverage)
    failing = reasons(verdict)
    assert verdict["passed"] is not expected
    assert len(failing) == len(expected)
    assert all(reason.startswith(start) for reason, start in zip(failing, expected, strict=True))


def test_verdict_fails_on_violation_when_no_request_was_checked(report):
    verdict = judge(report.to_dict(), fail_on_violation=True, min_coverage=None)
    assert reasons(verdict) == [
        "no request reached the mock, so nothing was checked against the contract"
    ]


def test_verdict_of_a_failed_command_fails(report):
    verdict = judge(
        fed(report, token_request()), fail_on_violation=False, min_coverage=None,
        command="the command (pytest) exited with status 1",
    )  # fmt: skip
    assert verdict_line(verdict).startswith(
        "FAILED: the command (pytest) exited with status 1; 0 of 1 request(s)"
    )


def test_verdict_without_checks_says_what_would_have_failed(report):
    verdict = judge(fed(report, bogus_token_request()), fail_on_violation=False, min_coverage=None)
    assert verdict_line(verdict).startswith(
        "PASSED (no check was asked for): 1 of 1 request(s) broke the contract; not checked "
        "(--fail-on-violation would fail on any)"
    )


def test_verdict_names_options_with_the_prefix_given(report):
    verdict = judge(
        report.to_dict(), fail_on_violation=False, min_coverage=10,
        option_prefix="--platform-mock-",
    )  # fmt: skip
    assert "below --platform-mock-min-coverage 10%" in verdict_line(verdict)


def test_gaps_name_what_each_operation_never_exercised(report):
    result = fed(report, job_runs_request({"order": ["asc"]}))
    lines = gaps(result)
    assert "deleteSecretGroup: never called" in lines
    (job_runs,) = [line for line in lines if line.startswith("listJobRuns: ")]
    assert "order=desc never sent" in job_runs and "status 400, 401" in job_runs


# -- requests no operation matched -----------------------------------------------------------


def test_unrouted_request_is_reported_under_no_operation(report):
    result = fed(report, unrouted_request())
    unrouted = result["operations"][UNROUTED]
    assert UNROUTED == "(no operation)"
    assert (unrouted["calls"], unrouted["statuses"], unrouted["violations"]) == (1, {"404": 1}, 1)
    (example,) = unrouted["violationGroups"][0]["examples"]
    assert (example["request"], example["code"]) == ("GET /api/svc/v1/nope", 40401)
    assert unrouted["parametersNotExercised"] == []


def test_unrouted_request_counts_as_no_operation_called(report):
    result = fed(report, unrouted_request())
    assert result["summary"]["operationsCalled"] == 0
    assert result["summary"]["requests"] == 1


# -- summary and text ------------------------------------------------------------------------


def test_summary_counts_requests_violations_and_operations(report):
    result = fed(
        report,
        token_request(),
        bogus_token_request(),
        entry("listJobRuns", JOB_RUNS_PATH, path_params={"jobId": JOB_ID}),
        unrouted_request(),
    )
    everything = list(contract.operations())
    assert result["summary"] == {
        "requests": 4,
        "violations": 2,
        "expectedViolations": 0,
        "operationsCalled": 2,
        "operationsInContract": len(everything),
        "operationsNotCalled": [
            op for op in everything if op not in ("getOrCreatePersonalAccessToken", "listJobRuns")
        ],
        "coverage": result["summary"]["coverage"],  # its own tests are below
    }


def test_text_first_line_gives_the_counts(report):
    fed(report, token_request(), bogus_token_request(), unrouted_request())
    coverage = report.to_dict()["summary"]["coverage"]
    assert text(report).splitlines()[0] == (
        "Contract report: 3 request(s), 2 contract violation(s), "
        f"1/{len(contract.operations())} operations called, "
        f"coverage {coverage['percent']}% ({coverage['covered']}/{coverage['total']})"
    )


def test_text_names_each_rule_broken_with_its_tests_and_a_request(report):
    fed(report, token_request(), bogus_token_request("tests/a.py::test_a"), unrouted_request())
    lines = text(report).splitlines()
    found = lines.index("    VIOLATION query bogus: 1 request(s) by tests/a.py::test_a")
    assert lines[found + 1 : found + 4] == [
        "      problem: is not a parameter of this operation",
        '      sent: "1"',
        "      nearest: getOrCreatePersonalAccessToken takes: teamName",
    ]
    assert lines[found + 4] == f"      request: GET {TOKENS_PATH} -> 400"
    assert (
        "    VIOLATION 40401: No route for this path: 1 request(s) by "
        "tests/test_client.py::test_typo" in lines
    )
    assert sum("VIOLATION" in line for line in lines) == 2


def test_text_names_a_rule_broken_outside_any_test(report):
    fed(report, bogus_token_request(test=None))
    assert "    VIOLATION query bogus: 1 request(s)" in text(report).splitlines()


def test_text_lists_what_called_operations_never_exercised(report):
    fed(report, token_request())
    lines = text(report).splitlines()
    assert (
        "    never exercised: status 400, 401, 500, 503 never returned; parameter teamName "
        "never sent"
    ) in lines


# -- platform-mock serve --report ------------------------------------------------------------


@dataclass
class Stopped:
    """A `serve` process that was sent requests and then SIGTERM."""

    returncode: int
    stdout: str
    stderr: str


def serve_and_stop(*options: str, bogus: bool) -> Stopped:
    """Serve, send one valid request (and one with an unknown query parameter), SIGTERM."""
    process, urls = start("--port", "0", *options)
    try:
        headers = {"Authorization": f"Bearer {urls['token']}"}
        valid = httpx.get(urls["control"] + "/personal-access-tokens/ci", headers=headers)
        assert valid.status_code == 200, valid.text
        if bogus:
            broken = httpx.get(
                urls["control"] + "/personal-access-tokens/ci",
                params={"bogus": "1"},
                headers=headers,
            )
            assert broken.status_code == 400, broken.text
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=budget(30))
    except BaseException:
        process.kill()
        process.wait()
        raise
    return Stopped(process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def served_report(tmp_path_factory) -> tuple[Path, Stopped]:
    """A `serve --report DIR` stopped after a valid and a violating request: its JSON."""
    directory = tmp_path_factory.mktemp("serve-report") / "reports"
    return directory / "contract-report.json", serve_and_stop(
        "--report", str(directory), bogus=True
    )


def test_serve_writes_every_format_into_the_report_directory_when_stopped(served_report):
    path, stopped = served_report
    written = [path.with_suffix(suffix) for suffix in (".json", ".txt", ".xml", ".md")]
    assert all(file.is_file() for file in written)
    assert f"contract report written to {', '.join(map(str, written))}" in stopped.stdout
    lines = path.with_suffix(".txt").read_text().splitlines()
    assert lines[0].startswith("Contract check PASSED (no check was asked for): 1 of 2 request")
    assert lines[1].startswith("Contract report: 2 request(s), 1 contract")


def test_serve_report_names_the_request_that_broke_the_contract(served_report):
    path, _ = served_report
    report = json.loads(path.read_text())
    assert report["summary"]["violations"] == 1
    (group,) = report["operations"]["getOrCreatePersonalAccessToken"]["violationGroups"]
    (violation,) = group["examples"]
    assert violation["request"] == f"GET {TOKENS_PATH}"
    assert violation["query"] == {"bogus": ["1"]}
    assert (violation["status"], violation["code"]) == (400, 40001)
    assert violation["test"] is None


def test_serve_with_a_violation_exits_0_without_fail_on_violation(served_report):
    _, stopped = served_report
    assert stopped.returncode == 0, stopped.stderr
    assert (
        "platform-mock: contract check PASSED (no check was asked for): 1 of 2 request(s) "
        "broke the contract; not checked" in stopped.stderr
    )


def test_fail_on_violation_exits_1_after_a_violation(tmp_path):
    stopped = serve_and_stop(
        "--report", str(tmp_path / "report.json"), "--fail-on-violation", bogus=True
    )
    assert stopped.returncode == 1, stopped.stderr
    assert (
        "platform-mock: contract check FAILED: 1 of 2 request(s) broke the contract "
        "(--fail-on-violation)" in stopped.stderr
    )


def test_fail_on_violation_exits_0_when_every_request_kept_the_contract(tmp_path):
    stopped = serve_and_stop(
        "--report", str(tmp_path / "report.json"), "--fail-on-violation", bogus=False
    )
    assert stopped.returncode == 0, stopped.stderr
    assert "contract check PASSED: 0 of 1 request(s) broke the contract" in stopped.stderr
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["violations"] == 0


# -- every operation, served -------------------------------------------------------------------


def _calls_of(mock, operation_id: str) -> int:
    return mock.report.to_dict()["operations"][operation_id]["calls"]


@pytest.mark.parametrize("operation_id", [pytest.param(op, id=op) for op in contract.operations()])
def test_every_operations_request_is_counted_under_it(server, mock, operation_id):
    before = _calls_of(mock, operation_id)
    assert send_example(server, mock, operation_id).status_code == 200
    # The report is fed just after the response has left: wait for it, bounded.
    deadline = time.monotonic() + budget(5)
    while _calls_of(mock, operation_id) == before and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _calls_of(mock, operation_id) == before + 1


# -- the same requests, in any order, give the same report --------------------------------


def _varied_requests() -> list[Entry]:
    """Past every cap: tests, examples, rules, made-up names and values, sent by many tests."""
    found = []
    for i in range(MAX_TESTS + 6):
        found.append(bogus_token_request(f"t.py::test_{i:02}"))
        found.append(bogus_token_request(f"t.py::test_{i:02}"))  # some tests send twice
    for i in range(MAX_RULES + 5):
        found.append(
            token_request(
                status=400,
                code=40001,
                message="bad",
                query={f"made-up-{i:02}": [str(i)]},
                details=[{"location": "query", "field": f"made-up-{i:02}", "message": "x"}],
                test=f"t.py::test_rule_{i % 4}",
            )
        )
    found += [job_runs_request({"order": [f"v{i:02}"]}) for i in range(MAX_VALUES + 5)]
    return found


def _reported(order: list[Entry]) -> str:
    report = ContractReport(contract.operations())
    for item in order:
        report.add(item)
    return json.dumps(report.to_dict())


@pytest.mark.parametrize("seed", [1, 2, 3], ids=lambda s: f"shuffle-{s}")
def test_the_report_does_not_depend_on_the_order_requests_arrived_in(seed):
    import random

    requests = _varied_requests()
    shuffled = requests[:]
    random.Random(seed).shuffle(shuffled)
    assert _reported(shuffled) == _reported(requests)


def test_reports_merged_from_workers_do_not_depend_on_how_requests_were_shared_out():
    requests = _varied_requests()
    alone = _reported(requests)
    merged = ContractReport(contract.operations())
    for part in (requests[1::3], requests[::3], requests[2::3]):  # three workers' shares
        worker = ContractReport(contract.operations())
        for item in part:
            worker.add(item)
        merged.absorb(worker.to_dict())
    assert json.dumps(merged.to_dict()) == alone


def test_the_tests_named_for_a_rule_are_the_first_in_name_order_most_requests_first(report):
    requests = [bogus_token_request(f"t.py::test_{i:02}") for i in reversed(range(MAX_TESTS + 3))]
    requests.append(bogus_token_request("t.py::test_05"))
    (group,) = fed(report, *requests)["operations"]["getOrCreatePersonalAccessToken"][
        "violationGroups"
    ]
    named = list(group["tests"])
    assert named[0] == "t.py::test_05"  # two requests
    assert named[1:] == sorted(f"t.py::test_{i:02}" for i in range(MAX_TESTS) if i != 5)
    assert group["otherTests"] == 3
