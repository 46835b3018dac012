"""The contract report for CI: what a client's requests did to each operation of the contract.

Per operation: calls, statuses returned, the requests that broke the contract (each in
full, with the test that sent it), and which parameters and filter values were exercised.
It accumulates for the life of the mock, across resets, and is written on shutdown.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
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
            usage.statuses["dropped" if entry.status is None else str(entry.status)] += 1
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
            self._absorbed_drops += other.get("journal", {}).get("droppedEntries", 0)

    @property
    def violation_count(self) -> int:
        with self._lock:
            return sum(u.violation_count for u in self._usage.values())

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            operations = {}
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
            called = [op for op in self._operations if self._usage[op].calls]
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
                },
                "operations": operations,
                # The report counts every request; the journal kept only the newest.
                "journal": journal,
            }

    def text(self) -> str:
        """A readable summary, naming each request that broke the contract."""
        report = self.to_dict()
        summary = report["summary"]
        lines = [
            f"Contract report: {summary['requests']} request(s), "
            f"{summary['violations']} contract violation(s), "
            f"{summary['operationsCalled']}/{summary['operationsInContract']} operations called",
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
            if usage["parametersNotExercised"] and usage["calls"]:
                lines.append(f"    not exercised: {', '.join(usage['parametersNotExercised'])}")
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

    def write(self, path: str | Path) -> tuple[Path, Path]:
        """Write the JSON report to `path` and the summary beside it (`.txt`)."""
        json_path = Path(path)
        text_path = json_path.with_suffix(".txt")
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        text_path.write_text(self.text())
        return json_path, text_path


def _shown_body(raw: bytes) -> Any:
    """An offending request's body for the report: as the journal reads it, or, past
    MAX_SHOWN_BODY bytes, its beginning as text with the full size."""
    if len(raw) <= MAX_SHOWN_BODY:
        return read_body(raw)
    head = raw[:MAX_SHOWN_BODY].decode("utf-8", errors="replace")
    return f"{head}... ({len(raw)} bytes in all)"
