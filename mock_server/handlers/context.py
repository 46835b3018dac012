"""What every handler needs from the request: the app's store and the authenticated caller."""

from __future__ import annotations

from typing import Any

from flask import current_app

from mock_server.state import Caller, Store

EXTENSION = "platform_mock"


def store() -> Store:
    """The store of the app serving this request."""
    return current_app.extensions[EXTENSION]


def caller(token_info: dict[str, Any]) -> Caller:
    """The caller, as authenticated by the security layer before the handler runs."""
    return token_info["caller"]
