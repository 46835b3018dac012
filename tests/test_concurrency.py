"""The session server under parallel load: state rules hold, the journal counts each request once.

Threads (a `ThreadPoolExecutor`, at most 50 workers, each with its own connection over
loopback) are released together by a `threading.Barrier`, so the requests reach the server at
the same moment. Every wait is bounded. Whatever the interleaving: one token per name, a tag
on at most one version, one successful delete, one journal entry per request, and never a 5xx.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from mock_server.contract import documents as contract
from mock_server.handlers import catalog
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, assert_error

WORKERS = 50
TIMEOUT = 30.0  # seconds, for any one request and for a whole pool


def _tagging(body: dict[str, Any]) -> Callable[[httpx.Client], httpx.Response]:
    return lambda client: client.put("/artifact-versions/tags", json=body)


def in_parallel(server, token: str, calls: list[Callable[[httpx.Client], httpx.Response]]):
    """Run each call on its own thread and connection, all released at once; the responses
    in the order of the calls."""
    assert len(calls) <= WORKERS
    barrier = threading.Barrier(len(calls), timeout=TIMEOUT)

    def run(call: Callable[[httpx.Client], httpx.Response]) -> httpx.Response:
        with httpx.Client(
            base_url=server.url + CONTROL_PLANE,
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT,
            verify=False,  # plain HTTP: skips loading CA certificates, 50 times over
        ) as client:
            barrier.wait()
            return call(client)

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls, timeout=TIMEOUT))


def settled_journal(mock, count: int, timeout: float = budget(2.0)) -> list:
    """The journal once it holds `count` entries (or the timeout has passed): an entry is
    recorded just after its response leaves (see the last test of this file)."""
    deadline = time.monotonic() + timeout
    while len(mock.journal) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return list(mock.journal)


def assert_no_5xx(responses: list[httpx.Response]) -> None:
    assert [r.status_code for r in responses if r.status_code >= 500] == []


def test_simultaneous_get_or_create_of_one_name_creates_one_token(server, mock, store, token):
    calls = [lambda c: c.get("/personal-access-tokens/race")] * WORKERS
    responses = in_parallel(server, token, calls)
    assert_no_5xx(responses)
    assert {r.status_code for r in responses} == {200}
    bodies = [r.json() for r in responses]
    assert len({b["data"]["id"] for b in bodies}) == 1
    assert len({b["token"] for b in bodies}) == 1
    assert [b["created"] for b in bodies].count(True) == 1
    alice = store.identity.default_user()
    assert [key for key in store.world.tokens if key[1] == "race"] == [(alice.id, "race")]


def test_concurrent_tagging_leaves_every_tag_on_exactly_one_version(
    server, api, mock, store, token
):
    manifest = {
        "type": "artifact-version",
        "name": "racer",
        "ml_repo": "demo-repo",
        "source": {"type": "platform"},
    }
    versions = [
        api.post("/artifact-versions/stage", json={"manifest": manifest}).json()["id"]
        for _ in range(4)
    ]
    colours = ["red", "green", "blue"]
    # Request i: version i % 4, one or two colours, with force on every other one.
    bodies = [
        {
            "artifact_version_id": versions[i % len(versions)],
            "tags": sorted({colours[i % 3], colours[(i + i // 3) % 3]}),
            "force": i % 2 == 0,
        }
        for i in range(40)
    ]
    calls = [_tagging(body) for body in bodies]
    responses = in_parallel(server, token, calls)
    assert_no_5xx(responses)
    assert {r.status_code for r in responses} <= {200, 409}
    for conflict in (r for r in responses if r.status_code == 409):
        assert_error(conflict, 409, 40901)
    applied = {
        tag
        for body, response in zip(bodies, responses, strict=True)
        if response.status_code == 200
        for tag in body["tags"]
    }
    assert applied, "no tag request succeeded"
    holders = Counter(
        tag for version_id in versions for tag in store.artifacts.version(version_id).tags
    )
    assert set(holders) == applied
    assert all(count == 1 for count in holders.values()), holders
    sentiment = next(v for v in store.world.artifact_versions.values() if v.id not in versions)
    assert sentiment.tags == ["production"]


def test_concurrent_deletes_of_one_group_succeed_once_and_404_after(server, mock, store, token):
    group = store.identity.resource_named("secret-group", "llm-keys").id
    responses = in_parallel(server, token, [lambda c: c.delete(f"/secret-groups/{group}")] * 20)
    assert_no_5xx(responses)
    assert [r.status_code for r in responses].count(200) == 1
    for missing in (r for r in responses if r.status_code != 200):
        assert_error(missing, 404, 40405)
    assert group not in store.world.secret_groups


def _example_call(server, store, operation_id: str) -> Callable[[httpx.Client], Any]:
    """The catalog's example request of an operation, filled for the served world."""
    request = catalog.example(operation_id).request(store)
    operation = contract.operations()[operation_id]
    root = server.gateway_url if operation.document == contract.GATEWAY_SPEC else server.url
    return lambda c: c.request(
        request.method, root + request.path, params=request.query, json=request.body
    )


@pytest.fixture
def mixed_calls(server, store) -> list[tuple[str | None, Callable[[httpx.Client], httpx.Response]]]:
    """Operation ids and calls, as many times over as the threads allow: the example of
    every operation of the catalog, successes, validation failures, not found, and a path
    that no operation has."""
    trainer = store.deployments.application_named("trainer").id
    version = next(iter(store.world.artifact_versions))
    calls: list[tuple[str | None, Callable[[httpx.Client], Any]]] = [
        ("listJobRuns", lambda c: c.get(f"/jobs/{trainer}/runs", params={"limit": 5})),
        ("listJobRuns", lambda c: c.get(f"/jobs/{trainer}/runs", params={"limit": 0})),
        ("listJobRuns", lambda c: c.get("/jobs/no-such-job/runs")),
        ("getOrCreatePersonalAccessToken", lambda c: c.get("/personal-access-tokens/load")),
        ("listSecretDeployments", lambda c: c.post("/secrets/deployments", json={"secretIds": []})),
        ("listSecretDeployments", lambda c: c.post("/secrets/deployments", json=[])),
        (
            "applyArtifactVersionTags",
            lambda c: c.put(
                "/artifact-versions/tags", json={"artifact_version_id": version, "tags": ["x"]}
            ),
        ),
        ("deleteSecretGroup", lambda c: c.delete("/secret-groups/no-such-group")),
        ("generateRoleBindingManifests", lambda c: c.get("/role-bindings/generate-manifest")),
        (None, lambda c: c.get("/no-such-route")),
    ]
    calls += [(op, _example_call(server, store, op)) for op in contract.operations()]
    return calls * (WORKERS // len(calls))


@pytest.mark.platform_mock(expect_violations=True)
def test_journal_counts_every_concurrent_request_exactly_once(server, mock, token, mixed_calls):
    responses = in_parallel(server, token, [call for _, call in mixed_calls])
    assert_no_5xx(responses)
    entries = settled_journal(mock, len(mixed_calls))
    assert len(entries) == len(mixed_calls)
    assert len({entry.seq for entry in entries}) == len(entries)
    assert Counter(e.operation_id for e in entries) == Counter(op for op, _ in mixed_calls)
    assert Counter(e.status for e in entries) == Counter(r.status_code for r in responses)


def test_journal_entry_is_recorded_before_the_response_reaches_the_client(api, mock, store):
    """A test that reads the journal right after a response (`journal.assert_called` in the
    README) must find the request there. 100 requests in a row, each checked at once."""
    trainer = store.deployments.application_named("trainer").id
    missing = []
    for count in range(1, 101):
        response = api.get(f"/jobs/{trainer}/runs", params={"limit": 1})
        assert response.status_code == 200
        if len(mock.journal) != count:
            missing.append(count)
        settled_journal(mock, count)
    assert missing == []
