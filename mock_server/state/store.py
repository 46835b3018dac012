"""The store: one app's whole platform state, its lock, and the reset that rebuilds it.

The store is owned by an app instance, never by a module: two apps in one process share
nothing. Every change of the world, and every operation of the API, happens under
`Store.lock`; the domain rules live in one area object per part of the platform
(`store.identity`, `store.secrets`, ...).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

import orjson

from mock_server.state import fixture_format
from mock_server.state.area import Area
from mock_server.state.artifacts import Artifacts
from mock_server.state.deployments import Deployments
from mock_server.state.fixture_format import SECTIONS
from mock_server.state.gateway import Gateway
from mock_server.state.identity import Identity
from mock_server.state.jobs import Jobs
from mock_server.state.manifests import Manifests
from mock_server.state.secrets import Secrets
from mock_server.state.sources import Sources, SourcesState, iso, seed_problem, world_time
from mock_server.state.storage import Storage
from mock_server.state.tokens import Minter, Tokens
from mock_server.state.world import FrozenWorld, World


class Document(Protocol):
    """A fixture document, checked, as the store applies it: its content, and how it enters
    a store (section by section, through `Store.sections()`, with its own errors). The
    fixture layer's `Fixture` is one; the store knows no more of fixtures than this."""

    @property
    def data(self) -> Mapping[str, Any]: ...

    def apply_to(self, store: Store) -> None: ...


MAX_SNAPSHOTS = 8  # worlds a store keeps to restore: seeds and sets of extra documents


def _world_key(seed: int, extra: list[Document]) -> Hashable | None:
    """What names a world built from the initial documents: its seed and the extra
    documents' content (None when that content cannot be told apart: never restored)."""
    try:
        return (seed, *(orjson.dumps(d.data, option=orjson.OPT_SORT_KEYS) for d in extra))
    except TypeError:
        return None


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
        seed: int,
        documents: Iterable[Document],
        signer: Minter,
        *,
        world: tuple[World, Sources] | None = None,
    ):
        """`signer`: the server's, for its whole life (re-seeds included), given by the app.
        `world`: a world and its sources to hold as they are (`apart`), instead of the one
        the documents build."""
        _check_seed(seed)
        self.lock = threading.RLock()
        self.seed = seed
        self.initial_documents: list[Document] = list(documents)
        self.signer = signer
        # How many worlds this store has built: personal access token ids are drawn for each
        # world apart, so that no id (and no token) of an earlier world comes back.
        self.generation = -1
        # The areas, each given those it builds on: the one place they are made and listed.
        self.identity: Identity = Identity(self)
        self.secrets: Secrets = Secrets(self, self.identity)
        self.jobs: Jobs = Jobs(self, self.identity)
        self.deployments: Deployments = Deployments(self, self.identity, self.secrets, self.jobs)
        self.artifacts: Artifacts = Artifacts(self, self.identity)
        self.storage: Storage = Storage(self, self.identity, self.artifacts, self._url_secret)
        self.manifests: Manifests = Manifests(
            self, self.identity, self.secrets, self.artifacts, self.trial
        )
        self.tokens: Tokens = Tokens(self, self.identity)
        self.gateway: Gateway = Gateway(self)
        self.areas: tuple[Area, ...] = tuple(v for v in vars(self).values() if isinstance(v, Area))
        self._loaders = self._gather_loaders()
        # Worlds as built, by seed and extra documents (the initial world of a seed has none):
        # what `reset()` restores. The most recently used are kept.
        self._snapshots: OrderedDict[Hashable, tuple[FrozenWorld, SourcesState]] = OrderedDict()
        if world is not None:
            self.world, self.sources = world
            return
        self.world = World()
        self.sources = Sources(seed)
        self.reset()

    def apart(self) -> Store:
        """A store of its own on a copy of this world as it is now, made in milliseconds at
        any size (`World.copy`): what a long read works on (a dump of a big world) while
        this store goes on answering, its lock free. It keeps no snapshot to reset to."""
        with self.lock:
            sources = Sources.restored(self.sources.snapshot(), self.sources.faker)
            world = (self.world.copy(), sources)
            return Store(self.seed, self.initial_documents, self.signer, world=world)

    def _gather_loaders(self) -> dict[str, Callable[[Any], None]]:
        """Every section's loader, from the area that owns it; a section owned twice, or
        not at all, is a bug of the mock found at start-up."""
        loaders: dict[str, Callable[[Any], None]] = {
            "clock": lambda moment: self.sources.clock.set(world_time(moment))
        }
        for area in self.areas:
            for section, loader in area.loaders().items():
                assert section not in loaders, f"fixture section {section!r} owned twice"
                loaders[section] = loader
        assert set(loaders) == set(SECTIONS), (
            f"sections without an area: {set(SECTIONS) ^ set(loaders)}"
        )
        return loaders

    def sections(self) -> list[tuple[str, Callable[[Any], None]]]:
        """Each fixture section with what applies one record of it, in `SECTIONS` order."""
        return [(section, self._loaders[section]) for section in SECTIONS]

    def dump(self) -> dict[str, Any]:
        """The whole world as a fixture document (its empty sections left out): loaded into a
        store without other documents, it rebuilds this world, ids and timestamps included.
        Each area's dump is its own: it shares nothing the world goes on changing. It is
        written from a copy of the world (`apart`): the lock is held for milliseconds, not
        for the seconds a dump of a big world takes."""
        copy = self.apart()
        written: dict[str, Any] = {"clock": iso(copy.sources.clock.now())}
        for area in copy.areas:
            written.update(area.dump())
        return fixture_format.document(written)

    def reset(self, seed: int | None = None, extra: Iterable[Document] = ()) -> None:
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

    def _rebuild(self, seed: int | None, extra: list[Document], key: Hashable | None) -> None:
        before = (self.seed, self.world, self.sources)
        if seed is not None:
            self._reseed(seed)
        self.generation += 1
        self.sources = Sources(self.seed, faker=self.sources.faker, generation=self.generation)
        self.world = World()
        try:
            for document in self.initial_documents:
                document.apply_to(self)
            self.jobs.build_indexes()
            self._keep(_world_key(self.seed, []))
            for document in extra:
                document.apply_to(self)
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

    def replace(self, documents: Iterable[Document]) -> None:
        """The world of these initial documents in place of the current one (their files were
        edited: `serve --watch`), whole or not at all. It is built apart, while the running
        world goes on answering, then put in place at once; the seed and the signing key stay,
        and the new world draws its token ids from a stream of its own, as after a reset."""
        built = Store(self.seed, documents, self.signer)
        with self.lock:
            self.generation += 1
            self.initial_documents = built.initial_documents
            self._snapshots = built._snapshots
            self.world = built.world
            self.sources = Sources.restored(
                built.sources.snapshot(), built.sources.faker, self.generation
            )

    def load(self, document: Document) -> None:
        """Apply one more fixture document to the current world, whole or not at all."""
        with self.lock:
            before = (self.world.copy(), self.sources.snapshot())
            try:
                document.apply_to(self)
            except BaseException:
                world, sources = before
                self.world = world
                self.sources = Sources.restored(sources, self.sources.faker)
                raise

    def _url_secret(self) -> bytes:
        """What signed URLs are signed with: the server's key and the world's generation,
        so that a URL of an earlier world is refused."""
        return f"{self.signer.key}\n{self.generation}".encode()

    @contextmanager
    def trial(self) -> Iterator[None]:
        """A change made inside is undone at the end, whatever happens (a dry run)."""
        with self.lock:
            before = (self.world.copy(), self.sources.snapshot())
            try:
                yield
            finally:
                world, sources = before
                self.world = world
                self.sources = Sources.restored(sources, self.sources.faker)

    def tick(self) -> None:
        """Move the clock on: called once per state change."""
        self.sources.clock.advance(1)
