"""Applying tags to artifact versions (operation 4): adding, idempotence, conflicts and force."""

from __future__ import annotations

import pytest

from tests.conftest import assert_error

TAGS = "/artifact-versions/tags"
CAROL = "carol@acme.example"


def sentiment_version(store, number: int):
    """Version `number` of the default fixtures' `sentiment` model, from the store."""
    artifact = next(
        a
        for a in store.world.artifacts.values()
        if (a.type, a.name) == ("model-version", "sentiment")
    )
    return store.artifacts.version(artifact.versions[number])


def stage(api, name: str, type_: str = "model-version") -> str:
    """Stage a new version in demo-repo and return its id."""
    response = api.post(
        "/artifact-versions/stage",
        json={
            "manifest": {
                "type": type_,
                "name": name,
                "ml_repo": "demo-repo",
                "source": {"type": "platform"},
            }
        },
    )
    assert response.status_code == 200, response.text
    return response.json()["id"]


def apply(client, version_id: str, tags: list[str], **extra):
    return client.put(TAGS, json={"artifact_version_id": version_id, "tags": tags, **extra})


def tags_of(store, version_id: str) -> list[str]:
    return list(store.artifacts.version(version_id).tags)


def test_tags_are_added_to_the_version(api, store):
    version_id = stage(api, "churn")
    response = apply(api, version_id, ["candidate", "nightly"])
    assert response.status_code == 200, response.text
    assert response.json() == {}
    assert tags_of(store, version_id) == ["candidate", "nightly"]


def test_existing_tags_stay_when_others_are_added(api, store):
    version_id = stage(api, "churn")
    apply(api, version_id, ["candidate"])
    assert apply(api, version_id, ["nightly"]).status_code == 200
    assert sorted(tags_of(store, version_id)) == ["candidate", "nightly"]


def test_applying_the_same_tags_again_is_idempotent(api, store):
    version_id = stage(api, "churn")
    first = apply(api, version_id, ["candidate", "nightly"])
    second = apply(api, version_id, ["candidate", "nightly"])
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.json() == {}
    assert sorted(tags_of(store, version_id)) == ["candidate", "nightly"]


def test_a_tag_repeated_in_one_request_is_added_once(api, store):
    version_id = stage(api, "churn")
    assert apply(api, version_id, ["candidate", "candidate"]).status_code == 200
    assert tags_of(store, version_id) == ["candidate"]


def test_reapplying_a_tag_the_version_already_holds_is_not_a_conflict(api, store):
    v1 = sentiment_version(store, 1).id
    response = apply(api, v1, ["production"])
    assert response.status_code == 200, response.text
    assert tags_of(store, v1) == ["production"]


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({}, id="force-omitted"),
        pytest.param({"force": False}, id="force-false"),
    ],
)
def test_tag_held_by_another_version_is_409_and_changes_nothing(api, store, extra):
    v1 = sentiment_version(store, 1).id
    v2 = stage(api, "sentiment")
    body = assert_error(apply(api, v2, ["staging", "production"], **extra), 409, 40901)
    assert any("production" in d["message"] for d in body["details"]), body
    assert not any("staging" in d["message"] for d in body["details"]), body
    assert tags_of(store, v1) == ["production"]
    assert tags_of(store, v2) == []


def test_with_force_the_tag_moves_from_the_other_version(api, store):
    v1 = sentiment_version(store, 1).id
    v2 = stage(api, "sentiment")
    response = apply(api, v2, ["staging", "production"], force=True)
    assert response.status_code == 200, response.text
    assert sorted(tags_of(store, v2)) == ["production", "staging"]
    assert tags_of(store, v1) == []


def test_forced_move_keeps_the_other_versions_remaining_tags(api, store):
    v1 = sentiment_version(store, 1).id
    assert apply(api, v1, ["baseline"]).status_code == 200
    v2 = stage(api, "sentiment")
    assert apply(api, v2, ["production"], force=True).status_code == 200
    assert tags_of(store, v1) == ["baseline"]
    assert tags_of(store, v2) == ["production"]


def test_force_without_conflict_just_adds(api, store):
    v1 = sentiment_version(store, 1).id
    v2 = stage(api, "sentiment")
    assert apply(api, v2, ["candidate"], force=True).status_code == 200
    assert tags_of(store, v2) == ["candidate"]
    assert tags_of(store, v1) == ["production"]


def test_same_tag_on_versions_of_different_artifacts_is_allowed(api, store):
    v1 = sentiment_version(store, 1).id
    other = stage(api, "churn")
    response = apply(api, other, ["production"])
    assert response.status_code == 200, response.text
    assert tags_of(store, other) == ["production"]
    assert tags_of(store, v1) == ["production"]


def test_same_name_of_another_kind_is_a_different_artifact_for_tags(api, store):
    v1 = sentiment_version(store, 1).id
    dataset = stage(api, "sentiment", type_="artifact-version")
    assert apply(api, dataset, ["production"]).status_code == 200
    assert tags_of(store, dataset) == ["production"]
    assert tags_of(store, v1) == ["production"]


def test_unknown_artifact_version_is_404(api):
    body = assert_error(apply(api, "artifact-version-does-not-exist", ["x"]), 404, 40404)
    assert "artifact-version-does-not-exist" in body["message"]


def test_caller_without_grant_is_403_and_changes_nothing(as_user, store):
    v1 = sentiment_version(store, 1).id
    assert_error(apply(as_user(CAROL), v1, ["hacked"], force=True), 403, 40301)
    assert tags_of(store, v1) == ["production"]


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "tags", id="tags-missing"),
        pytest.param({"tags": [""]}, "tags[0]", id="empty-string-tag"),
        pytest.param({"tags": "candidate"}, "tags", id="tags-not-an-array"),
        pytest.param({"tags": ["ok", 7]}, "tags[1]", id="tag-not-a-string"),
    ],
)
def test_invalid_tags_are_400_and_change_nothing(api, store, body, field):
    v1 = sentiment_version(store, 1).id
    response = api.put(TAGS, json={"artifact_version_id": v1, **body})
    error = assert_error(response, 400, 40001)
    assert field in {d["field"] for d in error["details"]}, error
    assert tags_of(store, v1) == ["production"]


@pytest.mark.platform_mock(expect_violations=True)
def test_force_must_be_a_boolean(api, store):
    v1 = sentiment_version(store, 1).id
    v2 = stage(api, "sentiment")
    error = assert_error(apply(api, v2, ["production"], force="yes"), 400, 40001)
    assert "force" in {d["field"] for d in error["details"]}, error
    assert tags_of(store, v1) == ["production"]
    assert tags_of(store, v2) == []


def test_force_given_null_is_read_as_absent_so_a_taken_tag_is_409(api, store):
    # The platform's SDK sends `"force": null` when its caller leaves force as None.
    first, second = stage(api, "churn"), stage(api, "churn")
    assert apply(api, first, ["prod"]).status_code == 200
    assert_error(apply(api, second, ["prod"], force=None), 409, 40901)
    assert tags_of(store, first) == ["prod"]
