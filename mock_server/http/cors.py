"""CORS for browser clients: the origins allowed to call the mock, and the layer answering them.

Off unless origins are given (`MockConfig.cors`). Starlette's CORSMiddleware decides the
headers; this layer wraps the whole mock, so every response carries them, errors included
(those of routing, authentication and validation are answered inside the mock). A
preflight from an allowed origin is answered here, before the journal sees it: it is the
browser's request, not the client's use of the contract. One from another origin, or one
the policy refuses, is answered as without CORS (405, in the platform's error body, as
any OPTIONS). CORS never applies to the admin API (`exempt`): its answers carry no CORS
header, and a preflight to it is refused as any OPTIONS is. This layer
also hands on the mock's return value, which tells uvicorn to drop a connection (`DROP`),
where Starlette's middleware would swallow it.
"""

from __future__ import annotations

import functools
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.core.addresses import origin_problem

# Response headers a browser script may read besides the CORS-safelisted ones.
EXPOSED_HEADERS = ("x-platform-mock-fault",)
PREFLIGHT_MAX_AGE = 600  # seconds a browser may keep a preflight's answer


class Cors:
    """`app`, answering CORS preflights from `origins` (or any, with `*`) and adding the
    CORS headers to every response to a request with an allowed `Origin`."""

    def __init__(self, app: ASGIApp, origins: list[str], exempt: str | None = None):
        for origin in origins:
            problem = origin_problem(origin)
            if problem:
                raise ValueError(f"CORS origin {origin!r}: {problem}")
        self.app = app
        self.exempt = exempt  # a path prefix CORS never applies to (the admin API)
        self.policy = CORSMiddleware(
            app,
            allow_origins=origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=list(EXPOSED_HEADERS),
            max_age=PREFLIGHT_MAX_AGE,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] != "http" or self._exempt(scope["path"]):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        if "origin" not in headers:
            return await self.app(scope, receive, send)
        preflight = scope["method"] == "OPTIONS" and "access-control-request-method" in headers
        if preflight and self.policy.is_allowed_origin(headers["origin"]):
            answer = self.policy.preflight_response(request_headers=headers)
            # One the policy refuses (a method or a private-network request it does not
            # allow) would be Starlette's text/plain 400: the mock answers it as any OPTIONS.
            if answer.status_code < 400:
                await answer(scope, receive, send)
                return None
        return await self.app(
            scope, receive, functools.partial(self.policy.send, send=send, request_headers=headers)
        )

    def _exempt(self, path: str) -> bool:
        exempt = self.exempt
        return exempt is not None and (path == exempt or path.startswith(exempt + "/"))
