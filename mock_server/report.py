"""The contract report for CI: what a client's requests did to each operation of the contract.

Per operation: calls, statuses returned, the requests that broke the contract (each in
full, with the test that sent it), which parameters and filter values were exercised, and
the contract's coverage: of its documented statuses, query parameters and enum values, the
share the client's requests met. It accumulates for the life of the mock, across resets;
`mock_server.report_files` writes it in each format.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mock_server.contract import Operation
from mock_server.journal import Entry, read_body

UNROUTED = "(no operation)"
MAX_VALUES = 20  # distinct values kept per parameter, and unknown parameter names per operation
MAX_VIOLATIONS = 50  # offending requests kept per operation
MAX_SHOWN_BODY = 4096  # bytes of an offending request's body kept in the report
MAX_SHOWN_DETAILS = 20  # violations of one offending request kept in the report


@dataclass
class _Usage:
    calls: int = 0
    statuses: Counter = field(default_factory=Counter)
    parameters: dict[str, set[str]] = field(default_factory=dict)
    violations: list[dict[str, Any]] = field(default_factory=list)
    violation_count: int = 0
    expected_violations: int = 0  # sent on purpose by negative tests: counted apart
    made_up: int = 0  # parameter names kept that the operation does not have
    # Coverage: what requests that kept the contract sent of the operation's query parameters
    # and enum values (bounded: only the contract's own names and values are kept).
    sent: set[str] = field(default_factory=set)
    enum_values: dict[str, set[str]] = field(default_factory=dict)


class ContractReport:
    """Accumulates journal entries into a per-operation report."""

    def __init__(self, operations: dict[str, Operation]):
        self._operations = operations
        self._lock = threading.Lock()
        self._usage: dict[str, _Usage] = {op: _Usage() for op in operations}
        # What the journal's byte budget cost (set by the mock that owns both).
        self.journal_stats: Callable[[], dict[str, int]] | None = None
        self._absorbed_drops = 0

    def add(self, entry: Entry) -> None:
        with self._lock:
            usage = self._usage.setdefault(entry.operation_id or UNROUTED, _Usage())
            usage.calls += 1
            usage.statuses[_status(entry)] += 1
            declared = self._operations.get(entry.operation_id or "")
            known = declared.parameters if declared else ()
            for name, values in [
                *entry.query.items(),
                *((k, [v]) for k, v in entry.path_params.items()),
            ]:
                # Names a client makes up are kept up to a cap: a flood of distinct query keys
                # must not grow the report without bound.
                if name in usage.parameters or name in known or usage.made_up < MAX_VALUES:
                    usage.made_up += name not in usage.parameters and name not in known
                    self._keep(usage.parameters.setdefault(name, set()), values)
            if declared is not None and not entry.violation:
                self._cover(usage, declared, entry.query)
            if entry.violation and entry.expected:
                usage.expected_violations += 1
            elif entry.violation:
                usage.violation_count += 1
                self._keep_violations(
                    usage,
                    [
                        {
                            "test": entry.test,
                            "request": f"{entry.method} {entry.path}",
                            "query": entry.query,
                            "body": _shown_body(entry.raw_body),
                            "status": entry.status,
                            "code": entry.code,
                            "message": entry.message,
                            "details": entry.details[:MAX_SHOWN_DETAILS],
                        }
                    ],
                )

    @staticmethod
    def _cover(usage: _Usage, declared: Operation, query: dict[str, list[str]]) -> None:
        for name in declared.query:
            if name in query:
                usage.sent.add(name)
        for name, allowed in declared.enums:
            for value in query.get(name, ()):
                if value in allowed:
                    usage.enum_values.setdefault(name, set()).add(value)

    @staticmethod
    def _keep(seen: set[str], values: list[str]) -> None:
        for value in values:
            if len(seen) < MAX_VALUES:
                seen.add(value)

    @staticmethod
    def _keep_violations(usage: _Usage, violations: list[dict[str, Any]]) -> None:
        usage.violations.extend(violations[: max(0, MAX_VIOLATIONS - len(usage.violations))])

    def absorb(self, other: dict[str, Any]) -> None:
        """Adds another report's figures (`to_dict()` of a pytest-xdist worker's) to this one."""
        with self._lock:
            for op_id, theirs in other["operations"].items():
                usage = self._usage.setdefault(op_id, _Usage())
                usage.calls += theirs["calls"]
                usage.statuses.update(theirs["statuses"])
                for name, values in theirs["parametersExercised"].items():
                    self._keep(usage.parameters.setdefault(name, set()), values)
                usage.violation_count += theirs["violations"]
                usage.expected_violations += theirs.get("expectedViolations", 0)
                self._keep_violations(usage, theirs["violatingRequests"])
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

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            operations: dict[str, dict[str, Any]] = {}
            for op_id, usage in self._usage.items():
                declared = self._operations.get(op_id)
                used = sorted(usage.parameters)
                operations[op_id] = {
                    "calls": usage.calls,
                    "statuses": dict(sorted(usage.statuses.items())),
                    "violations": usage.violation_count,
                    "expectedViolations": usage.expected_violations,
                    "violatingRequests": usage.violations,
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
            journal = self.journal_stats() if self.journal_stats else {}
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


def _coverage(declared: Operation, usage: _Usage) -> dict[str, Any]:
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


def failures(
    report: dict[str, Any],
    *,
    fail_on_violation: bool,
    min_coverage: float | None,
    option_prefix: str = "--",
) -> list[str]:
    """Why a run that asked for these checks fails on this report (`to_dict()`), if it
    does: one line per reason (`gaps` names what was never exercised). The options are
    named with `option_prefix` (`--platform-mock-` under pytest)."""
    summary = report["summary"]
    reasons = []
    if fail_on_violation and summary["violations"]:
        reasons.append(
            f"{summary['violations']} request(s) broke the contract "
            f"({option_prefix}fail-on-violation)"
        )
    figures = summary["coverage"]
    if min_coverage is not None and figures["percent"] < min_coverage:
        reasons.append(
            f"contract coverage {figures['percent']}% is below {option_prefix}min-coverage "
            f"{min_coverage:g}% "
            f"({figures['covered']} of {figures['total']} documented statuses, query "
            "parameters and enum values exercised)"
        )
    return reasons


def coverage(report: dict[str, Any]) -> float:
    """The session's coverage figure, in percent (of `to_dict()`)."""
    return float(report["summary"]["coverage"]["percent"])


def gaps(report: dict[str, Any]) -> list[str]:
    """What the requests never exercised, one line per operation (of `to_dict()`)."""
    lines = []
    for op_id, usage in report["operations"].items():
        missing = operation_gaps(usage)
        if missing:
            lines.append(f"{op_id}: {missing}")
    return lines


def operation_gaps(usage: dict[str, Any]) -> str:
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


def _shown_body(raw: bytes) -> Any:
    """An offending request's body for the report: as the journal reads it, or, past
    MAX_SHOWN_BODY bytes, its beginning as text with the full size."""
    if len(raw) <= MAX_SHOWN_BODY:
        return read_body(raw)
    head = raw[:MAX_SHOWN_BODY].decode("utf-8", errors="replace")
    return f"{head}... ({len(raw)} bytes in all)"
