"""POST /api/svc/v1/artifact-versions/mark-stage-failure (`markArtifactVersionStageFailure`):
a staged version marked failed, as the platform's library does when logging fails after
staging; a failed version keeps its number and takes no tags."""

from __future__ import annotations

import httpx
import pytest

from mock_server.fixtures import loader as fixtures
from tests.conftest import assert_error, new_store

MARK = "/artifact-versions/mark-stage-failure"
MANIFEST = {
    "type": "artifact-version",
    "name": "tokenizer",
    "ml_repo": "demo-repo",
    "source": {"type": "platform"},
}


def stage(api: httpx.Client, **manifest) -> str:
    response = api.post("/artifact-versions/stage", json={"manifest": {**MANIFEST, **manifest}})
    assert response.status_code == 200, response.text
    return response.json()["id"]


def mark(api: httpx.Client, version_id: str) -> httpx.Response:
    return api.post(MARK, json={"id": version_id})


def test_a_staged_version_is_marked_failed(api, store):
    version_id = stage(api)
    response = mark(api, version_id)
    assert (response.status_code, response.json()) == (200, {})
    assert store.artifacts.version(version_id).failed


def test_marking_a_failed_version_again_changes_nothing(api, store):
    version_id = stage(api)
    mark(api, version_id)
    before = store.sources.clock.now()
    assert mark(api, version_id).status_code == 200
    assert store.artifacts.version(version_id).failed
    assert store.sources.clock.now() == before  # no change was made


def test_a_failed_version_takes_no_tags(api):
    version_id = stage(api)
    mark(api, version_id)
    response = api.put(
        "/artifact-versions/tags", json={"artifact_version_id": version_id, "tags": ["best"]}
    )
    body = assert_error(response, 409, 40903)
    assert version_id in body["message"]


def test_a_failed_version_loses_its_tags_so_another_version_may_take_them(api, store):
    version_id = stage(api)
    tags = {"artifact_version_id": version_id, "tags": ["production"]}
    assert api.put("/artifact-versions/tags", json=tags).status_code == 200
    assert mark(api, version_id).status_code == 200
    assert store.artifacts.version(version_id).tags == []
    second = stage(api)
    tagged = api.put(
        "/artifact-versions/tags", json={"artifact_version_id": second, "tags": ["production"]}
    )
    assert tagged.status_code == 200, tagged.text


def test_a_finalised_versions_staging_cannot_fail(api, store):
    # The default world's sentiment model, version 1, is finalised.
    sentiment = next(v for v in store.world.artifact_versions.values() if v.tags)
    assert_error(mark(api, sentiment.id), 409, 40904)
    assert (sentiment.status, sentiment.tags) == ("ready", ["production"])


def test_a_failed_versions_files_are_dropped(api, store):
    version_id = stage(api)
    urls = api.post(
        "/artifact-versions/signed-urls",
        json={"id": version_id, "paths": ["a.txt"], "operation": "WRITE"},
    ).json()["data"]
    assert httpx.put(urls[0]["signed_url"], content=b"half an upload").status_code == 200
    used = store.storage.used()
    mark(api, version_id)
    assert store.artifacts.version(version_id).files == {}
    assert store.storage.used() == used - len(b"half an upload")


def test_a_failed_version_keeps_its_number(api):
    version_id = stage(api, version=4)
    mark(api, version_id)
    again = api.post("/artifact-versions/stage", json={"manifest": {**MANIFEST, "version": 4}})
    assert_error(again, 409, 40902)
    assert api.post("/artifact-versions/stage", json={"manifest": MANIFEST}).status_code == 200


def test_an_unknown_version_is_404(api):
    body = assert_error(mark(api, "4f1d3ac4-0000-4000-8000-000000000000"), 404, 40404)
    assert "4f1d3ac4-0000-4000-8000-000000000000" in body["message"]


def test_a_caller_who_cannot_write_to_the_repo_is_403_and_nothing_changes(api, as_user, store):
    version_id = stage(api)
    assert_error(mark(as_user("carol@acme.example"), version_id), 403, 40301)
    assert not store.artifacts.version(version_id).failed


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-id"),
        pytest.param({"id": ""}, id="empty-id"),
        pytest.param({"id": 7}, id="number-id"),
        pytest.param({"id": "x", "reason": "upload"}, id="unknown-field"),
    ],
)
def test_a_body_that_breaks_the_contract_is_400(api, body):
    assert_error(api.post(MARK, json=body), 400, 40001)


def test_a_failed_version_survives_a_state_dump_and_load(api, admin):
    version_id = stage(api)
    mark(api, version_id)
    dumped = admin.get("/state").json()
    (entry,) = [v for v in dumped["artifactVersions"] if v["id"] == version_id]
    assert entry["failed"] is True and entry["tags"] == []
    reloaded = new_store(0, [fixtures.check(dumped, "the dump")])
    version = reloaded.artifacts.version(version_id)
    assert version is not None and version.failed
