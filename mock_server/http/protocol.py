"""One HTTP connection, as uvicorn's httptools protocol serves it, adapted to the mock.

What uvicorn's parser refuses before the app sees a request (unparsable, or headers over
`MAX_HEADER_BYTES`) is answered in the platform's error body; a connection that sends
nothing is closed after uvicorn's keep-alive timeout even before its first request; a
request that has not arrived in full `REQUEST_SECONDS` after its first byte is answered 408.

Hooks into uvicorn (pinned below its next release in `pyproject.toml`;
`tests/test_connexion_hooks.py` drives a real connection through each): `HttpToolsProtocol`
is subclassed, overriding the parser callbacks `on_message_begin`, `on_header`,
`on_message_complete` and `send_400_response`, and `connection_made`, `data_received` and
`connection_lost`; it reads `config`, `cycle` (`response_started`, `response_complete`),
`loop`, `transport`, `timeout_keep_alive` and `timeout_keep_alive_task` with its handler, to
arm the idle timer on a new connection.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mock_server.core import errors

MAX_HEADER_BYTES = 64 * 1024
REQUEST_SECONDS = 30  # from a request's first byte to its last, head and body


class PlatformHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing in the platform's error body what it refuses
    before the app sees a request, and capping the size of request headers."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._header_bytes = 0
        self._headers_too_large = False
        self._request_seconds = getattr(self.config, "request_seconds", REQUEST_SECONDS)
        self._arriving: asyncio.TimerHandle | None = None  # a request's deadline to arrive

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_idle()  # uvicorn waits so only between requests: a new one could sit forever

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
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
            error = errors.RequestTimeout(
                f"The request did not arrive in full within {self._request_seconds:g} seconds "
                "of its first byte"
            )
            body = orjson.dumps(error.body())
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._arrived()
        self._arriving = self.loop.call_later(self._request_seconds, self._too_slow)

    def on_message_complete(self) -> None:
        self._arrived()
        super().on_message_complete()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value)
        if self._header_bytes > MAX_HEADER_BYTES:
            self._headers_too_large = True
            raise ValueError("request headers too large")  # the parser turns it into a 400
        super().on_header(name, value)

    def send_400_response(self, msg: str) -> None:
        self._arrived()
        error: errors.PlatformError = (
            errors.HeadersTooLarge() if self._headers_too_large else errors.UnparsableRequest()
        )
        body = orjson.dumps(error.body())
        reason = b"Request Header Fields Too Large" if error.status == 431 else b"Bad Request"
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (error.status, reason, len(body), body)
        )
        self.transport.close()
