"""A world rebuilt aside and swapped in whole: a read made while a load, a re-seed or a reset
with new documents is being built sees the whole old world, and after it the whole new one.

Each test holds the build halfway (a document that applies its first part, then waits for
the test) and reads the world under its lock meanwhile, as a request does: what the read
sees is asserted on content, never on timing. Every wait is bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mock_server.fixtures.loader import FixtureError, check, default_fixtures
from mock_server.state import Store
from tests.conftest import new_store

TIMEOUT = 60.0  # seconds: any one wait of a test (a regression hangs no longer than this)

FIRST = {"users": [{"email": "first@acme.example"}]}
SECOND = {"users": [{"email": "second@acme.example"}]}


class Halted:
    """A fixture document in two parts, whose application stops between them until the test
    lets it go on: a world held half-built."""

    def __init__(self, first: dict[str, Any], second: dict[str, Any]):
        self.parts = [check(first, "first part"), check(second, "second part")]
        self.data = {**first, **second}
        self.halfway = threading.Event()
        self.go_on = threading.Event()

    def apply_to(self, store: Store) -> None:
        self.parts[0].apply_to(store)
        self.halfway.set()
        assert self.go_on.wait(TIMEOUT), "the test never let the build go on"
        self.parts[1].apply_to(store)


def users(store: Store) -> set[str]:
    """The emails of the world's users, read under the world's lock, as a request reads."""
    assert store.lock.acquire(timeout=TIMEOUT), "a read waited for the build"
    try:
        return {
            subject.name for (kind, _), subject in store.world.subjects.items() if kind == "user"
        }
    finally:
        store.lock.release()


@contextmanager
def halfway(work: Callable[[], None], document: Halted) -> Iterator[None]:
    """`work` (which applies `document`) on a thread of its own, held halfway inside the
    block, and finished after it."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            failed.append(exc)
            document.halfway.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert document.halfway.wait(TIMEOUT), "the build never reached its halfway point"
        assert not failed, failed
        yield
    finally:
        document.go_on.set()
        thread.join(TIMEOUT)
    assert not thread.is_alive(), "the build did not finish"
    assert not failed, failed


@pytest.fixture
def store() -> Store:
    return new_store(0, default_fixtures())


def test_a_read_during_a_load_sees_the_old_world_whole(store: Store) -> None:
    before = users(store)
    document = Halted(FIRST, SECOND)
    with halfway(lambda: store.load(document), document):
        assert users(store) == before
    assert users(store) == before | {"first@acme.example", "second@acme.example"}


def test_a_read_during_a_reset_with_new_documents_sees_the_old_world_whole(store: Store) -> None:
    before = users(store)
    document = Halted(FIRST, SECOND)
    with halfway(lambda: store.reset(extra=[document]), document):
        assert users(store) == before
    assert users(store) == before | {"first@acme.example", "second@acme.example"}


def test_a_read_during_a_reseed_sees_the_old_world_whole() -> None:
    document = Halted(FIRST, SECOND)
    store = new_store(0, default_fixtures())
    store.initial_documents.append(document)  # the documents a re-seed builds from
    before = users(store)
    with halfway(lambda: store.reset(seed=7), document):
        assert users(store) == before
        assert store.seed == 0
    assert store.seed == 7
    assert users(store) == before | {"first@acme.example", "second@acme.example"}


def test_a_read_during_a_replace_sees_the_old_world_whole(store: Store) -> None:
    before = users(store)
    document = Halted(FIRST, SECOND)
    with halfway(lambda: store.replace([*default_fixtures(), document]), document):
        assert users(store) == before
    assert users(store) == before | {"first@acme.example", "second@acme.example"}


def delete_llm_keys(store: Store) -> None:
    """A change a request makes: the secret group `llm-keys` deleted by its owner."""
    alice = store.world.subject_names[("user", "alice@acme.example")]
    caller = store.identity.caller("user", alice.id)
    assert caller is not None
    with store.lock:
        store.secrets.delete_group_named(caller, "llm-keys")


def groups(store: Store) -> set[str]:
    with store.lock:
        return {group.resource.name for group in store.world.secret_groups.values()}


def test_a_change_made_during_a_load_is_kept_beside_the_document(store: Store) -> None:
    assert "llm-keys" in groups(store)
    document = Halted(FIRST, SECOND)
    with halfway(lambda: store.load(document), document):
        delete_llm_keys(store)
    assert "llm-keys" not in groups(store)
    assert {"first@acme.example", "second@acme.example"} <= users(store)


def test_a_change_made_during_a_reseed_goes_with_the_old_world() -> None:
    document = Halted(FIRST, SECOND)
    store = new_store(0, default_fixtures())
    store.initial_documents.append(document)
    with halfway(lambda: store.reset(seed=7), document):
        delete_llm_keys(store)
        assert "llm-keys" not in groups(store)
    assert "llm-keys" in groups(store)
    assert {"first@acme.example", "second@acme.example"} <= users(store)


def test_a_load_that_fails_aside_leaves_the_world_as_it_was(store: Store) -> None:
    before = users(store)
    bad = check({"workspaces": [{"name": "w", "cluster": "no-such-cluster"}]}, "bad")
    with pytest.raises(FixtureError, match="no-such-cluster"):
        store.load(bad)
    assert users(store) == before


def test_a_load_by_a_holder_of_the_lock_during_a_load_is_applied_and_kept(store: Store) -> None:
    """A handler holds the world's lock when it loads (a scripted reply): it must not wait
    for a build that needs the lock to swap."""
    document = Halted(FIRST, SECOND)
    finished = threading.Event()

    def load_holding_the_lock() -> None:
        with store.lock:
            store.load(check({"users": [{"email": "holder@acme.example"}]}, "holder"))
        finished.set()

    with halfway(lambda: store.load(document), document):
        holder = threading.Thread(target=load_holding_the_lock, daemon=True)
        holder.start()
        holder.join(TIMEOUT)
        assert finished.is_set(), "the load waited for the build while holding the lock"
        assert "holder@acme.example" in users(store)
    assert {"holder@acme.example", "first@acme.example", "second@acme.example"} <= users(store)
