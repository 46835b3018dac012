"""What every handler needs from the request: the mock serving it, its store, the caller,
and what else of the request it reads (`Call`), set by the HTTP layer around each call.

Handlers know the mock by what they use of it (`Mock`), not by the app that builds it (the
app composes the layers and sits above them all), and know no web framework: a body of
another media type than JSON is an `Answer`, which the HTTP layer sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from mock_server.core.coordinates import CoordinatesWire
from mock_server.fixtures.loader import Fixture
from mock_server.reports.report import ContractReport
from mock_server.services.auth import Authenticator
from mock_server.services.exchange import Exchange, Pace
from mock_server.services.faults import Faults
from mock_server.services.journal import Journal
from mock_server.state import Caller, Store
from mock_server.view.live import Hub


class ServedWorld(CoordinatesWire):
    """A world served beside a mock, as the admin API describes it (`World` of
    spec/admin.yaml): its id, and where it is (`Coordinates.to_dict()`)."""

    id: str


class WorldHost(Protocol):
    """What serves other worlds beside a mock (`POST /__admin/worlds`): the server layer,
    which alone can listen on new ports."""

    def create(self, seed: int | None) -> ServedWorld: ...

    def remove(self, world_id: str) -> bool: ...


class Mock(Protocol):
    """The mock serving a request, as its handlers and HTTP layers use it."""

    store: Store
    auth: Authenticator
    journal: Journal
    faults: Faults
    report: ContractReport  # of every request since the start
    journal_report: ContractReport  # of the requests since the journal was last cleared
    live: Hub
    worlds: WorldHost | None
    gateway_prefix: str
    admin_prefix: str

    def reset(self, seed: int | None = None, extra: Iterable[Fixture] = ()) -> None: ...

    def log_dropped(self) -> int: ...


@dataclass(frozen=True)
class Call:
    """One request as its handler sees it."""

    mock: Mock
    exchange: Exchange
    headers: Mapping[str, str]  # case-insensitive
    scheme: str  # as the request reached the server: http or https
    server: str  # the server's own `host:port`, as it listens


@dataclass(frozen=True)
class Answer:
    """A body answered as it is, of another media type than JSON (the gateway's events), or
    delivered at a pace of its own (`pace`: a scripted reply's delays and dropped stream)."""

    body: bytes
    media_type: str
    headers: dict[str, str] = field(default_factory=dict)
    pace: Pace | None = None


_CALL: ContextVar[Call] = ContextVar("platform_mock_call")


@contextmanager
def serving(call: Call) -> Iterator[None]:
    """Make `call` the request the handlers see, for the duration of its handler."""
    token = _CALL.set(call)
    try:
        yield
    finally:
        _CALL.reset(token)


def current() -> Call:
    """The request being served."""
    return _CALL.get()


def mock() -> Mock:
    """The mock serving this request."""
    return _CALL.get().mock


def store() -> Store:
    """The store of the mock serving this request."""
    return _CALL.get().mock.store


def caller() -> Caller:
    """The caller, as authenticated by the security layer before the handler runs."""
    found = _CALL.get().exchange.caller
    assert found is not None, "an operation that takes no token has no caller"
    return found
