"""The store: one app's whole platform state, its lock, and the reset that rebuilds it.

The store is owned by an app instance, never by a module: two apps in one process share
nothing. Every change of the world, and every operation of the API, happens under
`Store.lock`; the domain rules live in one area object per part of the platform
(`store.identity`, `store.secrets`, ...).
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from mock_server.state.entities import (
    Application,
    Artifact,
    ArtifactVersion,
    Deployment,
    Grant,
    JobRun,
    MlRepo,
    PersonalAccessToken,
    Resource,
    SecretGroup,
    Subject,
)
from mock_server.state.sources import Sources

if TYPE_CHECKING:
    from mock_server.fixtures import Fixture
    from mock_server.state.artifacts import Artifacts
    from mock_server.state.deployments import Deployments
    from mock_server.state.gateway import Gateway
    from mock_server.state.identity import Identity
    from mock_server.state.jobs import Jobs, RunIndex
    from mock_server.state.secrets import Secrets
    from mock_server.state.tokens import Tokens


@dataclass
class World:
    """Every entity of the platform, in insertion order (which is also creation order)."""

    tenant: Resource | None = None
    subjects: dict[tuple[str, str], Subject] = field(default_factory=dict)  # (type, id)
    resources: dict[tuple[str, str], Resource] = field(default_factory=dict)  # (type, id)
    grants: list[Grant] = field(default_factory=list)
    secret_groups: dict[str, SecretGroup] = field(default_factory=dict)
    ml_repos: dict[str, MlRepo] = field(default_factory=dict)  # by name
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    artifact_versions: dict[str, ArtifactVersion] = field(default_factory=dict)
    applications: dict[str, Application] = field(default_factory=dict)
    deployments: dict[str, Deployment] = field(default_factory=dict)
    job_runs: dict[str, list[JobRun]] = field(default_factory=dict)  # by application id
    tokens: dict[tuple[str, str], PersonalAccessToken] = field(default_factory=dict)
    model_responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_indexes: dict[str, RunIndex] = field(default_factory=dict)  # derived, by application
    # Every id an entity of the world holds, whatever its kind, and what holds it.
    ids: dict[str, str] = field(default_factory=dict)


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

    def __init__(self, store: Store):
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


class Store:
    """The platform's state for one app: entities, rules, seeded sources and a lock.

    `documents` are the fixture documents (already checked) of the initial world; `reset()`
    rebuilds the world from them and the seed, so a reset world is the same as a fresh one.
    """

    def __init__(
        self,
        seed: int = 0,
        documents: Iterable[Fixture] = (),
        signing_key: str | None = None,
    ):
        from mock_server.auth import Signer, default_key
        from mock_server.state.artifacts import Artifacts
        from mock_server.state.deployments import Deployments
        from mock_server.state.gateway import Gateway
        from mock_server.state.identity import Identity
        from mock_server.state.jobs import Jobs
        from mock_server.state.secrets import Secrets
        from mock_server.state.tokens import Tokens

        self.lock = threading.RLock()
        self.seed = seed
        self.initial_documents: list[Fixture] = list(documents)
        self._signing_key = signing_key  # a key given outright outlives re-seeds
        self.signer = Signer(signing_key or default_key(seed))
        # How many worlds this store has built: personal access token ids are drawn for each
        # world apart, so that no id (and no token) of an earlier world comes back.
        self.generation = -1
        self.identity: Identity = Identity(self)
        self.secrets: Secrets = Secrets(self)
        self.deployments: Deployments = Deployments(self)
        self.artifacts: Artifacts = Artifacts(self)
        self.tokens: Tokens = Tokens(self)
        self.jobs: Jobs = Jobs(self)
        self.gateway: Gateway = Gateway(self)
        self.world = World()
        self.sources = Sources(seed)
        self.reset()

    def reset(self, seed: int | None = None, extra: Iterable[Fixture] = ()) -> None:
        """Rebuild the world from scratch: the initial documents (then `extra` ones), with
        the seed (a new one if given). Documents loaded since are dropped."""
        from mock_server.auth import Signer, default_key
        from mock_server.fixtures import apply_document

        with self.lock:
            before = (self.seed, self.world, self.sources, self.signer)
            if seed is not None:
                self.seed = seed
                # Keys follow the seed, as `platform-mock token --seed N` derives them.
                self.signer = Signer(self._signing_key or default_key(seed))
            self.generation += 1
            self.sources = Sources(self.seed, faker=self.sources.faker, generation=self.generation)
            self.world = World()
            try:
                for document in [*self.initial_documents, *extra]:
                    apply_document(self, document)
            except BaseException:  # an extra document that cannot enter: the world as it was
                self.seed, self.world, self.sources, self.signer = before
                raise

    def load(self, document: Fixture) -> None:
        """Apply one more fixture document to the current world, whole or not at all."""
        from mock_server.fixtures import apply_document

        with self.lock:
            before = copy.deepcopy((self.world, self.sources))
            try:
                apply_document(self, document)
            except BaseException:
                self.world, self.sources = before
                raise

    def tick(self) -> None:
        """Move the clock on: called once per state change."""
        self.sources.clock.advance(1)
