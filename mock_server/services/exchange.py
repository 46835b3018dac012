"""One request as every layer of the mock sees it: a typed record in the request's scope.

The layers of a request (path guard, routing notes, security, request validation, faults,
the handler, error rendering, the journal and the log) each read or fill their part of one
`Exchange`, kept in the ASGI scope's `extensions`, which every shallow copy Connexion makes
of the scope shares. Fields, not string keys: a typo is a type error, not a silent miss.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from mock_server.contract import parameters
from mock_server.core.errors import PlatformError
from mock_server.core.jsonvalue import JsonObject, JsonValue
from mock_server.state.entities import Caller, PersonalAccessToken

KEY = "platform_mock"  # of the scope's `extensions`


@dataclass(frozen=True)
class Pace:
    """How an answer is delivered, as its handler asks (a scripted reply of the gateway):
    seconds before each event of a stream, and how many events go out before the
    connection drops (None: all; 0: the answer is never sent)."""

    delay: float = 0.0
    drop_after: int | None = None


@dataclass(slots=True)
class Exchange:
    """What the layers have learnt of one request, and decided for its answer."""

    path_params: dict[str, str] = field(default_factory=dict)  # routed, as text
    # What request validation parsed, for the handler, under the spec's parameter names
    # (and `body`).
    arguments: JsonObject = field(default_factory=dict)
    caller: Caller | None = None  # who the bearer token names, once security has run
    token: PersonalAccessToken | None = None  # the personal access token it was, if one
    error: PlatformError | None = None  # the error answered, as the error handler rendered it
    fault: str | None = None  # the fault rule that applied ("prefer" for the header's)
    drop: bool = False  # a fault's: close the connection without an answer
    pace: Pace | None = None  # the handler's: how its answer is delivered
    # The JSON body the handler's value was written as, with that value: response validation
    # checks the value itself rather than parse the bytes it was just written to again.
    written: tuple[bytes, JsonValue] | None = None
    _pairs: list[tuple[str, str]] | None = None
    _query: dict[str, list[str]] | None = None

    def query_pairs(self, query_string: bytes) -> list[tuple[str, str]]:
        """The query's (key, value) pairs, parsed once for validation, the handler, the
        journal and the fault rules alike."""
        if self._pairs is None:
            self._pairs = parameters.query_pairs(query_string)
        return self._pairs

    def query_by_key(self, query_string: bytes) -> dict[str, list[str]]:
        """The query's values by key, in the order given, grouped once."""
        if self._query is None:
            self._query = parameters.by_key(self.query_pairs(query_string))
        return self._query


def exchange(scope: MutableMapping[str, Any]) -> Exchange:
    """The request's exchange, made on first use and shared by all copies of its scope."""
    extensions = scope.setdefault("extensions", {})
    found = extensions.get(KEY)
    if not isinstance(found, Exchange):
        found = extensions[KEY] = Exchange()
    return found
