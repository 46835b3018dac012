"""Serving the live view's page and its static files, under `/__admin/ui`, from the package.

The files are read once and served as they are (no build step, nothing from another
origin), each with a Content-Security-Policy that lets the page run only its own script and
style and talk only to its own origin: no inline script, no `eval`, no frame around it, no
form that navigates (the admin token never lands in a URL). The page holds nothing secret;
the data comes from the admin API, with the admin token the person gives it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.core import errors
from mock_server.core.coordinates import ADMIN_PREFIX
from mock_server.core.resources import PACKAGE_DIR

PREFIX = ADMIN_PREFIX + "/ui"
# What each path serves: the file and its media type.
FILES = {
    PREFIX: ("index.html", "text/html; charset=utf-8"),
    PREFIX + "/": ("index.html", "text/html; charset=utf-8"),
    PREFIX + "/view.js": ("view.js", "text/javascript; charset=utf-8"),
    PREFIX + "/view.css": ("view.css", "text/css; charset=utf-8"),
    PREFIX + "/icon.svg": ("icon.svg", "image/svg+xml"),
}
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-cache"),
]


@cache
def _content(name: str) -> bytes:
    return (PACKAGE_DIR / "view" / "static" / name).read_bytes()


def url(base: str) -> str:
    """The view's URL on a server at `base`."""
    return base + PREFIX


class ViewPage:
    """Answers the paths under `/__admin/ui` with the page's files; passes on the rest."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            return await self.app(scope, receive, send)
        found = FILES.get(path)
        if found is None:
            return await _error(errors.RouteNotFound(f"No file of the live view at {path}"), send)
        if scope["method"] not in ("GET", "HEAD"):
            error = errors.MethodNotAllowed(f"Method not allowed: {scope['method']} {path}")
            return await _error(error, send, [(b"allow", b"GET, HEAD")])
        name, media_type = found
        content = _content(name)
        headers = [
            (b"content-type", media_type.encode()),
            (b"content-length", str(len(content)).encode()),
            *HEADERS,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else content}
        )
        return None


async def _error(
    error: errors.PlatformError, send: Send, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = orjson.dumps(error.body())
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
