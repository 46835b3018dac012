"""What every area of the platform's rules stands on: its store's world, lock, seeded
sources and clock (`Ground`), and the ids its new entities claim.

An area is given its ground and the areas it builds on (`Secrets` is given `Identity`) by
the store that composes them: no area imports the store.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, ParamSpec, Protocol, TypeVar

from mock_server.state.fixture_format import FixtureDocument
from mock_server.state.sources import Sources
from mock_server.state.world import World


class Ground(Protocol):
    """What an area reads of its store: the world and its lock, the seeded sources, and the
    clock's tick."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def world(self) -> World: ...

    @property
    def sources(self) -> Sources: ...

    def tick(self) -> None: ...


class IdTaken(ValueError):
    """An id given for a new entity that an entity of the world already holds."""

    def __init__(self, id_: str, holder: str):
        super().__init__(f"id {id_!r} is already taken by {holder}")
        self.id = id_


P = ParamSpec("P")
R = TypeVar("R")


def locked(method: Callable[P, R]) -> Callable[P, R]:
    """Run an area method under its store's lock."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with args[0].store.lock:  # type: ignore[attr-defined]
            return method(*args, **kwargs)

    return wrapper


class Area:
    """A part of the platform's rules, working on its store's world."""

    def __init__(self, store: Ground):
        self.store = store

    @property
    def world(self) -> World:
        return self.store.world

    @property
    def sources(self) -> Sources:
        return self.store.sources

    def claim_id(
        self, holder: str, given: str | None, fresh: Callable[[], str] | None = None
    ) -> str:
        """The id of a new entity (`holder` names it in errors): the given one, refused when
        any entity of the world, of whatever kind, already holds it; else a fresh one (drawn
        again if taken). The caller holds the lock."""
        ids = self.world.ids
        if given is not None:
            if given in ids:
                raise IdTaken(given, ids[given])
            new = given
        else:
            assert fresh is not None, "an entity needs a given or a fresh id"
            new = fresh()
            while new in ids:
                new = fresh()
        ids[new] = holder
        return new

    def new_id(self, holder: str, given: str | None, prefix: str) -> str:
        """`claim_id` with a fresh id of the seed (`prefix-` and 16 hex digits)."""
        return self.claim_id(holder, given, lambda: self.sources.new_id(prefix))

    def release_ids(self, *ids: str) -> None:
        """Free the ids of entities removed from the world."""
        for id_ in ids:
            self.world.ids.pop(id_, None)

    # -- fixtures: the sections of a document an area owns, read and written side by side --
    def loaders(self) -> dict[str, Callable[[Any], None]]:
        """Each fixture section this area owns, and what applies one record of it."""
        return {}

    def dump(self) -> FixtureDocument:
        """This area's sections of the world's fixture document."""
        return {}
