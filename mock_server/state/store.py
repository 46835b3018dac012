"""The store: one app's whole platform state, its lock, and the reset that rebuilds it.

The store is owned by an app instance, never by a module: two apps in one process share
nothing. Every change of the world, and every operation of the API, happens under
`Store.lock`; the domain rules live in one area object per part of the platform
(`store.identity`, `store.secrets`, ...).
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

import orjson
from faker import Faker

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


class _Collector:
    """Python's cycle collector held off while worlds are built aside, process-wide.

    A world of 100,000 runs is half a million objects; built with the collector on, each
    full collection on the way walks all of them, holding the interpreter (and so the event
    loop) for 150 to 400 ms at a time. The objects a build makes are freed by reference
    counting when their world goes (a re-seed of a 100k-run world leaves 42 objects in
    cycles), so the collector is off while any build runs, and a build that leaves many
    objects behind moves them, with every object alive then, out of its reach for good
    (`gc.freeze`): the few cycles an old world leaves are kept, not walked again."""

    FREEZE_OVER = 50_000  # objects a build leaves that a young collection would walk

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builds = 0
        self._was_on = True

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._builds == 0:
                self._was_on = gc.isenabled()
                gc.disable()
            self._builds += 1
        try:
            yield
        finally:
            with self._lock:
                self._builds -= 1
                if self._builds == 0 and self._was_on:
                    # The youngest generation's own list: its count nets out the old
                    # world's objects freed, which were older.
                    if len(gc.get_objects(generation=0)) > self.FREEZE_OVER:
                        gc.freeze()
                    gc.enable()


_COLLECTOR = _Collector()


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

    A world that takes long to make (a document loaded, a re-seed, a reset with documents not
    seen yet, the initial documents replaced) is built aside, on a store of its own and
    outside `lock`, and swapped in whole under the lock (read-copy-update): every request
    meanwhile is answered from the world as it was, and none sees a change half-applied.
    One such build runs at a time (`_building`); a reset or a replace is never asked for by
    a caller that holds the lock (the build needs it to swap), and a load asked for while
    another build runs applies its document in place, under the lock. A change a request
    makes while a re-seed or a reset is built is made on the old world and goes with it (the
    reset comes after it); one made while a document is loaded aside is kept: the swap sees
    it (`changes`) and the document is applied again on the world as it now is, under the
    lock. Python's cycle collector is held off meanwhile (`_Collector`).
    """

    def __init__(
        self,
        seed: int,
        documents: Iterable[Document],
        signer: Minter,
        *,
        world: tuple[World, Sources] | None = None,
        generation: int = 0,
        faker: Faker | None = None,
    ):
        """`signer`: the server's, for its whole life (re-seeds included), given by the app.
        `world`: a world and its sources to hold as they are (`apart`), instead of the one
        the documents build. `generation` and `faker`: those of the world built, when it is
        built aside for another store (`reset`, `replace`)."""
        _check_seed(seed)
        self.lock = threading.RLock()
        # Held by whatever builds a world aside to swap it in (`load`, `reset`, `replace`):
        # one at a time, and the spare Faker theirs alone meanwhile.
        self._building = threading.Lock()
        self.seed = seed
        self.initial_documents: list[Document] = list(documents)
        self.signer = signer
        # How many worlds this store has built: personal access token ids are drawn for each
        # world apart, so that no id (and no token) of an earlier world comes back.
        self.generation = generation
        # How many changes the world has seen (`tick`): what tells a load built aside that
        # a request changed the world meanwhile.
        self.changes = 0
        # A Faker no request uses, for the world being built aside; the old world's becomes
        # the spare at each swap.
        self._spare_faker: Faker | None = None
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
        self.sources = Sources(seed, faker=faker, generation=generation)
        self._build([], None)

    def apart(self, faker: Faker | None = None) -> Store:
        """A store of its own on a copy of this world as it is now, made in milliseconds at
        any size (`World.copy`): what a long read works on (a dump of a big world) while
        this store goes on answering, its lock free; with a `faker` of its own, what a
        document is loaded on aside. It keeps no snapshot to reset to."""
        with self.lock:
            sources = Sources.restored(self.sources.snapshot(), faker or self.sources.faker)
            world = (self.world.copy(), sources)
            return Store(
                self.seed,
                self.initial_documents,
                self.signer,
                world=world,
                generation=self.generation,
            )

    def _spare(self) -> Faker:
        """The Faker of a world built aside (the caller holds `_building`)."""
        if self._spare_faker is None:
            self._spare_faker = Faker("en_US")
        return self._spare_faker

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

    def dump(self) -> fixture_format.FixtureDocument:
        """The whole world as a fixture document (its empty sections left out): loaded into a
        store without other documents, it rebuilds this world, ids and timestamps included.
        Each area's dump is its own: it shares nothing the world goes on changing. It is
        written from a copy of the world (`apart`): the lock is held for milliseconds, not
        for the seconds a dump of a big world takes."""
        copy = self.apart()
        written = fixture_format.FixtureDocument(clock=iso(copy.sources.clock.now()))
        for area in copy.areas:
            written.update(area.dump())
        return fixture_format.document(written)

    def reset(self, seed: int | None = None, extra: Iterable[Document] = ()) -> None:
        """Back to the initial world of the seed (the current one if None), with the `extra`
        documents applied after the initial ones. Documents loaded since are dropped. A world
        built once is kept as a snapshot and restored afterwards (copies of its containers;
        see `World.copy`) without reading or applying a document again, so that a reset
        takes milliseconds whatever the size of the world; one not built yet is built aside
        and swapped in whole (see the class). Each reset makes a new world, which draws its
        personal access token ids from a stream of its own. The signing key stays the
        store's whatever the seed."""
        if seed is not None:
            _check_seed(seed)
        extra = list(extra)
        with self._building:
            seed = self.seed if seed is None else seed
            key = _world_key(seed, extra)
            with self.lock:
                kept = self._snapshots.get(key) if key is not None else None
                if kept is not None:
                    self._snapshots.move_to_end(key)
                    self.seed = seed  # the signing key stays: it is the server's, not the seed's
                    self.generation += 1
                    world, sources = kept
                    self.world = world.thaw()
                    self.sources = Sources.restored(sources, self.sources.faker, self.generation)
                    return
                generation = self.generation + 1
            with _COLLECTOR.held():
                self._rebuild(seed, generation, extra, key)

    def _rebuild(
        self, seed: int, generation: int, extra: list[Document], key: Hashable | None
    ) -> None:
        """The world of `seed` and `extra` built aside, outside the lock, and swapped in (the
        caller holds `_building`); a document that cannot enter changes nothing."""
        built = Store(
            seed, self.initial_documents, self.signer, generation=generation, faker=self._spare()
        )
        built._build(extra, key, initial=False)
        with self.lock:
            self.seed, self.generation = seed, generation
            self._swap(built)
            for kept_key, snapshot in built._snapshots.items():
                self._snapshots[kept_key] = snapshot
                self._snapshots.move_to_end(kept_key)
            self._trim()

    def _build(self, extra: list[Document], key: Hashable | None, initial: bool = True) -> None:
        """Build this store's world from its documents, in place: a store no request sees
        yet (being made, or built aside). `initial`: the initial documents are to be applied
        (else they have been, by the constructor)."""
        if initial:
            for document in self.initial_documents:
                document.apply_to(self)
            self.jobs.build_indexes()
            self._keep(_world_key(self.seed, []))
        for document in extra:
            document.apply_to(self)
        if extra:
            self._keep(key)

    def _swap(self, built: Store) -> None:
        """The world built aside in place of this one (the caller holds both locks); this
        world's Faker becomes the spare."""
        self._spare_faker = self.sources.faker
        self.world = built.world
        self.sources = built.sources

    def _keep(self, key: Hashable | None) -> None:
        """Keep the world as it is now, to be restored by the reset that names it."""
        if key is None:
            return
        self._snapshots[key] = (FrozenWorld(self.world), self.sources.snapshot())
        self._snapshots.move_to_end(key)
        self._trim()

    def _trim(self) -> None:
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)

    def replace(self, documents: Iterable[Document]) -> None:
        """The world of these initial documents in place of the current one (their files were
        edited: `serve --watch`), whole or not at all. It is built apart, while the running
        world goes on answering, then put in place at once; the seed and the signing key stay,
        and the new world draws its token ids from a stream of its own, as after a reset."""
        with self._building, _COLLECTOR.held():
            generation = self.generation + 1
            built = Store(
                self.seed, documents, self.signer, generation=generation, faker=self._spare()
            )
            with self.lock:
                self.generation = generation
                self.initial_documents = built.initial_documents
                self._snapshots = built._snapshots
                self._swap(built)

    def load(self, document: Document) -> None:
        """Apply one more fixture document to the current world, whole or not at all: on a
        copy, aside, swapped in whole; applied again under the lock if a request changed
        the world meanwhile (see the class). While another world is being built, it is
        applied at once under the lock instead (that build's swap sees it): the caller may
        hold the lock (a handler), which the build needs to finish."""
        if not self._building.acquire(blocking=False):
            self._load_here(document)
            return
        try:
            with _COLLECTOR.held():
                with self.lock:
                    changes = self.changes
                    aside = self.apart(self._spare())
                document.apply_to(aside)  # a document that cannot enter changes nothing
                with self.lock:
                    if self.changes == changes:
                        self._swap(aside)
                        return
                    self._load_here(document)
        finally:
            self._building.release()

    def _load_here(self, document: Document) -> None:
        """Apply a document to this world under the lock, whole or not at all."""
        with self.lock:
            before = (self.world.copy(), self.sources.snapshot())
            try:
                document.apply_to(self)
            except BaseException:
                world, sources = before
                self.world = world
                self.sources = Sources.restored(sources, self.sources.faker)
                raise
            self.changes += 1  # seen by a build aside, whether or not the document ticked

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
        self.changes += 1
        self.sources.clock.advance(1)
