"""One HTTP connection, as uvicorn's httptools protocol serves it, adapted to the mock.

What uvicorn's parser refuses before the app sees a request (what it cannot frame) is
answered in the platform's error body (400, code 40006); a connection that sends nothing is
closed after uvicorn's keep-alive timeout even before its first request; a request that has
not arrived in full `REQUEST_SECONDS` after its first byte is answered 408.

The limits of a request (its target's length, its headers' size and count) are the
pipeline's, the same for every transport (`mock_server.http.middleware.RequestLimits`): the
connection passes a request on for them to judge, and holds no more of it than they need.
It keeps at most one byte of a request target past `MAX_TARGET_BYTES` (uvicorn's parser
could hold no target past 64 KiB at all), and refuses itself only a head it would have to
hold past `MAX_HEAD_BYTES` to pass on (431, code 43101, or 414, code 41401, for a target
that long): a head that never ends.

Hooks into uvicorn (pinned below its next release in `pyproject.toml`;
`tests/test_connexion_hooks.py` drives a real connection through each): `HttpToolsProtocol`
is subclassed, overriding the parser callbacks `on_message_begin`, `on_url`,
`on_headers_complete`, `on_message_complete` and `send_400_response`, and
`connection_made`, `data_received` and `connection_lost`; it reads `config`, `cycle`
(`response_started`, `response_complete`), `loop`, `transport`, `url`,
`timeout_keep_alive` and `timeout_keep_alive_task` with its handler, to arm the idle timer
on a new connection.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mock_server.core import errors
from mock_server.http.middleware import MAX_HEADER_BYTES, MAX_TARGET_BYTES

REQUEST_SECONDS = 30  # from a request's first byte to its last, head and body
LINGER_SECONDS = 2.0  # a connection refused by itself drops what the client still sends
# Of a request's head the connection holds before its end: well past what the pipeline's
# limits take (a target of MAX_TARGET_BYTES, headers of MAX_HEADER_BYTES), so that every
# head they judge reaches them whole.
MAX_HEAD_BYTES = 4 * (MAX_TARGET_BYTES + MAX_HEADER_BYTES)
_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 414: b"URI Too Long"}
_REASONS[431] = b"Request Header Fields Too Large"


class PlatformHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing in the platform's error body what it refuses
    before the app sees a request, and holding no more of a request's head than the
    pipeline's limits need."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._in_head = True  # between two requests, or in a request's line and headers
        self._dropping = False  # refused by the connection itself: what comes is dropped
        self._head_bytes = 0  # bytes received of the head in progress
        self._request_seconds = getattr(self.config, "request_seconds", REQUEST_SECONDS)
        self._arriving: asyncio.TimerHandle | None = None  # a request's deadline to arrive

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_idle()  # uvicorn waits so only between requests: a new one could sit forever

    def data_received(self, data: bytes) -> None:
        if self._dropping:
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES:
            if not self.transport.is_closing():
                self._head_too_large()
            return
        if self._arriving is None and (self.cycle is None or self.cycle.response_complete):
            self._wait_idle()  # bytes that begin no request (line breaks): still idle

    def connection_lost(self, exc: Exception | None) -> None:
        self._arrived()
        super().connection_lost(exc)

    def _wait_idle(self) -> None:
        if self.timeout_keep_alive_task is None and not self.transport.is_closing():
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def _arrived(self) -> None:
        if self._arriving is not None:
            self._arriving.cancel()
            self._arriving = None

    def _too_slow(self) -> None:
        """A request still arriving at its deadline: answered 408 (unless its response has
        begun), and its connection closed; its handler, if it runs, sees the client gone."""
        self._arriving = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
            self._answer(
                errors.RequestTimeout(
                    f"The request did not arrive in full within {self._request_seconds:g} "
                    "seconds of its first byte"
                )
            )
        self.transport.close()

    def _head_too_large(self) -> None:
        """A head past what the connection holds: refused, and the connection closed."""
        self._arrived()
        error: errors.PlatformError
        if len(self.url) > MAX_TARGET_BYTES:
            error = errors.RequestTargetTooLong(
                f"The request's path and query are longer than {MAX_TARGET_BYTES} bytes"
            )
        else:
            error = errors.HeadersTooLarge(
                f"The request's head did not end within {MAX_HEAD_BYTES} bytes"
            )
        self._answer(error)
        self._close_after_answer()

    def _close_after_answer(self) -> None:
        """Close after an answer of the connection's own: its writing side at once (the
        client reads the answer, then its end), the rest once the client has closed or
        `LINGER_SECONDS` later, dropping what the client still sends meanwhile. Closed with
        bytes of the client's unread, the connection would be reset, and the answer could be
        lost."""
        self._dropping = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _answer(self, error: errors.PlatformError) -> None:
        """Write an error answer of the connection's own (the app has no request to answer),
        which closes it."""
        status, headers, body = errors.error_answer(error, headers=[(b"connection", b"close")])
        head = b"".join(b"%s: %s\r\n" % header for header in headers)
        self.transport.write(b"HTTP/1.1 %d %s\r\n%s\r\n%s" % (status, _REASONS[status], head, body))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arrived()
        self._arriving = self.loop.call_later(self._request_seconds, self._too_slow)

    def on_url(self, url: bytes) -> None:
        # One byte past the limit says the target is past it (`RequestLimits` answers 414).
        room = MAX_TARGET_BYTES + 1 - len(self.url)
        if room > 0:
            super().on_url(url[:room])

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._arrived()
        self._in_head, self._head_bytes = True, 0
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        self._arrived()
        self._answer(errors.UnparsableRequest())
        self._close_after_answer()
