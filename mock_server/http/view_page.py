"""Serving the live view's page and its static files, under `/__admin/ui`, from the package;
and the security headers of every page the mock serves, the API docs' included.

The files are read once and served as they are (no build step, nothing from another
origin), each with a Content-Security-Policy that lets the page run only its own script and
style and talk only to its own origin: no inline script, no `eval`, no frame around it, no
form that navigates (the admin token never lands in a URL). The page holds nothing secret;
the data comes from the admin API, with the admin token the person gives it.

The API docs (Swagger UI, under `/docs/`, `{gateway}/docs/` and `/__admin/docs/`) carry the
same headers (`secured`): their policy differs only in naming, by its hash, each inline
script and style of the page Connexion renders (the one that starts Swagger UI), and in
taking `data:` images (Swagger UI's icons).
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.core import errors
from mock_server.core.addresses import ADMIN_PREFIX
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


def policy(scripts: str = "", styles: str = "", images: str = "") -> str:
    """A page's Content-Security-Policy: its own origin's script, style, images and
    requests only (and the sources given beside them), no frame around it."""
    return (
        f"default-src 'none'; script-src 'self'{scripts}; style-src 'self'{styles}; "
        f"img-src 'self'{images}; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


POLICY = policy()
# Every header but the policy, the same on every page.
OTHER_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-cache"),
]
HEADERS = [(b"content-security-policy", POLICY.encode()), *OTHER_HEADERS]
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)
_INLINE_STYLE = re.compile(rb"<style>(.*?)</style>", re.DOTALL)
_SECURED = {b"content-security-policy", *(name for name, _ in OTHER_HEADERS)}


def _hashes(found: list[bytes]) -> str:
    return "".join(
        f" 'sha256-{base64.b64encode(hashlib.sha256(text).digest()).decode()}'" for text in found
    )


def docs_policy(page: bytes) -> str:
    """The policy of an API docs page: the live view's, with the page's inline scripts and
    styles named by their hashes, and `data:` images."""
    return policy(
        _hashes(_INLINE_SCRIPT.findall(page)), _hashes(_INLINE_STYLE.findall(page)), " data:"
    )


def secured(send: Send) -> Send:
    """`send`, with the security headers added to the response: for an HTML page, its
    policy names its inline scripts and styles (the page is held until its end to read
    them: the docs' pages are a few kilobytes)."""
    start: Message | None = None
    held = bytearray()

    async def send_(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _SECURED]
            message = {**message, "headers": headers}
            if not dict(headers).get(b"content-type", b"").startswith(b"text/html"):
                page_policy = docs_policy(b"").encode()
                headers += [(b"content-security-policy", page_policy), *OTHER_HEADERS]
                await send(message)
                return
            start = message
            return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        held.extend(message.get("body", b""))
        if message.get("more_body", False):
            return
        headers = [
            *start["headers"],
            (b"content-security-policy", docs_policy(bytes(held)).encode()),
            *OTHER_HEADERS,
        ]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": bytes(held)})

    return send_


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
            return await errors.send_error(
                send, errors.RouteNotFound(f"No file of the live view at {path}")
            )
        if scope["method"] not in ("GET", "HEAD"):
            error = errors.MethodNotAllowed(f"Method not allowed: {scope['method']} {path}")
            return await errors.send_error(send, error, headers=[(b"allow", b"GET, HEAD")])
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
