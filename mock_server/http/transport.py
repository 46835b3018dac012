"""httpx transports that call a mock in this process: the client's transport is the mock.

A request goes through every layer a request over TCP goes through (the limits of a request
and the rules of its framing, CORS, the journal, routing, security, both validations, the
faults, the handler), with no socket, no HTTP parsing and no thread hop, and is answered as
over TCP: a header too large, a target too long, Transfer-Encoding beside Content-Length
are refused by the same layer with the same status and code
(`mock_server.http.middleware.RequestLimits`). Like httpx's own connection, the transport
sends no body that its Content-Length misstates (`httpx.LocalProtocolError`, as h11 raises
it): `MockTransport` runs the mock on an event loop of the calling thread (for
`httpx.Client`), `AsyncMockTransport` on the caller's own loop (for `httpx.AsyncClient`). A
delay fault is a real delay; a dropped connection is httpx's `RemoteProtocolError`, as over
TCP. The world, the journal and the faults are the mock's own, whether a request came this way
or over TCP, and both may be used at once.
"""

from __future__ import annotations

import asyncio
import threading
from urllib.parse import unquote

import httpx
from starlette.types import ASGIApp, Message, Scope

# The base URL of clients that reach a mock in process: no server listens there.
IN_PROCESS_URL = "http://platform-mock.in-process"
# What such a request says of its client and server in its scope, as uvicorn would say it.
_CLIENT = ("127.0.0.1", 0)


async def _serve(app: ASGIApp, request: httpx.Request, body: bytes) -> httpx.Response:
    """One request through the mock's ASGI app; the whole response."""
    declared = request.headers.get_list("content-length")
    length = int(declared[0]) if len(declared) == 1 and declared[0].strip().isdigit() else None
    if length is not None and length != len(body):
        what = "little" if length > len(body) else "much"
        raise httpx.LocalProtocolError(
            f"Too {what} data for declared Content-Length", request=request
        )
    raw_path, _, query = request.url.raw_path.partition(b"?")
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.url.scheme,
        # As uvicorn gives them: the path %-decoded (the mock checks the raw one too).
        "path": unquote(raw_path.decode("ascii")),
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.headers.raw],
        "client": _CLIENT,
        "server": (request.url.host, port),
        "state": {},
    }
    answered = asyncio.Event()  # the whole response was sent
    sent_body = False
    started: Message = {}  # the response's start, as the app sent it
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client stays until it has its answer, as over TCP
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    try:
        await app(scope, receive, send)
        complete = answered.is_set()
    finally:
        answered.set()  # a receive still waiting ends
    if not complete:  # a fault dropped the connection, or the mock cut the answer short
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        )
    return httpx.Response(
        started["status"],
        headers=started.get("headers", []),
        content=b"".join(chunks),
        request=request,
    )


class MockTransport(httpx.BaseTransport):
    """An `httpx.Client` transport that serves each request with the mock's ASGI app, on an
    event loop of the calling thread (one per thread, kept)."""

    def __init__(self, app: ASGIApp):
        self.app = app
        self._loops = threading.local()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loop = getattr(self._loops, "loop", None)
            if loop is None:
                loop = self._loops.loop = asyncio.new_event_loop()
            return loop.run_until_complete(_serve(self.app, request, body))
        # Called from a coroutine (a sync client in async code): its loop cannot run another
        # task to the end here, so the request runs on a loop of its own thread.
        found: list[httpx.Response | BaseException] = []
        runner = threading.Thread(target=lambda: found.append(self._in_thread(request, body)))
        runner.start()
        runner.join()
        if isinstance(found[0], BaseException):
            raise found[0]
        return found[0]

    def _in_thread(self, request: httpx.Request, body: bytes) -> httpx.Response | BaseException:
        try:
            return asyncio.run(_serve(self.app, request, body))
        except BaseException as exc:  # handed to the caller's thread
            return exc

    def close(self) -> None:
        loop = getattr(self._loops, "loop", None)
        if loop is not None:
            self._loops.loop = None
            loop.close()


class AsyncMockTransport(httpx.AsyncBaseTransport):
    """An `httpx.AsyncClient` transport that serves each request with the mock's ASGI app,
    on the caller's event loop."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await _serve(self.app, request, await request.aread())
