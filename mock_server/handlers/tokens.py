"""Handler of operation 5: get or create a personal access token."""

from __future__ import annotations

from typing import Any

from mock_server.handlers import render
from mock_server.handlers.context import caller, store


def get_or_create(name: str, team_name: str | None = None) -> dict[str, Any]:
    return render.issued_token(store().tokens.get_or_create(caller(), name, team_name))
