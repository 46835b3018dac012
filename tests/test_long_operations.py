"""Long operations never hold the event loop: a request that finds the world busy waits for it
off the loop, the dump of the world is written from a copy, and a response schema that asks
only for an object is not read back (over real HTTP on loopback)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from mock_server.http.validators import asks_only_an_object
from mock_server.pytest_plugin import MockHandle
from tests.budget import budget


def _admin(platform_mock: MockHandle) -> dict[str, str]:
    return {"Authorization": f"Bearer {platform_mock.admin_token}"}


def test_a_request_waiting_for_the_world_leaves_the_loop_answering(platform_mock: MockHandle):
    """While another thread holds the world's lock (as a load of a big fixture document does),
    a platform request waits, and the admin API's health still answers meanwhile: had the
    waiting request held the event loop, health could not answer until the lock was freed."""
    lock = platform_mock.store.lock
    headers = {"Authorization": f"Bearer {platform_mock.token}"}
    url = platform_mock.url
    with ThreadPoolExecutor(2) as pool, httpx.Client(base_url=url, timeout=budget(30)) as client:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with lock:
                held.set()
                release.wait(30)

        holder = pool.submit(hold)
        held.wait(10)
        try:
            waiting = pool.submit(
                client.get, "/api/svc/v1/personal-access-tokens/ci", headers=headers
            )
            health = client.get("/__admin/health")
            assert (health.status_code, waiting.done()) == (200, False)
        finally:
            release.set()
        holder.result(10)
        assert waiting.result(30).status_code == 200


def test_the_dump_is_the_world_as_it_was_when_asked(platform_mock: MockHandle):
    """A dump is written from a copy of the world (`Store.apart`): a change made after the
    copy is not in it, and the copy's own changes never reach the world."""
    store = platform_mock.store
    copy = store.apart()
    before = copy.dump()
    store.reset(seed=store.seed + 1)
    assert copy.dump() == before
    assert store.dump() != before


def test_a_copy_of_the_world_changes_apart(platform_mock: MockHandle):
    store = platform_mock.store
    world = store.dump()
    copy = store.apart()
    copy.reset(seed=store.seed + 1)
    assert store.dump() == world


def test_the_dump_over_http_is_the_stores_dump(platform_mock: MockHandle):
    with httpx.Client(base_url=platform_mock.url, timeout=budget(30)) as client:
        answer = client.get("/__admin/state", headers=_admin(platform_mock))
    assert (answer.status_code, answer.json()) == (200, platform_mock.store.dump())


@pytest.mark.parametrize(
    ("schema", "only_an_object"),
    [
        ({"type": "object"}, True),
        ({"type": "object", "components": {"schemas": {}}}, True),
        ({"type": "object", "required": ["id"]}, False),
        ({"type": "object", "properties": {"id": {"type": "string"}}}, False),
        ({"type": "object", "additionalProperties": False}, False),
        ({"type": "array"}, False),
    ],
    ids=["object", "object-with-components", "required", "properties", "closed", "array"],
)
def test_only_a_schema_that_asks_nothing_of_an_object_skips_reading_it(schema, only_an_object):
    assert asks_only_an_object(schema) is only_an_object
