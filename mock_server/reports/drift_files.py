"""The drift report's formats: JSON, text, JUnit XML and Markdown, and GitHub's job summary.

A drift report (`DriftReport.to_dict()`, with its `verdict`) renders as JSON (every figure),
text (what a terminal shows), JUnit XML (a test case per check of the verdict, per operation
and per difference found, a target's failure to answer as an error rather than a failure)
and Markdown (a job summary). Where each goes, how files are written and the JUnit document
are the contract report's (`mock_server.reports.report_files`); what the target or a client sent
leaves through `mock_server.core.escape` like everything else the mock prints.
"""

from __future__ import annotations

from collections.abc import Callable

from mock_server.core import escape
from mock_server.reports.drift import DifferenceWire, DriftExample, DriftReportWire
from mock_server.reports.report import Verdict
from mock_server.reports.report_files import (
    MAX_ANNOTATIONS,
    MAX_SUMMARY_RULES,
    Failure,
    JUnit,
    cell,
    clip,
    github_annotation,
    to_ci,
    to_json,
    verdict_heading,
)

BASENAME = "drift-report"  # of each format's file in a `--report` directory
CHECK_NAMES = {
    "drift": "the target agrees with the contract",
    "target": "the target answers",
}


def verdict_line(verdict: Verdict) -> str:
    """The verdict in one line: PASSED or FAILED, then every check and note."""
    word = "PASSED" if verdict["passed"] else "FAILED"
    failing = [c["summary"] for c in verdict["checks"] if not c["passed"]]
    passing = [c["summary"] for c in verdict["checks"] if c["passed"]]
    return f"{word}: {'; '.join(failing + passing + verdict['notes'])}"


def difference_name(difference: DifferenceWire) -> str:
    """A difference as one line, named alike in every run: its kind, field and what was
    found (as the target sent it: the caller escapes it for its sink)."""
    parts = [difference["kind"], difference["field"]]
    if difference["found"]:
        parts.append(
            repr(difference["found"]) if difference["kind"] != "type" else difference["found"]
        )
    return " ".join(part for part in parts if part)


def _example_line(example: DriftExample, message: str = "") -> str:
    status = "no answer" if example.get("status") is None else str(example["status"])
    line = f"{example['request']} -> {status}"
    return f"{line}: {message}" if message else line


def text(report: DriftReportWire) -> str:
    """What a terminal shows: the verdict, then each operation with what differs."""
    verdict = report.get("verdict")
    summary = report["summary"]
    lines = [f"platform API drift of {escape.text(report['target'])}"]
    if verdict is not None:
        lines.append(f"  verdict: {escape.text(verdict_line(verdict))}")
    lines.append(
        f"  {summary['requests']} request(s), {summary['answersChecked']} answer(s) checked, "
        f"{summary['differences']} difference(s)"
    )
    lines.append("")
    for op_id, found in report["operations"].items():
        statuses = ", ".join(f"{s}x{n}" for s, n in found["statuses"].items()) or "-"
        lines.append(
            f"  {escape.text(op_id):32} {found['verdict']:11}  answers {found['answersChecked']:4}"
            f"  statuses {statuses}"
        )
        for difference in found["differences"]:
            name = escape.text(clip(difference_name(difference)))
            lines.append(f"    DRIFT {name}: {difference['count']} answer(s)")
            example = _example_line(difference["example"], difference["message"])
            lines.append(f"      e.g. {escape.text(clip(example))}")
        if found["otherDifferences"]:
            lines.append(f"    DRIFT and {found['otherDifferences']} more (not kept apart)")
        for failure in found["failures"]:
            example = _example_line(failure["example"], failure["example"]["message"])
            lines.append(
                f"    TARGET {failure['kind']}: {failure['count']} request(s), not drift; "
                f"e.g. {escape.text(clip(example))}"
            )
        for rule in found["requestViolations"]:
            lines.append(
                f"    REQUEST broke {escape.text(clip(rule['rule']))}: {rule['count']} "
                "request(s), the client's doing"
            )
    uncovered = report["uncovered"]
    if uncovered["requests"]:
        lines += ["", "  not covered by the contract (forwarded, not judged):"]
        for name, count in uncovered["requests"].items():
            lines.append(f"    {escape.text(clip(name))} x{count}")
        if uncovered["others"]:
            lines.append(f"    and {uncovered['others']} more")
    return "\n".join(lines) + "\n"


def junit(report: DriftReportWire) -> str:
    """JUnit XML that validates against junit-10.xsd, with names that stay the same from run
    to run: a case per check of the verdict, a case per operation (skipped when no answer of
    it was checked), a failing case per difference found and an erring case per way the
    target failed to answer (which is not drift)."""
    document = JUnit("platform API drift")
    verdict = report.get("verdict")
    for check in verdict["checks"] if verdict else ():
        case = document.case("drift.verdict", CHECK_NAMES[check["check"]])
        if not check["passed"] and check["check"] == "target":
            document.error(case, check["summary"], [], "TargetFailure")
        elif not check["passed"]:
            document.fail(case, check["summary"], [], "Drift")
    for op_id, found in report["operations"].items():
        classname = f"drift.{op_id}"
        case = document.case(classname, f"{op_id} answers as the contract says")
        if found["verdict"] == "not checked":
            document.skip(case, "no answer of this operation was checked")
        elif found["verdict"] == "drifts":
            names = [difference_name(d) for d in found["differences"]]
            count = len(names) + found["otherDifferences"]
            document.fail(case, f"{count} difference(s) from the contract", names, "Drift")
        for difference in found["differences"]:
            case = document.case(classname, f"{op_id}: {difference_name(difference)}")
            message = f"{difference['count']} answer(s): {difference['message']}"
            example = _example_line(difference["example"])
            lines = [message, f"e.g. {example}", f"at {difference['example']['field'] or '-'}"]
            document.fail(case, message, lines, "Drift")
        for failure in found["failures"]:
            case = document.case(classname, f"{op_id}: the target answers ({failure['kind']})")
            message = f"{failure['count']} request(s) not answered: {failure['kind']}"
            example = _example_line(failure["example"], failure["example"]["message"])
            document.error(case, message, [f"e.g. {example}"], "TargetFailure")
    return document.xml()


def markdown(report: DriftReportWire) -> str:
    """A job summary: the verdict and its checks, a table of operations, then the
    differences (the most seen first, up to MAX_SUMMARY_RULES) and the target's failures."""
    verdict = report.get("verdict")
    summary = report["summary"]
    lines = verdict_heading("Platform API drift", verdict)
    lines += [
        f"Target {cell(report['target'])}: {summary['requests']} request(s), "
        f"{summary['answersChecked']} answer(s) checked, {summary['differences']} "
        "difference(s).",
        "",
        "| Operation | Verdict | Answers checked | Statuses | Differences |",
        "|---|---|---:|---|---:|",
    ]
    for op_id, found in report["operations"].items():
        statuses = ", ".join(f"{s} x{n}" for s, n in found["statuses"].items()) or "-"
        count = len(found["differences"]) + found["otherDifferences"]
        lines.append(
            f"| {cell(op_id)} | {found['verdict']} | {found['answersChecked']} | {statuses} "
            f"| {count} |"
        )
    differences = sorted(
        (
            (op_id, difference)
            for op_id, found in report["operations"].items()
            for difference in found["differences"]
        ),
        key=lambda pair: -pair[1]["count"],
    )
    if differences:
        lines += [
            "",
            "#### Differences",
            "",
            "| Operation | Kind | Field | Found | Answers | Example |",
            "|---|---|---|---|---:|---|",
        ]
        for op_id, difference in differences[:MAX_SUMMARY_RULES]:
            example = _example_line(difference["example"], difference["message"])
            lines.append(
                f"| {cell(op_id)} | {difference['kind']} | {cell(difference['field'] or '-')} "
                f"| {cell(difference['found'] or '-')} | {difference['count']} "
                f"| {cell(example)} |"
            )
        if len(differences) > MAX_SUMMARY_RULES:
            lines += ["", f"{len(differences) - MAX_SUMMARY_RULES} more: see the JSON report."]
    failures = [
        (op_id, failure)
        for op_id, found in report["operations"].items()
        for failure in found["failures"]
    ]
    if failures:
        lines += [
            "",
            "#### The target failed to answer (not drift)",
            "",
            "| Operation | Failure | Requests | Example |",
            "|---|---|---:|---|",
        ]
        for op_id, failure in failures:
            example = _example_line(failure["example"], failure["example"]["message"])
            lines.append(
                f"| {cell(op_id)} | {failure['kind']} | {failure['count']} | {cell(example)} |"
            )
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[DriftReportWire], str]] = {
    "json": to_json,
    "text": text,
    "junit": junit,
    "markdown": markdown,
}


def ci(report: DriftReportWire, environ: dict[str, str] | None = None) -> list[str]:
    """What the CI system the environment names shows of a drift report: the Markdown as its
    job summary, and a failure per difference, the most seen first, at most
    MAX_ANNOTATIONS (`report_files.to_ci`)."""
    return to_ci(markdown(report), lambda: failures(report), "Platform API drift", environ)


def failures(report: DriftReportWire) -> list[Failure]:
    """A failure per difference, the most seen first, at most MAX_ANNOTATIONS."""
    found = sorted(
        (
            (op_id, difference)
            for op_id, operation in report["operations"].items()
            for difference in operation["differences"]
        ),
        key=lambda pair: -pair[1]["count"],
    )
    return [
        Failure(
            f"Platform API drift: {op_id}",
            clip(
                f"{difference_name(difference)}: {difference['count']} answer(s), "
                f"{difference['message']}"
            ),
        )
        for op_id, difference in found[:MAX_ANNOTATIONS]
    ]


def error_annotations(report: DriftReportWire) -> list[str]:
    """GitHub's `::error` annotation per difference (`failures`)."""
    return [github_annotation(failure) for failure in failures(report)]
