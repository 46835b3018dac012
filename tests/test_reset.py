"""A reset restores the world the fixtures built, from its snapshot: exactly, however the
world was changed since, and without the changes reaching the snapshot."""

from __future__ import annotations

import httpx
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.fixtures.loader import check, dump
from mock_server.state import Store
from mock_server.state.store import MAX_SNAPSHOTS

RUN = {"status": "RUNNING", "createdAt": "2026-01-01T00:00:00Z"}


def _change_everything(api: httpx.Client, admin: httpx.Client, store: Store) -> None:
    """Every kind of change the API and the admin API can make to a world."""
    assert api.get("/personal-access-tokens/ci").status_code == 200
    version = next(iter(store.world.artifact_versions.values()))
    staged = api.post(
        "/artifact-versions/stage",
        json={"manifest": {k: v for k, v in version.manifest.items() if k != "version"}},
    )
    assert staged.status_code == 200, staged.text
    moved = api.put(
        "/artifact-versions/tags",
        json={"artifact_version_id": staged.json()["id"], "tags": ["production"], "force": True},
    )
    assert moved.status_code == 200, moved.text
    group = store.secrets.group_named("llm-keys").resource.id
    assert api.delete(f"/secret-groups/{group}").status_code == 200
    trainer = store.deployments.application_named("trainer")
    document = {
        "users": [{"email": "dora@acme.example"}],
        "applications": [
            {
                "name": "trainer-2",
                "type": "job",
                "workspace": "ml-team",
                "deployments": [{"manifest": trainer_manifest(store)}],
                "runs": [RUN, {"generate": 5}],
            }
        ],
    }
    assert admin.post("/fixtures", json=document).status_code == 200
    assert api.get(f"/jobs/{trainer.id}/runs", params={"sortBy": "duration"}).status_code == 200


def trainer_manifest(store: Store) -> dict:
    trainer = store.deployments.application_named("trainer")
    manifest = store.world.deployments[trainer.deployment_ids[1]].manifest
    return {key: value for key, value in manifest.items() if key not in ("name", "type")}


def test_reset_restores_the_loaded_world_exactly(api, admin, store):
    loaded = dump(store)
    _change_everything(api, admin, store)
    assert dump(store) != loaded
    assert admin.post("/reset").status_code == 200
    assert dump(store) == loaded


def test_changes_after_a_reset_do_not_reach_the_snapshot(api, admin, store):
    loaded = dump(store)
    for _ in range(2):  # the second round changes the world the first reset restored
        _change_everything(api, admin, store)
        assert admin.post("/reset").status_code == 200
        assert dump(store) == loaded


def test_a_reset_world_is_the_fresh_world_of_its_seed(api, admin, store):
    _change_everything(api, admin, store)
    assert admin.post("/reset").status_code == 200
    assert dump(store) == dump(PlatformMock().store)


def test_a_reset_world_answers_as_a_fresh_one(api, admin, store):
    trainer = store.deployments.application_named("trainer")
    path = f"/jobs/{trainer.id}/runs"
    fresh = api.get(path, params={"sortBy": "duration", "limit": 50}).content
    _change_everything(api, admin, store)
    assert admin.post("/reset").status_code == 200
    assert api.get(path, params={"sortBy": "duration", "limit": 50}).content == fresh


def test_a_reset_world_draws_runs_and_ids_as_the_fresh_one_did():
    # What the sources give after a reset (ids, generated names) is what they gave the
    # first time: the snapshot keeps where each generator stood.
    mock = PlatformMock()
    more = check({"applications": [{"generate": 2, "workspace": "ml-team"}]}, "more.yaml")
    mock.store.load(more)
    first = dump(mock.store)
    mock.reset()
    mock.store.load(more)
    assert dump(mock.store) == first


def test_a_token_of_the_loaded_world_is_as_loaded_after_a_reset(tmp_path):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("personalAccessTokens:\n  - {owner: alice@acme.example, name: seeded}\n")
    mock = PlatformMock(MockConfig(fixtures=[tokens]))
    loaded = dump(mock.store)
    alice = mock.store.identity.default_user()
    mock.store.tokens.touch(mock.store.world.tokens[(alice.id, "seeded")])
    mock.store.tokens.revoke(alice.id, "seeded")
    assert dump(mock.store) != loaded
    mock.reset()
    assert dump(mock.store) == loaded


def test_a_reset_still_starts_a_new_world_of_token_ids(store):
    generation = store.generation
    store.reset()
    assert store.generation == generation + 1


@pytest.mark.parametrize("how", ["seed", "extra"], ids=["new-seed", "extra-document"])
def test_a_reset_that_rebuilds_leaves_the_snapshot_of_later_resets_right(how):
    mock = PlatformMock()
    if how == "seed":
        mock.reset(seed=7)
        expected = dump(PlatformMock(MockConfig(seed=7)).store)
    else:
        mock.reset(extra=[check({"users": [{"email": "dora@acme.example"}]}, "x.yaml")])
        expected = dump(PlatformMock().store)
    mock.reset()
    assert dump(mock.store) == expected


def test_a_fixture_that_cannot_enter_leaves_the_world_and_its_sources_as_they_were(store):
    before = dump(store)
    clash = {"users": [{"email": "x@acme.example"}, {"email": "x@acme.example"}]}
    with pytest.raises(ValueError):
        store.load(check(clash, "clash.yaml"))
    assert dump(store) == before
    more = check({"applications": [{"generate": 1, "workspace": "ml-team"}]}, "more.yaml")
    store.load(more)
    fresh = PlatformMock().store
    fresh.load(more)
    assert dump(store) == dump(fresh)


def test_a_reset_world_shares_the_loaded_worlds_run_indexes(store):
    # Runs never change, so a reset world need not sort a job's runs again: at 100,000
    # runs that is the difference between a page in milliseconds and one in a second.
    trainer = store.deployments.application_named("trainer")
    loaded = store.world.run_indexes[trainer.id]
    store.reset()
    assert store.world.run_indexes[trainer.id] is loaded


def test_a_copied_world_finds_its_own_subjects_by_name(store):
    copy = store.world.copy()
    alice = copy.subject_names[("user", "alice@acme.example")]
    assert alice is copy.subjects[("user", alice.id)]
    assert alice is not store.world.subjects[("user", alice.id)]


# -- a snapshot per world: seed and extra documents ---------------------------------------------

DORA = {"users": [{"email": "dora@acme.example"}]}


@pytest.mark.parametrize(
    "reset",
    [
        pytest.param({"seed": 7}, id="another-seed"),
        pytest.param({"extra": [check(DORA, "dora.yaml")]}, id="extra-document"),
        pytest.param({"seed": 0}, id="the-same-seed"),
    ],
)
def test_a_world_built_once_is_restored_without_applying_a_document(reset, monkeypatch):
    mock = PlatformMock()
    mock.reset(**reset)
    built = dump(mock.store)
    mock.reset()
    applied = []
    monkeypatch.setattr("mock_server.fixtures.loader.apply_document", lambda *a: applied.append(a))
    mock.reset(**reset)
    assert (applied, dump(mock.store)) == ([], built)


def test_extra_documents_of_another_content_build_another_world():
    mock = PlatformMock()
    mock.reset(extra=[check(DORA, "dora.yaml")])
    mock.reset(extra=[check({"users": [{"email": "erin@acme.example"}]}, "erin.yaml")])
    emails = {subject.slug for subject in mock.store.world.subjects.values()}
    assert "erin@acme.example" in emails and "dora@acme.example" not in emails


def test_a_restored_world_is_a_new_world_of_token_ids():
    mock = PlatformMock()
    mock.reset(seed=7)
    generation = mock.store.generation
    mock.reset(seed=7)
    assert mock.store.generation == generation + 1


def test_the_snapshots_kept_are_bounded():
    mock = PlatformMock()
    for seed in range(MAX_SNAPSHOTS + 5):
        mock.reset(seed=seed)
    assert len(mock.store._snapshots) == MAX_SNAPSHOTS
