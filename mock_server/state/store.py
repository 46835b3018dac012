"""The store: one app's whole platform state, its lock, and the reset that rebuilds it.

The store is owned by an app instance, never by a module: two apps in one process share
nothing. Every change of the world, and every operation of the API, happens under
`Store.lock`; the domain rules live in one area object per part of the platform
(`store.identity`, `store.secrets`, ...).
"""

from __future__ import annotations

import functools
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import orjson

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
from mock_server.state.sources import Sources, SourcesState, seed_problem

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
    subject_names: dict[tuple[str, str], Subject] = field(default_factory=dict)  # (type, name)
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
    # Indexes, so that a request costs what it asks and not what the world holds: each is
    # kept beside the container it indexes, by the area that changes that container.
    tokens_by_jwt: dict[str, PersonalAccessToken] = field(default_factory=dict)  # by JWT id
    grants_by_holder: dict[tuple[str, str], list[Grant]] = field(default_factory=dict)
    grants_by_resource: dict[tuple[str, str], list[Grant]] = field(default_factory=dict)
    teams_by_member: dict[str, list[Subject]] = field(default_factory=dict)  # by user id
    resource_names: dict[tuple[str, str], Resource] = field(default_factory=dict)  # (type, name)
    groups_by_secret: dict[str, SecretGroup] = field(default_factory=dict)  # by secret id
    deployments_by_secret: dict[str, list[Deployment]] = field(default_factory=dict)  # by fqn
    # Every id an entity of the world holds, whatever its kind, and what holds it.
    ids: dict[str, str] = field(default_factory=dict)

    def copy(self) -> World:
        """A world that changes apart from this one, made in milliseconds at any size.

        Job runs never change once recorded, and a run index is derived from them and
        rebuilt rather than changed (`Jobs._index`): the copy shares both, in containers of
        its own. Everything else, a few entities however big the world, is copied deeply
        in one go (`FrozenWorld`), so the copies refer to each other as the originals do.
        (A shared run refers to the original application and subject; what it reads of
        them, ids, names and slugs, never changes.)"""
        return FrozenWorld(self).thaw()


# Containers a copy of a world copies shallowly: what they hold is never changed in place.
_SHARED = frozenset({"job_runs", "run_indexes", "ids"})


class FrozenWorld:
    """A world kept to be restored, many times for the snapshot `reset()` restores: its
    entities pickled once (unpickling them is several times faster than a deep copy), its
    runs and run indexes shared."""

    def __init__(self, world: World):
        rest = {f.name: getattr(world, f.name) for f in fields(world) if f.name not in _SHARED}
        self._rest = pickle.dumps(rest, protocol=pickle.HIGHEST_PROTOCOL)
        self._job_runs = {app: list(runs) for app, runs in world.job_runs.items()}
        self._run_indexes = dict(world.run_indexes)
        self._ids = dict(world.ids)

    def thaw(self) -> World:
        """A world of its own, as this one was."""
        return World(
            **pickle.loads(self._rest),
            job_runs={app: list(runs) for app, runs in self._job_runs.items()},
            run_indexes=dict(self._run_indexes),
            ids=dict(self._ids),
        )


MAX_SNAPSHOTS = 8  # worlds a store keeps to restore: seeds and sets of extra documents


def _world_key(seed: int, extra: list[Fixture]) -> Hashable | None:
    """What names a world built from the initial documents: its seed and the extra
    documents' content (None when that content cannot be told apart: never restored)."""
    try:
        return (seed, *(orjson.dumps(d.data, option=orjson.OPT_SORT_KEYS) for d in extra))
    except TypeError:
        return None


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


def _check_seed(seed: int) -> None:
    problem = seed_problem(seed)
    if problem:
        raise ValueError(problem)


class Store:
    """The platform's state for one app: entities, rules, seeded sources and a lock.

    `documents` are the fixture documents (already checked) of the initial world. The world
    they build is kept as a snapshot, and `reset()` restores it (copies of its containers;
    see `World.copy`) without reading or applying a document again, so a reset takes
    milliseconds whatever the size of the world, and the reset world is the fresh one.
    """

    def __init__(
        self,
        seed: int = 0,
        documents: Iterable[Fixture] = (),
        signing_key: str | None = None,
    ):
        from mock_server.auth import Signer, new_key
        from mock_server.state.artifacts import Artifacts
        from mock_server.state.deployments import Deployments
        from mock_server.state.gateway import Gateway
        from mock_server.state.identity import Identity
        from mock_server.state.jobs import Jobs
        from mock_server.state.secrets import Secrets
        from mock_server.state.tokens import Tokens

        _check_seed(seed)
        self.lock = threading.RLock()
        self.seed = seed
        self.initial_documents: list[Fixture] = list(documents)
        # The server's key for its whole life, re-seeds included: given, or drawn now.
        self.signer = Signer(signing_key or new_key())
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
        # Worlds as built, by seed and extra documents (the initial world of a seed has none):
        # what `reset()` restores. The most recently used are kept.
        self._snapshots: OrderedDict[Hashable, tuple[FrozenWorld, SourcesState]] = OrderedDict()
        self.reset()

    def reset(self, seed: int | None = None, extra: Iterable[Fixture] = ()) -> None:
        """Back to the initial world of the seed (the current one if None), with the `extra`
        documents applied after the initial ones. Documents loaded since are dropped. A world
        built once is kept as a snapshot and restored afterwards (copies of its containers;
        see `World.copy`) without reading or applying a document again, so that a reset
        takes milliseconds whatever the size of the world. Each reset makes a new world,
        which draws its personal access token ids from a stream of its own. The signing key
        stays the store's whatever the seed."""
        if seed is not None:
            _check_seed(seed)
        extra = list(extra)
        with self.lock:
            key = _world_key(self.seed if seed is None else seed, extra)
            kept = self._snapshots.get(key) if key is not None else None
            if kept is None:
                self._rebuild(seed, extra, key)
                return
            self._snapshots.move_to_end(key)
            if seed is not None and seed != self.seed:
                self._reseed(seed)
            self.generation += 1
            world, sources = kept
            self.world = world.thaw()
            self.sources = Sources.restored(sources, self.sources.faker, self.generation)

    def _reseed(self, seed: int) -> None:
        self.seed = seed  # the signing key stays: it is the server's, not the seed's

    def _rebuild(self, seed: int | None, extra: list[Fixture], key: Hashable | None) -> None:
        from mock_server.fixtures import apply_document

        before = (self.seed, self.world, self.sources)
        if seed is not None:
            self._reseed(seed)
        self.generation += 1
        self.sources = Sources(self.seed, faker=self.sources.faker, generation=self.generation)
        self.world = World()
        try:
            for document in self.initial_documents:
                apply_document(self, document)
            self.jobs.build_indexes()
            self._keep(_world_key(self.seed, []))
            for document in extra:
                apply_document(self, document)
            if extra:
                self._keep(key)
        except BaseException:  # an extra document that cannot enter: the world as it was
            self.seed, self.world, self.sources = before
            raise

    def _keep(self, key: Hashable | None) -> None:
        """Keep the world as it is now, to be restored by the reset that names it."""
        if key is None:
            return
        self._snapshots[key] = (FrozenWorld(self.world), self.sources.snapshot())
        self._snapshots.move_to_end(key)
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)

    def replace(self, documents: Iterable[Fixture]) -> None:
        """The world of these initial documents in place of the current one (their files were
        edited: `serve --watch`), whole or not at all. It is built apart, while the running
        world goes on answering, then put in place at once; the seed and the signing key stay,
        and the new world draws its token ids from a stream of its own, as after a reset."""
        built = Store(self.seed, documents, self.signer.key)
        with self.lock:
            self.generation += 1
            self.initial_documents = built.initial_documents
            self._snapshots = built._snapshots
            self.world = built.world
            self.sources = Sources.restored(
                built.sources.snapshot(), built.sources.faker, self.generation
            )

    def load(self, document: Fixture) -> None:
        """Apply one more fixture document to the current world, whole or not at all."""
        from mock_server.fixtures import apply_document

        with self.lock:
            before = (self.world.copy(), self.sources.snapshot())
            try:
                apply_document(self, document)
            except BaseException:
                world, sources = before
                self.world = world
                self.sources = Sources.restored(sources, self.sources.faker)
                raise

    def tick(self) -> None:
        """Move the clock on: called once per state change."""
        self.sources.clock.advance(1)
