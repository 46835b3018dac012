"""Personal access tokens (operation 5): get-or-create per caller, real bearer values, teams."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import CONTROL_PLANE, assert_error

ALICE, BOB, CAROL = "alice@acme.example", "bob@acme.example", "carol@acme.example"


def path(name: str) -> str:
    return f"/personal-access-tokens/{name}"


def user_id(store, email: str) -> str:
    return store.identity.subject_named("user", email).id


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def test_first_call_creates_the_token(api, store):
    body = ok(api.get(path("ci")))
    assert body["created"] is True
    assert body["data"]["manifest"]["name"] == "ci"
    assert isinstance(body["token"], str) and body["token"]
    assert (user_id(store, ALICE), "ci") in store.world.tokens


def test_second_call_returns_the_same_token_without_creating(api, store):
    first = ok(api.get(path("ci")))
    second = ok(api.get(path("ci")))
    assert second["created"] is False
    assert second["data"]["id"] == first["data"]["id"]
    assert second["token"] == first["token"]
    assert list(store.world.tokens) == [(user_id(store, ALICE), "ci")]


def test_returned_token_authenticates_as_the_caller(server, as_user, store):
    issued = ok(as_user(BOB).get(path("ci")))
    bob = user_id(store, BOB)
    assert issued["data"]["createdBySubject"]["subjectId"] == bob
    with httpx.Client(
        base_url=server.url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {issued['token']}"},
    ) as with_pat:
        other = ok(with_pat.get(path("deploy")))
        again = ok(with_pat.get(path("ci")))
    assert other["created"] is True
    assert other["data"]["createdBySubject"]["subjectId"] == bob
    assert (again["created"], again["data"]["id"]) == (False, issued["data"]["id"])


def test_tokens_are_per_caller(api, as_user, store):
    alice = ok(api.get(path("ci")))
    bob = ok(as_user(BOB).get(path("ci")))
    assert (alice["created"], bob["created"]) == (True, True)
    assert alice["data"]["id"] != bob["data"]["id"]
    assert alice["token"] != bob["token"]
    assert alice["data"]["createdBySubject"]["subjectId"] == user_id(store, ALICE)
    assert bob["data"]["createdBySubject"]["subjectId"] == user_id(store, BOB)
    alice_again = ok(api.get(path("ci")))
    assert (alice_again["created"], alice_again["token"]) == (False, alice["token"])


def test_team_of_the_caller_is_recorded_as_owner(as_user):
    body = ok(as_user(BOB).get(path("ci"), params={"teamName": "ml-platform"}))
    assert body["created"] is True
    assert body["data"]["manifest"]["ownedBy"]["team"] == "ml-platform"


def test_without_team_name_the_token_has_no_owner_object(api):
    # The platform's SDK requires `team` whenever `ownedBy` is present.
    body = ok(api.get(path("ci")))
    assert "ownedBy" not in body["data"]["manifest"]


@pytest.mark.parametrize(
    "team",
    [
        pytest.param("ml-platform", id="team-caller-is-not-in"),
        pytest.param("no-such-team", id="team-does-not-exist"),
    ],
)
def test_team_name_not_of_the_caller_is_400_and_creates_nothing(as_user, store, team):
    carol = as_user(CAROL)
    body = assert_error(carol.get(path("ci"), params={"teamName": team}), 400, 40003)
    assert team in body["message"]
    assert "teamName" in {d["field"] for d in body["details"]}, body
    assert (user_id(store, CAROL), "ci") not in store.world.tokens
    assert ok(carol.get(path("ci")))["created"] is True


@pytest.mark.platform_mock(expect_violations=True)
def test_empty_name_segment_is_not_this_operation(api, store):
    before = dict(store.world.tokens)
    assert_error(api.get("/personal-access-tokens/"), 404, 40401)
    assert store.world.tokens == before


def test_record_timestamps_end_with_z(api):
    record = ok(api.get(path("ci")))["data"]
    stamps = [record["createdAt"], record["updatedAt"]]
    for jwt in record["jwts"]:
        stamps += [jwt["expiry"], jwt["createdAt"], jwt["updatedAt"]]
    if record.get("lastAccessedAt") is not None:
        stamps.append(record["lastAccessedAt"])
    assert len(stamps) >= 5
    assert all(isinstance(s, str) and s.endswith("Z") for s in stamps), stamps


def test_reads_of_an_existing_token_are_byte_identical(api):
    ok(api.get(path("ci")))
    first = api.get(path("ci"))
    second = api.get(path("ci"))
    assert first.json()["created"] is False
    assert first.content == second.content


def test_a_new_token_has_never_been_used(api):
    assert ok(api.get(path("ci")))["data"]["lastAccessedAt"] is None


def test_authenticating_with_a_token_records_its_last_use(api, server):
    issued = ok(api.get(path("ci")))
    with httpx.Client(
        base_url=server.url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {issued['token']}"},
    ) as client:
        again = ok(client.get(path("ci")))
    assert again["data"]["lastAccessedAt"] is not None
    assert again["data"]["lastAccessedAt"] >= issued["data"]["createdAt"]


def test_a_revoked_tokens_name_gets_a_new_working_token(server, api, store):
    first = ok(api.get(path("ci")))
    store.tokens.revoke(user_id(store, ALICE), "ci")
    second = ok(api.get(path("ci")))
    assert second["created"] is True
    assert second["token"] != first["token"]
    assert second["data"]["id"] != first["data"]["id"]
    with httpx.Client(base_url=server.url + CONTROL_PLANE) as client:
        new = client.get(path("other"), headers={"Authorization": f"Bearer {second['token']}"})
        old = client.get(path("other"), headers={"Authorization": f"Bearer {first['token']}"})
    assert new.status_code == 200, new.text
    assert_error(old, 401, 40105)
    again = ok(api.get(path("ci")))
    assert (again["created"], again["token"]) == (False, second["token"])


def test_an_expired_tokens_name_gets_a_new_working_token(server, api, store):
    first = ok(api.get(path("ci")))
    token = store.world.tokens[(user_id(store, ALICE), "ci")]
    store.sources.clock.set(token.expires_at)  # the moment it expires
    second = ok(api.get(path("ci")))
    assert second["created"] is True
    assert second["data"]["isExpired"] is False
    with httpx.Client(base_url=server.url + CONTROL_PLANE) as client:
        new = client.get(path("other"), headers={"Authorization": f"Bearer {second['token']}"})
        old = client.get(path("other"), headers={"Authorization": f"Bearer {first['token']}"})
    assert new.status_code == 200, new.text
    assert_error(old, 401, 40105)  # replaced: the world no longer holds it
