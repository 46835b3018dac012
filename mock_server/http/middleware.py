"""The mock's own ASGI layers: journaling and logging, path and route guards, routing.

They talk to each other (and to the error handler) through the request's `Exchange`
(`mock_server.services.exchange`): the route's path parameters, the error answered, the fault
applied, whether to drop the connection.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import unquote_to_bytes

from connexion.middleware import routing as connexion_routing
from starlette.datastructures import Headers
from starlette.routing import Mount, Route, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.core import errors
from mock_server.http.request_log import UNAUTHENTICATED, caller_of, log_entry
from mock_server.http.scope import operation_id
from mock_server.services.exchange import exchange
from mock_server.services.journal import BODY_LIMIT, Entry, Journal

KEPT_HEADERS = ("content-type", "content-length", "prefer", "user-agent", "x-platform-metadata")
FAULT_HEADER = b"x-platform-mock-fault"
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
    label = journal.label  # the test that sent it, even if it ends after the test does
    expected = journal.expecting
    recorded = False

    def record() -> None:
        nonlocal recorded
        if recorded:
            return
        recorded = True
        headers = Headers(scope=scope)
        error = mine.error
        entry = Entry(
            seq=seq,
            method=scope["method"],
            path=scope["path"],
            query=query_by_key(scope),
            path_params=dict(mine.path_params),
            headers={k: headers[k] for k in KEPT_HEADERS if k in headers},
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
        )
        journal.record(entry)
        log_entry(entry, scope)

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


def _caller(scope: Scope) -> str | None:
    caller = caller_of(scope)
    return None if caller == UNAUTHENTICATED else caller


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


class RoutingMiddleware(connexion_routing.RoutingMiddleware):
    """Connexion's routing without Starlette's slash redirects: `/secret-groups/{id}/` (or
    `.../{id}%2F`) would get a 307 to the path without the slash, before authentication,
    and a client following it would delete the group. No route of the contract ends in a
    slash, so such a path matches nothing: a 404.

    And with OpenAPI's rule for paths that overlap: a concrete path is matched before a
    templated one (`/artifact-versions/files` before `/artifact-versions/{id}`), so that a
    method the concrete path lacks is its 405, not another operation's answer, and `Allow`
    names the concrete path's methods alone."""

    def add_api(self, *args: Any, **kwargs: Any) -> None:
        super().add_api(*args, **kwargs)
        self.router.redirect_slashes = False
        concrete_first(self.router)
        for route in self.router.routes:
            if isinstance(route, Mount) and isinstance(route.app, Router):
                route.app.redirect_slashes = False
                concrete_first(route.app)


def concrete_first(router: Router) -> None:
    """Each templated route of `router` made to match no concrete path of its siblings:
    its `path_regex` (Starlette's, public) excludes them."""
    routes = [r for r in router.routes if isinstance(r, Route)]
    concrete = sorted({r.path for r in routes if not r.param_convertors})
    for route in routes:
        if not route.param_convertors:
            continue
        taken = [path for path in concrete if route.path_regex.match(path)]
        if taken:
            exact = "|".join(re.escape(path) for path in taken)
            pattern = route.path_regex.pattern.removeprefix("^")
            route.path_regex = re.compile(f"^(?!(?:{exact})$){pattern}")


class RouteNotes:
    """Notes the routed path parameters, which Connexion keeps only on its own scope copy,
    and answers 404 for a request no operation of the specs matched: Connexion would hand
    it to Flask, whose router is laxer (it takes `//api/...` for `/api/...`)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if operation_id(scope) is None:
                raise errors.RouteNotFound(f"No route for {scope['method']} {scope['path']}")
            exchange(scope).path_params = {
                k: str(v) for k, v in scope.get("path_params", {}).items()
            }
        await self.app(scope, receive, send)
