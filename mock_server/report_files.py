"""The contract report's files: its four formats, where `--report` puts each, and GitHub's.

A report (`ContractReport.to_dict()`) renders as JSON (every figure), text (the summary a
terminal shows), JUnit XML (what CI test views read: a test case per operation and
documented status, a failing one per request that broke the contract) and Markdown (a job
summary). `targets` reads `--report` values: `FORMAT=PATH`, a file whose suffix names its
format, or a directory that receives all four; no two formats may share a file. Under
GitHub Actions the Markdown is appended to the job summary and each violation becomes an
`::error` annotation.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from mock_server.report import UNROUTED, operation_gaps

FORMATS = {"json": ".json", "text": ".txt", "junit": ".xml", "markdown": ".md"}
BASENAME = "contract-report"  # of each format's file in a `--report` directory
MAX_CELL = 300  # characters of one Markdown line or cell: a summary has a size limit
# Characters XML 1.0 cannot hold at all, even escaped: a client may send them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_FORMAT_WORD = re.compile(r"[A-Za-z]+")


class TargetError(ValueError):
    """A `--report` value that cannot be used, saying why."""


def targets(values: Iterable[str]) -> dict[str, Path]:
    """Where each format is written, from `--report` values: `FORMAT=PATH`; a path whose
    suffix is a format's (`.json`, `.txt`, `.xml`, `.md`); or a directory, which receives
    `contract-report.*` in every format. Refuses a format named twice and two formats on
    one file, however each names it (`same_file`)."""
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
            pairs = [(name, directory / f"{BASENAME}{ext}") for name, ext in FORMATS.items()]
        for name, path in pairs:
            if name in chosen:
                raise TargetError(f"the {name} report is named twice: {chosen[name]} and {path}")
            chosen[name] = path
    files: dict[tuple[Any, ...], str] = {}
    for name, path in chosen.items():
        key = file_identity(path)
        if key in files:
            raise TargetError(
                f"the {files[key]} and {name} reports would both be written to {path}"
            )
        files[key] = name
    return chosen


def file_identity(path: Path) -> tuple[Any, ...]:
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


def write(report: dict[str, Any], chosen: dict[str, Path]) -> list[Path]:
    """Write the report in each chosen format; the paths written, in order."""
    for name, path in chosen.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_regular(path, RENDERERS[name](report))
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


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2) + "\n"


def text(report: dict[str, Any]) -> str:
    """A readable summary, naming each request that broke the contract and each gap."""
    summary = report["summary"]
    coverage = summary["coverage"]
    lines = [
        f"Contract report: {summary['requests']} request(s), "
        f"{summary['violations']} contract violation(s), "
        f"{summary['operationsCalled']}/{summary['operationsInContract']} operations called, "
        f"coverage {coverage['percent']}% ({coverage['covered']}/{coverage['total']})",
        "",
    ]
    if summary["expectedViolations"]:
        lines[-1:-1] = [
            f"  ({summary['expectedViolations']} more request(s) broke it on purpose, in "
            "tests marked expect_violations)"
        ]
    for op_id, usage in report["operations"].items():
        statuses = ", ".join(f"{s}x{n}" for s, n in usage["statuses"].items()) or "-"
        lines.append(f"  {op_id:32} calls {usage['calls']:5}  statuses {statuses}")
        missing = operation_gaps(usage)
        if missing and usage["calls"]:
            lines.append(f"    never exercised: {missing}")
        for violation in usage["violatingRequests"]:
            where = f" in {violation['test']}" if violation["test"] else ""
            outcome = f"{violation['status']} {violation['message']}"
            lines.append(f"    VIOLATION{where}: {violation['request']} -> {outcome}")
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


def _violations(report: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for op_id, usage in report["operations"].items():
        for violation in usage["violatingRequests"]:
            yield op_id, violation


def _xml_text(value: Any) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def _violation_lines(violation: dict[str, Any]) -> list[str]:
    """An offending request in full, and every rule it broke."""
    lines = [f"{violation['request']} -> {violation['status']} {violation['message']}"]
    if violation["test"]:
        lines.append(f"sent by {violation['test']}")
    if violation["query"]:
        lines.append(f"query: {json.dumps(violation['query'])}")
    if violation["body"] not in (None, ""):
        lines.append(f"body: {json.dumps(violation['body'])}")
    lines += [
        f"  {d.get('location', '')} {d.get('field', '')}: {d.get('message', '')}"
        for d in violation["details"]
    ]
    return lines


def junit(report: dict[str, Any]) -> str:
    """JUnit XML: per operation, a test case for each documented status (skipped when never
    returned) and a failing one for each request that broke the contract, the request in
    its failure's message."""
    suite = ET.Element("testsuite", name="platform API contract")
    counts = {"tests": 0, "failures": 0, "skipped": 0}

    def case(op_id: str, name: str) -> ET.Element:
        counts["tests"] += 1
        classname = "contract." + ("unrouted" if op_id == UNROUTED else op_id)
        return ET.SubElement(suite, "testcase", classname=classname, name=_xml_text(name))

    for op_id, usage in report["operations"].items():
        coverage = usage.get("coverage")
        for status in coverage["statusesReturned"] if coverage else ():
            case(op_id, f"{op_id} returns {status}")
        for status in coverage["statusesNotReturned"] if coverage else ():
            skipped = ET.SubElement(case(op_id, f"{op_id} returns {status}"), "skipped")
            skipped.set("message", f"no request was answered {status}")
            counts["skipped"] += 1
        for index, violation in enumerate(usage["violatingRequests"], 1):
            lines = _violation_lines(violation)
            failure = ET.SubElement(
                case(op_id, f"{op_id} request {index} keeps the contract: {violation['request']}"),
                "failure",
                type="ContractViolation",
            )
            failure.set("message", _xml_text(lines[0]))
            failure.text = _xml_text("\n".join(lines))
            counts["failures"] += 1
        unlisted = usage["violations"] - len(usage["violatingRequests"])
        if unlisted > 0:
            failure = ET.SubElement(
                case(op_id, f"{op_id}: {unlisted} more request(s) broke the contract"), "failure"
            )
            failure.set("message", f"{unlisted} more violation(s), not kept in the report")
            counts["failures"] += 1
    root = ET.Element("testsuites", name="platform-mock")
    for element in (root, suite):
        for key, value in counts.items():
            element.set(key, str(value))
        element.set("errors", "0")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cell(value: Any) -> str:
    """Text for one Markdown table cell or list line: no HTML, no table break, bounded."""
    shown = str(value).replace("\r", " ").replace("\n", " ")
    if len(shown) > MAX_CELL:
        shown = shown[: MAX_CELL - 1] + "…"
    shown = shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#])", r"\\\1", shown)


def markdown(report: dict[str, Any]) -> str:
    """A job summary: the coverage table per operation, then each violation."""
    summary = report["summary"]
    coverage = summary["coverage"]
    lines = [
        f"### Platform API contract: coverage {coverage['percent']}%, "
        f"{summary['violations']} violation(s)",
        "",
        f"{summary['requests']} request(s); {coverage['covered']} of {coverage['total']} "
        "documented statuses, query parameters and enum values exercised; "
        f"{summary['operationsCalled']} of {summary['operationsInContract']} operations called.",
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
            f"| {_cell(op_id)} | {usage['calls']} | {share} | {_cell(returned)} | "
            f"{_cell(', '.join(missing)) or '-'} | {usage['violations']} |"
        )
    shown = list(_violations(report))
    if shown:
        lines += ["", "#### Requests that broke the contract", ""]
        for op_id, violation in shown:
            where = f" (sent by {_cell(violation['test'])})" if violation["test"] else ""
            lines.append(
                f"- **{_cell(op_id)}** {_cell(violation['request'])} → "
                f"{violation['status']} {_cell(violation['message'])}{where}"
            )
            lines += [
                f"  - {_cell(d.get('location', ''))} {_cell(d.get('field', ''))}: "
                f"{_cell(d.get('message', ''))}"
                for d in violation["details"]
            ]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "json": to_json,
    "text": text,
    "junit": junit,
    "markdown": markdown,
}


def _command_value(text: str, *, property_: bool = False) -> str:
    """Escaped for a GitHub workflow command (its data, or a property's value)."""
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escaped.replace(":", "%3A").replace(",", "%2C") if property_ else escaped


def github(report: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    """Under GitHub Actions: append the Markdown to the job summary (`GITHUB_STEP_SUMMARY`),
    and return an `::error` annotation for each request that broke the contract, to print."""
    environ = dict(os.environ) if environ is None else environ
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(markdown(report))
    if environ.get("GITHUB_ACTIONS") != "true":
        return []
    return [
        f"::error title={_command_value(f'Contract violation: {op_id}', property_=True)}::"
        + _command_value("\n".join(_violation_lines(violation)))
        for op_id, violation in _violations(report)
    ]
