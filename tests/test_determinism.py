"""Determinism and isolation: one seed gives byte-identical responses, token values aside
(each server signs with a key of its own); apps share nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.fixtures import loader as fixtures
from mock_server.http.server import BackgroundServer
from mock_server.state.gateway import as_response
from tests.conftest import assert_error, new_store


def scenario(server: BackgroundServer) -> Iterator[bytes]:
    """A request sequence touching every operation, yielding each raw response body."""
    mock = server.mock
    store = mock.store
    headers = {"Authorization": f"Bearer {mock.auth.dev_token()}"}
    with httpx.Client(base_url=server.url + "/api/svc/v1", headers=headers) as api:
        trainer = store.deployments.application_named("trainer").id
        llm_keys = store.secrets.group_named("llm-keys")
        secret_ids = list(llm_keys.secrets)
        yield api.get("/personal-access-tokens/ci").content
        staged = api.post(
            "/artifact-versions/stage",
            json={
                "manifest": {
                    "type": "artifact-version",
                    "name": "dataset",
                    "ml_repo": "demo-repo",
                    "source": {"type": "platform"},
                }
            },
        )
        yield staged.content
        yield api.put(
            "/artifact-versions/tags",
            json={"artifact_version_id": staged.json()["id"], "tags": ["v1"]},
        ).content
        yield api.get(f"/jobs/{trainer}/runs", params={"limit": 50, "sortBy": "status"}).content
        yield api.post("/secrets/deployments", json={"secretIds": secret_ids}).content
        yield api.get(
            "/role-bindings/generate-manifest",
            params={"resourceType": "tenant", "resourceId": store.identity.tenant.id},
        ).content
        yield api.delete(f"/secret-groups/{llm_keys.resource.id}").content
        yield api.post("/secrets/deployments", json={"secretIds": secret_ids}).content
    with httpx.Client(base_url=server.gateway_url, headers=headers) as gateway:
        for response_id in list(store.world.model_responses):
            yield gateway.get(f"/responses/{response_id}").content


KEY = "a signing key of the tests, 32 bytes or more"
JWT = re.compile(rb"eyJ[\w-]+\.[\w-]+\.[\w-]+")


def run(seed: int, key: str | None = KEY) -> list[bytes]:
    with BackgroundServer(PlatformMock(MockConfig(seed=seed, signing_key=key))) as server:
        return list(scenario(server))


def masked(bodies: list[bytes]) -> list[bytes]:
    """The bodies with every token value (a JWT) blotted out."""
    return [JWT.sub(b"<token>", body) for body in bodies]


@pytest.fixture(scope="module")
def seed_7_runs() -> tuple[list[bytes], list[bytes]]:
    return run(7), run(7)


@pytest.fixture(scope="module")
def seed_7_runs_without_a_key() -> tuple[list[bytes], list[bytes]]:
    return run(7, key=None), run(7, key=None)


def test_same_seed_and_key_give_byte_identical_responses(seed_7_runs):
    first, second = seed_7_runs
    assert first == second


def test_same_seed_gives_identical_responses_but_for_token_values(seed_7_runs_without_a_key):
    first, second = seed_7_runs_without_a_key
    assert first != second
    assert masked(first) == masked(second)


def test_token_values_of_two_servers_of_one_seed_differ(seed_7_runs_without_a_key):
    first, second = seed_7_runs_without_a_key
    tokens = [set(JWT.findall(b"".join(bodies))) for bodies in (first, second)]
    assert tokens[0] and tokens[1] and not tokens[0] & tokens[1]


def test_scenario_covers_every_operation(seed_7_runs):
    first, _ = seed_7_runs
    assert len(first) >= 13 and all(body.startswith(b"{") for body in first)


def test_different_seed_gives_different_data(seed_7_runs):
    first, _ = seed_7_runs
    assert run(8) != first


def _without_token_ids(body: dict) -> dict:
    record = {k: v for k, v in body["data"].items() if k not in ("jwtId", "jwts")}
    return {"data": record, "created": body["created"]}


def test_reset_reproduces_a_fresh_world_but_for_token_ids(mock, api):
    before = api.get("/personal-access-tokens/ci").json()
    mock.store.reset()
    after = api.get("/personal-access-tokens/ci").json()
    assert _without_token_ids(after) == _without_token_ids(before)
    assert after["data"]["jwtId"] != before["data"]["jwtId"]


def test_a_token_of_an_earlier_world_never_authenticates_again(mock, api):
    old = api.get("/personal-access-tokens/ci").json()["token"]
    mock.store.reset()
    api.get("/personal-access-tokens/ci")  # the same request makes a token anew
    response = api.get("/personal-access-tokens/other", headers={"Authorization": f"Bearer {old}"})
    assert_error(response, 401, 40105)


def test_two_apps_in_one_process_share_no_state():
    first, second = PlatformMock(), PlatformMock()
    alice = first.store.identity.default_user()
    caller = first.store.identity.caller(alice.type, alice.id)
    assert caller is not None
    first.store.tokens.get_or_create(caller, "only-in-first", None)
    assert (alice.id, "only-in-first") not in second.store.world.tokens


def test_a_token_of_an_earlier_world_is_refused_as_revoked_not_as_early(mock, api):
    # The reset world's clock is back at its start, before the old token's nbf: the token
    # is gone from the world, and that is what the error says.
    old = api.get("/personal-access-tokens/ci").json()["token"]
    for _ in range(3):
        api.get(f"/personal-access-tokens/later-{_}")  # the clock moves on with each change
    mock.store.reset()
    response = api.get("/personal-access-tokens/x", headers={"Authorization": f"Bearer {old}"})
    assert_error(response, 401, 40105)


# -- the same seed, the same world, wherever the mock installs -----------------------------
# Faker draws the generated texts and names of a world. A Faker release that changes what a
# seed gives would change every user's seeded world: pyproject bounds Faker, and these fail
# first when a release within the bounds changes them (update the bound and the values).


def test_the_default_world_generates_the_same_response_texts():
    store = new_store(0, fixtures.default_fixtures())
    generated = [
        as_response(r) for key, r in store.world.model_responses.items() if "demo" not in key
    ]
    texts = [r["output"][0]["content"][0]["text"][:30] for r in generated[-3:]]
    assert texts == [
        "Line beyond its particularly t",
        "Partner stock four. Region as ",
        "Onto knowledge other his offer",
    ]


def test_generated_applications_have_the_same_names():
    extra = fixtures.check({"applications": [{"generate": 4, "workspace": "ml-team"}]}, "test")
    store = new_store(0, [*fixtures.default_fixtures(), extra])
    names = [a.name for a in store.world.applications.values()][-4:]
    assert names == ["riley-hayes-batch", "smith-batch", "johnson-batch", "white-gordon-batch"]
