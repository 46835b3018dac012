"""The drift report: where a target platform's answers and the contract disagree.

`check` compares one answer of a target with what the contract documents for its operation:
a status the operation does not document; a media type it does not document for that
status; a body that breaks the documented schema, each violation classified (a field the
contract does not have, a required field missing, a value of another type, an enum value the
contract does not list, any other rule); an error code the contract's table does not give
for the status, or a `statusCode` that is not the status. `DriftReport` counts each
difference per operation, with an example, and keeps apart what is not drift: requests the
contract does not cover (forwarded and listed), requests that broke the contract themselves
(the client's doing), and answers the target failed to give (timeouts, answers too slow or
too large, connection errors).
`judge` gives the verdict; `mock_server.reports.drift_files` writes the report in each format.

A report has a bounded size whatever the traffic: differences are grouped by operation,
kind, field (indexes dropped: `data[].status`) and value found, each group with its count
(of answers that showed it) and its first example; past MAX_GROUPS groups per operation,
and MAX_UNCOVERED paths not covered, the rest are counted.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import NotRequired, Required, TypedDict

from mock_server.contract import documents as contract
from mock_server.contract.documents import Operation
from mock_server.contract.validation import (
    Detail,
    ResponseValidator,
    compiled,
    read_json,
    ruled_violations,
    stream_events,
    stream_violations,
)
from mock_server.core import camel, errors
from mock_server.core.errors import Violation
from mock_server.core.jsonvalue import JsonValue
from mock_server.core.masking import last_word, masked, masked_text
from mock_server.core.media import media_type
from mock_server.reports.explain import rule_names
from mock_server.reports.report import Check, Verdict, percent
from mock_server.services.journal import Entry, EntryWire, mask_body, read_body

# The kinds of difference, as the report names them.
STATUS = "status"  # a status the operation does not document
MEDIA_TYPE = "media type"  # a Content-Type the contract does not document for the status
BODY = "body"  # a body that cannot be read as its media type
UNDOCUMENTED_FIELD = "undocumented field"
MISSING_FIELD = "missing required field"
TYPE = "type"
ENUM_VALUE = "enum value"
VALUE = "value"  # any other rule of a schema (pattern, range, format, ...)
ERROR_CODE = "error code"
_BY_KEYWORD = {
    "additionalProperties": UNDOCUMENTED_FIELD,
    "required": MISSING_FIELD,
    "type": TYPE,
    "enum": ENUM_VALUE,
}
# How a target failed to answer: never drift.
TIMEOUT = "timeout"  # no answer began within the deadline
TOO_SLOW = "too slow"  # an answer began, and did not arrive in full within the deadline
TOO_LARGE = "too large"  # an answer over what `drift` reads of one, not read further
TARGET_ERROR = "error"  # the connection failed
FAILURES = (TIMEOUT, TOO_SLOW, TOO_LARGE, TARGET_ERROR)

MAX_GROUPS = 50  # kinds of difference kept apart per operation; past it, counted
MAX_UNCOVERED = 50  # distinct requests the contract does not cover kept by name
MAX_SHOWN_TEXT = 300  # characters of any text of an example
_INDEXES = re.compile(r"\[[0-9]+\]|\.[0-9]+(?=\.|$)")
_PATH_PART = re.compile(r"([^.\[\]]+)|\[([0-9]+)\]")


# -- the report as JSON (`DriftReport.to_dict`), which every format is written from ----------


class DifferenceWire(TypedDict):
    kind: str
    field: str
    found: str
    message: str


class DriftExample(TypedDict, total=False):
    """The first request of a group, as a report shows it: the request and the status
    answered, and what the group is of (a difference's field, a failure's message, the
    problems of a request that broke the contract)."""

    request: Required[str]
    status: Required[int | None]
    field: str
    message: str
    problems: list[Violation]


class DriftDifference(TypedDict):
    """Answers of one operation that showed one difference."""

    kind: str
    field: str
    found: str
    count: int
    message: str
    example: DriftExample


class DriftFailure(TypedDict):
    kind: str
    count: int
    example: DriftExample


class DriftViolation(TypedDict):
    rule: str
    count: int
    example: DriftExample


class DriftOperation(TypedDict):
    verdict: str  # drifts, agrees, not checked
    calls: int
    answersChecked: int
    answersUnchecked: int
    statuses: dict[str, int]
    differences: list[DriftDifference]
    otherDifferences: int
    failures: list[DriftFailure]
    requestViolations: list[DriftViolation]


class DriftSummary(TypedDict):
    requests: int
    answersChecked: int
    answersUnchecked: int
    differences: int
    operationsDrifting: list[str]
    operationsChecked: int
    operationsInContract: int
    operationsNotChecked: list[str]
    checkedPercent: float
    timeouts: int
    tooSlow: int
    tooLarge: int
    targetErrors: int
    requestViolations: int
    uncovered: int


class Uncovered(TypedDict):
    requests: dict[str, int]  # by `METHOD path`, the most first
    others: int


class DriftReportWire(TypedDict):
    """The drift report as JSON; `drift` puts its `verdict` first."""

    verdict: NotRequired[Verdict]
    target: str
    summary: DriftSummary
    operations: dict[str, DriftOperation]
    uncovered: Uncovered


class ProxiedWire(EntryWire):
    """A proxied exchange as the proxy's admin API answers it: an entry's, and what came
    back and what the checks found."""

    responseType: str
    responseBody: JsonValue
    requestProblems: list[Violation]
    differences: list[DifferenceWire]
    failure: str | None
    unchecked: str | None


@dataclass(frozen=True)
class Difference:
    """One way an answer differs from the contract: its kind, the field it is in (`""` for
    the answer as a whole), what the target sent there (a value, a type, a status, a code;
    `""` when the field and kind say it all) and why the contract disagrees."""

    kind: str
    field: str
    found: str
    message: str

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two differences the same: the kind, the field without its indexes, and
        what was found."""
        return (self.kind, _INDEXES.sub("[]", self.field), self.found)

    def masked(self, credentials: tuple[str, ...] = ()) -> Difference:
        """The difference with every credential in what it quotes hidden: what was found
        in a field named as a credential, whatever it looks like."""
        by_name = masked(self.found, last_word(self.field))
        message = self.message
        if by_name != self.found:  # as the schema's messages quote it
            message = message.replace(repr(self.found), repr(by_name))
        return Difference(
            self.kind,
            masked_text(self.field, credentials),
            masked_text(by_name, credentials),
            masked_text(message, credentials),
        )

    def to_dict(self) -> DifferenceWire:
        return camel.to_wire(self, DifferenceWire)


@dataclass
class ProxiedExchange(Entry):
    """One request forwarded to the target and what came back, as the proxy journals it: the
    request as `Entry` keeps one (no credential is among its headers), the target's status
    and error body (`status`, `code`, `message`, `details`), its answer's media type and body
    (credentials masked, cut at the journal's limit), and what the checks found."""

    response_type: str = ""
    # The target's answer as it came: not the entry's `response_body`, the mock's own answer
    # read as JSON, which a proxy never gives.
    response_body: bytes = b""  # type: ignore[assignment]
    request_problems: list[Detail] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    failure: str | None = None  # one of FAILURES: the target gave no answer to check
    unchecked: str | None = None  # why an answer was forwarded without a check

    @property
    def violation(self) -> bool:
        """Whether the request itself broke the contract (found by the proxy's check)."""
        return bool(self.request_problems)

    def mask(self) -> tuple[str, ...]:
        """As an entry's, and the target's answer and what the checks quote of it too."""
        credentials = super().mask()
        self.response_body = mask_body(self.response_body, credentials)
        self.request_problems = masked(self.request_problems, "", credentials)
        self.differences = [d.masked(credentials) for d in self.differences]
        return credentials

    @cached_property
    def size(self) -> int:
        found = sum(len(d.field) + len(d.found) + len(d.message) for d in self.differences)
        return super().size + len(self.response_body) + 2 * found

    def to_dict(self) -> ProxiedWire:
        return {
            **super().to_dict(),
            "responseType": self.response_type,
            "responseBody": read_body(self.response_body),
            "requestProblems": self.request_problems,
            "differences": [d.to_dict() for d in self.differences],
            "failure": self.failure,
            "unchecked": self.unchecked,
        }


# -- checking one answer -------------------------------------------------------------------


@cache
def error_codes() -> dict[int, frozenset[int]]:
    """The codes the contract's table gives each error status."""
    found: dict[int, set[int]] = {}
    for cls in errors.error_classes():
        found.setdefault(cls.status, set()).add(cls.code)
    return {status: frozenset(codes) for status, codes in found.items()}


def check(
    operation_id: str, status: int, content_type: str, body: bytes, *, head: bool = False
) -> list[Difference]:
    """How one answer of the target to a request of `operation_id` differs from the
    contract; [] when it is as documented. `head`: the answer to a HEAD, which has no body."""
    responses = contract.definitions()[operation_id]["responses"]
    documented = responses.get(str(status))
    if documented is None:
        listed = ", ".join(sorted(responses))
        return [Difference(STATUS, "", str(status), f"{operation_id} documents {listed}")]
    content = documented.get("content") or {}
    if head or not content:
        return []
    media = media_type(content_type)
    if media not in content:
        shown = media or "none"
        return [Difference(MEDIA_TYPE, "", shown, f"the contract documents {', '.join(content)}")]
    schema = content[media].get("schema") or {}
    try:
        text = body.decode("utf-8")
        value: object  # a stream's events, or JSON: each difference's value is read from it
        if media == "text/event-stream":
            events = stream_events(body)
            found = stream_violations(schema, events, ResponseValidator)
            value = events
        else:
            value = read_json(text)
            found = ruled_violations(compiled(schema, ResponseValidator), value, "response")
    except (UnicodeDecodeError, ValueError) as exc:
        return [Difference(BODY, "", "", _clip(f"is not {media}: {exc}"))]
    differences = [_classified(keyword, detail, value) for keyword, detail in found]
    if status >= 400 and isinstance(value, dict):
        differences += _error_code(status, value)
    return differences


def _classified(keyword: str, detail: Detail, body: object) -> Difference:
    kind = _BY_KEYWORD.get(keyword, VALUE)
    where = str(detail.get("field", ""))
    found = ""
    if kind in (TYPE, ENUM_VALUE):
        value = _at(body, where)
        found = _json_type(value) if kind == TYPE else _clip(_shown(value))
    return Difference(kind, where, found, _clip(str(detail.get("message", ""))))


def _error_code(status: int, body: Mapping[str, object]) -> list[Difference]:
    found = []
    code, status_code = body.get("code"), body.get("statusCode")
    allowed = error_codes().get(status, frozenset())
    known = {str(c) for c in allowed}
    if isinstance(code, int | str) and not isinstance(code, bool) and str(code) not in known:
        said = (
            f"the contract gives {status} the codes {', '.join(map(str, sorted(allowed)))}"
            if allowed
            else f"the contract has no code for {status}"
        )
        found.append(Difference(ERROR_CODE, "code", _clip(str(code)), said))
    if isinstance(status_code, int) and not isinstance(status_code, bool) and status_code != status:
        message = f"is not the status of the response, {status}"
        found.append(Difference(ERROR_CODE, "statusCode", str(status_code), message))
    return found


def _at(value: object, path: str) -> object:
    """The value at a field path (`data[2].status`) of a body; None if there is none."""
    for name, index in _PATH_PART.findall(path):
        if index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        elif name and isinstance(value, dict):
            value = value.get(name)
        elif name.isdigit() and isinstance(value, list) and int(name) < len(value):
            value = value[int(name)]
        else:
            return None
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _shown(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def _clip(text: str, limit: int = MAX_SHOWN_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the report ------------------------------------------------------------------------------


def _example(exchange: ProxiedExchange) -> DriftExample:
    """An exchange as a report shows it: the request and the status answered."""
    query = "&".join(f"{k}={v}" for k, values in exchange.query.items() for v in values)
    target = f"{exchange.path}?{query}" if query else exchange.path
    return {
        "request": _clip(f"{exchange.method} {target}"),
        "status": exchange.status,
    }


@dataclass
class _Group:
    """Answers that showed one difference, or requests that broke one rule, or failed alike."""

    first: DriftExample
    count: int = 0


@dataclass
class _Operation:
    calls: int = 0
    checked: int = 0
    unchecked: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    differences: dict[tuple[str, str, str], _Group] = field(default_factory=dict)
    other_differences: int = 0
    failures: dict[str, _Group] = field(default_factory=dict)
    violations: dict[str, _Group] = field(default_factory=dict)
    violating: int = 0  # requests that broke the contract (each may break several rules)


class DriftReport:
    """Accumulates a proxy's exchanges into a per-operation drift report (thread-safe)."""

    def __init__(self, target: str, operations: dict[str, Operation] | None = None):
        self.target = target
        self._operations = operations if operations is not None else contract.operations()
        self._lock = threading.Lock()
        self._usage = {op: _Operation() for op in self._operations}
        self._uncovered: Counter[str] = Counter()
        self._other_uncovered = 0

    def add(self, exchange: Entry) -> None:
        """Count one exchange (a journal observer: the proxy's journal holds exchanges)."""
        assert isinstance(exchange, ProxiedExchange)
        with self._lock:
            if exchange.operation_id not in self._usage:
                self._not_covered(exchange)
                return
            usage = self._usage[exchange.operation_id]
            usage.calls += 1
            usage.statuses[
                str(exchange.status) if exchange.failure is None else exchange.failure
            ] += 1
            if exchange.failure is not None:
                group = usage.failures.setdefault(
                    exchange.failure,
                    _Group({**_example(exchange), "message": _clip(exchange.message or "")}),
                )
                group.count += 1
            elif exchange.unchecked:
                usage.unchecked += 1
            else:
                usage.checked += 1
            # A request that breaks the contract on purpose (the drift check's own) is no
            # client's doing.
            broke = exchange.violation and not exchange.expected
            usage.violating += broke
            for rule in rule_names(exchange.request_problems) if broke else ():
                example: DriftExample = {
                    **_example(exchange),
                    "problems": exchange.request_problems[:10],
                }
                usage.violations.setdefault(_clip(rule), _Group(example)).count += 1
            self._differences(usage, exchange, exchange.differences)

    def add_differences(self, exchange: ProxiedExchange, differences: list[Difference]) -> None:
        """Count differences found of an exchange already added (by a check that knew more of
        the request than the contract says of every request: `platform-mock drift`'s)."""
        with self._lock:
            usage = self._usage.get(exchange.operation_id or "")
            if usage is not None:
                self._differences(usage, exchange, differences)

    @staticmethod
    def _differences(
        usage: _Operation, exchange: ProxiedExchange, differences: list[Difference]
    ) -> None:
        # Found after the exchange was journaled (and masked) by a check of its own.
        differences = [d.masked() for d in differences]
        for key in dict.fromkeys(d.key for d in differences):  # each once per answer
            difference = next(d for d in differences if d.key == key)
            group = usage.differences.get(key)
            if group is None and len(usage.differences) >= MAX_GROUPS:
                usage.other_differences += 1
                continue
            if group is None:
                example: DriftExample = {**_example(exchange), "field": difference.field}
                group = usage.differences[key] = _Group({**example, "message": difference.message})
            group.count += 1

    def _not_covered(self, exchange: ProxiedExchange) -> None:
        name = _clip(f"{exchange.method} {exchange.path}", 200)
        if name in self._uncovered or len(self._uncovered) < MAX_UNCOVERED:
            self._uncovered[name] += 1
        else:
            self._other_uncovered += 1

    def to_dict(self) -> DriftReportWire:
        with self._lock:
            operations = {op: _operation_dict(usage) for op, usage in self._usage.items()}
            checked = [op for op, usage in self._usage.items() if usage.checked]
            drifting = [op for op, found in operations.items() if found["differences"]]
            failures = Counter(
                {
                    kind: sum(
                        u.failures[kind].count for u in self._usage.values() if kind in u.failures
                    )
                    for kind in FAILURES
                }
            )
            return {
                "target": self.target,
                "summary": {
                    "requests": sum(u.calls for u in self._usage.values())
                    + sum(self._uncovered.values())
                    + self._other_uncovered,
                    "answersChecked": sum(u.checked for u in self._usage.values()),
                    "answersUnchecked": sum(u.unchecked for u in self._usage.values()),
                    "differences": sum(len(found["differences"]) for found in operations.values())
                    + sum(found["otherDifferences"] for found in operations.values()),
                    "operationsDrifting": drifting,
                    "operationsChecked": len(checked),
                    "operationsInContract": len(self._operations),
                    "operationsNotChecked": [op for op in self._operations if op not in checked],
                    "checkedPercent": percent(len(checked), len(self._operations)),
                    "timeouts": failures[TIMEOUT],
                    "tooSlow": failures[TOO_SLOW],
                    "tooLarge": failures[TOO_LARGE],
                    "targetErrors": failures[TARGET_ERROR],
                    "requestViolations": sum(u.violating for u in self._usage.values()),
                    "uncovered": sum(self._uncovered.values()) + self._other_uncovered,
                },
                "operations": operations,
                "uncovered": {
                    "requests": dict(self._uncovered.most_common()),
                    "others": self._other_uncovered,
                },
            }


def _operation_dict(usage: _Operation) -> DriftOperation:
    if usage.differences or usage.other_differences:
        verdict = "drifts"
    else:
        verdict = "agrees" if usage.checked else "not checked"
    groups = sorted(usage.differences.items(), key=lambda item: (-item[1].count, item[0]))
    return {
        "verdict": verdict,
        "calls": usage.calls,
        "answersChecked": usage.checked,
        "answersUnchecked": usage.unchecked,
        "statuses": dict(sorted(usage.statuses.items())),
        "differences": [
            {
                "kind": kind,
                "field": where,
                "found": found,
                "count": group.count,
                "message": group.first["message"],
                "example": _without_message(group.first),
            }
            for (kind, where, found), group in groups
        ],
        "otherDifferences": usage.other_differences,
        "failures": [
            {"kind": kind, "count": group.count, "example": group.first}
            for kind, group in sorted(usage.failures.items())
        ],
        "requestViolations": [
            {"rule": rule, "count": group.count, "example": group.first}
            for rule, group in sorted(usage.violations.items(), key=lambda item: -item[1].count)
        ],
    }


def _without_message(example: DriftExample) -> DriftExample:
    """A difference's example less its message, which the difference says itself."""
    shown = example.copy()
    shown.pop("message", None)
    return shown


def judge(report: DriftReportWire) -> Verdict:
    """The verdict on a drift report (`to_dict()`): PASSED when the target answered and
    every answer checked agreed with the contract. Two checks decide it, `drift` (no
    difference) and `target` (every request answered, and at least one answer checked);
    a failure to answer is never counted as drift. What decided nothing is in the notes."""
    summary = report["summary"]
    differences, drifting = summary["differences"], summary["operationsDrifting"]
    checked = summary["answersChecked"]
    if differences:
        said = (
            f"{differences} difference(s) between the target and the contract in "
            f"{len(drifting)} operation(s): {', '.join(drifting)}"
        )
    else:
        said = f"every answer checked ({checked}) agrees with the contract"
    checks: list[Check] = [{"check": "drift", "passed": not differences, "summary": said}]
    ways = {  # how many requests the target failed to answer, by how
        "timed out": summary["timeouts"],
        "too slow": summary["tooSlow"],
        "too large": summary["tooLarge"],
        "failed": summary["targetErrors"],
    }
    failed = sum(ways.values())
    if failed:
        said = ", ".join(f"{count} {way}" for way, count in ways.items() if count)
        answered = (
            f"the target failed to answer {failed} request(s) ({said}): not drift, and not checked"
        )
    elif not checked:
        answered = "no answer of the target was checked"
    else:
        answered = "the target answered every request"
    checks.append({"check": "target", "passed": not failed and bool(checked), "summary": answered})
    never = summary["operationsNotChecked"]
    notes = [
        f"{summary['operationsChecked']} of {summary['operationsInContract']} operations "
        "checked" + (f" (never: {', '.join(never)})" if never else "")
    ]
    if summary["uncovered"]:
        notes.append(
            f"{summary['uncovered']} request(s) the contract does not cover: forwarded, not judged"
        )
    if summary["requestViolations"]:
        notes.append(
            f"{summary['requestViolations']} request(s) broke the contract themselves (the "
            "client's doing, not drift)"
        )
    if summary["answersUnchecked"]:
        notes.append(
            f"{summary['answersUnchecked']} answer(s) too large to check, forwarded unchecked"
        )
    return {"passed": all(c["passed"] for c in checks), "checks": checks, "notes": notes}


def drifted(verdict: Verdict) -> bool:
    """Whether a verdict found drift (rather than only a target that failed to answer)."""
    return any(c["check"] == "drift" and not c["passed"] for c in verdict["checks"])
