"""The live view's event stream, `GET /__admin/events` (spec/admin.yaml): server-sent events.

It sits in the admin API's pipeline after authentication and request validation, and before
response validation, which would hold a stream until its end to check it. A stream waits only
on its own reader: each write is at most `WRITE_BYTES` of events and waits for the reader to
take it, the hub drops what a reader that does not read leaves past its byte budget
(`mock_server.view.live`), and the server's other requests and streams go on. A stream
ends when its reader goes or the server stops (`Hub.close`); a comment every
`KEEPALIVE_SECONDS` keeps proxies from closing it, and finds a reader that went without a
word.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.core import errors
from mock_server.http.scope import operation_id
from mock_server.view.live import MAX_SUBSCRIBERS, Hub, Subscriber, encoded

OPERATION = "adminEvents"
KEEPALIVE_SECONDS = 15.0
HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),  # a reverse proxy passes each event on at once
]


class EventStream:
    """Serves the live view's event stream (operation `adminEvents`); passes on the rest."""

    def __init__(self, app: ASGIApp, hub: Hub):
        self.app = app
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or operation_id(scope) != OPERATION:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "HEAD":
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            await send({"type": "http.response.body", "body": b""})
            return
        subscriber = self.hub.subscribe()
        if subscriber is None:
            raise errors.ServiceUnavailable(
                f"The live view serves at most {MAX_SUBSCRIBERS} event streams at once: "
                "close a page that watches this mock"
            )
        try:
            await self._stream(subscriber, receive, send)
        finally:
            self.hub.unsubscribe(subscriber)

    async def _stream(self, subscriber: Subscriber, receive: Receive, send: Send) -> None:
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
            await _write(send, encoded("hello", {"subscribers": self.hub.subscribers}))
            while not subscriber.closed and not gone.done():
                waiting = asyncio.ensure_future(subscriber.ready.wait())
                done, _ = await asyncio.wait(
                    {waiting, gone}, timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
                waiting.cancel()
                if gone in done or subscriber.closed:
                    break
                subscriber.ready.clear()
                chunk = self.hub.take(subscriber) or b": keep-alive\n\n"
                await _write(send, chunk)
            if not gone.done():
                await send({"type": "http.response.body", "body": b""})
        except OSError:  # the reader went while a write waited
            return
        finally:
            gone.cancel()


async def _write(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _disconnected(receive: Receive) -> None:
    """Returns once the client has gone (the request of a GET has no body to read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
