"""Handler of operation 5: get or create a personal access token."""

from __future__ import annotations

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation


@operation(
    "getOrCreatePersonalAccessToken",
    Example("GET", "/api/svc/v1/personal-access-tokens/{name}", params={"name": "ci"}),
    {400: errors.InvalidTeam},
    read_only=False,  # a GET that creates the token it is asked for when there is none
)
def get_or_create(name: str, team_name: str | None = None) -> render.IssuedTokenRecord:
    return render.issued_token(store().tokens.get_or_create(caller(), name, team_name))
