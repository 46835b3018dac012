"""The request log: one line per request, saying what was called, by whom and why it failed.

Each request to the platform's API (the control plane or the gateway) is logged at INFO on
the logger `platform_mock.requests`, once its journal entry is recorded: time, method,
path, status, operationId, duration and caller; for an error its code and each violation,
and the fault rule that answered, if one did. Other requests (the admin API, the docs) are
logged at DEBUG. Nothing is formatted unless a handler would take the record: a mock with
no handler configured (the pytest plugin, `BackgroundServer`) pays one level check per
request. `configure` sets up the handler the command uses, as text (coloured on a
terminal unless `NO_COLOR` is set) or as JSON lines, and none for the null device.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server import escape
from mock_server.http.scope import operation_id, security_context
from mock_server.journal import Entry

LOGGER_NAME = "platform_mock.requests"
logger = logging.getLogger(LOGGER_NAME)
FORMATS = ("text", "json")
UNAUTHENTICATED = "-"


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "status": self.status,
            "operationId": self.operation_id,
            "durationMs": self.duration_ms,
            "caller": self.caller,
            "code": self.code,
            "message": self.message,
            "violations": [
                {"location": location, "field": field, "message": message}
                for location, field, message in self.violations
            ],
            "fault": self.fault,
            "dropped": self.dropped,
        }


def caller_of(scope: Scope) -> str:
    """The authenticated caller as `type:slug` (a user's slug is the e-mail), or `-`."""
    token_info = security_context(scope).get("token_info")
    caller = token_info.get("caller") if isinstance(token_info, dict) else None
    if caller is None:
        return UNAUTHENTICATED
    return f"{caller.subject_type}:{caller.slug}"


def log_entry(entry: Entry, scope: Scope) -> None:
    """Log one request to the platform's API, from its journal entry."""
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
        caller=caller_of(scope),
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


async def logged(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> Any:
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
        _emit(
            logging.DEBUG,
            RequestLine(
                method=scope["method"],
                path=scope["path"],
                query=scope.get("query_string", b"").decode("latin-1"),
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


def render_text(line: RequestLine, *, colour: bool, clock: str = "") -> str:
    """The line as text: the request on one line, then each violation (or, for an error
    without any, its message) on an indented line of its own."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    status = str(line.status) if line.status is not None else _unanswered(line)
    target = _printable(f"{line.path}?{line.query}" if line.query else line.path)
    parts = [paint(_DIM, clock)] if clock else []
    parts += [
        paint(_BOLD, line.method),
        target,
        paint(_status_colour(line.status), status),
        paint(_CYAN, line.operation_id or "-"),
        paint(_DIM, f"{line.duration_ms:.1f}ms"),
        _printable(line.caller),
    ]
    if line.code is not None:
        parts.append(paint(_status_colour(line.status), f"code {line.code}"))
    if line.fault:
        parts.append(paint(_MAGENTA, f"fault {line.fault}"))
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
        fields: dict[str, Any] = {"time": moment.replace("+00:00", "Z")}
        if isinstance(record.msg, RequestLine):
            fields.update(record.msg.to_dict())
        else:
            fields["message"] = record.getMessage()
        return escape.json_text(fields)


def wants_colour(stream: IO[str]) -> bool:
    """ANSI colour only on a terminal, and not when `NO_COLOR` is set (no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


class LoopFlushedHandler(logging.StreamHandler):
    """A stream handler that, on an event loop, flushes once the loop has run what is ready
    rather than after each record: under load one write carries many lines, which spares a
    system call and a wake-up of the reader per request, and at rest a line still leaves
    at the end of its loop turn. Off the loop (and at exit) it flushes at once."""

    def __init__(self, stream: IO[str]):
        super().__init__(stream)
        self._flush_pending = False

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


def discards(stream: IO[str]) -> bool:
    """Whether `stream` is the null device, where a log would cost time and tell no one."""
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):  # not a file (a StringIO), or closed
        return False


def _failed(record: logging.LogRecord) -> bool:
    line = record.msg
    return not isinstance(line, RequestLine) or line.status is None or line.status >= 400


def configure(
    stream: IO[str], log_format: str = "text", *, debug: bool = False, failures_only: bool = False
) -> None:
    """Log requests to `stream`: the platform's at INFO, and with `debug` the others too;
    with `failures_only` (and not `debug`), only those answered 4xx or 5xx, or dropped.
    Nothing is logged when `stream` is the null device (a benchmark's output)."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(FORMATS)}")
    if discards(stream):
        return
    handler = LoopFlushedHandler(stream)
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
