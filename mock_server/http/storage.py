"""The signed URLs of artifact versions' files, served by the mock itself, outside the
contract, as an object store serves them: `PUT` a file (or one part of an upload in parts),
`POST` the completion of an upload in parts (S3's `<CompleteMultipartUpload>`), `GET` or
`HEAD` a file of a finalised version. The rules are the state's (`mock_server.state.storage`);
the URLs are made by `mock_server.handlers.storage`.

An upload's body is streamed: read a chunk at a time, counted against the byte budget as it
arrives (a `Content-Length` over it is refused before a byte of the body is read), and never
held past the budget. A refused upload is answered at once (413) and the rest of its body is
left to the server, which discards it. Nothing holds the event loop: the world's lock is
taken as the handlers take it (`when_free`), and every answer is sent a chunk at a time.
Errors are the platform's body, as everywhere else.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from mock_server.core import errors
from mock_server.handlers.storage import MAX_QUERY, parse_signed
from mock_server.http.wsgi import when_free
from mock_server.state import Store
from mock_server.state.storage import READ, WRITE, Reservation, Signed

logger = logging.getLogger(__name__)
T = TypeVar("T")
CHUNK = 256 * 1024  # bytes of a file sent in one message
COMPLETION_BYTES = 1024 * 1024  # the most an upload's completion (a list of parts) holds
_PART = re.compile(
    rb"<Part>\s*<PartNumber>\s*(\d{1,5})\s*</PartNumber>\s*<ETag>([^<]{0,100})</ETag>\s*</Part>"
)


class ObjectStore:
    """The ASGI app of the signed URLs of one mock's store: its object store."""

    def __init__(self, store_of: Callable[[], Store]):
        self._store_of = store_of

    @property
    def store(self) -> Store:
        return self._store_of()

    async def _locked(self, work: Callable[[], T]) -> T:
        return await when_free(self.store.lock, work)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._serve(scope, receive, send)
        except errors.ClientLeft:
            return
        except errors.PlatformError as error:
            await errors.send_error(send, error)
        except Exception:  # a bug of the mock: answered in the platform's body all the same
            logger.exception("Unexpected error serving %s %s", scope["method"], scope["path"])
            await errors.send_error(send, errors.MockFailure())

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_query = scope.get("query_string", b"")
        if len(raw_query) > MAX_QUERY:
            raise errors.InvalidRequest(
                "The query of a signed URL is longer than any the mock signs"
            )
        query = dict(parse_qsl(raw_query.decode("latin-1")))
        signed = parse_signed(scope["path"], query)
        if signed is None:
            raise errors.RouteNotFound(f"No signed URL at {scope['path'][:200]}")
        storage = self.store.storage
        storage.check(signed)
        method = scope["method"]
        if signed.operation == READ and method in ("GET", "HEAD"):
            data, etag = await self._locked(lambda: storage.read(signed))
            await _send_file(send, data, etag, with_body=method == "GET")
        elif (
            signed.operation == WRITE and method == "PUT" and (signed.part or not signed.upload_id)
        ):
            etag = await self._upload(scope, receive, signed)
            await _answer(send, 200, b"", "application/octet-stream", {"etag": f'"{etag}"'})
        elif (
            signed.operation == WRITE and method == "POST" and signed.upload_id and not signed.part
        ):
            body = await _small_body(receive, COMPLETION_BYTES)
            listed = [(int(n), etag.decode("latin-1")) for n, etag in _PART.findall(body)]
            stored = await self._locked(lambda: storage.complete(signed, listed))
            result = (
                f'<CompleteMultipartUploadResult><Key>{_xml(signed.path)}</Key><ETag>"{stored.md5}"</ETag>'
                "</CompleteMultipartUploadResult>"
            )
            await _answer(send, 200, result.encode(), "application/xml")
        else:
            raise errors.MethodNotAllowed(
                f"A {signed.operation} URL takes "
                + ("GET or HEAD" if signed.operation == READ else "PUT (POST completes parts)")
                + f", not {method}"
            )

    async def _upload(self, scope: Scope, receive: Receive, signed: Signed) -> str:
        """Store an upload's body, streamed within the budget; its MD5, the ETag."""
        storage = self.store.storage
        declared = _content_length(scope)
        reservation: Reservation | None = None
        received = bytearray()
        md5, sha256 = hashlib.md5(), hashlib.sha256()
        try:
            reservation = await self._locked(lambda: storage.reserve(signed, declared or 0))
            held = reservation
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise errors.ClientLeft
                chunk = message.get("body", b"")
                if chunk:
                    # The world may have been reset since the last chunk: an upload of an
                    # earlier world stops here, not once its whole body has been held.
                    storage.check(signed)
                    missing = len(received) + len(chunk) - held.size
                    if missing > 0:
                        await self._locked(
                            lambda more=missing: storage.reserve(signed, more, held)  # type: ignore[misc]
                        )
                    received += chunk
                    held.received = len(received)
                    md5.update(chunk)
                    sha256.update(chunk)
                if not message.get("more_body", False):
                    break
            data = bytes(received)
            received.clear()
            stored = await self._locked(
                lambda: storage.put(held, data, md5.hexdigest(), sha256.hexdigest())
            )
            return stored.md5
        finally:
            received.clear()
            if reservation is not None:
                done = reservation
                await self._locked(lambda: storage.release(done))


def _content_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length")
    if value is None or not value.isascii() or not value.isdigit() or len(value) > 18:
        return None
    return int(value)


async def _small_body(receive: Receive, limit: int) -> bytes:
    """A body of at most `limit` bytes (413 past it, the rest left to the server)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise errors.ClientLeft
        body += message.get("body", b"")
        if len(body) > limit:
            raise errors.PayloadTooLarge(f"The body is over {limit} bytes")
        if not message.get("more_body", False):
            return bytes(body)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    media_type: str,
    headers: dict[str, str] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": _headers(media_type, len(body), headers),
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _send_file(send: Send, data: bytes, etag: str, *, with_body: bool) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": _headers("application/octet-stream", len(data), {"etag": f'"{etag}"'}),
        }
    )
    if not with_body or not data:
        await send({"type": "http.response.body", "body": b""})
        return
    view = memoryview(data)
    for start in range(0, len(data), CHUNK):
        last = start + CHUNK >= len(data)
        await send(
            {
                "type": "http.response.body",
                "body": bytes(view[start : start + CHUNK]),
                "more_body": not last,
            }
        )


def _headers(media_type: str, length: int, extra: dict[str, str] | None) -> list[Any]:
    headers = [
        (b"content-type", media_type.encode()),
        (b"content-length", str(length).encode()),
    ]
    headers += [(name.encode(), value.encode("latin-1")) for name, value in (extra or {}).items()]
    return headers
