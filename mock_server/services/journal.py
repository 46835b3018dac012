"""The request journal: every request the mock received, in order, and helpers to assert on it.

Every request to the platform API is recorded once, including those rejected by routing,
authentication or validation, with its operation, parameters, body, status, error and any
injected fault. Admin API requests are not recorded. The vocabulary follows respx:
`calls`, `call_count`, `last`, `assert_called`.

Every output of the journal reads it (the admin API, the live view and its event stream, the
request log, the contract and drift reports, pytest's report sections), so the one masking
rule (`mock_server.core.masking`) is applied here, and no output can show a credential:

- `record` hides the caller's own credential (its request's, which the entry carries until
  then) wherever it appears in the entry, and forgets it: only the writer knows it, and no
  reader could hide it without the journal keeping it;
- `record` hides every credential of the entry's short texts (path, query, message,
  violations, response headers), which every output reads as they are;
- the request headers, less the caller's credential, are kept as they came (`raw_headers`)
  and shown only through `headers`, which applies the rule when first read: every request
  sends its credential in a header, the rule on the headers cost about a third of the
  journal's work on a request, and most entries' headers are never read (a header set past
  HEADER_BUDGET is masked and cut when recorded, to be kept within it);
- the bodies, kept as they came less the caller's credential, are shown only through
  `shown_body`, `shown_response`, `body` and `response_body`, which apply the rule as they
  are read: most bodies are never read, and the rule costs more than the request on a big
  one (0.5 to 1.2 ms on a 16 KiB answer, measured), while `raw_body` is the client's own
  bytes for a test in the same process.

Memory is bounded in bytes, not entries: an entry keeps the request body as the bytes that
came (up to 64 KiB), every request header (`request_headers`) up to HEADER_BUDGET bytes,
and the response's headers and body alike, read as JSON only when asked, and the journal
drops its oldest entries once their sizes (headers counted) add up past its budget,
counting what it dropped.

For the live view, `page` reads the journal newest first a page at a time, and `find` an
entry by its `seq`: each looks at a bounded number of entries, whatever the journal holds.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, TypedDict

import orjson

from mock_server.contract.documents import as_text
from mock_server.contract.validation import MAX_DEPTH, depth
from mock_server.core import camel, errors, escape, masking
from mock_server.core.choices import JOURNAL_BUDGET_MIB
from mock_server.core.errors import Violation
from mock_server.core.jsonvalue import JsonValue

if TYPE_CHECKING:
    from mock_server.contract.documents import Operation

VIOLATION_CODES = errors.violation_codes()  # the request itself broke the contract
BODY_LIMIT = 64 * 1024  # bytes of a request body kept in the journal
DEFAULT_BUDGET = JOURNAL_BUDGET_MIB * 1024 * 1024  # bytes of entries kept; the oldest go first
SCAN_BUDGET = 4 * 1024 * 1024  # bytes of entries one page of the journal looks at, at most
ENTRY_OVERHEAD = 1024  # bytes an entry costs besides its variable parts (objects, dicts)
# Bytes of names and values of a request's headers an entry keeps. A client's whole header
# set (an SDK's, a browser's, with a tracing header or two) is well under 2 KiB and is kept
# whole; a request may send up to 64 KiB of headers (`MAX_HEADER_BYTES`), which kept whole
# would let one flood of big heads cost the journal 64 times what its requests say. Past
# the budget, a value is cut (saying so) and the headers after it are counted, not kept.
HEADER_BUDGET = 8 * 1024
CUT = "…"  # ends a header's value cut at the budget
_SHOWING = threading.Lock()  # an entry's request headers masked on their first reading
# A request's path and query parameters, one value where one was given (`request_params`).
Params = dict[str, str | list[str]]


class EntryWire(TypedDict):
    """A journal entry as the admin API answers it (`spec/admin.yaml`, `JournalEntry`), in
    this order: `Entry.to_dict` writes it, `Entry.from_dict` reads it back."""

    seq: int
    method: str
    path: str
    query: dict[str, list[str]]
    pathParams: dict[str, str]
    headers: dict[str, str]
    headersDropped: int
    body: JsonValue
    operationId: str | None
    status: int | None
    code: int | None
    message: str | None
    details: list[Violation]
    fault: str | None
    dropped: bool
    test: str | None
    durationMs: float
    violation: bool
    expected: bool


class LatencyWire(TypedDict):
    """The time one operation took to answer, in milliseconds (`Journal.latency`)."""

    count: int
    p50Ms: float
    p90Ms: float
    maxMs: float


class JournalStats(TypedDict, total=False):
    """The journal's budget and what it cost, as the contract report says them (a report
    with no journal of its own, a pytest-xdist controller's, says only what was dropped)."""

    budgetBytes: int
    droppedEntries: int


@dataclass
class Entry:
    """One request and what the mock answered."""

    seq: int
    method: str
    path: str
    query: dict[str, list[str]]
    path_params: dict[str, str]
    # Every request header as it came (`request_headers`), less the caller's credential once
    # recorded: read only through `headers`, which masks them (and empties this) when first
    # read.
    raw_headers: dict[str, str] = field(repr=False, compare=False)
    raw_body: bytes  # as it came, cut at BODY_LIMIT
    operation_id: str | None
    status: int | None  # None when nothing was answered: see `dropped`
    code: int | None = None
    message: str | None = None
    details: list[Violation] = field(default_factory=list)
    fault: str | None = None
    test: str | None = None
    duration_ms: float = 0.0
    expected: bool = False  # sent by a test that breaks the contract on purpose
    # A fault dropped the connection (status None); a request with no status and not dropped
    # went unanswered otherwise: its client left, or the server stopped first.
    dropped: bool = False
    caller: str | None = None  # who the token named, as `type:slug`; None if none did
    started: float = 0.0  # when the request came, in seconds since the epoch
    response_headers: dict[str, str] = field(default_factory=dict)
    raw_response: bytes = b""  # the response body as sent, cut at BODY_LIMIT
    response_bytes: int = 0  # the size of the whole response body
    order: int = 0  # its place in the journal: entries are recorded in this order
    headers_dropped: int = 0  # request headers past HEADER_BUDGET, counted, not kept
    # The caller's own credentials (`masking.credentials_of`), hidden wherever they appear
    # in the entry when it is recorded, and forgotten then.
    credentials: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # The request headers as every output shows them, once `headers` has been read.
    _shown_headers: dict[str, str] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def mask(self) -> tuple[str, ...]:
        """Hide every credential of the entry's short texts (path, query, message,
        violations, response headers) and the caller's own credential wherever it appears,
        then forget that credential: done once, by `Journal.record`, before anything reads
        the entry. The bodies and the request headers are kept as they came, less the
        caller's credential: the rule is applied to them as they are read (`shown_body`,
        `shown_response`, `headers`). Returns the caller's credentials, for a kind of entry
        that holds more."""
        credentials, self.credentials = self.credentials, ()
        self.raw_body = _without(self.raw_body, credentials)
        self.raw_response = _without(self.raw_response, credentials)
        self.raw_headers = _headers_without(self.raw_headers, credentials)
        # A header set the budget could cut is masked and cut now, to be kept within it (and
        # counted in `headers_dropped` from the start): the rule may lengthen a name or a
        # value, to HIDDEN at most.
        raw = self.raw_headers
        most = sum(len(name) + len(value) for name, value in raw.items())
        if most + 2 * len(masking.HIDDEN) * len(raw) > HEADER_BUDGET:
            self._show_headers()
        # One look over them all: most requests hold nothing the rule hides, and a look per
        # field cost as much as the journal's record itself. A path the rule is known to
        # leave as it is stays out of it (`/personal-access-tokens/ci` names a token).
        texts = self._short_texts(with_path=not masking.known_plain(self.path, credentials))
        if not masking.might_hold_any(texts, credentials):
            return credentials

        # Each field is read through the rule only if a word of it calls for the rule.
        def holds(*texts: str) -> bool:
            return masking.might_hold_text("\n".join(texts), credentials)

        if holds(self.path):
            self.path = masking.masked_text(self.path, credentials)
        if holds(*(text for key, values in self.query.items() for text in (key, *values))):
            self.query = masking.masked(self.query, "", credentials)
        if holds(*(text for pair in self.path_params.items() for text in pair)):
            self.path_params = masking.masked(self.path_params, "", credentials)
        if self.message is not None and holds(self.message):
            self.message = masking.masked_text(self.message, credentials)
        if holds(*(f"{key} {value}" for detail in self.details for key, value in detail.items())):
            self.details = masking.masked(self.details, "", credentials)
        if holds(*(text for pair in self.response_headers.items() for text in pair)):
            self.response_headers = masking.headers(self.response_headers, credentials)
        return credentials

    def _short_texts(self, *, with_path: bool) -> list[str]:
        texts = [self.path, self.message or ""] if with_path else [self.message or ""]
        for key, values in self.query.items():
            texts.append(key)
            texts += values
        for pair in self.path_params.items():
            texts += pair
        texts += (f"{key} {value}" for detail in self.details for key, value in detail.items())
        for pair in self.response_headers.items():
            texts += pair
        return texts

    @property
    def headers(self) -> dict[str, str]:
        """Every request header as every output shows them: every credential hidden (the
        caller's own too), then cut at HEADER_BUDGET (`headers_dropped` counts the rest)."""
        shown = self._shown_headers
        return shown if shown is not None else self._show_headers()

    def _show_headers(self) -> dict[str, str]:
        with _SHOWING:  # two readers at once: one masks, the other reads what it masked
            if self._shown_headers is None:
                raw = self.raw_headers
                if masking.might_hold_text("\n".join(t for pair in raw.items() for t in pair)):
                    raw = masking.headers(raw)
                # Cut once masked: a credential cut in half would no longer be known by its
                # shape.
                self._shown_headers, dropped = within_budget(raw, HEADER_BUDGET)
                self.headers_dropped = max(self.headers_dropped, dropped)
                self.raw_headers = {}
            return self._shown_headers

    @property
    def shown_body(self) -> bytes:
        """The request body as every output shows it: every credential hidden (the rule
        applied as it is read; a body holding none is the same bytes)."""
        return mask_body(self.raw_body)

    @property
    def shown_response(self) -> bytes:
        """The response body as every output shows it: every credential hidden, and a value
        the request's body held under a credential's name wherever the answer echoes it."""
        return mask_body(self.raw_response, hidden_in(self.raw_body))

    @property
    def body(self) -> JsonValue:
        """The body as every output shows it (`shown_body`): parsed if it is JSON that can be
        sent back as JSON (orjson refuses lone surrogates and integers past 64 bits), else as
        text; None when there was none."""
        return read_body(self.shown_body)

    @cached_property
    def size(self) -> int:
        """About how many bytes the entry holds, to keep the journal within its budget."""
        text = (
            len(self.path)
            + len(self.message or "")
            + sum(len(k) + sum(len(v) for v in values) for k, values in self.query.items())
        )
        headers = self.raw_headers or self._shown_headers or {}
        text += sum(len(k) + len(v) for k, v in headers.items())
        text += sum(len(k) + len(v) for k, v in self.path_params.items())
        text += sum(64 + sum(len(str(v)) for v in d.values()) for d in self.details)
        text += sum(len(k) + len(v) for k, v in self.response_headers.items())
        return ENTRY_OVERHEAD + len(self.raw_body) + len(self.raw_response) + 2 * text

    @property
    def response_body(self) -> JsonValue:
        """The response body as `body` reads the request's (`shown_response`)."""
        return read_body(self.shown_response)

    @property
    def counted_violation(self) -> bool:
        """Whether it broke the contract and counts against the run for it: not sent on
        purpose by a test that breaks the contract (`expected`)."""
        return self.violation and not self.expected

    @property
    def violation(self) -> bool:
        """Whether this request broke the contract (an error a fault rule injected says
        nothing of the request)."""
        return self.code in VIOLATION_CODES and self.fault is None

    @property
    def params(self) -> Params:
        """Path and query parameters, one value where one was given."""
        return request_params(self.query, self.path_params)

    def describe(self) -> str:
        query = "&".join(f"{k}={v}" for k, values in self.query.items() for v in values)
        target = f"{self.path}?{query}" if query else self.path
        outcome = "dropped" if self.status is None else str(self.status)
        code = f" code {self.code}" if self.code else ""
        # Printed in a failed assertion, on a terminal: nothing a client sent may act on it.
        line = f"#{self.seq} {self.method} {target} -> {outcome}{code} [{self.operation_id}]"
        return escape.text(line)

    @classmethod
    def from_dict(cls, found: EntryWire) -> Entry:
        """An entry as `to_dict` writes it (and the admin API answers it), read back; its
        body as JSON of what was parsed, or the text."""
        body = found.get("body")
        if body is None:
            raw = b""
        elif isinstance(body, str):
            raw = body.encode("utf-8", errors="replace")
        else:
            raw = orjson.dumps(body)
        return camel.from_wire(
            cls,
            found,
            raw_body=raw,
            path_params=found.get("pathParams", {}),
            raw_headers=found.get("headers", {}),
        )

    def to_dict(self) -> EntryWire:
        """The entry as the admin API answers it (`camel.to_wire`, which says why it is the
        one converter of the records' wire forms)."""
        return camel.to_wire(self, EntryWire)


class Journal:
    """The ordered, thread-safe record of one mock's requests."""

    def __init__(
        self, budget: int = DEFAULT_BUDGET, operations: Mapping[str, Operation] | None = None
    ) -> None:
        # With the contract's operations, a query naming an operation or a parameter the
        # contract does not have is a mistake in the test, not a question with answer "none".
        self._operations = operations
        self._lock = threading.Lock()
        self.budget = budget
        self._entries: deque[Entry] = deque()
        self._bytes = 0
        self.dropped = 0  # entries dropped to stay within the budget since the last clear
        self.dropped_total = 0  # the same, over the life of the mock
        self._seq = 0
        self._recorded = 0  # entries recorded since the start: the next one's `order`
        self._by_seq: dict[int, Entry] = {}
        self.label: str | None = None  # e.g. the current test, stamped on requests it starts
        # Whether the requests now starting break the contract on purpose (a negative test).
        self.expecting = False
        self.observers: list[Callable[[Entry], None]] = []
        self.cleared: list[Callable[[], None]] = []  # told when the journal is cleared

    def begin_test(self, name: str, *, expecting: bool = False) -> None:
        """The requests that start from now on are sent by this test; with `expecting`, it
        breaks the contract on purpose."""
        with self._lock:
            self.label, self.expecting = name, expecting

    def end_test(self) -> None:
        """The requests that start from now on are no test's."""
        with self._lock:
            self.label, self.expecting = None, False

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def record(self, entry: Entry) -> None:
        """Keep an entry, every credential in it hidden first (see the module)."""
        entry.mask()
        with self._lock:
            self._recorded += 1
            entry.order = self._recorded
            self._entries.append(entry)
            self._by_seq[entry.seq] = entry
            self._bytes += entry.size
            while self._bytes > self.budget and len(self._entries) > 1:
                gone = self._entries.popleft()
                self._by_seq.pop(gone.seq, None)
                self._bytes -= gone.size
                self.dropped += 1
                self.dropped_total += 1
        for observer in self.observers:
            observer(entry)

    def stats(self) -> JournalStats:
        """The budget and what it cost, for the contract report."""
        with self._lock:
            return {"budgetBytes": self.budget, "droppedEntries": self.dropped_total}

    @property
    def bytes(self) -> int:
        """About how many bytes the kept entries hold (at most `budget`, but for one)."""
        with self._lock:
            return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_seq.clear()
            self._bytes = 0
            self.dropped = 0
        for observer in self.cleared:
            observer()

    def latency(self) -> dict[str, LatencyWire]:
        """The time each operation took to answer, over the entries held: count, p50, p90
        and max in milliseconds (nearest rank); requests no operation took are left out."""
        durations: dict[str, list[float]] = {}
        for entry in self:
            if entry.operation_id is not None and entry.status is not None:
                durations.setdefault(entry.operation_id, []).append(entry.duration_ms)
        return {op: _distribution(sorted(found)) for op, found in sorted(durations.items())}

    def find(self, seq: int) -> Entry | None:
        """The entry of the request numbered `seq`, if the journal still holds it."""
        with self._lock:
            return self._by_seq.get(seq)

    def page(
        self,
        matches: Callable[[Entry], bool],
        *,
        before: int | None = None,
        limit: int = 100,
        budget: int = SCAN_BUDGET,
    ) -> tuple[list[Entry], int | None]:
        """The newest entries that `matches`, recorded before the entry whose `order` is
        `before` (from the newest if None), at most `limit`; and the `order` to pass as
        `before` for the next page (None when no older entry is left). At most `budget`
        bytes of entries are looked at (one at least), so a page costs what it asks, not what
        the journal holds: a page of a rare match may come short, with a next one to ask."""
        with self._lock:
            if not self._entries:
                return [], None
            first = self._entries[0].order
            end = (
                len(self._entries)
                if before is None
                else max(0, min(before - first, len(self._entries)))
            )
            # The references, copied once under the lock (a fraction of a millisecond at
            # 32,000 entries); the entries themselves never change once recorded.
            entries = list(itertools.islice(self._entries, end))
        found: list[Entry] = []
        spent = 0
        index = len(entries) - 1
        while index >= 0 and len(found) < limit and (spent < budget or index == end - 1):
            entry = entries[index]
            spent += entry.size
            if matches(entry):
                found.append(entry)
            index -= 1
        return found, (entries[index + 1].order if index >= 0 else None)

    def __iter__(self) -> Iterator[Entry]:
        with self._lock:
            return iter(list(self._entries))

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def call_count(self) -> int:
        return len(self)

    @property
    def last(self) -> Entry | None:
        with self._lock:
            return self._entries[-1] if self._entries else None

    def calls(
        self, operation_id: str | None = None, *, status: int | None = None, **params: object
    ) -> list[Entry]:
        """The entries of an operation (all if None), with that status and those parameters.
        Raises ValueError for an operation or parameter the contract does not have."""
        self._check_names(operation_id, params)
        return [
            e
            for e in self
            if (operation_id is None or e.operation_id == operation_id)
            and (status is None or e.status == status)
            and all(same_value(e.params.get(k), v) for k, v in params.items())
        ]

    def assert_called(
        self,
        operation_id: str,
        times: int | None = None,
        *,
        status: int | None = None,
        **params: object,
    ) -> list[Entry]:
        """Assert the operation was called (exactly `times` times if given) with the status
        and parameters; on failure, the message lists the requests that came closest."""
        found = self.calls(operation_id, status=status, **params)
        if (times is None and found) or len(found) == times:
            return found
        wanted = f"{operation_id}" + "".join(f" {k}={v!r}" for k, v in params.items())
        if status is not None:
            wanted += f" -> {status}"
        expected = "at least once" if times is None else f"{times} time(s)"
        raise AssertionError(
            f"expected {wanted} {expected}, found {len(found)}.\n"
            + self._closest(operation_id, status, params)
        )

    def _check_names(self, operation_id: str | None, params: dict[str, object]) -> None:
        if self._operations is None or operation_id is None:
            return
        operation = self._operations.get(operation_id)
        if operation is None:
            raise ValueError(
                f"no operation {operation_id!r} in the contract; "
                f"its operations: {', '.join(self._operations)}"
            )
        operation.check_parameters(params)
        operation.check_values(params)

    def assert_not_called(
        self, operation_id: str, *, status: int | None = None, **params: object
    ) -> None:
        self.assert_called(operation_id, 0, status=status, **params)

    def _closest(self, operation_id: str, status: int | None, params: dict[str, object]) -> str:
        def score(entry: Entry) -> tuple[int, int]:
            matched = sum(same_value(entry.params.get(k), v) for k, v in params.items())
            same_status = status is None or entry.status == status
            return (2 * (entry.operation_id == operation_id) + same_status, matched)

        ranked = sorted(self, key=score, reverse=True)[:5]
        if not ranked:
            return "No request was recorded."
        return "Closest requests recorded:\n" + "\n".join(f"  {e.describe()}" for e in ranked)


def _distribution(ordered: list[float]) -> LatencyWire:
    def rank(share: float) -> float:
        return ordered[max(math.ceil(len(ordered) * share) - 1, 0)]

    return {"count": len(ordered), "p50Ms": rank(0.5), "p90Ms": rank(0.9), "maxMs": ordered[-1]}


def request_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """A request's headers as the journal keeps them: every one, by its lower-case name, the
    values of a repeated one joined by `, ` (RFC 9110, 5.3), a repeated `cookie`'s by `; `
    (its own list's separator: RFC 9113, 8.2.3), as the client sent them."""
    found: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        if key in found:
            text = f"{found[key]}{'; ' if key == 'cookie' else ', '}{text}"
        found[key] = text
    return found


def within_budget(headers: dict[str, str], budget: int) -> tuple[dict[str, str], int]:
    """Headers kept in order until their names and values add up to `budget` characters:
    the value that passes it cut (ending in CUT), the headers after it not kept; and how
    many were not kept."""
    kept: dict[str, str] = {}
    left = budget
    for index, (name, value) in enumerate(headers.items()):
        if left <= len(name):
            return kept, len(headers) - index
        left -= len(name)
        kept[name] = value if len(value) <= left else value[: max(left - len(CUT), 0)] + CUT
        left -= len(kept[name])
    return kept, 0


def hidden_in(raw: bytes) -> tuple[str, ...]:
    """The values a JSON body holds under a credential's name (`masking.hidden_values`)."""
    if not raw or not masking.might_hold(raw):
        return ()
    parsed = _json_of(raw)
    if parsed is _NOT_JSON:
        return ()
    return tuple(sorted(masking.hidden_values(parsed), key=len, reverse=True))


_NOT_JSON = object()


def _json_of(raw: bytes) -> object:
    """A body read as the JSON the journal shows as JSON, or _NOT_JSON: not JSON, or nested
    deeper than the contract reads (`MAX_DEPTH`), which is shown as text (the rule's reads of
    a value, and orjson's writing it again, would pass Python's or orjson's limits)."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    return parsed if depth(parsed) <= MAX_DEPTH else _NOT_JSON


def _without(raw: bytes, credentials: tuple[str, ...]) -> bytes:
    """The bytes with each of the caller's credentials hidden: as they are, and in a JSON
    body that writes one with escapes (`\\u0041`, `\\/`), which every output shows read
    (that body is written again, the value it holds unchanged but for the credential)."""
    for credential in credentials:
        found = credential.encode()
        if found in raw:
            raw = raw.replace(found, masking.HIDDEN.encode())
        if len(raw) >= BODY_LIMIT:  # cut at the limit: perhaps in the middle of one
            raw = _without_cut(raw, found)
    if not credentials or b"\\" not in raw:
        return raw
    parsed = _json_of(raw)
    if parsed is _NOT_JSON:  # shown as text, its escapes as they are: each string read apart
        text = raw.decode("utf-8", errors="surrogateescape")
        hidden = masking.without_in_strings(text, credentials)
        return raw if hidden == text else hidden.encode("utf-8", errors="surrogateescape")
    shown = masking.without_in(parsed, credentials)
    return raw if shown == parsed else orjson.dumps(shown)


def _without_cut(raw: bytes, credential: bytes) -> bytes:
    """The bytes with the beginning of `credential` they end with, if any, hidden."""
    start = max(len(raw) - len(credential) + 1, 0)
    while (start := raw.find(credential[:1], start)) >= 0:  # where that beginning may start
        if credential.startswith(raw[start:]):
            return raw[:start] + masking.HIDDEN.encode()
        start += 1
    return raw


def _headers_without(headers: dict[str, str], credentials: tuple[str, ...]) -> dict[str, str]:
    """The headers with each of the caller's credentials hidden in their names and values. A
    header whose name holds one is masked whole now (rare): the rule hides a value by its
    name as it was sent, which hiding the credential in it would change."""
    if not credentials:
        return headers
    shown: dict[str, str] = {}
    # A name is kept lower-cased: so is the credential sought in it.
    lowered = [credential.lower() for credential in credentials]
    for name, value in headers.items():
        if any(credential in name for credential in lowered):
            shown.update(masking.headers({name: value}, (*credentials, *lowered)))
        else:
            shown[name] = masking.without(value, credentials)
    return shown


def mask_body(raw: bytes, credentials: tuple[str, ...] = ()) -> bytes:
    """A body as the journal shows it: every credential in it hidden, as JSON where it is
    JSON (the masked value written again) and as text otherwise (a body cut at its limit, a
    form); the same bytes when it holds none."""
    if not raw:
        return raw
    if not masking.might_hold(raw) and not any(c.encode() in raw for c in credentials):
        return raw
    parsed = _json_of(raw)
    if parsed is _NOT_JSON:
        text = raw.decode("utf-8", errors="replace")
        shown = masking.masked_text(text, credentials)
        return raw if shown == text else shown.encode("utf-8")
    shown = masking.masked(parsed, "", credentials)
    return raw if shown == parsed else orjson.dumps(shown)


def read_body(raw: bytes) -> JsonValue:
    """A request body as the journal shows it: JSON it can send back, else text, or None."""
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed: JsonValue = json.loads(text)
        orjson.dumps(parsed)
    except (ValueError, RecursionError, TypeError):
        return text
    return parsed if depth(parsed) <= MAX_DEPTH else text


def request_params(query: dict[str, list[str]], path_params: dict[str, str]) -> Params:
    """A request's path and query parameters, one value where one was given."""
    single: Params = {k: v[0] if len(v) == 1 else v for k, v in query.items()}
    return {**single, **path_params}


def same_value(actual: object, expected: object) -> bool:
    """Whether a request's parameter value is the expected one (a value or a list of them);
    an absent parameter matches nothing."""
    if isinstance(expected, list | tuple):
        actual_list = actual if isinstance(actual, list) else [actual]
        return [as_text(v) for v in actual_list] == [as_text(v) for v in expected]
    return actual is not None and as_text(actual) == as_text(expected)
