"""The request log: one line per request, saying what was called, by whom and why it failed.

Each request to the platform's API (the control plane or the gateway) is logged at INFO on
the logger `platform_mock.requests`, once its journal entry is recorded, from that entry
(whose credentials the journal has hidden): time, method, path, status, operationId,
duration and caller; for an error its code and each violation, and the fault rule that
answered, if one did. What a client chose is escaped by the one rule (`escape.text`, and
`escape.json_text` for JSON lines). Other requests (the admin API, the docs) are
logged at DEBUG. Nothing is formatted unless a handler would take the record: a mock with
no handler configured (the pytest plugin, `BackgroundServer`) pays one level check per
request. `configure` sets up the handler the command uses, as text (coloured on a
terminal unless `NO_COLOR` is set) or as JSON lines, and none for the null device.

No write waits on the log's reader: a server whose output nobody reads (a pipe a CI step
never drains) must go on serving. The handler writes to an `Outlet`, which writes only what
the reader can take at once, keeps the rest (up to `LOG_BUDGET` bytes), and past that drops
whole lines and counts them: `dropped()` (in `GET /__admin/journal`), and at stop `close()`.
"""

from __future__ import annotations

import asyncio
import errno
import io
import logging
import os
import select
import stat
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TypedDict, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.contract.parameters import query_pairs
from mock_server.core import camel, escape, masking
from mock_server.core.choices import LOG_FORMATS
from mock_server.core.errors import Violation
from mock_server.http.scope import operation_id
from mock_server.services.exchange import exchange
from mock_server.services.journal import Entry, request_headers

LOGGER_NAME = "platform_mock.requests"
logger = logging.getLogger(LOGGER_NAME)
FORMATS = LOG_FORMATS
UNAUTHENTICATED = "-"


class RequestLineWire(TypedDict):
    """A request line as a JSON line of the log writes it, in this order (its `time` first)."""

    method: str
    path: str
    query: str
    status: int | None
    operationId: str | None
    durationMs: float
    caller: str
    code: int | None
    message: str | None
    violations: list[Violation]
    fault: str | None
    dropped: bool


@dataclass(slots=True)  # not frozen: a frozen dataclass is slower to make, once per request
class RequestLine:
    """What one log line says about one request. Its `str` is the plain text line, for any
    handler that is not one of `configure`'s."""

    method: str
    path: str
    query: str
    status: int | None  # None: nothing was answered (see `dropped`)
    operation_id: str | None
    duration_ms: float
    caller: str
    code: int | None = None
    message: str | None = None
    violations: tuple[tuple[str, str, str], ...] = ()  # (location, field, message)
    fault: str | None = None
    dropped: bool = False  # a fault dropped the connection; otherwise the client left first

    def __str__(self) -> str:
        return render_text(self, colour=False)

    def to_dict(self) -> RequestLineWire:
        wire = camel.to_wire(self, RequestLineWire)
        # Kept as tuples, shown as the error body's violations (in their place in the line).
        wire["violations"] = [
            {"location": location, "field": field, "message": message}
            for location, field, message in self.violations
        ]
        return wire


def caller_of(scope: Scope) -> str:
    """The authenticated caller as `type:slug` (a user's slug is the e-mail), or `-`."""
    caller = exchange(scope).caller
    if caller is None:
        return UNAUTHENTICATED
    return f"{caller.subject_type}:{caller.slug}"


def log_entry(entry: Entry) -> None:
    """Log one request to the platform's API, from its journal entry (a reader of the
    journal: `Journal.observers`)."""
    if not logger.isEnabledFor(logging.INFO):
        return
    failed = entry.status is None or entry.status >= 400
    query = "&".join(f"{k}={v}" for k, values in entry.query.items() for v in values)
    line = RequestLine(
        method=entry.method,
        path=entry.path,
        query=query,
        status=entry.status,
        operation_id=entry.operation_id,
        duration_ms=entry.duration_ms,
        caller=entry.caller or UNAUTHENTICATED,
        code=entry.code if failed else None,
        message=entry.message if failed else None,
        violations=tuple(
            (str(d.get("location", "")), str(d.get("field", "")), str(d.get("message", "")))
            for d in entry.details
        )
        if failed
        else (),
        fault=entry.fault,
        dropped=entry.dropped,
    )
    _emit(logging.INFO, line)


def _emit(level: int, line: RequestLine) -> None:
    # As `logger.log`, less its walk up the stack for the caller's file and line, which
    # would name this function every time: a fifth of the log's cost per request.
    logger.handle(logger.makeRecord(LOGGER_NAME, level, __file__, 0, line, (), None))


async def logged(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve a request outside the platform's API (the admin API, the docs) through `app`,
    logging it at DEBUG when that level is on."""
    if scope["type"] != "http" or not logger.isEnabledFor(logging.DEBUG):
        return await app(scope, receive, send)
    status: int | None = None
    started = time.perf_counter()
    # Made here, so that the copies of the scope Connexion makes share it with this one.
    scope.setdefault("extensions", {})

    async def send_(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    try:
        return await app(scope, receive, send_)
    finally:
        # As the journal shows a request: its query read (`%41` as `A`), the caller's own
        # credential hidden too.
        credentials = masking.credentials_of(request_headers(scope["headers"]))
        pairs = query_pairs(scope.get("query_string", b""))
        query = "&".join(f"{key}={value}" for key, value in pairs)
        _emit(
            logging.DEBUG,
            RequestLine(
                method=scope["method"],
                path=masking.masked_text(scope["path"], credentials),
                query=masking.masked_text(query, credentials),
                status=status,
                operation_id=operation_id(scope),
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
                caller=caller_of(scope),
            ),
        )


# ANSI SGR codes: dim, bold, and the colours of success, client error, server error.
_DIM, _BOLD, _RESET = "\x1b[2m", "\x1b[1m", "\x1b[0m"
_GREEN, _YELLOW, _RED, _CYAN, _MAGENTA = (f"\x1b[{n}m" for n in (32, 33, 31, 36, 35))


def _status_colour(status: int | None) -> str:
    if status is None or status >= 500:
        return _RED
    return _YELLOW if status >= 400 else _GREEN


def _printable(text: str) -> str:
    # A client's text (a query value, a field name it made up) printed as it came could forge
    # a log line with a line feed or drive the terminal with an escape.
    return escape.text(text)


def _unanswered(line: RequestLine) -> str:
    # Not "dropped" unless a fault dropped it: a client that left (mid-body, or during a
    # delay) or a stop that cut the request short is no fault's doing.
    return "dropped" if line.dropped else "unanswered"


def fault_label(source: str) -> str:
    """What a line answered by a fault says of it: armed on purpose, by a rule of the admin
    API (or the plugin), or asked for by the request's own `Prefer` header."""
    if source == "prefer":
        return "(fault asked by its Prefer header)"
    return f"(armed fault {_printable(source)})"


def render_text(line: RequestLine, *, colour: bool, clock: str = "") -> str:
    """The line as text: the request on one line, then each violation (or, for an error
    without any, its message) on an indented line of its own."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    status = str(line.status) if line.status is not None else _unanswered(line)
    target = _printable(f"{line.path}?{line.query}" if line.query else line.path)
    # A fault answered as it was asked to: its status is no failure of the mock's, and is
    # not painted as one.
    answered = _MAGENTA if line.fault else _status_colour(line.status)
    parts = [paint(_DIM, clock)] if clock else []
    parts += [
        paint(_BOLD, _printable(line.method)),
        target,
        paint(answered, status),
        paint(_CYAN, line.operation_id or "-"),
        paint(_DIM, f"{line.duration_ms:.1f}ms"),
        _printable(line.caller),
    ]
    if line.code is not None:
        parts.append(paint(answered, f"code {line.code}"))
    if line.fault:
        parts.append(paint(_MAGENTA, fault_label(line.fault)))
    text = " ".join(parts)
    for location, field, message in line.violations:
        name = f"{location} {field}" if field else location
        text += f"\n    {_printable(name)}: {_printable(message)}"
    if line.message and not line.violations:
        text += f"\n    {_printable(line.message)}"
    return text


class TextFormatter(logging.Formatter):
    """Request lines as text, with the local time of day; other records as their message."""

    def __init__(self, colour: bool):
        super().__init__()
        self.colour = colour
        self._second = -1
        self._hms = ""

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        if second != self._second:  # the time of day changes once a second, not per request
            self._second, self._hms = second, time.strftime("%H:%M:%S", time.localtime(second))
        clock = f"{self._hms}.{int(record.msecs):03d}"
        if isinstance(record.msg, RequestLine):
            return render_text(record.msg, colour=self.colour, clock=clock)
        return f"{clock} {record.getMessage()}"


class JSONFormatter(logging.Formatter):
    """One JSON object per line, its `time` in UTC (ISO 8601, milliseconds)."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        fields: dict[str, object] = {"time": moment.replace("+00:00", "Z")}
        if isinstance(record.msg, RequestLine):
            fields.update(record.msg.to_dict())
        else:
            fields["message"] = record.getMessage()
        return escape.json_text(fields)


def wants_colour(stream: IO[str]) -> bool:
    """ANSI colour only on a terminal, and not when `NO_COLOR` is set (no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


LOG_BUDGET = 1024 * 1024  # bytes of lines an Outlet keeps while its reader lags
DRAIN_SECONDS = 2.0  # at stop, how long the reader may take nothing before lines are dropped
DRAIN_LIMIT_SECONDS = 30.0  # and how long, at most, a reader that takes little is waited for
RETRY_SECONDS = 0.05  # how often a loop tries again to write what the reader did not take
# Bytes written at once to a pipe, terminal or socket the reader may leave full: at most
# PIPE_BUF, which a pipe found writable takes whole, without blocking.
_CHUNK = select.PIPE_BUF


class Outlet(io.TextIOBase):
    """A text stream over a file descriptor whose writer never waits on the reader.

    `flush` writes what the reader takes at once (a regular file takes everything; a pipe, a
    terminal or a socket as much as `select` says it can take) and keeps the rest, up to
    `budget` bytes; past that, a write is dropped whole and its lines counted (`dropped`).
    The descriptor itself is left blocking: it is shared with other processes (the command
    `run` starts writes to the same stderr), which a non-blocking flag would break."""

    def __init__(self, stream: IO[str], budget: int = LOG_BUDGET):
        super().__init__()
        self.stream = stream
        self.fd = stream.fileno()
        self.budget = budget
        self._encoding = getattr(stream, "encoding", None) or "utf-8"
        self._always_ready = stat.S_ISREG(os.fstat(self.fd).st_mode)
        self._pending = bytearray()
        self._lock = threading.Lock()  # a server's thread and the main one both write
        self.dropped = 0  # lines dropped because the reader did not keep up
        self._broken = False  # the reader has gone (EPIPE): everything written is dropped

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    @property
    def pending(self) -> int:
        """Bytes written and not yet taken by the reader."""
        return len(self._pending)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.fd

    def write(self, text: str) -> int:
        data = text.encode(self._encoding, "backslashreplace")
        with self._lock:
            if self._broken or len(self._pending) + len(data) > self.budget:
                self.dropped += text.count("\n") or 1
            else:
                self._pending += data
        return len(text)

    def flush(self) -> None:
        """Write what the reader takes now; never wait for it."""
        with self._lock:
            self._write(0.0)

    def drain(self, timeout: float, limit: float = DRAIN_LIMIT_SECONDS) -> None:
        """Write what is kept while the reader takes some every `timeout` seconds (for
        `limit` seconds at most); drop what it leaves."""
        give_up = time.monotonic() + limit
        with self._lock:
            while self._pending and time.monotonic() < give_up:
                before = len(self._pending)
                self._write(timeout)
                if len(self._pending) == before:  # nothing taken for `timeout` seconds
                    break
            if self._pending:
                self.dropped += self._pending.count(b"\n") or 1
                self._pending.clear()

    def _write(self, wait: float) -> bool:
        """Write what the reader takes, waiting up to `wait` seconds for it to take some;
        whether everything kept is written. The caller holds the lock."""
        while self._pending:
            if not self._always_ready:
                _, ready, _ = select.select([], [self.fd], [], wait)
                if not ready:
                    return False
            try:
                written = os.write(self.fd, self._pending[:_CHUNK])
            except BlockingIOError:
                return False
            except OSError as exc:  # the reader has gone, or the stream cannot be written
                self._broken = exc.errno in (errno.EPIPE, errno.EBADF, errno.EIO)
                self.dropped += self._pending.count(b"\n") or 1
                self._pending.clear()
                return True
            del self._pending[:written]
        return True


class LoopFlushedHandler(logging.StreamHandler[IO[str]]):
    """A stream handler that, on an event loop, flushes once the loop has run what is ready
    rather than after each record: under load one write carries many lines, which spares a
    system call and a wake-up of the reader per request, and at rest a line still leaves
    at the end of its loop turn. Off the loop (and at exit) it flushes at once. On an
    `Outlet` whose reader lags, it tries again every `RETRY_SECONDS` while lines wait."""

    def __init__(self, stream: IO[str]):
        super().__init__(stream)
        self._flush_pending = False
        self._retry: asyncio.TimerHandle | None = None

    def flush(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            super().flush()
            return
        if not self._flush_pending:
            self._flush_pending = True
            loop.call_soon(self._flush_now)

    def _flush_now(self) -> None:
        self._flush_pending = False
        super().flush()
        stream = self.stream
        if isinstance(stream, Outlet) and stream.pending and self._retry is None:
            self._retry = asyncio.get_running_loop().call_later(RETRY_SECONDS, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        self._flush_now()


def discards(stream: IO[str]) -> bool:
    """Whether `stream` is the null device, where a log would cost time and tell no one."""
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):  # not a file (a StringIO), or closed
        return False


def _failed(record: logging.LogRecord) -> bool:
    line = record.msg
    return not isinstance(line, RequestLine) or line.status is None or line.status >= 400


_outlets: list[Outlet] = []  # those `configure` made, for `dropped` and `close`


def configure(
    stream: IO[str], log_format: str = "text", *, debug: bool = False, failures_only: bool = False
) -> Outlet | None:
    """Log requests to `stream`: the platform's at INFO, and with `debug` the others too;
    with `failures_only` (and not `debug`), only those answered 4xx or 5xx, or dropped.
    Nothing is logged when `stream` is the null device (a benchmark's output). A stream
    over a file descriptor is written through an `Outlet`, which is returned: the command
    writes its own lines to it too, so that no write of the process waits on the reader."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(FORMATS)}")
    if discards(stream):
        return None
    found = outlet(stream)
    handler = LoopFlushedHandler(stream if found is None else cast(IO[str], found))
    handler.setFormatter(
        JSONFormatter() if log_format == "json" else TextFormatter(wants_colour(stream))
    )
    if failures_only and not debug:
        handler.addFilter(_failed)
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    logger.propagate = False
    return found


def outlet(stream: IO[str]) -> Outlet | None:
    """`stream` as an Outlet (itself, if it is one), counted in `dropped` and drained by
    `close`; None for a stream that is no file descriptor (a StringIO)."""
    if isinstance(stream, Outlet):
        return stream
    try:
        stream.flush()  # what was printed before goes first
        made = Outlet(stream)
    except (OSError, ValueError, AttributeError):
        return None
    _outlets.append(made)
    return made


def dropped() -> int:
    """Lines the request log dropped because its reader did not keep up."""
    return sum(outlet.dropped for outlet in _outlets)


def close(timeout: float = DRAIN_SECONDS) -> int:
    """Stop logging, and write what is kept while the reader takes some (every `timeout`
    seconds; see `Outlet.drain`), dropping the rest; the lines dropped in all."""
    for old in list(logger.handlers):
        logger.removeHandler(old)
    for kept in _outlets:
        kept.drain(timeout)
    return dropped()
