"""The contract report's files: its four formats, where `--report` puts each, and each CI's.

A report (`ContractReport.to_dict()`) renders as JSON (every figure), text (the summary a
terminal shows), JUnit XML (what CI test views read: a test case per operation and
documented status, a failing one per rule broken, each failure and skip with text) and
Markdown (a job summary). The text and Markdown put the rules broken first, each with what
a reviewer fixes it from (`broken`: the problem, the value sent, the nearest choice, a
`curl` line). `targets` reads `--report` values: `FORMAT=PATH`, a file whose suffix names
its format, or a directory that receives all four; no two formats may share a file. Under
GitHub Actions, Azure Pipelines or GitLab CI, `ci` gives the Markdown and the failures to
the system as it reads them (`to_ci`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, overload

from mock_server.core import errors, escape
from mock_server.core.choices import REPORT_FORMATS
from mock_server.reports.explain import rule_name
from mock_server.reports.report import (
    MAX_TESTS,
    UNROUTED,
    Report,
    Verdict,
    ViolationExample,
    ViolationGroup,
    gaps,
    operation_gaps,
    verdict_line,
)

_Report = TypeVar("_Report")  # a report of any kind, as its renderers take it
# A file by its device and inode, or a path not there yet by its name (`file_identity`).
FileIdentity = tuple[str, int, int] | tuple[str, str]

FORMATS = REPORT_FORMATS
BASENAME = "contract-report"  # of each format's file in a `--report` directory
MAX_CELL = 200  # characters of a client's text in one line or cell: summaries have limits
MAX_SUMMARY_RULES = 30  # rules broken listed in the job summary; the JSON has every one
MAX_ANNOTATIONS = 10  # GitHub shows ten error annotations per step
MAX_CURL = 2000  # characters of a `curl` line in a report; a longer one is not shown
# What every request that broke a rule of a place was told first: said once in a report.
CONTRACT_PREFIX = f"{errors.InvalidRequest.default_message}: "
NOTHING_SENT = "(nothing)"
# The verdict's checks as JUnit test cases, named alike in every run.
CHECK_NAMES = {
    "command": "the command passes",
    "requests": "requests reach the mock",
    "violations": "no request breaks the contract",
    "coverage": "the contract coverage reaches --min-coverage",
}
_FORMAT_WORD = re.compile(r"[A-Za-z]+")


class TargetError(ValueError):
    """A `--report` value that cannot be used, saying why."""


def targets(values: Iterable[str], basename: str = BASENAME) -> dict[str, Path]:
    """Where each format is written, from `--report` values: `FORMAT=PATH`; a path whose
    suffix is a format's (`.json`, `.txt`, `.xml`, `.md`); or a directory, which receives
    `<basename>.*` (`contract-report.*`) in every format. Refuses a format named twice and
    two formats on one file, however each names it (`same_file`)."""
    chosen: dict[str, Path] = {}
    by_suffix = {suffix: name for name, suffix in FORMATS.items()}
    for value in values:
        word, equals, rest = value.partition("=")
        if equals and _FORMAT_WORD.fullmatch(word):
            if word not in FORMATS:
                raise TargetError(f"{value!r}: no format {word!r}; one of {', '.join(FORMATS)}")
            if not rest:
                raise TargetError(f"{value!r}: no path after {word}=")
            pairs = [(word, Path(rest))]
        elif not value:
            raise TargetError("an empty path")
        elif Path(value).suffix.lower() in by_suffix:
            pairs = [(by_suffix[Path(value).suffix.lower()], Path(value))]
        else:
            directory = Path(value)
            pairs = [(name, directory / f"{basename}{ext}") for name, ext in FORMATS.items()]
        for name, path in pairs:
            if name in chosen:
                raise TargetError(f"the {name} report is named twice: {chosen[name]} and {path}")
            chosen[name] = path
    files: dict[FileIdentity, str] = {}
    for name, path in chosen.items():
        key = file_identity(path)
        if key in files:
            raise TargetError(
                f"the {files[key]} and {name} reports would both be written to {path}"
            )
        files[key] = name
    return chosen


def file_identity(path: Path) -> FileIdentity:
    """What tells one file from another, however a path names it: an existing file's device
    and inode (a symlink or a hard link to it is the same file); else the path with its
    links resolved, regardless of case (as macOS and Windows compare names)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):  # missing, a name too long, a NUL
        return ("path", os.path.realpath(path).casefold())
    return ("file", found.st_dev, found.st_ino)


def same_file(path: Path, other: Path) -> bool:
    return file_identity(path) == file_identity(other)


def target_problem(path: Path) -> str | None:
    """Why a report could not be written to `path` at the end of a run, if it could not.

    A missing directory is no problem, writing creates it; its nearest existing ancestor
    must be a directory the process may write in. Permissions say little to root (who may
    write anywhere, but not in /proc), so the directory is then tried for real with a file
    made and removed at once; only the directories the report needs anyway may be left.
    An existing path must be a regular file: writing to a pipe nobody reads, or a device,
    could hold the stop forever."""
    if path.name in ("", ".."):
        return f"{path}: not a file name"
    try:
        return _target_problem(path)
    except (OSError, ValueError) as exc:  # a name over 255 bytes, a NUL in it, a loop
        problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"{_shortened(path)}: {problem}"


def _shortened(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]}"


def _target_problem(path: Path) -> str | None:
    if path.is_dir():
        return f"{path} is a directory"
    if path.exists() and not path.is_file():
        return f"{path} is not a regular file (a pipe, a device or a socket)"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable"
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    if not directory.is_dir():
        return f"{directory} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write in {directory}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        return f"cannot write in {path.parent}: {exc.strerror or exc}"
    return None


@overload
def write(report: Report, chosen: dict[str, Path]) -> list[Path]: ...
@overload
def write(
    report: _Report, chosen: dict[str, Path], renderers: Mapping[str, Callable[[_Report], str]]
) -> list[Path]: ...
def write(
    report: object,
    chosen: dict[str, Path],
    renderers: Mapping[str, Callable[..., str]] | None = None,
) -> list[Path]:
    """Write the report in each chosen format (with the contract report's renderers, or
    those given: another kind of report's, which its overload pairs with it); the paths
    written, in order."""
    rendering: Mapping[str, Callable[..., str]] = RENDERERS if renderers is None else renderers
    for name, path in chosen.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_regular(path, rendering[name](report))
    return list(chosen.values())


def _write_regular(path: Path, text: str) -> None:
    """Write a report file, refusing at once (OSError) what is not a regular file: a pipe
    made at the path since the run started would otherwise hold the stop forever."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        file.truncate()
        file.write(text)


def to_json(report: Mapping[str, object]) -> str:
    return escape.json_text(report, indent=2) + "\n"


def clip(value: object, limit: int = MAX_CELL) -> str:
    """A client's text cut to `limit` characters (before escaping, which at most sextuples
    it): a line of a report has a bounded size whatever was sent."""
    shown = str(value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _verdict(report: Report) -> Verdict | None:
    return report.get("verdict")


def _tests_named(rule: ViolationGroup, limit: int = 3) -> list[str]:
    """The tests that broke a rule, the most frequent first, and how many others did."""
    names = list(rule["tests"])
    others = len(names) - limit + (1 if rule["otherTests"] else 0)
    shown = names[:limit]
    if len(names) > limit or rule["otherTests"]:
        shown.append(f"and {others if len(names) > limit else 'more'} other test(s)")
    return shown


def _example_line(example: ViolationExample) -> str:
    """An offending request in one line: what was sent and what it broke, as the client sent
    it (the caller escapes it for its sink), less the words every violation begins with."""
    message = str(example["message"] or "").removeprefix(CONTRACT_PREFIX)
    return clip(f"{example['request']} -> {example['status']} {message}", 400)


@dataclass(frozen=True)
class Broken:
    """What a reviewer fixes a rule broken from, as its first request shows it: what the
    rule says was wrong (`problem`), the value sent at its place (`sent`, as JSON:
    NOTHING_SENT where the place held none, None for a rule of no place), what the contract
    has nearest (`hint`), and a
    `curl` line that sends the request again (None if too long to show). Client text, not
    yet escaped."""

    problem: str
    sent: str | None
    hint: str
    curl: str | None


def broken(rule: ViolationGroup) -> Broken:
    """What a reviewer fixes `rule` (of `to_dict()["operations"][...]["violationGroups"]`)
    from: its first request's violation at the rule's place, or, for a condition (no
    route, no token), the request's message."""
    if not rule["examples"]:
        return Broken("", None, "", None)
    example = rule["examples"][0]
    curl = example.get("curl")
    shown = curl if curl and len(curl) <= MAX_CURL else None
    for detail in example["details"]:
        if rule_name(detail) == rule["rule"]:
            sent = str(detail.get("sent", NOTHING_SENT))
            return Broken(str(detail.get("message", "")), sent, str(detail.get("hint", "")), shown)
    problem = str(example["message"] or "").removeprefix(CONTRACT_PREFIX)
    return Broken(problem, None, str(example.get("hint", "")), shown)


def text(report: Report) -> str:
    """A readable summary: the verdict and the figures; each rule broken, by operation, with
    its count, tests, what was wrong, what was sent, what the contract has nearest, and a
    `curl` line that sends its first request again; then per operation its calls and what
    was never exercised."""
    summary = report["summary"]
    coverage = summary["coverage"]
    verdict = _verdict(report)
    lines = []
    if verdict is not None:
        lines.append(f"Contract check {verdict_line(verdict)}")
    lines += [
        f"Contract report: {summary['requests']} request(s), "
        f"{summary['violations']} contract violation(s), "
        f"{summary['operationsCalled']}/{summary['operationsInContract']} operations called, "
        f"coverage {coverage['percent']}% ({coverage['covered']}/{coverage['total']})",
    ]
    if summary["expectedViolations"]:
        lines.append(
            f"  ({summary['expectedViolations']} more request(s) broke it on purpose, in "
            "tests marked expect_violations)"
        )
    if any(usage["violationGroups"] for usage in report["operations"].values()):
        lines += [
            "",
            "Rules broken, each with its first request (a request that broke a rule of a place "
            f'was answered 400 "{CONTRACT_PREFIX}PLACE: PROBLEM"):',
        ]
    for op_id, usage in report["operations"].items():
        if usage["violationGroups"]:
            lines.append(f"  {escape.text(op_id)}")
        for rule in usage["violationGroups"]:
            lines += _rule_text(rule)
    lines += ["", "Coverage, per operation:"]
    for op_id, usage in report["operations"].items():
        statuses = ", ".join(f"{s}x{n}" for s, n in usage["statuses"].items()) or "-"
        lines.append(f"  {escape.text(op_id):32} calls {usage['calls']:5}  statuses {statuses}")
        missing = operation_gaps(usage)
        if missing and usage["calls"]:
            lines.append(f"    never exercised: {missing}")
    if summary["operationsNotCalled"]:
        lines += ["", f"  never called: {', '.join(summary['operationsNotCalled'])}"]
    dropped = report["journal"]["droppedEntries"]
    if dropped:
        lines += [
            "",
            f"  journal: dropped its {dropped} oldest entries to stay within its byte "
            "budget (this report counts every request)",
        ]
    return "\n".join(lines) + "\n"


def _rule_text(rule: ViolationGroup) -> list[str]:
    """A rule broken in the text report, each client text escaped."""
    tests = ", ".join(map(escape.text, map(clip, _tests_named(rule))))
    by = f" by {tests}" if tests else ""
    lines = [f"    VIOLATION {escape.text(clip(rule['rule']))}: {rule['count']} request(s){by}"]
    found = broken(rule)
    lines.append(f"      problem: {escape.text(clip(found.problem))}")
    if found.sent is not None:
        lines.append(f"      sent: {escape.text(clip(found.sent))}")
    if found.hint:
        lines.append(f"      nearest: {escape.text(clip(found.hint))}")
    for example in rule["examples"][:1]:
        sent = clip(f"{example['request']} -> {example['status']}", 400)
        lines.append(f"      request: {escape.text(sent)}")
    if found.curl:
        lines.append(f"      reproduce: {escape.text(found.curl)}")
    return lines


def _rules(report: Report) -> list[tuple[str, ViolationGroup]]:
    """Every rule broken, of every operation, the most broken first."""
    found = [
        (op_id, rule)
        for op_id, usage in report["operations"].items()
        for rule in usage["violationGroups"]
    ]
    return sorted(found, key=lambda pair: -pair[1]["count"])


def _example_text(example: ViolationExample) -> list[str]:
    """An offending request in full (as far as the report kept it), and every rule it
    broke; as the client sent it (the caller escapes it for its sink)."""
    lines = [_example_line(example)]
    if example["test"]:
        lines.append(f"sent by {clip(example['test'])}")
    if example["query"]:
        lines.append(f"query: {clip(json.dumps(example['query']), 1000)}")
    if example["body"] not in (None, ""):
        lines.append(f"body: {clip(json.dumps(example['body']), 1000)}")
    for detail in example["details"]:
        said = (
            f"  {detail.get('location', '')} {detail.get('field', '')}: {detail.get('message', '')}"
        )
        if "sent" in detail:
            said += f" (sent: {detail['sent']})"
        if detail.get("hint"):
            said += f"; nearest: {detail['hint']}"
        lines.append(clip(said, 400))
    if example.get("hint"):
        lines.append(clip(f"nearest: {example['hint']}"))
    if example.get("curl") and len(example["curl"]) <= MAX_CURL:
        lines.append(f"reproduce: {example['curl']}")
    return lines


class JUnit:
    """A JUnit XML document of one test suite, in the shape of junit-10.xsd (the schema CI
    servers validate against): `testsuites` with one `testsuite`, whose counts are kept as
    cases are added. Every name and message is a client's or a target's text, escaped."""

    def __init__(self, suite: str, root: str = "platform-mock"):
        self._suite = ET.Element("testsuite", name=suite)
        self._root = root
        self._counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def case(self, classname: str, name: str) -> ET.Element:
        self._counts["tests"] += 1
        return ET.SubElement(
            self._suite, "testcase", classname=classname, name=escape.text(clip(name)), time="0"
        )

    def fail(self, case: ET.Element, message: str, lines: list[str], kind: str) -> None:
        """The case failed: what it checked does not hold (`lines` say how, one per line)."""
        self._outcome(case, "failure", message, lines, kind)

    def error(self, case: ET.Element, message: str, lines: list[str], kind: str) -> None:
        """The case could not be run to its end (what it needed did not answer)."""
        self._outcome(case, "error", message, lines, kind)

    def skip(self, case: ET.Element, message: str) -> None:
        """The case was not run. Its message is its text too: GitLab shows an element's
        attributes raw where it has no text, Jenkins and CircleCI show nothing."""
        self._counts["skipped"] += 1
        skipped = ET.SubElement(case, "skipped", message=escape.text(message))
        skipped.text = escape.text(message)

    def _outcome(
        self, case: ET.Element, tag: str, message: str, lines: list[str], kind: str
    ) -> None:
        self._counts["failures" if tag == "failure" else "errors"] += 1
        outcome = ET.SubElement(case, tag, type=kind)
        outcome.set("message", escape.text(message))
        # Each line escaped apart: a line break of the report's own, never a client's. The
        # message leads the text: a reader that shows only the text (GitLab, Jenkins,
        # CircleCI) shows it, and a case with no more to say still has text.
        shown = lines if lines and lines[0].startswith(message) else [message, *lines]
        outcome.text = "\n".join(map(escape.text, shown))

    def xml(self) -> str:
        root = ET.Element("testsuites", name=self._root)
        for key in ("tests", "failures", "errors"):
            root.set(key, str(self._counts[key]))
        for key, value in self._counts.items():
            self._suite.set(key, str(value))
        self._suite.set("time", "0")
        root.append(self._suite)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def junit(report: Report) -> str:
    """JUnit XML (the schema CI servers validate against, junit-10.xsd), with test case names
    that stay the same from run to run: a case per check of the verdict, a case per operation
    (skipped when never called), and a failing case per rule an operation's requests broke,
    its count, tests and first requests in the failure."""
    document = JUnit("platform API contract")
    verdict = _verdict(report)
    for check in verdict["checks"] if verdict else ():
        checked = document.case("contract.verdict", CHECK_NAMES[check["check"]])
        if not check["passed"]:
            gaps_ = gaps(report) if check["check"] == "coverage" else []
            document.fail(checked, check["summary"], gaps_, "ContractViolation")
    for op_id, usage in report["operations"].items():
        classname = "contract." + ("unrouted" if op_id == UNROUTED else op_id)
        if op_id != UNROUTED:
            kept = document.case(classname, f"{op_id} keeps the contract")
            if not usage["calls"]:
                document.skip(kept, "never called")
        for rule in usage["violationGroups"]:
            broken = document.case(classname, f"{op_id}: {rule['rule']}")
            tests = ", ".join(_tests_named(rule, MAX_TESTS))
            message = f"{rule['count']} request(s) broke {clip(rule['rule'])}"
            detail = [message + (f", sent by {tests}" if tests else "")]
            for example in rule["examples"]:
                detail += ["", *_example_text(example)]
            document.fail(broken, message, detail, "ContractViolation")
    return document.xml()


def cell(value: object) -> str:
    """A client's text in a Markdown table cell: a code span, bounded."""
    return escape.markdown_code(clip(value), in_table=True)


def verdict_heading(title: str, verdict: Verdict | None, unchecked: str = "") -> list[str]:
    """A job summary's first lines: the title with the verdict, a line per check (then
    `unchecked` where no check was asked for) and per note; the title alone without one."""
    if verdict is None:
        return [f"### {title}", ""]
    word = "✅ PASSED" if verdict["passed"] else "❌ FAILED"
    lines = [f"### {title}: {word}", ""]
    lines += [f"- {'✅' if c['passed'] else '❌'} {c['summary']}" for c in verdict["checks"]]
    lines += [f"- {note}" for note in verdict["notes"]]
    if unchecked and not verdict["checks"]:
        lines.append(f"- {unchecked}")
    return [*lines, ""]


def markdown(report: Report) -> str:
    """A job summary: the verdict and its checks; the rules broken (the most broken first, up
    to MAX_SUMMARY_RULES), each with its count, tests, what was wrong, what was sent and what
    the contract has nearest, then a `curl` line per rule that sends its first request
    again; then the coverage table per operation. Whatever the traffic, it stays far under
    GitHub's 1 MiB."""
    summary = report["summary"]
    coverage = summary["coverage"]
    verdict = _verdict(report)
    lines = verdict_heading(
        "Platform API contract",
        verdict,
        unchecked="no check was asked for (`--fail-on-violation`, `--min-coverage`)",
    )
    lines += [
        f"{summary['requests']} request(s), {summary['violations']} contract violation(s); "
        f"coverage {coverage['percent']}%: {coverage['covered']} of {coverage['total']} "
        "documented statuses, query parameters and enum values exercised; "
        f"{summary['operationsCalled']} of {summary['operationsInContract']} operations called.",
    ]
    rules = _rules(report)
    if rules:
        lines += [
            "",
            "#### Rules broken",
            "",
            "A request that broke a rule of a place was answered 400 "
            f"`{CONTRACT_PREFIX}PLACE: PROBLEM`; each row shows its first request.",
            "",
            "| Operation | Rule | Requests | Tests | Problem | Sent | Nearest in the contract |",
            "|---|---|---:|---|---|---|---|",
        ]
        shown = rules[:MAX_SUMMARY_RULES]
        found = [broken(rule) for _, rule in shown]
        for (op_id, rule), one in zip(shown, found, strict=True):
            tests = ", ".join(map(cell, _tests_named(rule))) or "-"
            sent = "-" if one.sent is None else cell(one.sent)
            lines.append(
                f"| {cell(op_id)} | {cell(rule['rule'])} | {rule['count']} | {tests} | "
                f"{cell(one.problem)} | {sent} | {cell(one.hint) if one.hint else '-'} |"
            )
        if len(rules) > MAX_SUMMARY_RULES:
            lines += [
                "",
                f"{len(rules) - MAX_SUMMARY_RULES} more rule(s) broken: every one is in the "
                "full report (JSON).",
            ]
        lines += [
            "",
            "To send each rule's first request again (`PLATFORM_MOCK_URL`: a mock's base URL, "
            "as `platform-mock run` sets it; `TOKEN`: a token of its user, from "
            "`platform-mock token`):",
            "",
        ]
        for (op_id, rule), one in zip(shown, found, strict=True):
            command = escape.markdown_code(one.curl) if one.curl else "(too long to show here)"
            lines.append(f"- {cell(op_id)} {cell(rule['rule'])}: {command}")
    lines += [
        "",
        "#### Coverage",
        "",
        "| Operation | Calls | Coverage | Statuses returned | Never exercised | Violations |",
        "|---|---:|---:|---|---|---:|",
    ]
    for op_id, usage in report["operations"].items():
        covered = usage.get("coverage")
        returned = ", ".join(f"{s} x{n}" for s, n in usage["statuses"].items()) or "-"
        missing = []
        if covered:
            missing += [str(s) for s in covered["statusesNotReturned"]]
            missing += covered["parametersNotSent"]
            missing += [f"{k}={'/'.join(v)}" for k, v in covered["enumValuesNotSent"].items()]
        share = f"{covered['percent']}%" if covered else "-"
        lines.append(
            f"| {cell(op_id)} | {usage['calls']} | {share} | {returned} | "
            f"{', '.join(missing) or '-'} | {usage['violations']} |"
        )
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Report], str]] = {
    "json": to_json,
    "text": text,
    "junit": junit,
    "markdown": markdown,
}


@dataclass(frozen=True)
class Failure:
    """One failure a CI system shows beside the job (an annotation, a logged issue): a title
    in the mock's words and a message that may hold a client's text, not yet escaped."""

    title: str
    message: str


def failures(report: Report) -> list[Failure]:
    """The failures of a report for CI: one per failing check of its verdict, then one per
    rule broken, the most broken first, MAX_ANNOTATIONS in all (GitHub shows ten per step),
    each one short; the last says how many more the report has."""
    verdict = _verdict(report)
    found = [
        Failure("Platform API contract: FAILED", check["summary"])
        for check in (verdict["checks"] if verdict else ())
        if not check["passed"]
    ]
    rules = _rules(report)
    room = MAX_ANNOTATIONS - len(found)
    for index, (op_id, rule) in enumerate(rules[: max(room, 0)]):
        if index == room - 1 and len(rules) > room:
            left = len(rules) - index
            found.append(
                Failure(
                    "Contract violations",
                    f"{left} more rule(s) broken, {sum(r['count'] for _, r in rules[index:])} "
                    "request(s): see the contract report",
                )
            )
            break
        tests = ", ".join(_tests_named(rule))
        message = f"{rule['count']} request(s) broke {clip(rule['rule'])}"
        if tests:
            message += f", sent by {tests}"
        if rule["examples"]:
            message += f"\ne.g. {_example_line(rule['examples'][0])}"
        found.append(Failure(f"Contract violation: {op_id}", message))
    return found


def _escaped_lines(message: str) -> str:
    """A message's lines, each a client's text escaped apart: a line break of the mock's own."""
    return "\n".join(map(escape.text, message.split("\n")))


def github_annotation(failure: Failure) -> str:
    """GitHub Actions' `::error` workflow command."""
    title = escape.workflow_property(escape.text(failure.title))
    return f"::error title={title}::{escape.workflow_data(_escaped_lines(failure.message))}"


def azure_issue(failure: Failure) -> str:
    """Azure Pipelines' `##vso[task.logissue type=error]` logging command."""
    said = f"{escape.text(failure.title)}: {_escaped_lines(failure.message)}"
    return f"##vso[task.logissue type=error]{escape.logging_command_data(said)}"


def gitlab_section(failures_: list[Failure], title: str) -> list[str]:
    """GitLab CI's collapsible log section around the failures, open by default: GitLab has
    no annotations, and shows a section's header in its job log's outline."""
    name = re.sub(r"[^a-z0-9_]", "_", title.lower())
    escape_code, now = "\x1b[0K", int(time.time())
    lines = [f"{escape_code}section_start:{now}:{name}[collapsed=false]\r{escape_code}{title}"]
    for failure in failures_:
        message = _escaped_lines(failure.message).replace("\n", "\n    ")
        lines.append(f"ERROR {escape.text(failure.title)}: {message}")
    lines.append(f"{escape_code}section_end:{now}:{name}\r{escape_code}")
    return lines


def error_annotations(report: Report) -> list[str]:
    """GitHub's `::error` annotations for a report (`failures`)."""
    return [github_annotation(failure) for failure in failures(report)]


def ci(report: Report, environ: dict[str, str] | None = None) -> list[str]:
    """What the CI system the environment names shows of a report: the Markdown as its job
    summary, and the lines to print for its failures (`to_ci`)."""
    return to_ci(markdown(report), lambda: failures(report), "Platform API contract", environ)


def to_ci(
    summary: str,
    found: Callable[[], list[Failure]],
    title: str,
    environ: dict[str, str] | None = None,
) -> list[str]:
    """Under a CI system, where it reads them: the Markdown `summary` written as its job
    summary, and the lines to print on standard output for the `found` failures, capped
    (none outside CI).

    - GitHub Actions (`GITHUB_ACTIONS=true`): `summary` appended to `GITHUB_STEP_SUMMARY`,
      and an `::error` annotation per failure.
    - Azure Pipelines (`TF_BUILD`): `summary` written under the agent's temporary folder
      and attached with `##vso[task.uploadsummary]`, and a `##vso[task.logissue]` per
      failure.
    - GitLab CI (`GITLAB_CI`): the failures in a log section of their own.
    A system's summary file is written wherever its variable is set, in CI or not."""
    environ = dict(os.environ) if environ is None else environ
    lines: list[str] = []
    path = environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(summary)
    if environ.get("GITHUB_ACTIONS") == "true":
        lines += [github_annotation(failure) for failure in found()]
    if environ.get("TF_BUILD"):
        folder = Path(environ.get("AGENT_TEMPDIRECTORY") or tempfile.gettempdir())
        name = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        written = folder / f"{name}-summary.md"
        written.write_text(summary, encoding="utf-8")
        lines += [azure_issue(failure) for failure in found()]
        lines.append(f"##vso[task.uploadsummary]{escape.logging_command_data(str(written))}")
    if environ.get("GITLAB_CI"):
        failing = found()
        if failing:
            lines += gitlab_section(failing, title)
    return lines
