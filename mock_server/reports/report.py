"""The contract report for CI: what a client's requests did to each operation of the contract.

Per operation: calls, statuses returned, the requests that broke the contract (grouped by
the rule they broke, each group with its count, the tests that sent them and the first few
requests in full, each with the value sent at the place of each violation, the contract's
nearest valid choice (`explain`) and a `curl` line that sends it again (`reproduce`): a
flood of violations gives a report of bounded size), which parameters
and filter values were exercised, and the contract's coverage: of its documented statuses,
query parameters and enum values, the share the client's requests met; and `judge` gives the
verdict on it. It accumulates for the life of the mock, across resets;
`mock_server.reports.report_files` writes it in each format.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict, overload

from mock_server.contract.documents import Operation
from mock_server.core.errors import Violation
from mock_server.core.jsonvalue import JsonValue
from mock_server.reports import explain, reproduce
from mock_server.reports.explain import MAX_SHOWN_DETAILS, rules_broken
from mock_server.services.journal import Entry, JournalStats, read_body

UNROUTED = "(no operation)"
MAX_VALUES = 20  # distinct values kept per parameter, and unknown parameter names per operation
MAX_RULES = 20  # rules broken kept apart per operation; past it, they are counted as one
OTHER_RULES = "(other rules)"
MAX_EXAMPLES = 3  # offending requests kept in full per rule broken
MAX_TESTS = 10  # tests named per rule broken; the others are counted
MAX_SHOWN_BODY = 1024  # bytes of an offending request's body kept in the report
MAX_SHOWN_TEXT = 500  # characters of each text of an offending request kept in the report


# -- the report as JSON (`ContractReport.to_dict`), which every format is written from -------


class ViolationExample(TypedDict):
    """An offending request kept in full: what was sent (its texts clipped) and answered;
    one the report keeps is explained (`hint`, `curl`, each violation's `hint` and `sent`)."""

    test: str | None
    request: str
    query: dict[str, list[str]]
    body: JsonValue
    status: int | None
    code: int | None
    message: str | None
    details: list[Violation]
    hint: NotRequired[str]
    curl: NotRequired[str]


class ViolationGroup(TypedDict):
    """The requests that broke one rule of one operation."""

    rule: str
    status: int | None
    code: int | None
    count: int
    tests: dict[str, int]  # requests by test, the most first
    otherTests: int
    examples: list[ViolationExample]


class CoverageFigures(TypedDict):
    covered: int
    total: int
    percent: float


class Coverage(CoverageFigures):
    """What of one operation's contract the requests met, and what they did not."""

    statusesReturned: list[int]
    statusesNotReturned: list[int]
    parametersSent: list[str]
    parametersNotSent: list[str]
    enumValuesSent: dict[str, list[str]]
    enumValuesNotSent: dict[str, list[str]]


class OperationUsage(TypedDict):
    """What the requests did to one operation (or to none: UNROUTED, with no coverage)."""

    calls: int
    statuses: dict[str, int]
    violations: int
    expectedViolations: int
    violationGroups: list[ViolationGroup]
    parametersExercised: dict[str, list[str]]
    parametersNotExercised: list[str]
    coverage: NotRequired[Coverage]


class Summary(TypedDict):
    requests: int
    violations: int
    expectedViolations: int
    operationsCalled: int
    operationsInContract: int
    operationsNotCalled: list[str]
    coverage: CoverageFigures


class Check(TypedDict):
    """One check of a verdict: what it checked, whether it passed, and why, in words."""

    check: str
    passed: bool
    summary: str


class Verdict(TypedDict):
    passed: bool
    checks: list[Check]
    notes: list[str]


class Report(TypedDict):
    """The contract report as JSON; a run that judged it puts its `verdict` first."""

    verdict: NotRequired[Verdict]
    summary: Summary
    operations: dict[str, OperationUsage]
    journal: JournalStats  # the report counts every request; the journal kept the newest


def _example_key(example: ViolationExample) -> tuple[str, str, str]:
    """The order examples are chosen in: by test, request, then all they hold, so that the
    same requests give the same examples whatever order they arrived in (pytest-xdist's
    workers, parallel Node files)."""
    whole = json.dumps(example, sort_keys=True, default=str)
    return (example.get("test") or "", example["request"], whole)


def _kept_least(kept: Mapping[str, object], key: str, cap: int) -> str | None:
    """Whether `key` may join `kept` (at most `cap` keys, the least in order): None if it may
    (room left, or it comes before the greatest kept key, which it then displaces: returned
    as that key, for the caller to count elsewhere), else `key` itself (it stays out). A set
    kept so holds the `cap` least keys seen, whatever order they came in."""
    if key in kept or len(kept) < cap:
        return None
    greatest = max(kept)
    return greatest if key < greatest else key


@dataclass
class _Rule:
    """The requests that broke one rule of one operation: how many, sent by which tests, and
    a few in full. The tests named and the examples kept are the least in a stable order, so
    identical suites give identical reports, however their requests interleaved."""

    rule: str
    status: int | None
    code: int | None
    count: int = 0
    tests: Counter[str] = field(default_factory=Counter)  # requests per test, for MAX_TESTS tests
    other_tests: int = 0  # requests of tests past those
    examples: list[ViolationExample] = field(default_factory=list)

    def keeps(self, example: ViolationExample) -> bool:
        """Whether `add` may keep this example: room is left, or it comes before the last kept
        by test and request (the leading part of `_example_key`). One it cannot keep need
        not be explained (`ContractReport._explain`)."""
        if len(self.examples) < MAX_EXAMPLES:
            return True
        return _example_key(example)[:2] <= max(_example_key(e)[:2] for e in self.examples)

    def add(
        self,
        count: int,
        tests: Mapping[str, int],
        other_tests: int,
        examples: list[ViolationExample],
    ) -> None:
        self.count += count
        self.other_tests += other_tests
        for test, n in tests.items():
            out = _kept_least(self.tests, test, MAX_TESTS)
            if out == test:
                self.other_tests += n
                continue
            if out is not None:
                self.other_tests += self.tests.pop(out)
            self.tests[test] += n
        chosen = sorted([*self.examples, *examples], key=_example_key)
        self.examples = chosen[:MAX_EXAMPLES]

    def to_dict(self) -> ViolationGroup:
        return {
            "rule": self.rule,
            "status": self.status,
            "code": self.code,
            "count": self.count,
            "tests": dict(sorted(self.tests.items(), key=lambda pair: (-pair[1], pair[0]))),
            "otherTests": self.other_tests,
            "examples": self.examples,
        }


@dataclass
class _Usage:
    calls: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    parameters: dict[str, set[str]] = field(default_factory=dict)
    rules: dict[str, _Rule] = field(default_factory=dict)  # the rules broken, by name
    violation_count: int = 0
    expected_violations: int = 0  # sent on purpose by negative tests: counted apart
    # Coverage: what requests that kept the contract sent of the operation's query parameters
    # and enum values (bounded: only the contract's own names and values are kept).
    sent: set[str] = field(default_factory=set)
    enum_values: dict[str, set[str]] = field(default_factory=dict)

    def rule(self, name: str, status: int | None, code: int | None) -> _Rule:
        """The record of a rule broken, new or kept: the MAX_RULES least names are kept
        apart, every other rule's requests are counted as one (OTHER_RULES)."""
        named = {k: v for k, v in self.rules.items() if k != OTHER_RULES}
        out = _kept_least(named, name, MAX_RULES) if name != OTHER_RULES else None
        if out == name:
            name, status, code = OTHER_RULES, None, None
        elif out is not None:
            displaced = self.rules.pop(out)
            self.rule(OTHER_RULES, None, None).add(
                displaced.count, dict(displaced.tests), displaced.other_tests, displaced.examples
            )
        if name not in self.rules:
            self.rules[name] = _Rule(name, status, code)
        return self.rules[name]


class ContractReport:
    """Accumulates journal entries into a per-operation report."""

    def __init__(self, operations: dict[str, Operation], gateway_prefix: str = "/gateway"):
        self._operations = operations
        self._gateway_prefix = gateway_prefix  # where the nearest route of the gateway is
        self._lock = threading.Lock()
        self._usage: dict[str, _Usage] = {op: _Usage() for op in operations}
        # What the journal's byte budget cost (set by the mock that owns both).
        self.journal_stats: Callable[[], JournalStats] | None = None
        self._absorbed_drops = 0

    def add(self, entry: Entry) -> None:
        key, violation = entry.operation_id or UNROUTED, entry.violation
        with self._lock:
            usage = self._usage.get(key)
            if usage is None:  # an operation no contract names, or a path none routes
                usage = self._usage[key] = _Usage()
            usage.calls += 1
            usage.statuses[_status(entry)] += 1
            declared = self._operations.get(key)
            known = declared.parameters if declared else ()
            for name, values in entry.query.items():
                self._exercised(usage, known, name, values)
            for name, value in entry.path_params.items():
                self._exercised(usage, known, name, [value])
            if declared is not None and not violation:
                self._cover(usage, declared, entry.query)
            if violation and entry.expected:
                usage.expected_violations += 1
            elif violation:
                usage.violation_count += 1
                example: ViolationExample = {
                    "test": entry.test,
                    "request": _clip(f"{entry.method} {entry.path}"),
                    "query": {
                        _clip(k): [_clip(v) for v in values[:MAX_VALUES]]
                        for k, values in list(entry.query.items())[:MAX_VALUES]
                    },
                    "body": _shown_body(entry.shown_body),
                    "status": entry.status,
                    "code": entry.code,
                    "message": _clip(entry.message),
                    "details": [_clipped(d) for d in entry.details[:MAX_SHOWN_DETAILS]],
                }
                tests = {entry.test: 1} if entry.test else {}
                for name in rules_broken(entry):
                    rule = usage.rule(name, entry.status, entry.code)
                    if "curl" not in example and rule.keeps(example):
                        self._explain(example, entry)
                    rule.add(1, tests, 0, [example])

    def _explain(self, example: ViolationExample, entry: Entry) -> None:
        """What a reviewer fixes from, added to an example the report keeps (only to those:
        the nearest route is looked for among every route): each violation's value sent and
        hint, the condition's hint, and a `curl` line that sends the request again."""
        details, hint = explain.explained(entry, self._operations, self._gateway_prefix)
        example["details"] = [_clipped(detail) for detail in details]
        example["hint"] = hint
        example["curl"] = reproduce.curl(entry)

    @staticmethod
    def _cover(usage: _Usage, declared: Operation, query: dict[str, list[str]]) -> None:
        # What was sent, looked up in the operation's sets: a request sends a few of them.
        enums = declared.enum_sets
        for name, values in query.items():
            if name in declared.query:
                usage.sent.add(name)
            allowed = enums.get(name)
            if allowed is not None:
                for value in values:
                    if value in allowed:
                        usage.enum_values.setdefault(name, set()).add(value)

    @classmethod
    def _exercised(
        cls, usage: _Usage, known: tuple[str, ...], name: str, values: list[str]
    ) -> None:
        """A parameter's values sent. Names a client makes up are kept up to a cap (the least
        of them): a flood of distinct query keys must not grow the report without bound."""
        if name not in known:
            made_up = {k: None for k in usage.parameters if k not in known}
            out = _kept_least(made_up, name, MAX_VALUES)
            if out == name:
                return
            if out is not None:
                del usage.parameters[out]
        seen = usage.parameters.get(name)
        if seen is None:
            seen = usage.parameters[name] = set()
        cls._keep(seen, values)

    @staticmethod
    def _keep(seen: set[str], values: list[str]) -> None:
        """The values of a parameter kept: the MAX_VALUES least, whatever order they came in."""
        for value in values:
            if value in seen:
                continue
            if len(seen) < MAX_VALUES:
                seen.add(value)
            else:
                greatest = max(seen)
                if value < greatest:
                    seen.discard(greatest)
                    seen.add(value)

    def absorb(self, other: Report) -> None:
        """Adds another report's figures (`to_dict()` of a pytest-xdist worker's) to this one."""
        with self._lock:
            for op_id, theirs in other["operations"].items():
                usage = self._usage.setdefault(op_id, _Usage())
                usage.calls += theirs["calls"]
                usage.statuses.update(theirs["statuses"])
                declared = self._operations.get(op_id)
                known = declared.parameters if declared else ()
                for name, values in theirs["parametersExercised"].items():
                    self._exercised(usage, known, name, values)
                usage.violation_count += theirs["violations"]
                usage.expected_violations += theirs.get("expectedViolations", 0)
                for theirs_rule in theirs["violationGroups"]:
                    usage.rule(theirs_rule["rule"], theirs_rule["status"], theirs_rule["code"]).add(
                        theirs_rule["count"],
                        theirs_rule["tests"],
                        theirs_rule["otherTests"],
                        theirs_rule["examples"],
                    )
                covered = theirs.get("coverage")  # none for requests no operation matched
                if covered:
                    usage.sent.update(covered["parametersSent"])
                    for name, values in covered["enumValuesSent"].items():
                        usage.enum_values.setdefault(name, set()).update(values)
            self._absorbed_drops += other.get("journal", {}).get("droppedEntries", 0)

    @property
    def violation_count(self) -> int:
        with self._lock:
            return sum(u.violation_count for u in self._usage.values())

    def to_dict(self) -> Report:
        with self._lock:
            operations: dict[str, OperationUsage] = {}
            for op_id, usage in self._usage.items():
                declared = self._operations.get(op_id)
                used = sorted(usage.parameters)
                operations[op_id] = {
                    "calls": usage.calls,
                    "statuses": dict(sorted(usage.statuses.items())),
                    "violations": usage.violation_count,
                    "expectedViolations": usage.expected_violations,
                    # The rules broken, the most broken first.
                    "violationGroups": [
                        rule.to_dict()
                        for rule in sorted(usage.rules.values(), key=lambda r: (-r.count, r.rule))
                    ],
                    "parametersExercised": {k: sorted(usage.parameters[k]) for k in used},
                    "parametersNotExercised": [
                        p for p in (declared.parameters if declared else ()) if p not in used
                    ],
                }
                if declared is not None:
                    operations[op_id]["coverage"] = _coverage(declared, usage)
            called = [op for op in self._operations if self._usage[op].calls]
            covered = sum(operations[op]["coverage"]["covered"] for op in self._operations)
            total = sum(operations[op]["coverage"]["total"] for op in self._operations)
            journal: JournalStats = self.journal_stats() if self.journal_stats else {}
            journal["droppedEntries"] = journal.get("droppedEntries", 0) + self._absorbed_drops
            return {
                "summary": {
                    "requests": sum(u.calls for u in self._usage.values()),
                    "violations": sum(u.violation_count for u in self._usage.values()),
                    "expectedViolations": sum(u.expected_violations for u in self._usage.values()),
                    "operationsCalled": len(called),
                    "operationsInContract": len(self._operations),
                    "operationsNotCalled": [op for op in self._operations if op not in called],
                    "coverage": {
                        "covered": covered,
                        "total": total,
                        "percent": percent(covered, total),
                    },
                },
                "operations": operations,
                # The report counts every request; the journal kept only the newest.
                "journal": journal,
            }


def _status(entry: Entry) -> str:
    """How a request was answered, as the report counts it: its status, `dropped` by a
    fault, or `unanswered` (its client left, or the mock stopped first)."""
    if entry.status is not None:
        return str(entry.status)
    return "dropped" if entry.dropped else "unanswered"


def percentage(text: str) -> float:
    """A coverage threshold given as text: a number from 0 to 100; ValueError if not."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:  # also refuses nan
        raise ValueError(f"{text!r} is not from 0 to 100")
    return value


def percent(part: int, whole: int) -> float:
    """`part` of `whole` in percent, rounded down to a tenth: a report never says 100 when
    something is missing, nor passes a threshold the figures do not reach."""
    return math.floor(1000 * part / whole) / 10 if whole else 100.0


def _coverage(declared: Operation, usage: _Usage) -> Coverage:
    """What of one operation's contract the requests met: each documented status returned,
    each query parameter sent, each value of an enum parameter sent (by requests that kept
    the contract, for parameters and values)."""
    statuses = sorted(declared.statuses)
    returned = [s for s in statuses if str(s) in usage.statuses]
    sent = [p for p in declared.query if p in usage.sent]
    enum_sent = {
        name: [v for v in allowed if v in usage.enum_values.get(name, ())]
        for name, allowed in declared.enums
    }
    enum_missing = {
        name: [v for v in allowed if v not in usage.enum_values.get(name, ())]
        for name, allowed in declared.enums
    }
    total = len(statuses) + len(declared.query) + sum(len(v) for _, v in declared.enums)
    covered = len(returned) + len(sent) + sum(map(len, enum_sent.values()))
    return {
        "covered": covered,
        "total": total,
        "percent": percent(covered, total),
        "statusesReturned": returned,
        "statusesNotReturned": [s for s in statuses if s not in returned],
        "parametersSent": sent,
        "parametersNotSent": [p for p in declared.query if p not in sent],
        "enumValuesSent": {k: v for k, v in enum_sent.items() if v},
        "enumValuesNotSent": {k: v for k, v in enum_missing.items() if v},
    }


def judge(
    report: Report,
    *,
    fail_on_violation: bool,
    min_coverage: float | None,
    option_prefix: str = "--",
    command: str | None = None,
    require_requests: bool | None = None,
    opt_outs: bool = False,
) -> Verdict:
    """The verdict on a report (`to_dict()`): PASSED or FAILED, and each check that decided
    it, with the options named as the run named them (`--platform-mock-` under pytest).
    `command`, for `platform-mock run`, says how the command ended ("" when it passed).
    `require_requests` (by default as `fail_on_violation`): no request reaching the mock
    fails. `opt_outs`: the checks are the run's defaults, so a failing one names the option
    that allows what it refused (`--allow-violations`, `--allow-no-requests`).

    A check that was not asked for decides nothing, but what it would have found is said:
    a run with violations and no `--fail-on-violation` does not pass silently, and a run no
    request reached says so whatever was asked."""
    summary = report["summary"]
    violations, requests = summary["violations"], summary["requests"]
    figures = summary["coverage"]
    if require_requests is None:
        require_requests = fail_on_violation
    checks: list[Check] = []
    notes: list[str] = []
    if command is not None:
        checks.append(
            {"check": "command", "passed": not command, "summary": command or "the command passed"}
        )
    if not requests:
        reached = "no request reached the mock, so nothing was checked against the contract"
        if require_requests:
            allow = f"{option_prefix}allow-no-requests allows it" if opt_outs else ""
            said = f"{reached} ({allow})" if allow else reached
            checks.append({"check": "requests", "passed": False, "summary": said})
        else:
            notes.append(reached)
    broke = f"{violations} of {requests} request(s) broke the contract"
    if fail_on_violation and requests:
        named = (
            f"{option_prefix}allow-violations lets them pass"
            if opt_outs
            else f"{option_prefix}fail-on-violation"
        )
        checks.append(
            {"check": "violations", "passed": not violations, "summary": f"{broke} ({named})"}
        )
    elif requests:
        notes.append(
            f"{broke}; not checked ({option_prefix}fail-on-violation would fail on any)"
            if violations
            else f"{broke}"
        )
    shown = f"contract coverage {figures['percent']}% ({figures['covered']} of {figures['total']})"
    if min_coverage is not None:
        passed = figures["percent"] >= min_coverage
        relation = "at least" if passed else "below"
        checks.append(
            {
                "check": "coverage",
                "passed": passed,
                "summary": f"{shown}, {relation} {option_prefix}min-coverage {min_coverage:g}%",
            }
        )
    else:
        notes.append(shown)
    return {
        "passed": all(check["passed"] for check in checks),
        "checks": checks,
        "notes": notes,
    }


def reasons(verdict: Verdict) -> list[str]:
    """Why a verdict failed: one line per failing check."""
    return [check["summary"] for check in verdict["checks"] if not check["passed"]]


def verdict_line(verdict: Verdict) -> str:
    """The verdict in one line: PASSED or FAILED, then every check and note."""
    word = "PASSED" if verdict["passed"] else "FAILED"
    failing = reasons(verdict)
    rest = [check["summary"] for check in verdict["checks"] if check["passed"]]
    said = failing + rest + verdict["notes"]
    unchecked = "" if verdict["checks"] else " (no check was asked for)"
    return f"{word}{unchecked}: {'; '.join(said)}"


def coverage(report: Report) -> float:
    """The session's coverage figure, in percent (of `to_dict()`)."""
    return float(report["summary"]["coverage"]["percent"])


def gaps(report: Report) -> list[str]:
    """What the requests never exercised, one line per operation (of `to_dict()`)."""
    lines = []
    for op_id, usage in report["operations"].items():
        missing = operation_gaps(usage)
        if missing:
            lines.append(f"{op_id}: {missing}")
    return lines


def operation_gaps(usage: OperationUsage) -> str:
    """What the requests never exercised of one operation (of `to_dict()["operations"]`)."""
    coverage = usage.get("coverage")
    if not coverage or coverage["covered"] == coverage["total"]:
        return ""
    if not usage["calls"]:
        return "never called"
    missing = []
    if coverage["statusesNotReturned"]:
        statuses = ", ".join(map(str, coverage["statusesNotReturned"]))
        missing.append(f"status {statuses} never returned")
    if coverage["parametersNotSent"]:
        missing.append(f"parameter {', '.join(coverage['parametersNotSent'])} never sent")
    for name, values in coverage["enumValuesNotSent"].items():
        missing.append(f"{name}={'|'.join(values)} never sent")
    return "; ".join(missing)


@overload
def _clip(text: str) -> str: ...
@overload
def _clip(text: None) -> None: ...
@overload
def _clip(text: str | None) -> str | None: ...
def _clip(text: str | None) -> str | None:
    """A text of an offending request as the report keeps it: its beginning, past
    MAX_SHOWN_TEXT characters, with its full length."""
    if text is None or len(text) <= MAX_SHOWN_TEXT:
        return text
    return f"{text[:MAX_SHOWN_TEXT]}... ({len(text)} characters in all)"


def _clipped(detail: Violation) -> Violation:
    """A violation as the report keeps it: each of its texts clipped, in its place."""
    clipped = detail.copy()
    clipped["location"] = _clip(detail["location"])
    clipped["message"] = _clip(detail["message"])
    if "field" in detail:
        clipped["field"] = _clip(detail["field"])
    if "tag" in detail:
        clipped["tag"] = _clip(detail["tag"])
    if "hint" in detail:
        clipped["hint"] = _clip(detail["hint"])
    if "sent" in detail:
        clipped["sent"] = _clip(detail["sent"])
    return clipped


def _shown_body(raw: bytes) -> JsonValue:
    """An offending request's body for the report: as the journal reads it, or, past
    MAX_SHOWN_BODY bytes, its beginning as text with the full size."""
    if len(raw) <= MAX_SHOWN_BODY:
        return read_body(raw)
    head = raw[:MAX_SHOWN_BODY].decode("utf-8", errors="replace")
    return f"{head}... ({len(raw)} bytes in all)"
