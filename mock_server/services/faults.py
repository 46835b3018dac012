"""Fault and latency injection: rules that make an operation fail, slow down or hang up.

A rule matches an operation (and optionally some of its parameters), waits for `after`
matching calls, then applies its effect `times` times (or always): a status the contract
documents for that operation, answered with the realistic platform error body of the
condition its catalog entry names for that status; a delay; or a dropped connection. A
request may also ask for a fault itself, in the style of Prism: `Prefer: code=424` and/or
`Prefer: delay=250` (milliseconds).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from mock_server.contract.documents import Operation
from mock_server.core import camel, errors
from mock_server.core.jsonvalue import JsonValue
from mock_server.core.numbers import INTEGER_TEXT, number_problem
from mock_server.services.journal import same_value

MAX_DELAY_MS = 60_000
MAX_COUNT = 2**53 - 1  # after and times, like every integer of the contract
_WHOLE_NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() takes "²"


class FaultRefused(ValueError):
    """A fault the contract does not allow, with the reason."""


class FaultWire(TypedDict):
    """A rule as the admin API answers it (`spec/admin.yaml`, `Fault`), in this order."""

    id: str
    operationId: str
    status: int | None
    delayMs: int
    drop: bool
    match: dict[str, JsonValue]  # by parameter, the value (or values) it must have
    after: int
    times: int | None
    applied: int


@dataclass
class Fault:
    """One rule. `times` None means always."""

    id: str
    operation_id: str
    status: int | None = None
    delay_ms: int = 0
    drop: bool = False
    match: dict[str, JsonValue] = field(default_factory=dict)
    after: int = 0
    times: int | None = 1
    applied: int = 0
    seen: int = 0

    @classmethod
    def from_dict(cls, found: FaultWire) -> Fault:
        """A rule as `to_dict` writes it (and the admin API answers it), read back."""
        return camel.from_wire(cls, found)

    def to_dict(self) -> FaultWire:
        return camel.to_wire(self, FaultWire)


@dataclass
class Decision:
    """What to do to one request."""

    delay_ms: int = 0
    drop: bool = False
    error: errors.PlatformError | None = None
    source: str | None = None  # the rule id, or "prefer"


class Faults:
    """The fault rules of one mock, checked against the statuses its contract documents."""

    def __init__(
        self,
        operations: dict[str, Operation],
        conditions: Mapping[str, Mapping[int, type[errors.PlatformError]]],
    ):
        """`conditions`: by operation, the error each injectable status answers with (the
        catalog's, given by the app)."""
        self._documented = {op_id: op.statuses for op_id, op in operations.items()}
        self._conditions = {op_id: conditions.get(op_id, {}) for op_id in operations}
        self._operations = operations
        self._lock = threading.Lock()
        self._rules: list[Fault] = []
        self._next = 0
        self.observers: list[Callable[[], None]] = []  # told of each rule added or removed

    def _check(self, operation_id: str, status: int | None, delay_ms: int) -> None:
        if operation_id not in self._documented:
            raise FaultRefused(f"no operation {operation_id!r} in the contract")
        if status is not None:
            allowed = sorted(
                s for s in self._documented[operation_id] if s in self._conditions[operation_id]
            )
            if status not in allowed:
                raise FaultRefused(
                    f"{operation_id} does not document status {status}; "
                    f"injectable: {', '.join(map(str, allowed))}"
                )
        if not 0 <= delay_ms <= MAX_DELAY_MS:
            raise FaultRefused(f"delay must be 0 to {MAX_DELAY_MS} ms")

    def add(
        self,
        operation_id: str,
        *,
        status: int | None = None,
        delay_ms: int = 0,
        drop: bool = False,
        match: Mapping[str, JsonValue] | None = None,
        after: int = 0,
        times: int | None = 1,
    ) -> Fault:
        """Add a rule; raises FaultRefused for a status the operation does not document."""
        self._check(operation_id, status, delay_ms)
        if status is None and not delay_ms and not drop:
            raise FaultRefused("a fault needs a status, a delay or drop")
        if status is not None and drop:
            raise FaultRefused("a dropped connection has no status")
        if times is not None and not 1 <= times <= MAX_COUNT:
            raise FaultRefused(f"times must be 1 to {MAX_COUNT}, or None for always")
        if not 0 <= after <= MAX_COUNT:
            raise FaultRefused(f"after must be 0 to {MAX_COUNT}")
        operation = self._operations[operation_id]
        try:
            operation.check_parameters(match or {})
            operation.check_values(match or {})
        except ValueError as exc:  # a rule that could never apply
            raise FaultRefused(str(exc)) from None
        match = {
            k: _integer(k, v) if k in operation.integers else v for k, v in (match or {}).items()
        }
        with self._lock:
            self._next += 1
            rule = Fault(
                f"fault-{self._next}",
                operation_id,
                status,
                delay_ms,
                drop,
                dict(match or {}),
                after,
                times,
            )
            self._rules.append(rule)
        self._changed()
        return rule

    def error_for(self, operation_id: str, status: int) -> errors.PlatformError:
        """The platform error an operation answers with that status."""
        return self._conditions[operation_id][status]()

    def rules(self) -> list[Fault]:
        with self._lock:
            return list(self._rules)

    def remove(self, fault_id: str) -> bool:
        with self._lock:
            kept = [r for r in self._rules if r.id != fault_id]
            found = len(kept) != len(self._rules)
            self._rules = kept
        if found:
            self._changed()
        return found

    def clear(self) -> None:
        with self._lock:
            had = bool(self._rules)
            self._rules.clear()
        if had:
            self._changed()

    def _changed(self) -> None:
        for observer in self.observers:
            observer()

    def decide(
        self, operation_id: str, params: Mapping[str, object], prefer: str | None
    ) -> Decision:
        """The fault to apply to one request: the `Prefer` header first, then the rules.
        Operations outside the platform's contract (the admin API) get none."""
        if operation_id not in self._documented:
            return Decision()
        if prefer:
            decision = self._from_prefer(operation_id, prefer)
            if decision is not None:
                return decision
        with self._lock:
            integers = self._operations[operation_id].integers
            for rule in self._rules:
                if rule.operation_id != operation_id or not all(
                    _same_integer(params.get(k), v)
                    if k in integers
                    else same_value(params.get(k), v)
                    for k, v in rule.match.items()
                ):
                    continue
                if rule.times is not None and rule.applied >= rule.times:
                    continue
                rule.seen += 1
                if rule.seen <= rule.after:
                    continue
                rule.applied += 1
                return Decision(
                    rule.delay_ms,
                    rule.drop,
                    None if rule.status is None else self.error_for(operation_id, rule.status),
                    rule.id,
                )
        return Decision()

    def _from_prefer(self, operation_id: str, prefer: str) -> Decision | None:
        wanted: dict[str, str] = {}
        for part in prefer.replace(";", ",").split(","):
            key, _, value = part.strip().partition("=")
            if key in ("code", "delay"):
                wanted[key] = value.strip()
        if not wanted:
            return None
        try:
            for key, value in wanted.items():
                if not _WHOLE_NUMBER.fullmatch(value):
                    raise FaultRefused(f"{key}={value!r} is not a whole number")
            status = int(wanted["code"]) if "code" in wanted else None
            delay = int(wanted.get("delay", "0"))
            self._check(operation_id, status, delay)
        except FaultRefused as exc:
            raise errors.InvalidFaultRequest(
                f"Prefer header asks for a fault the contract does not allow: {exc}",
                details=[{"location": "header", "field": "Prefer", "message": str(exc)}],
            ) from None
        error = None if status is None else self.error_for(operation_id, status)
        return Decision(delay, False, error, "prefer")


def _integer(name: str, value: JsonValue) -> int:
    """A match value of an integer parameter as its integer: an int, or text in the query's
    one grammar of integers (so `5` and `"05"` match `?limit=05` alike)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and not number_problem(value, "integer") and len(value) <= 20:
        return int(value)
    shown = value if isinstance(value, str) else repr(value)
    raise FaultRefused(
        f"match {name}: {number_problem(shown, 'integer') or f'{shown!r} is too long'}"
    )


def _same_integer(actual: object, expected: JsonValue) -> bool:
    # Requests reach the fault rules validated: an integer parameter's text is in the grammar.
    return (
        isinstance(actual, str)
        and INTEGER_TEXT.fullmatch(actual) is not None
        and int(actual) == expected
    )
