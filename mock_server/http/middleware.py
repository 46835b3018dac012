"""The mock's own ASGI layers: the limits of a request, journaling and logging, path and
route guards, routing.

They talk to each other (and to the error handler) through the request's `Exchange`
(`mock_server.services.exchange`): the route's path parameters, the error answered, the fault
applied, whether to drop the connection.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote_to_bytes

from connexion.middleware.abstract import ROUTING_CONTEXT, SpecMiddleware
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.contract.routing import Router as ContractRouter
from mock_server.core import errors, masking
from mock_server.core.coordinates import MAX_TEST_NAME, TEST_HEADER
from mock_server.http.request_log import UNAUTHENTICATED, caller_of
from mock_server.http.scope import on_gateway, operation_id
from mock_server.services.exchange import exchange
from mock_server.services.journal import BODY_LIMIT, Entry, Journal, request_headers

FAULT_HEADER = b"x-platform-mock-fault"
_TEST_KEY = TEST_HEADER.lower()  # as `request_headers` names it
_TEST_BYTES = _TEST_KEY.encode("latin-1")
# Returned to the server instead of None: uvicorn then closes the connection unanswered.
DROP = "drop-connection"


def query_pairs(scope: Scope) -> list[tuple[str, str]]:
    """The query's (key, value) pairs, parsed once for validation, the handler, the journal
    and the fault rules alike."""
    return exchange(scope).query_pairs(scope.get("query_string", b""))


def query_by_key(scope: Scope) -> dict[str, list[str]]:
    """The query's values by key, in the order given, grouped once for validation, the
    journal and the fault rules."""
    return exchange(scope).query_by_key(scope.get("query_string", b""))


async def journaled(
    app: ASGIApp, journal: Journal, scope: Scope, receive: Receive, send: Send
) -> Any:
    """Serve one request through `app` and record it in the journal, exactly once.

    The entry is recorded before the last byte of the response leaves, so a client that
    has its answer finds its request in the journal."""
    mine = exchange(scope)
    seq = journal.next_seq()
    body = bytearray()
    status: int | None = None
    response_headers: dict[str, str] = {}
    response = bytearray()  # the first BODY_LIMIT bytes of the response body
    response_bytes = 0
    started = time.perf_counter()
    started_at = time.time()
    # The test that sent it: the one its header names, else the mock's current test (kept
    # even if the test ends before the request does).
    # Read once, for the test's name, the caller's credentials and the entry.
    sent = request_headers(scope["headers"])
    credentials = masking.credentials_of(sent)
    # A name the client sent, shown as every output shows its texts (a test's own name,
    # the mock's label, is matched by the plugin as it is).
    named = _first_test_name(scope["headers"]) if _TEST_KEY in sent else ""
    named = masking.masked_text(named, credentials) if named else ""
    label = named or journal.label
    expected = journal.expecting and label == journal.label
    recorded = False

    def record() -> None:
        nonlocal recorded
        if recorded:
            return
        recorded = True
        error = mine.error
        entry = Entry(
            seq=seq,
            method=scope["method"],
            path=scope["path"],
            query=query_by_key(scope),
            path_params=dict(mine.path_params),
            raw_headers=sent,
            raw_body=bytes(body),
            operation_id=operation_id(scope),
            status=None if mine.drop else status,
            code=error.code if error else None,
            message=error.message if error else None,
            details=error.details if error else [],
            fault=mine.fault,
            test=label,
            expected=expected,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            dropped=mine.drop,
            caller=_caller(scope),
            started=started_at,
            response_headers=response_headers,
            raw_response=bytes(response),
            response_bytes=response_bytes,
            credentials=credentials,
        )
        journal.record(entry)  # which its readers (report, live view, request log) read

    async def receive_() -> Message:
        message = await receive()
        if message["type"] == "http.request" and len(body) < BODY_LIMIT:
            body.extend(message.get("body", b"")[: BODY_LIMIT - len(body)])
        return message

    async def send_(message: Message) -> None:
        nonlocal status, response_bytes
        if message["type"] == "http.response.start":
            status = message["status"]
            if mine.fault:
                headers = [*message.get("headers", []), (FAULT_HEADER, mine.fault.encode())]
                message = {**message, "headers": headers}
            for name, value in message.get("headers", ()):
                response_headers[name.decode("latin-1")] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            response_bytes += len(chunk)
            if len(response) < BODY_LIMIT:
                response.extend(chunk[: BODY_LIMIT - len(response)])
            if not message.get("more_body", False):
                record()
        await send(message)

    try:
        await app(scope, receive_, send_)
    finally:
        record()
    return DROP if mine.drop else None


def _first_test_name(raw: list[tuple[bytes, bytes]]) -> str:
    """The test a request names, by its first header naming one (the journal's headers join
    a repeated header's values)."""
    for name, value in raw:
        if name.lower() == _TEST_BYTES:
            return value.decode("latin-1")[:MAX_TEST_NAME]
    return ""


def _caller(scope: Scope) -> str | None:
    caller = caller_of(scope)
    return None if caller == UNAUTHENTICATED else caller


# -- the limits of a request: one rule for every transport ----------------------------------

MAX_TARGET_BYTES = 16 * 1024  # of a request's path and query, as sent
MAX_HEADER_BYTES = 64 * 1024  # of its headers' names and values
MAX_HEADERS = 100
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header's name (RFC 9110, 5.1)
_NOT_IN_A_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # controls but the tab (5.5)
_SPACE = b" \t"


def request_problem(scope: Scope) -> errors.PlatformError | None:
    """Why a request is past the limits every transport keeps, or is not valid HTTP, as
    its scope shows it; None when it is within them. Over TCP, the HTTP parser has already
    refused what it cannot frame (the same rules, the same answer: 400, code 40006), and
    the connection holds no more of a head than these limits need
    (`mock_server.http.protocol`); in process, nothing else checks them."""
    query = scope.get("query_string", b"")
    target = len(scope.get("raw_path") or scope["path"].encode()) + (len(query) + 1 if query else 0)
    if target > MAX_TARGET_BYTES:
        return errors.RequestTargetTooLong(
            f"The request's path and query are longer than {MAX_TARGET_BYTES} bytes"
        )
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    if len(headers) > MAX_HEADERS:
        return errors.HeadersTooLarge(
            f"The request has {len(headers)} headers; at most {MAX_HEADERS} are read"
        )
    size = sum(len(name) + len(value) for name, value in headers)
    if size > MAX_HEADER_BYTES:
        return errors.HeadersTooLarge(
            f"The request's headers are {size} bytes; at most {MAX_HEADER_BYTES} are read"
        )
    lengths: list[bytes] = []
    codings: list[bytes] = []
    for name, value in headers:
        if not _TOKEN.fullmatch(name):
            return errors.UnparsableRequest("Request is not valid HTTP: a header's name")
        if _NOT_IN_A_VALUE.search(value):
            return errors.UnparsableRequest(
                "Request is not valid HTTP: a control character in a header's value"
            )
        if name.lower() == b"content-length":
            lengths.append(value.strip(_SPACE))
        elif name.lower() == b"transfer-encoding":
            codings += [coding.strip(_SPACE).lower() for coding in value.split(b",")]
    if codings and lengths:
        return errors.UnparsableRequest(
            "Request is not valid HTTP: Transfer-Encoding and Content-Length both given"
        )
    if codings and (codings[-1] != b"chunked" or codings.count(b"chunked") > 1):
        return errors.UnparsableRequest(
            "Request is not valid HTTP: a request's Transfer-Encoding ends with chunked, once"
        )
    if len(lengths) > 1 or (lengths and not (lengths[0].isdigit() and len(lengths[0]) < 20)):
        return errors.UnparsableRequest(
            "Request is not valid HTTP: Content-Length is one whole number of bytes"
        )
    return None


class RequestLimits:
    """Refuses, before any other layer reads it, a request past the limits of every
    transport (`request_problem`), in the platform's error body. Outermost: nothing of the
    request has been read yet, it is not journaled (the HTTP parser's refusals over TCP
    never reach the mock at all), and its cost is bounded whatever its size."""

    def __init__(self, app: ASGIApp, gateway_prefix: str = ""):
        self.app = app
        self.gateway_prefix = gateway_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "http":
            problem = request_problem(scope)
            if problem is not None:
                gateway = on_gateway(scope, self.gateway_prefix)
                await errors.send_error(send, errors.error_answer(problem, gateway=gateway))
                return None
        return await self.app(scope, receive, send)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# No operation has more than nine parameters, nor an array filter a client needs to repeat
# more than a few dozen times. Past these, a query is refused before any work per key (the
# validators downstream read the values of each key by a walk over the whole query).
MAX_QUERY_PAIRS = 100
MAX_REPEATS = 50


class PathGuard:
    """Refuses, before routing, a path no parameter of the contract admits: one with a
    control character (the two routers below, Starlette's then Flask's, disagree on them,
    e.g. on a trailing line feed), or whose percent-escapes are not UTF-8 (the server would
    read them as U+FFFD, so `%FF` and `%C0%AF` would name the same token). And a query with
    more pairs, or one key more often, than any request of the contract needs, or whose
    %-escapes are not UTF-8 (validation would see U+FFFD where the handler sees `%FF`)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = _path_problem(scope)
            if problem:
                raise errors.InvalidRequest(
                    f"Request does not conform to the API contract: the path {problem}",
                    details=[{"location": "path", "field": "", "message": problem}],
                )
            found = _query_problem(scope.get("query_string", b""))
            if found:
                field, problem = found
                where = f"query {field}" if field else "the query"
                raise errors.InvalidRequest(
                    f"Request does not conform to the API contract: {where} {problem}",
                    details=[{"location": "query", "field": field, "message": problem}],
                )
        await self.app(scope, receive, send)


def _query_problem(query: bytes) -> tuple[str, str] | None:
    """What is wrong with a raw query string (the field and the problem), if anything."""
    if not query:
        return None
    pairs = query.count(b"&") + 1
    if pairs > MAX_QUERY_PAIRS:
        return "", f"has {pairs} parameters; at most {MAX_QUERY_PAIRS} are read"
    counts: dict[bytes, int] = {}
    for pair in query.split(b"&"):
        key, _, value = pair.partition(b"=")
        counts[key] = counts.get(key, 0) + 1
        if not (_utf8_escapes(key) and _utf8_escapes(value)):
            return key.decode("latin-1"), NOT_UTF8
    for key, count in counts.items():
        if count > MAX_REPEATS:
            name = unquote_to_bytes(key).decode("utf-8")
            return name, f"is given {count} times; at most {MAX_REPEATS} values are read"
    return None


def _path_problem(scope: Scope) -> str | None:
    if _CONTROL.search(scope["path"]):
        return "contains a control character"
    raw = scope.get("raw_path")
    if raw is not None and not _utf8_escapes(raw):
        return NOT_UTF8
    return None


NOT_UTF8 = "is not UTF-8 once its %-escapes are decoded"


def _utf8_escapes(raw: bytes) -> bool:
    """Whether text as sent is UTF-8 once its %-escapes are decoded."""
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class RoutingMiddleware(SpecMiddleware):
    """Routes each request by the contract's router (`contract.routing`, the drift proxy's
    too), in place of Connexion's Starlette router: sets Connexion's routing context (the
    document's base path and the operationId) that security and both validations read, and
    notes the path parameters in the request's `Exchange`.

    A path the contract has, by a method it lacks, is a 405 (its `Allow` from the same
    router); any other request no operation takes is a 404 here, never handed on to Flask,
    whose router is laxer (it takes `//api/...` for `/api/...`). Under the gateway's prefix, a
    request without a good bearer token is a 401 first, as the platform's gateway answers any
    path (`gateway`: what checks a token)."""

    def __init__(
        self,
        app: ASGIApp,
        router: ContractRouter,
        gateway: Callable[[str | None], Awaitable[object]] | None = None,
    ):
        self.app = app
        self.router = router
        self.gateway = gateway

    def add_api(self, specification: Any, base_path: str | None = None, **_: Any) -> None:
        # Connexion adds each document it serves: the router must hold it at the same base
        # path, the key by which security and validation find the operation it names.
        if (base_path or "") not in self.router.base_paths.values():
            raise ValueError(f"the contract's router serves no document at {base_path!r}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        route, params = self.router.route(method, path)
        if route is None:
            if self.router.methods(path):
                raise errors.MethodNotAllowed(f"Method not allowed: {method} {path}")
            if self.gateway is not None and self.router.is_gateway(path):
                await self.gateway(Headers(scope=scope).get("authorization"))
            raise errors.RouteNotFound(f"No route for {method} {path}")
        scope.setdefault("extensions", {})[ROUTING_CONTEXT] = {
            "api_base_path": route.base_path,
            "operation_id": route.operation.operation_id,
        }
        exchange(scope).path_params = params
        await self.app(scope, receive, send)
