"""The request's way through one mock, outermost first, in one ordered list.

`outer_layers` is the part around the Connexion app, composed here (`compose`); the
Connexion app's own part is `app.middlewares`, which Connexion composes; `pipeline` is the
two in one list, in the order a request meets them. `RequestLimits` is outermost: a request
past the limits every transport keeps (in process as over TCP) gets nothing else. Then
`HostGuard` (a request under a name that is not the server's gets nothing else), `Cors` when
origins are configured (so that every answer carries its headers, errors included, and a
preflight is not journaled), `SignedUrls` (the object store's signed URLs, outside the
contract), and `Journaling`: each request to the platform's API is journaled once, any other
is logged at DEBUG.

The way out is one pass: response validation (in Connexion's part) checks the answer, the
journal records it once as its last byte leaves (`middleware.journaled`), and the journal's
readers read that one entry in the order `PlatformMock` lists them: the contract report, the
live view, the request log. None of them writes back to the journal or to another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.handlers.context import Mock
from mock_server.handlers.storage import STORAGE_PREFIX
from mock_server.http.app import middlewares
from mock_server.http.cors import Cors
from mock_server.http.hosts import HostGuard
from mock_server.http.middleware import RequestLimits, journaled
from mock_server.http.request_log import logged
from mock_server.services.journal import Journal

Layer = Callable[[ASGIApp], ASGIApp]


class StackConfig(Protocol):
    """What of a mock's configuration the layers read (`MockConfig`)."""

    cors: list[str]
    allowed_hosts: list[str]
    host_check: str


class Stacked(Mock, Protocol):
    """The mock whose layers these are (`PlatformMock`)."""

    @property
    def config(self) -> StackConfig: ...

    @property
    def storage(self) -> ASGIApp: ...

    def is_platform_path(self, path: str) -> bool: ...


class SignedUrls:
    """Serves the object store's signed URLs (under `STORAGE_PREFIX`), logged at DEBUG as
    any request outside the contract; passes every other request on."""

    def __init__(self, app: ASGIApp, storage: ASGIApp):
        self.app = app
        self.storage = storage

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "http" and _under(scope["path"], STORAGE_PREFIX):
            await logged(self.storage, scope, receive, send)
            return None
        return await self.app(scope, receive, send)


class Journaling:
    """Journals each request to the platform's API (`platform` says which paths are), once;
    logs any other at DEBUG."""

    def __init__(self, app: ASGIApp, journal: Journal, platform: Callable[[str], bool]):
        self.app = app
        self.journal = journal
        self.platform = platform

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "http" and self.platform(scope["path"]):
            return await journaled(self.app, self.journal, scope, receive, send)
        await logged(self.app, scope, receive, send)
        return None


def outer_layers(mock: Stacked) -> list[Layer]:
    """The layers around the Connexion app, outermost first."""
    config = mock.config
    layers: list[Layer] = [
        functools.partial(RequestLimits, gateway_prefix=mock.gateway_prefix),
        functools.partial(
            HostGuard,
            admin_prefix=mock.admin_prefix,
            allowed=config.allowed_hosts,
            everywhere=config.host_check == "all",
            gateway_prefix=mock.gateway_prefix,
        ),
    ]
    if config.cors:  # never for the admin API, which no page of another origin may drive
        layers.append(functools.partial(Cors, origins=config.cors, exempt=mock.admin_prefix))
    layers.append(functools.partial(SignedUrls, storage=mock.storage))
    layers.append(
        functools.partial(Journaling, journal=mock.journal, platform=mock.is_platform_path)
    )
    return layers


def compose(layers: Sequence[Layer], app: ASGIApp) -> ASGIApp:
    """`app` inside `layers`, the first outermost."""
    for layer in reversed(layers):
        app = layer(app)
    return app


def pipeline(mock: Stacked) -> list[Any]:
    """Every layer a request meets, outermost first: the outer ones, then Connexion's."""
    return [*outer_layers(mock), *middlewares(mock)]


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")
