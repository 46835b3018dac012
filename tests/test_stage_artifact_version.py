"""Staging artifact versions (operation 3): variants, artifact and version numbering, errors."""

from __future__ import annotations

import copy
import uuid

import pytest

from tests.conftest import assert_error

STAGE = "/artifact-versions/stage"
REPO = "demo-repo"
ALICE, BOB, CAROL = "alice@acme.example", "bob@acme.example", "carol@acme.example"

ARTIFACT = {
    "type": "artifact-version",
    "name": "eval-dataset",
    "ml_repo": REPO,
    "source": {"type": "platform", "uri": "s3://uploads/eval-dataset/"},
    "description": "Held-out evaluation set",
    "metadata": {"rows": 1200},
}
MODEL = {
    "type": "model-version",
    "name": "churn",
    "ml_repo": REPO,
    "source": {"type": "platform"},
    "framework": {"type": "sklearn"},
    "environment": {"python_version": "3.11", "pip_packages": ["scikit-learn==1.5.0"]},
}
SKILL = {
    "type": "agent-skill",
    "name": "summarise-ticket",
    "ml_repo": REPO,
    "source": {"type": "inline", "skill_md": "---\nname: summarise-ticket\n---\nSummarise.\n"},
}
VARIANTS = [
    pytest.param(ARTIFACT, id="artifact-version"),
    pytest.param(MODEL, id="model-version"),
    pytest.param(SKILL, id="agent-skill"),
]


def manifest(base: dict | None = None, **changes) -> dict:
    """A copy of a manifest (the artifact variant by default) with fields changed."""
    out = copy.deepcopy(base or ARTIFACT)
    out.update(changes)
    return out


def stage(client, body_manifest: dict):
    return client.post(STAGE, json={"manifest": body_manifest})


def version_count(store) -> int:
    return len(store.world.artifact_versions)


def artifact_named(store, type_: str, name: str):
    return next(a for a in store.world.artifacts.values() if (a.type, a.name) == (type_, name))


def detail_fields(body: dict) -> set[str]:
    return {d["field"] for d in body["details"]}


# -- the three variants ------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_stages_and_returns_id_storage_root_and_artifact_id(api, store, variant):
    response = stage(api, variant)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"id", "storage_root", "artifact_id"}
    assert all(isinstance(value, str) and value for value in body.values())
    staged = store.artifacts.version(body["id"])
    assert staged is not None
    assert staged.artifact_id == body["artifact_id"]
    assert staged.storage_root == body["storage_root"]
    assert store.world.artifacts[body["artifact_id"]].type == variant["type"]


def test_model_variant_keeps_its_framework_and_environment(api, store):
    body = stage(api, MODEL).json()
    kept = store.artifacts.version(body["id"]).manifest
    assert kept["framework"] == MODEL["framework"]
    assert kept["environment"] == MODEL["environment"]


# -- storage root ------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_storage_root_lies_under_the_repo_root_and_names_artifact_and_version(api, store, variant):
    repo_root = store.world.ml_repos[REPO].storage_root.rstrip("/")
    body = stage(api, variant).json()
    root = body["storage_root"]
    assert root.startswith(repo_root + "/"), (root, repo_root)
    segments = root.removeprefix(repo_root + "/").strip("/").split("/")
    assert variant["name"] in segments
    assert str(store.artifacts.version(body["id"]).version) in segments


def test_storage_roots_of_two_versions_differ(api):
    first = stage(api, ARTIFACT).json()
    second = stage(api, ARTIFACT).json()
    assert first["storage_root"] != second["storage_root"]


def test_storage_root_is_reserved_per_version_even_across_kinds(api):
    # An artifact and a model with the same name are two artifacts (the kind is part of the
    # identity), so their version 1 must not share an upload location.
    as_artifact = stage(api, manifest(name="shared-name")).json()
    as_model = stage(api, manifest(MODEL, name="shared-name")).json()
    assert as_artifact["artifact_id"] != as_model["artifact_id"]
    assert as_artifact["storage_root"] != as_model["storage_root"]


# -- artifacts and version numbers -------------------------------------------------------


def test_first_stage_of_a_new_name_creates_an_artifact_at_version_1(api, store):
    artifacts_before = set(store.world.artifacts)
    body = stage(api, ARTIFACT).json()
    assert body["artifact_id"] not in artifacts_before
    artifact = store.world.artifacts[body["artifact_id"]]
    assert (artifact.name, artifact.type) == (ARTIFACT["name"], ARTIFACT["type"])
    assert store.artifacts.version(body["id"]).version == 1
    assert artifact.versions == {1: body["id"]}


def test_staging_the_same_name_again_gives_the_same_artifact_and_the_next_version(api, store):
    first = stage(api, ARTIFACT).json()
    second = stage(api, ARTIFACT).json()
    assert second["artifact_id"] == first["artifact_id"]
    assert second["id"] != first["id"]
    assert store.artifacts.version(first["id"]).version == 1
    assert store.artifacts.version(second["id"]).version == 2


def test_staging_an_existing_model_continues_its_numbering(api, store):
    sentiment = artifact_named(store, "model-version", "sentiment")
    assert set(sentiment.versions) == {1, 2, 3}
    body = stage(api, manifest(MODEL, name="sentiment")).json()
    assert body["artifact_id"] == sentiment.id
    assert store.artifacts.version(body["id"]).version == 4


def test_same_name_of_another_kind_is_another_artifact(api, store):
    sentiment = artifact_named(store, "model-version", "sentiment")
    body = stage(api, manifest(name="sentiment")).json()
    assert body["artifact_id"] != sentiment.id
    assert store.artifacts.version(body["id"]).version == 1


def test_explicit_version_is_used(api, store):
    body = stage(api, manifest(version=7)).json()
    assert store.artifacts.version(body["id"]).version == 7
    assert store.world.artifacts[body["artifact_id"]].versions == {7: body["id"]}


def test_explicit_version_that_exists_is_409_and_changes_nothing(api, store):
    sentiment = artifact_named(store, "model-version", "sentiment")
    versions_before = dict(sentiment.versions)
    count = version_count(store)
    response = stage(api, manifest(MODEL, name="sentiment", version=1))
    body = assert_error(response, 409, 40902)
    assert "sentiment" in body["message"]
    assert version_count(store) == count
    assert sentiment.versions == versions_before
    assert store.artifacts.version(versions_before[1]).manifest["description"] == (
        "First sentiment model"
    )


# -- not found and access ----------------------------------------------------------------


def test_unknown_ml_repo_is_404_and_changes_nothing(api, store):
    count = version_count(store)
    body = assert_error(stage(api, manifest(ml_repo="no-such-repo")), 404, 40403)
    assert "no-such-repo" in body["message"]
    assert version_count(store) == count


def test_caller_without_grant_is_403_and_changes_nothing(as_user, store):
    count, artifacts = version_count(store), len(store.world.artifacts)
    assert_error(stage(as_user(CAROL), ARTIFACT), 403, 40301)
    assert version_count(store) == count
    assert len(store.world.artifacts) == artifacts


def test_project_editor_may_stage(as_user, store):
    response = stage(as_user(BOB), ARTIFACT)
    assert response.status_code == 200, response.text
    assert store.artifacts.version(response.json()["id"]) is not None


# -- invalid manifests -------------------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "missing",
    [
        pytest.param("type", id="type"),
        pytest.param("name", id="name"),
        pytest.param("ml_repo", id="ml_repo"),
        pytest.param("source", id="source"),
    ],
)
def test_missing_required_field_is_400_naming_it_and_changes_nothing(api, store, missing):
    count = version_count(store)
    incomplete = {k: v for k, v in ARTIFACT.items() if k != missing}
    body = assert_error(stage(api, incomplete), 400, 40001)
    assert f"manifest.{missing}" in detail_fields(body), body
    assert version_count(store) == count


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_field_is_400_naming_it(api, store):
    count = version_count(store)
    body = assert_error(stage(api, manifest(colour="blue")), 400, 40001)
    assert "manifest.colour" in detail_fields(body), body
    assert "colour" in body["message"]
    assert version_count(store) == count


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_type_is_400_naming_the_type_field(api, store):
    count = version_count(store)
    body = assert_error(stage(api, manifest(type="dataset-version")), 400, 40001)
    assert "manifest.type" in detail_fields(body), body
    assert version_count(store) == count


@pytest.mark.platform_mock(expect_violations=True)
def test_model_field_on_artifact_variant_is_400(api, store):
    count = version_count(store)
    body = assert_error(stage(api, manifest(framework={"type": "sklearn"})), 400, 40001)
    assert "manifest.framework" in detail_fields(body), body
    assert version_count(store) == count


@pytest.mark.platform_mock(expect_violations=True)
def test_every_violation_is_reported_at_once(api, store):
    count = version_count(store)
    broken = {k: v for k, v in ARTIFACT.items() if k not in ("name", "source")}
    body = assert_error(stage(api, broken), 400, 40001)
    assert {"manifest.name", "manifest.source"} <= detail_fields(body), body
    assert version_count(store) == count


# -- null read as absent (the platform's SDK sends null for an optional field set to None) -----


@pytest.mark.parametrize(
    "field",
    [
        pytest.param("framework", id="model-framework"),
        pytest.param("environment", id="model-environment"),
        pytest.param("description", id="description"),
        pytest.param("run_id", id="run-id"),
    ],
)
def test_optional_field_given_null_is_read_as_absent(api, store, field):
    response = stage(api, manifest(MODEL, **{field: None}))
    assert response.status_code == 200, response.text
    stored = store.world.artifact_versions[response.json()["id"]].manifest
    assert field not in stored


def test_null_inside_a_nested_optional_object_is_read_as_absent(api, store):
    response = stage(api, manifest(MODEL, source={"type": "platform", "uri": None}))
    assert response.status_code == 200, response.text
    assert store.world.artifact_versions[response.json()["id"]].manifest["source"] == {
        "type": "platform"
    }


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "field", [pytest.param("name", id="name"), pytest.param("source", id="source")]
)
def test_required_field_given_null_is_400_and_stages_nothing(api, store, field):
    before = version_count(store)
    body = assert_error(stage(api, manifest(MODEL, **{field: None})), 400, 40001)
    assert [d["field"] for d in body["details"]] == [f"manifest.{field}"]
    assert version_count(store) == before


def test_staged_version_id_is_a_uuid_as_the_platforms_library_reads_it(api):
    staged = api.post(STAGE, json={"manifest": manifest()}).json()
    assert str(uuid.UUID(staged["id"])) == staged["id"]


def test_staged_version_ids_follow_the_seed(api, mock):
    first = api.post(STAGE, json={"manifest": manifest()}).json()["id"]
    mock.reset()
    assert api.post(STAGE, json={"manifest": manifest()}).json()["id"] == first
    mock.reset(seed=3)
    reseeded = {"Authorization": f"Bearer {mock.auth.dev_token()}"}  # seed 3's key
    other = api.post(STAGE, json={"manifest": manifest()}, headers=reseeded).json()["id"]
    assert other != first
