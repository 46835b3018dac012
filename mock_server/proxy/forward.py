"""The validating proxy: a client's requests forwarded to a target platform, both directions
checked against the contract, for the drift report and the recording of a world.

`Proxy` is an ASGI app. A request for an operation of the contract (routed by the contract's
router, `mock_server.contract.routing`, the one the mock routes by) is checked
as the mock checks it (its parameters by the mock's own parameter validator, its JSON body
by the contract's reader of request bodies, the bearer token it must carry), forwarded with
the caller's own headers, credentials included, and the target's answer is checked
(`mock_server.reports.drift.check`) and passed back as it came. Each exchange is journaled (an
`ProxiedExchange` in the mock's `Journal`), counted in the drift report and, with a `Recorder`,
recorded. A request the contract does not cover is forwarded and listed, not judged. A
target that does not answer in time, or at all, is answered 504 (code 50401) or 502 (code
50201) in the platform's error body, counted as such and never as drift.

Credentials are forwarded and forgotten: the journal keeps a request's headers as the mock
keeps them (`mock_server.services.journal.request_headers`, bounded in bytes), and every
header, body and message it keeps is masked (`mock_server.core.masking`, the caller's own
credential included), and the
recorder is given the token's claims (who the caller is, of which tenant), read without
checking the signature as the platform's own clients read them, and the credential only to
hide it.

Bounded: a request body over MAX_REQUEST_BODY is refused (413) without being forwarded; an
answer over MAX_CHECKED_BODY (or whose body holds more than MAX_CHECKED_VALUES JSON
values) is passed on as it streams, unchecked, or, for a proxy that
does not stream such answers (`platform-mock drift`'s, whose own client would hold the
answer whole), not read further and answered 502 (code 50202), counted as the target's
answer too large; each answer has one deadline, `timeout` seconds from the request sent to
its last byte (not a deadline per read, which a target sending a byte at a time would never
meet): past it, the target gave no answer (504, code 50401, a timeout) or an answer too
slow (the same 504, counted apart). The journal keeps to its byte budget and the report to
its groups.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import jwt
import orjson
import uvicorn
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from mock_server.contract import documents as contract
from mock_server.contract.documents import Operation
from mock_server.contract.parameters import ParameterCheck, by_key, query_pairs
from mock_server.contract.routing import Router
from mock_server.contract.validation import Detail, read_json, read_request_body
from mock_server.core import errors, masking
from mock_server.core.choices import PROXY_TIMEOUT_SECONDS
from mock_server.core.masking import masked, masked_text
from mock_server.core.media import is_json, media_type
from mock_server.http.server import Threaded
from mock_server.proxy.recording import Recorder, TokenClaims
from mock_server.reports.drift import (
    TARGET_ERROR,
    TIMEOUT,
    TOO_LARGE,
    TOO_SLOW,
    DriftReport,
    ProxiedExchange,
    check,
)
from mock_server.services.journal import BODY_LIMIT, DEFAULT_BUDGET, Journal, request_headers

MAX_REQUEST_BODY = 8 * 1024 * 1024  # bytes of a request body the proxy forwards
MAX_CHECKED_BODY = 16 * 1024 * 1024  # bytes of an answer checked; past it, streamed unchecked
# JSON values of an answer checked (a page of 100 runs holds about 3,000): past it, as past
# MAX_CHECKED_BODY. Read, each value is tens of bytes, and 16 MiB of `{},` was 900 MB.
MAX_CHECKED_VALUES = 200_000
# Seconds an answer may take, from the request sent to its last byte.
DEFAULT_TIMEOUT = PROXY_TIMEOUT_SECONDS
# The proxy's own answers when the target gives none (not conditions of the platform).
TARGET_UNREACHABLE = (502, 50201)
TARGET_TOO_LARGE = (502, 50202)
TARGET_TIMED_OUT = (504, 50401)
REQUEST_TOO_LARGE = (413, 41301)
UNFORWARDABLE = (400, 40001)
# Headers that belong to one connection, not to the request or the answer (RFC 9110 7.6.1),
# and those the proxy sets itself: the target's host, and the length of what it sends.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# httpx asks for the encodings it can decode, and hands the answer's body on decoded: the
# client's Accept-Encoding is not passed on, nor the answer's encoding and length back.
_NOT_FORWARDED = _HOP_BY_HOP | {"accept-encoding"}
_NOT_PASSED_BACK = _HOP_BY_HOP | {"content-encoding"}


class RequestCheck:
    """The contract's check of one operation's requests, from the contract's parts the mock
    checks its own with: the parameter check (`contract.parameters`: unknown or repeated
    query keys, the contract's number grammar, enums, ranges), the reader of request bodies
    (`contract.validation.read_request_body`), and the bearer token the operation needs."""

    def __init__(self, operation: Operation):
        definition = contract.definitions()[operation.operation_id]
        parameters = definition.get("parameters", [])
        body = definition.get("requestBody") or {}
        self.operation = operation
        self.parameters = ParameterCheck(parameters)
        self.body_required = bool(body.get("required"))
        self.body_schema = (body.get("content") or {}).get("application/json", {}).get("schema")

    def problems(self, scope: Scope, path_params: dict[str, str], raw: bytes) -> list[Detail]:
        """Every way the request breaks the contract; [] when it keeps it."""
        found: list[Detail] = []
        headers = Headers(scope=scope)
        if self.operation.token and not headers.get("authorization", "").strip():
            found.append({"location": "auth", "field": "", "message": "no bearer token"})
        try:
            pairs = query_pairs(scope.get("query_string", b""))
            self.parameters.parse(pairs, path_params, headers)
        except errors.InvalidRequest as exc:
            found += exc.details
        if self.body_schema is not None and scope["method"] != "HEAD":
            found += self._body_problems(headers, raw)
        return found

    def _body_problems(self, headers: Headers, raw: bytes) -> list[Detail]:
        media = media_type(headers.get("content-type", ""))
        if raw and not is_json(media):
            said = f"is {media or 'missing'}; the operation takes application/json"
            return [{"location": "header", "field": "content-type", "message": said}]
        try:  # the contract's one reader of request bodies, the mock's too
            read_request_body(raw, self.body_schema, required=self.body_required)
        except errors.InvalidRequest as exc:
            return exc.details
        return []


def caller_of(authorization: str | None) -> TokenClaims | None:
    """Who a bearer token names, from its claims read without checking the signature (as
    the platform's own clients read them); None for no token or an opaque one."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    try:
        claims = jwt.decode(token.strip(), options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return None
    subject_type = str(claims.get("subjectType") or "user")
    name = claims.get("email") if subject_type == "user" else None
    name = name or claims.get("username") or claims.get("subjectSlug")
    subject_id = claims.get("sub")
    if not isinstance(name, str) or not isinstance(subject_id, str):
        return None
    tenant = claims.get("tenantName")
    return TokenClaims(subject_type, subject_id, name, tenant if isinstance(tenant, str) else None)


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body, or None when it is over MAX_REQUEST_BODY (the rest unread)."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BODY:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


class Proxy:
    """The validating proxy, as an ASGI app: see the module. `target` is the platform's base
    URL (the control plane under `/api/svc/v1`); `gateway` its gateway's (default: the
    target's, under the gateway prefix). `timeout` is each answer's whole deadline;
    `stream_large` whether an answer over MAX_CHECKED_BODY is passed on as it streams,
    unchecked (else it is refused as too large)."""

    def __init__(
        self,
        target: str,
        *,
        gateway: str | None = None,
        gateway_prefix: str = "/gateway",
        timeout: float = DEFAULT_TIMEOUT,
        recorder: Recorder | None = None,
        journal_budget: int = DEFAULT_BUDGET,
        stream_large: bool = True,
    ):
        self.target = target.rstrip("/")
        self.stream_large = stream_large
        self.router = Router(gateway_prefix)
        self.gateway = (gateway or self.target + self.router.gateway_prefix).rstrip("/")
        self.timeout = timeout
        self.recorder = recorder
        self.journal = Journal(journal_budget, operations=contract.operations())
        self.report = DriftReport(self.target)
        self.journal.observers.append(self.report.add)
        self.log: Callable[[ProxiedExchange], None] | None = None  # told of each exchange
        self._checks = {op: RequestCheck(o) for op, o in contract.operations().items()}
        self._client: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        """Close the connections to the target (a lifespan's shutdown does it too)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        # Made on first use, in the event loop that serves: an httpx client belongs to one.
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout), follow_redirects=False
            )
        return self._client

    def _url(self, scope: Scope) -> str:
        # The path as the client wrote it (a `%2F` stays one), unless its escapes hide the
        # gateway's prefix: then as the router read it.
        path = (scope.get("raw_path") or b"").decode("latin-1")
        prefix = self.router.gateway_prefix
        gateway = self.router.is_gateway(scope["path"])
        if not path or (gateway and not path.startswith(prefix)):
            path = quote(scope["path"])
        base = self.target
        if gateway:
            base, path = self.gateway, path[len(prefix) :]
        query = scope.get("query_string", b"").decode("latin-1")
        return f"{base}{path}" + (f"?{query}" if query else "")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        matched = self.router.match(scope["method"], scope["path"])
        operation, path_params = matched if matched else (None, {})
        raw = await _read_body(receive)
        exchange = self._exchange(scope, operation, path_params, raw or b"")
        if raw is None:
            status, code = REQUEST_TOO_LARGE
            message = f"Request body is over the proxy's limit of {MAX_REQUEST_BODY} bytes"
            exchange.request_problems = [{"location": "body", "field": "", "message": message}]
            await self._answer(send, *errors.other_error_answer(status, code, message))
            self._record(exchange, status, started)
            return
        if operation is not None:
            exchange.request_problems = self._checks[operation.operation_id].problems(
                scope, path_params, raw
            )
        await self._forward(scope, raw, exchange, send, started)

    async def _forward(
        self, scope: Scope, raw: bytes, exchange: ProxiedExchange, send: Send, started: float
    ) -> None:
        headers = [
            (k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in _NOT_FORWARDED
        ]
        client = self._http()
        try:
            request = client.build_request(
                scope["method"], self._url(scope), headers=headers, content=raw
            )
        except (httpx.InvalidURL, ValueError) as exc:  # a path or header no URL can carry
            status, code = UNFORWARDABLE
            message = f"The request cannot be forwarded: {exc}"
            exchange.request_problems.append({"location": "path", "field": "", "message": message})
            await self._answer(send, *errors.other_error_answer(status, code, masked_text(message)))
            self._record(exchange, status, started)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout
        response: httpx.Response | None = None
        streaming = False  # the client has the answer's head: no error answer can follow
        try:
            async with asyncio.timeout_at(deadline):
                response = await client.send(request, stream=True)
                body, rest = await _first(response)
            over = _over_the_cap(body, rest)
            if over is None:
                await self._checked(scope, raw, exchange, response, body, send)
            elif not self.stream_large:
                del body, rest  # not read further, nor kept
                exchange.failure = TOO_LARGE
                message = f"The target's answer is {over}: not read further, and not checked"
                await self._failed(exchange, send, started, TARGET_TOO_LARGE, message, False)
                return
            else:
                exchange.unchecked = f"the answer is {over}"
                streaming = True
                async with asyncio.timeout_at(deadline):
                    await self._streamed(response, body, rest, send)
            self._record(exchange, response.status_code, started)
        except (TimeoutError, httpx.TimeoutException):
            if response is None:
                exchange.failure = TIMEOUT
                message = f"The target gave no answer within {self.timeout:g} s"
            else:
                exchange.failure = TOO_SLOW
                message = f"The target's answer did not arrive in full within {self.timeout:g} s"
            await self._failed(exchange, send, started, TARGET_TIMED_OUT, message, streaming)
        except httpx.HTTPError as exc:
            exchange.failure = TARGET_ERROR
            message = f"The target did not answer: {type(exc).__name__}: {exc}"
            await self._failed(exchange, send, started, TARGET_UNREACHABLE, message, streaming)
        finally:
            if response is not None:
                await response.aclose()

    async def _failed(
        self,
        exchange: ProxiedExchange,
        send: Send,
        started: float,
        answer: tuple[int, int],
        message: str,
        answered: bool,
    ) -> None:
        exchange.message = masked_text(message)
        if not answered:
            await self._answer(send, *errors.other_error_answer(*answer, exchange.message))
        self._record(exchange, None, started)

    async def _checked(
        self,
        scope: Scope,
        raw: bytes,
        exchange: ProxiedExchange,
        response: httpx.Response,
        body: bytes,
        send: Send,
    ) -> None:
        head = scope["method"] == "HEAD"
        content_type = response.headers.get("content-type", "")
        operation_id = exchange.operation_id
        if operation_id is not None:
            exchange.differences = check(
                operation_id, response.status_code, content_type, body, head=head
            )
        answer = _parsed(content_type, body)
        exchange.response_type = media_type(content_type)
        exchange.response_body = _kept(answer, body)
        if isinstance(answer, dict) and response.status_code >= 400:
            code = answer.get("code")
            exchange.code = code if isinstance(code, int) and not isinstance(code, bool) else None
            message = answer.get("message")
            exchange.message = masked_text(message) if isinstance(message, str) else None
            details = answer.get("details")
            exchange.details = masked(details[:10]) if isinstance(details, list) else []
        if self.recorder is not None and operation_id is not None and not exchange.violation:
            sent = Headers(scope=scope)
            self.recorder.observe(
                operation_id,
                path_params=exchange.path_params,
                query=exchange.query,
                body=_parsed(sent.get("content-type", ""), raw),
                status=response.status_code,
                answer=answer,
                caller=caller_of(sent.get("authorization")),
                credentials=exchange.credentials,  # forgotten only once it is recorded
            )
        headers = _passed_back(response)
        # A HEAD's length is its GET's, as the target said it.
        length = response.headers.get("content-length", "0") if head else str(len(body))
        headers.append((b"content-length", length.encode("latin-1")))
        await self._answer(send, response.status_code, headers, b"" if head else body)

    async def _streamed(self, response: httpx.Response, head: bytes, rest: Any, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": _passed_back(response),
            }
        )
        await send({"type": "http.response.body", "body": head, "more_body": True})
        if rest is not None:
            async for chunk in rest:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _answer(send: Send, status: int, headers: list[Any], body: bytes) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _exchange(
        self, scope: Scope, operation: Operation | None, path_params: dict[str, str], raw: bytes
    ) -> ProxiedExchange:
        sent = request_headers(scope["headers"])  # as the mock's journal reads them
        query = by_key(query_pairs(scope.get("query_string", b"")))
        return ProxiedExchange(
            seq=self.journal.next_seq(),
            method=scope["method"],
            path=scope["path"],
            query=query,
            path_params=path_params,
            raw_headers=sent,
            raw_body=_kept(_parsed(Headers(scope=scope).get("content-type", ""), raw), raw),
            operation_id=operation.operation_id if operation else None,
            status=None,
            test=self.journal.label,
            expected=self.journal.expecting,
            credentials=masking.credentials_of(sent),
        )

    def _record(self, exchange: ProxiedExchange, status: int | None, started: float) -> None:
        exchange.status = status
        exchange.duration_ms = round((time.perf_counter() - started) * 1000, 3)
        self.journal.record(exchange)
        if self.log is not None:
            self.log(exchange)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _first(response: httpx.Response) -> tuple[bytes, Any]:
    """The answer's body, whole (and None), or its first MAX_CHECKED_BODY bytes and the
    iterator of the rest."""
    chunks, size = [], 0
    rest = response.aiter_bytes()
    async for chunk in rest:
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_CHECKED_BODY:
            return b"".join(chunks), rest
    return b"".join(chunks), None


def _over_the_cap(body: bytes, rest: Any) -> str | None:
    """How an answer is over what the proxy checks of one (its bytes, or the JSON values
    its body can hold: a few bytes each, `{},{},...`, and tens of bytes each once read), or
    None when it is within both."""
    if rest is not None:
        return f"over {MAX_CHECKED_BODY} bytes"
    values = body.count(b",") + body.count(b"[") + body.count(b"{")  # at most this many
    if values > MAX_CHECKED_VALUES:
        return f"over {MAX_CHECKED_VALUES} JSON values"
    return None


def _parsed(content_type: str, body: bytes) -> Any:
    """A JSON body parsed (strictly), else None."""
    media = media_type(content_type)
    if not body or not is_json(media):
        return None
    try:
        return read_json(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _kept(parsed: Any, raw: bytes) -> bytes:
    """A body as the journal keeps it: masked, then cut at its limit (a text is read a
    little past it, so that a credential the limit cuts is still known by its shape: a JWT
    cut inside its payload has too few dots to be one)."""
    if parsed is not None:
        return orjson.dumps(masked(parsed))[:BODY_LIMIT]
    text = raw[: BODY_LIMIT + CUT_SLACK].decode("utf-8", errors="replace")
    return masked_text(text).encode()[:BODY_LIMIT]


CUT_SLACK = 16 * 1024  # bytes of a text body read past the limit, for what the limit cuts


def _passed_back(response: httpx.Response) -> list[tuple[bytes, bytes]]:
    return [
        (name.lower(), value)
        for name, value in response.headers.raw
        if name.decode("latin-1").lower() not in _NOT_PASSED_BACK
    ]


def log_line(exchange: ProxiedExchange) -> str:
    """One line of the proxy's log for an exchange (as sent: the caller escapes it)."""
    query = "&".join(f"{k}={v}" for k, values in exchange.query.items() for v in values)
    target = f"{exchange.path}?{query}" if query else exchange.path
    outcome = exchange.failure or str(exchange.status)
    line = (
        f"{time.strftime('%H:%M:%S')} {exchange.method} {target} {outcome} "
        f"{exchange.operation_id or '(not in the contract)'} {exchange.duration_ms:.1f}ms"
    )
    if exchange.differences:
        first = exchange.differences[0]
        more = f" (+{len(exchange.differences) - 1})" if len(exchange.differences) > 1 else ""
        line += f" DRIFT {first.kind} {first.field} {first.found}".rstrip() + more
    if exchange.violation:
        line += f" request breaks the contract ({len(exchange.request_problems)})"
    if exchange.failure:
        line += f" {exchange.message}"
    return line


def proxy_config(proxy: Proxy) -> uvicorn.Config:
    """uvicorn's configuration of a drift proxy, served by the command or in a thread. No
    WebSocket is served: an upgrade is forwarded as the plain HTTP request it also is
    (uvicorn's WebSocket protocol would answer 500 to an app that never accepts one)."""
    return uvicorn.Config(proxy, lifespan="on", log_level="warning", access_log=False, ws="none")


class BackgroundProxy(Threaded):
    """A Proxy served by uvicorn on a daemon thread, on a free loopback port by default
    (tests, and `platform-mock drift`'s own requests)."""

    what = "the proxy"

    def __init__(self, proxy: Proxy, host: str = "127.0.0.1", port: int = 0):
        self.proxy = proxy
        super().__init__(uvicorn.Server(proxy_config(proxy)), host, port)
