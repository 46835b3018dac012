"""Serving a mock over real HTTP from inside a Python process (tests, the pytest plugin).

`BackgroundServer` runs uvicorn on a daemon thread, bound to a free loopback port, and waits
until the server accepts connections before returning.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from mock_server.app import PlatformMock
from mock_server.middleware import quiet_dropped_connections


class BackgroundServer:
    """A PlatformMock served by uvicorn on a background thread."""

    def __init__(self, mock: PlatformMock, host: str = "127.0.0.1", port: int = 0):
        self.mock = mock
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.host, self.port = self._sock.getsockname()[:2]
        self._server = uvicorn.Server(
            uvicorn.Config(mock, log_level="warning", lifespan="off", access_log=False)
        )
        quiet_dropped_connections()
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL: the control plane is under `/api/svc/v1`, the gateway under its prefix."""
        return f"http://{self.host}:{self.port}"

    @property
    def gateway_url(self) -> str:
        return f"{self.url}{self.mock.gateway_prefix}"

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the mock server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
