"""Serving a mock over HTTP with uvicorn: its configuration, and a server on a thread.

`uvicorn_config` is shared by the command and `BackgroundServer`: it makes the HTTP parser
answer the requests it rejects (unparsable, or headers over 64 KiB) with the platform error
body too, and bounds a stop: a request still in flight `GRACEFUL_SHUTDOWN_SECONDS` after it
(held by a delay fault) has its connection closed unanswered. No connection is held for
nothing: one that sends nothing for `IDLE_SECONDS` (new, or between requests) is closed,
and a request that has not arrived in full `REQUEST_SECONDS` after its first byte is
answered 408 and its connection closed. `BackgroundServer` runs uvicorn
on a daemon thread, bound to a free loopback port (tests, the pytest plugin), and returns once
the server accepts connections. `Worlds` serves other worlds beside a mock, each a
`BackgroundServer` of its own (`POST /__admin/worlds`), for parallel test workers.

The connection itself is uvicorn's httptools protocol as `mock_server.http.protocol` adapts
it (behind the fence around libraries' internals).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import resource
import secrets
import socket
import threading
import time
from typing import Any, Self

import uvicorn
from starlette.types import Receive, Scope, Send

from mock_server.core import errors
from mock_server.core.coordinates import Coordinates, base_url
from mock_server.handlers.context import ServedWorld
from mock_server.http import DROP
from mock_server.http.mock import PlatformMock
from mock_server.http.protocol import REQUEST_SECONDS, PlatformHttpProtocol

GRACEFUL_SHUTDOWN_SECONDS = 2
IDLE_SECONDS = 5  # a connection that sends nothing, new or between requests (uvicorn's)
MAX_WORLDS = 64  # worlds served beside one mock: each holds a world and a journal


class _HideDrops(logging.Filter):
    """Keeps uvicorn from logging an error for each connection a fault drops on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return DROP not in record.getMessage()


_HIDE_DROPS = _HideDrops()


FILE_LIMIT_FALLBACKS = (65536, 10240)  # where the hard limit is "unlimited" (macOS)


def raise_file_limit() -> tuple[int, int] | None:
    """Raise this process's soft limit of open files as far as its hard limit allows: each
    client connection holds one, and 1,024 idle ones would otherwise shut out the next
    client. The limits before, or None when they could not be raised."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = [hard] if hard != resource.RLIM_INFINITY else []
    for limit in [*wanted, *FILE_LIMIT_FALLBACKS]:
        if limit <= soft:
            return None
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
        except (ValueError, OSError):  # above what the system allows (macOS: OPEN_MAX)
            continue
        return soft, hard
    return None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host and port (0: a free one), IPv4 or IPv6."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _DropWhenCancelled:
    """The mock, closing the connection of a request that uvicorn cancels because a stop
    outlasted its grace period. uvicorn would log the cancellation as an error with its
    traceback and answer a 500 in the client's name, as if the mock had failed."""

    def __init__(self, mock: PlatformMock):
        self.mock = mock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        try:
            return await self.mock(scope, receive, send)
        except asyncio.CancelledError:
            # uvicorn cancels a request's task only when stopping. A response already begun
            # is cut short all the same: uvicorn closes the connection on DROP.
            return DROP


class PlatformConfig(uvicorn.Config):
    """uvicorn's configuration, and how long a request may take to arrive."""

    def __init__(self, *args: Any, request_seconds: float = REQUEST_SECONDS, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.request_seconds = request_seconds


def uvicorn_config(
    mock: PlatformMock,
    *,
    log_level: str = "warning",
    idle_seconds: float = IDLE_SECONDS,
    request_seconds: float = REQUEST_SECONDS,
    **options: Any,
) -> PlatformConfig:
    options.setdefault("timeout_graceful_shutdown", GRACEFUL_SHUTDOWN_SECONDS)
    config = PlatformConfig(
        _DropWhenCancelled(mock),
        request_seconds=request_seconds,
        timeout_keep_alive=idle_seconds,
        http=PlatformHttpProtocol,
        log_level=log_level,
        lifespan="off",
        # No WebSocket is served: an upgrade is answered as the plain HTTP request it also is
        # (uvicorn's WebSocket protocol would answer 500 to an app that never accepts one).
        ws="none",
        # None of uvicorn's: the request log (`mock_server.http.request_log`) says more, and
        # hides what the masking rule hides, which uvicorn's would print as it came.
        access_log=False,
        **options,
    )
    # After the Config, which sets up uvicorn's loggers; a logger keeps one copy of a filter.
    logging.getLogger("uvicorn.error").addFilter(_HIDE_DROPS)
    return config


class MockServer(uvicorn.Server):
    """uvicorn, ending the live view's event streams (`mock.live`) as a stop begins: uvicorn
    waits for every response in flight, and a stream has no end of its own. Without a mock
    (the drift proxy serves none), uvicorn as it is."""

    def __init__(self, config: uvicorn.Config, mock: PlatformMock | None = None):
        super().__init__(config)
        self.mock = mock

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.mock is not None:
            self.mock.live.close()
        await super().shutdown(sockets)


def user_token(mock: PlatformMock) -> str | None:
    """The default user's token, or None in a world without users."""
    try:
        return mock.auth.dev_token()
    except errors.MockFailure:  # the only failure of minting: there is no user to name
        return None


def coordinates(mock: PlatformMock, host: str, port: int) -> Coordinates:
    """Where a mock served on host and port is, and its tokens."""
    url = base_url(host, port)
    return Coordinates(
        url=url,
        gateway_url=url + mock.gateway_prefix,
        token=user_token(mock),
        admin_token=mock.auth.admin_token(),
        seed=mock.store.seed,
    )


class Threaded:
    """An ASGI app served by uvicorn on a daemon thread, on a socket bound at once (port 0
    picks a free one): started and stopped by the caller, or as a context manager."""

    what = "the server"  # as its failure to start names it

    def __init__(self, server: uvicorn.Server, host: str, port: int):
        self._sock = bind(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        self._server = server
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return base_url(self.host, self.port)

    def start(self, timeout: float = 30.0) -> Self:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.what} did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BackgroundServer(Threaded):
    """A PlatformMock served by uvicorn on a background thread, with other worlds beside it
    on request (`mock.worlds`). Its `url` is the base URL: the control plane is under
    `/api/svc/v1`, the gateway under its prefix."""

    what = "the mock server"

    def __init__(
        self,
        mock: PlatformMock,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        idle_seconds: float = IDLE_SECONDS,
        request_seconds: float = REQUEST_SECONDS,
        makes_worlds: bool = True,
    ):
        self.mock = mock
        config = uvicorn_config(mock, idle_seconds=idle_seconds, request_seconds=request_seconds)
        super().__init__(MockServer(config, mock), host, port)
        self.worlds = Worlds(mock, self.host)
        self._served_worlds = self.worlds if makes_worlds else MADE_BY_ANOTHER
        self._worlds_before = mock.worlds  # a mock served twice keeps its first server's
        mock.worlds = self._served_worlds

    @property
    def gateway_url(self) -> str:
        return f"{self.url}{self.mock.gateway_prefix}"

    @property
    def coordinates(self) -> Coordinates:
        return coordinates(self.mock, self.host, self.port)

    def stop(self, timeout: float = 10.0) -> None:
        self.worlds.close()
        if self.mock.worlds is self._served_worlds:
            self.mock.worlds = self._worlds_before
        super().stop(timeout)


class Worlds:
    """Worlds served beside a mock: each a mock of its own (the same configuration, with its
    own seed if asked), on a new port of the same host, whose requests also count in the
    first mock's contract report. At most MAX_WORLDS at once, those starting included. A
    world makes no worlds of its own (`MADE_BY_ANOTHER`): worlds exist for the parallel
    workers of one test session, each asking the session's mock for one, and a world that
    could make worlds would let a chain of them grow past any cap kept per mock (each with
    its thread, port, world and journal)."""

    def __init__(self, mock: PlatformMock, host: str):
        self._mock = mock
        self._host = host
        self._lock = threading.Lock()
        self._servers: dict[str, BackgroundServer] = {}
        self._starting = 0  # worlds counted against the cap while their server starts
        self._made = 0
        self._closed = False

    def create(self, seed: int | None) -> ServedWorld:
        """Serve a new world; where it is, as the admin API describes a world."""
        with self._lock:
            if len(self._servers) + self._starting >= MAX_WORLDS:
                raise errors.InvalidRequest(
                    f"This mock already serves {MAX_WORLDS} other worlds: delete one first",
                    details=[{"location": "body", "message": f"at most {MAX_WORLDS} worlds"}],
                )
            self._starting += 1
            self._made += 1
            world_id = f"world-{self._made}"
        try:
            # A key of its own, unless one was given: no token of one world opens another.
            key = self._mock.config.signing_key or secrets.token_hex(32)
            config = dataclasses.replace(self._mock.config, signing_key=key)
            if seed is not None:
                config = dataclasses.replace(config, seed=seed)
            world = PlatformMock(config)
            world.journal.observers.append(self._mock.report.add)
            server = BackgroundServer(world, self._host, 0, makes_worlds=False).start()
        finally:
            with self._lock:
                self._starting -= 1
        with self._lock:
            if not self._closed:
                self._servers[world_id] = server
                return {"id": world_id, **server.coordinates.to_dict()}
        server.stop()  # the mock stopped while this world started
        raise errors.WorldNotFound("This mock stopped while the world started")

    def remove(self, world_id: str) -> bool:
        """Stop serving a world; False if there is none by that id."""
        with self._lock:
            server = self._servers.pop(world_id, None)
        if server is None:
            return False
        server.stop()
        return True

    def close(self) -> None:
        """Stop serving every world."""
        with self._lock:
            self._closed = True
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()


class _MadeByAnother:
    """The worlds a world serves: none (see `Worlds`)."""

    def create(self, seed: int | None) -> ServedWorld:
        raise errors.WorldNotFound(
            "This mock is a world served beside another mock, and makes no worlds of its own: "
            "ask that mock for another world (POST /__admin/worlds there)"
        )

    def remove(self, world_id: str) -> bool:
        return False


MADE_BY_ANOTHER = _MadeByAnother()
