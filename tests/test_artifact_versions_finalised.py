"""Finalising versions (`createOrUpdateArtifactVersion`, `createOrUpdateModelVersion`) and
reading finalised ones back (`listArtifactVersions`, `listModelVersions`,
`getArtifactVersion`, `getModelVersion`, `getArtifact`, `getModel`): the life cycle of a
version with staging, tags and failure, and FQNs in the platform's documented form."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import assert_error, token_of

SENTIMENT_1 = "5e0f5c1a-7b1e-4c35-9d1a-00000000000a"  # finalised, tagged `production`
SENTIMENT_2 = "5e0f5c1a-7b1e-4c35-9d1a-00000000000f"
SENTIMENT_3 = "5e0f5c1a-7b1e-4c35-9d1a-00000000000c"  # staged
EMBEDDINGS_1 = "5e0f5c1a-7b1e-4c35-9d1a-00000000000d"


def stage(api: httpx.Client, type_: str = "artifact-version", name: str = "fresh") -> dict:
    manifest: dict[str, Any] = {"type": type_, "name": name, "ml_repo": "demo-repo"}
    manifest["source"] = {"type": "truefoundry"}
    response = api.post("/artifact-versions/stage", json={"manifest": manifest})
    assert response.status_code == 200, response.text
    return response.json()


def finalised(
    api: httpx.Client, staged: dict, type_: str = "artifact-version", name: str = "fresh", **more
) -> httpx.Response:
    manifest = {"type": type_, "name": name, "ml_repo": "demo-repo", **more}
    if "source" not in manifest:
        manifest["source"] = {"type": "truefoundry", "uri": staged["storage_root"]}
    path = "/artifact-versions" if type_ == "artifact-version" else "/model-versions"
    return api.put(path, json={"manifest": manifest})


def listed(api: httpx.Client, path: str = "/artifact-versions", **query) -> list[dict]:
    response = api.get(path, params=query)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_a_staged_version_is_not_listed_until_finalised(api):
    staged = stage(api)
    assert [v["id"] for v in listed(api, name="fresh")] == []
    assert finalised(api, staged).status_code == 200
    assert [v["id"] for v in listed(api, name="fresh")] == [staged["id"]]


def test_a_finalised_version_has_the_documented_fqn_and_its_storage_as_source(api):
    staged = stage(api)
    version = finalised(api, staged, metadata={"rows": 3}).json()["data"]
    assert version["fqn"] == "artifact:acme/demo-repo/fresh:1"
    assert version["manifest"]["source"] == {"type": "truefoundry", "uri": staged["storage_root"]}
    assert (version["manifest"]["metadata"], version["artifact_id"]) == (
        {"rows": 3},
        staged["artifact_id"],
    )


def test_the_platforms_own_source_may_be_named_platform(api):
    staged = stage(api)
    response = finalised(api, staged, source={"type": "platform", "uri": staged["storage_root"]})
    assert response.json()["data"]["manifest"]["source"]["type"] == "truefoundry"


def test_a_model_version_is_finalised_with_its_model_id_and_fqn(api):
    staged = stage(api, "model-version", "fresh-model")
    response = finalised(api, staged, "model-version", "fresh-model", framework={"type": "sklearn"})
    version = response.json()["data"]
    assert version["fqn"] == "model:acme/demo-repo/fresh-model:1"
    assert version["model_id"] == staged["artifact_id"] and "artifact_id" not in version


def test_finalising_a_ready_version_again_updates_its_manifest(api):
    staged = stage(api)
    finalised(api, staged, description="first")
    again = finalised(api, staged, description="second").json()["data"]
    assert again["manifest"]["description"] == "second"
    assert [v["manifest"]["description"] for v in listed(api, name="fresh")] == ["second"]


def test_tags_applied_while_staged_stay_once_finalised(api):
    staged = stage(api)
    tags = {"artifact_version_id": staged["id"], "tags": ["candidate"]}
    assert api.put("/artifact-versions/tags", json=tags).status_code == 200
    assert finalised(api, staged).json()["data"]["tags"] == ["candidate"]


def test_a_tag_applies_to_a_finalised_version(api):
    staged = stage(api)
    finalised(api, staged)
    tags = {"artifact_version_id": staged["id"], "tags": ["latest"]}
    assert api.put("/artifact-versions/tags", json=tags).status_code == 200
    assert listed(api, tag="latest")[0]["id"] == staged["id"]


def test_a_failed_version_cannot_be_finalised_409_40903(api):
    staged = stage(api)
    api.post("/artifact-versions/mark-stage-failure", json={"id": staged["id"]})
    assert_error(finalised(api, staged), 409, 40903)
    assert listed(api, name="fresh") == []


def test_a_source_naming_no_staged_version_is_404_40404(api):
    staged = stage(api)
    response = finalised(api, staged, source={"type": "truefoundry", "uri": "s3://elsewhere/"})
    assert_error(response, 404, 40404)


def test_a_managed_source_without_uri_is_404_40404(api):
    staged = stage(api)
    assert_error(finalised(api, staged, source={"type": "truefoundry"}), 404, 40404)


def test_another_version_number_than_the_staged_one_is_400_40013(api):
    staged = stage(api)
    assert_error(finalised(api, staged, version=7), 400, 40013)


def test_an_external_source_makes_a_new_version_ready_at_once(api, store):
    response = finalised(api, {}, source={"type": "external", "uri": "s3://mine/model/"})
    version = response.json()["data"]
    assert version["manifest"]["source"] == {"type": "external", "uri": "s3://mine/model/"}
    assert store.artifacts.version(version["id"]).status == "ready"


@pytest.mark.platform_mock(expect_violations=True)
def test_a_local_source_is_refused_the_client_resolves_it(api):
    manifest: dict[str, Any] = {"type": "artifact-version", "name": "x", "ml_repo": "demo-repo"}
    manifest["source"] = {"type": "local", "paths": [{"src": "a"}]}
    assert_error(api.put("/artifact-versions", json={"manifest": manifest}), 400, 40001)


def test_finalising_in_an_unknown_repo_is_404_40403(api):
    manifest: dict[str, Any] = {"type": "artifact-version", "name": "x", "ml_repo": "nope"}
    manifest["source"] = {"type": "truefoundry", "uri": "s3://x/"}
    assert_error(api.put("/artifact-versions", json={"manifest": manifest}), 404, 40403)


def test_finalising_needs_write_on_the_repo(api, mock):
    staged = stage(api)
    carol = httpx.Client(
        base_url=api.base_url,
        headers={"Authorization": f"Bearer {token_of(mock, 'carol@acme.example')}"},
    )
    assert_error(finalised(carol, staged), 403, 40301)


def test_a_finalised_versions_staging_cannot_fail_any_more(api):
    staged = stage(api)
    finalised(api, staged)
    response = api.post("/artifact-versions/mark-stage-failure", json={"id": staged["id"]})
    assert_error(response, 409, 40904)


# -- reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"fqn": "model:acme/demo-repo/sentiment:1"}, [SENTIMENT_1], id="fqn"),
        pytest.param({"tag": "production"}, [SENTIMENT_1], id="tag"),
        pytest.param({"name": "sentiment", "version": 1}, [SENTIMENT_1], id="name-version"),
        pytest.param({"model_id": "model-sentiment", "limit": 1}, [SENTIMENT_2], id="newest-first"),
        pytest.param({"name": "nothing"}, [], id="no-such-name"),
        pytest.param({"fqn": "artifact:acme/demo-repo/embeddings:1"}, [], id="not-a-model"),
    ],
)  # fmt: skip
def test_model_versions_are_found_by_each_filter(api, query, expected):
    assert [v["id"] for v in listed(api, "/model-versions", **query)] == expected


def test_versions_are_found_by_their_run_and_step(api):
    staged = stage(api)
    finalised(api, staged, run_id="run-7", step=3)
    assert [v["id"] for v in listed(api, run_ids=["run-1", "run-7"])] == [staged["id"]]
    assert [v["id"] for v in listed(api, run_steps=[3])] == [staged["id"]]


def test_a_staged_model_version_is_neither_listed_nor_read(api):
    assert SENTIMENT_3 not in [v["id"] for v in listed(api, "/model-versions")]
    assert_error(api.get(f"/model-versions/{SENTIMENT_3}"), 404, 40404)


def test_a_version_is_read_by_id_as_its_kind_only(api):
    assert api.get(f"/model-versions/{SENTIMENT_1}").json()["data"]["fqn"] == (
        "model:acme/demo-repo/sentiment:1"
    )
    assert_error(api.get(f"/artifact-versions/{SENTIMENT_1}"), 404, 40404)


def test_a_caller_who_reads_no_repo_lists_nothing(api, mock):
    carol = httpx.Client(
        base_url=api.base_url,
        headers={"Authorization": f"Bearer {token_of(mock, 'carol@acme.example')}"},
    )
    assert listed(carol, "/model-versions") == []
    assert_error(carol.get(f"/model-versions/{SENTIMENT_1}"), 403, 40301)


def test_a_model_is_read_with_its_latest_finalised_version(api):
    model = api.get("/models/model-sentiment").json()["data"]
    assert (model["type"], model["fqn"]) == ("model", "model:acme/demo-repo/sentiment")
    assert model["latest_version"]["fqn"] == "model:acme/demo-repo/sentiment:2"


def test_an_artifact_whose_versions_are_all_staged_has_no_latest_version(api):
    staged = stage(api)
    artifact = api.get(f"/artifacts/{staged['artifact_id']}").json()["data"]
    assert artifact["type"] == "artifact" and "latest_version" not in artifact


def test_a_model_is_not_an_artifact_404_40422(api):
    assert_error(api.get("/artifacts/model-sentiment"), 404, 40422)


@pytest.mark.platform_mock(expect_violations=True)
def test_a_path_of_the_contract_is_not_read_as_a_version_id(api):
    answer = api.get("/artifact-versions/files")
    assert_error(answer, 405, 40501)
    assert answer.headers["allow"] == "POST"
