"""Flask called on the event loop's own thread, in place of Connexion's thread-pool bridge.

Connexion's FlaskApp reaches Flask through a2wsgi, which runs each request on a worker
thread and makes a round trip between threads for each response message: about 40% of the
mock's time per request. The mock's handlers only touch in-memory state under a lock and
never wait on I/O (fault delays happen earlier, in ASGI), so they run inline: one at a time,
each holding the loop only while it runs (well under a millisecond for the
platform operations). The few that may take seconds (`OFF_LOOP`) run on a worker thread, and
so does a request that finds the world's lock held by one of them: it waits for the world
there, never on the event loop, which goes on answering meanwhile.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

import connexion
from a2wsgi.wsgi import build_environ
from starlette.types import Receive, Scope, Send

from mock_server.contract.validation import ONE_BIG_BODY, body_limit
from mock_server.core import errors
from mock_server.http.scope import operation_id

T = TypeVar("T")
WSGIApp = Callable[[Any, Callable[..., Any]], Iterable[bytes]]
# Operations whose handler may take seconds on a big input or a big world (a fixture document
# of up to 64 MiB read, checked and applied; a world of 100,000 runs written out, or rebuilt
# for a seed it was not built for): served on a worker thread, so that the event loop
# answers other requests meanwhile. The world's lock still orders every change.
# Embeddings too: up to 2,048 vectors of thousands of dimensions are computed for one request.
OFF_LOOP = frozenset(
    {"adminLoadFixtures", "adminGetState", "adminReset", "adminGetJournal", "createEmbedding"}
)


class WorldLock(Protocol):
    """The world's reentrant lock, as the server takes it: without waiting."""

    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...


class InlineWSGI:
    """An ASGI app serving a WSGI app synchronously, with the request body read first."""

    def __init__(
        self,
        app: WSGIApp,
        environ_from: Callable[[Scope], dict[str, object]],
        world_lock: WorldLock | None = None,
    ):
        self.app = app
        self.environ_from = environ_from  # what the app is told beyond the WSGI environ
        self.world_lock = world_lock or threading.RLock()  # what handlers wait on

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            body = await _read_body(receive, body_limit(operation_id(scope)))
        except errors.ClientLeft:
            return  # journaled unanswered
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            if exc_info is not None:
                raise exc_info[1].with_traceback(exc_info[2])
            started[:] = [status, headers]
            return written.append

        environ = build_environ(scope, io.BytesIO(body))  # type: ignore[arg-type]
        environ["CONTENT_LENGTH"] = str(len(body))  # what Flask gets, even if none was kept
        environ.update(self.environ_from(scope))  # type: ignore[typeddict-item]

        def respond() -> bytes:
            result = self.app(environ, start_response)
            try:
                return b"".join([*written, *result])
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()

        if operation_id(scope) in OFF_LOOP:
            content = await asyncio.to_thread(_alone, respond)
        else:
            content = await when_free(self.world_lock, respond)
        status, headers = started
        await send(
            {
                "type": "http.response.start",
                "status": int(status.split(" ", 1)[0]),
                "headers": [
                    (name.lower().encode("latin-1"), value.encode("latin-1"))
                    for name, value in headers
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})


async def when_free(lock: WorldLock, work: Callable[[], T]) -> T:
    """`work()`, which takes the world's reentrant `lock`: at once on the event loop when the
    lock is free (held meanwhile, so no long operation slips in between), else on a worker
    thread that waits for it, so that the loop goes on answering while a long operation (a
    load, a re-seed) holds the world."""
    if lock.acquire(blocking=False):
        try:
            return work()
        finally:
            lock.release()
    return await asyncio.to_thread(work)


def _alone(respond: Callable[[], bytes]) -> bytes:
    with ONE_BIG_BODY:  # one big document checked at a time, as one is read at a time
        return respond()


async def _read_body(receive: Receive, limit: int) -> bytes:
    """The request body. Validation has read, and size-checked, the body of every operation
    that takes one; any other body is not the handler's business, so past the size limit it
    is drained, not kept."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise errors.ClientLeft
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks) if size <= limit else b""


def install(
    app: connexion.FlaskApp,
    environ_from: Callable[[Scope], dict[str, object]] = lambda _: {},
    world_lock: WorldLock | None = None,
) -> None:
    """Serve this Connexion FlaskApp's Flask app inline instead of through a2wsgi, with
    `environ_from(scope)` added to each request's WSGI environ; `world_lock`, the reentrant
    lock the handlers take (a request that finds it held waits for it on a worker thread)."""
    app._middleware_app.asgi_app = InlineWSGI(app.app.wsgi_app, environ_from, world_lock)
