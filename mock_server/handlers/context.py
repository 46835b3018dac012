"""What every handler needs from the request: the app's mock, its store, and the caller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flask import current_app

from mock_server.state import Caller, Store

if TYPE_CHECKING:
    from mock_server.app import PlatformMock

EXTENSION = "platform_mock"


def mock() -> PlatformMock:
    """The mock serving this request."""
    return current_app.extensions[EXTENSION]


def store() -> Store:
    """The store of the mock serving this request."""
    return mock().store


def caller(token_info: dict[str, Any]) -> Caller:
    """The caller, as authenticated by the security layer before the handler runs."""
    return token_info["caller"]
