"""Manifests applied and deleted as `tfy apply` and `tfy delete` send them (`applyManifest`,
`deleteManifest`), and the dependency tree of a batch (`resolveDependencyTree`): role
bindings that operation 1 then returns, secret groups with their secrets whose delete
cascades as operation 6's, versions finalised, dry runs."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from mock_server.fixtures import loader as fixtures
from tests.conftest import assert_error, new_store, token_of

BOB = "bob@acme.example"
BINDING: dict[str, Any] = {
    "type": "role-binding",
    "name": "bob-edits-ml-team",
    "subjects": [{"type": "user", "name": BOB}],
    "permissions": [
        {
            "resourceType": "workspace",
            "resourceFqn": "prod-cluster:ml-team",
            "role": "workspace-editor",
        }
    ],
}
GROUP: dict[str, Any] = {
    "type": "secret-group",
    "name": "ci-keys",
    "integration_fqn": "acme:aws:secrets-manager",
    "secrets": [{"key": "API_KEY", "value": "k-1"}, {"key": "TOKEN", "value": "t-1"}],
}


def apply(api: httpx.Client, manifest: dict, **options) -> httpx.Response:
    return api.put("/apply", json={"manifest": manifest, **options})


def bindings_of(api: httpx.Client, store, email: str = BOB) -> dict[str, dict]:
    subject = store.identity.subject_named("user", email).id
    answer = api.get(
        "/role-bindings/generate-manifest", params={"subjectType": "user", "subjectId": subject}
    )
    assert answer.status_code == 200, answer.text
    return {m["name"]: m for m in answer.json()["data"]}


# -- role bindings -----------------------------------------------------------------------------


def test_an_applied_role_binding_is_what_operation_1_then_generates(api, store):
    answer = apply(api, BINDING)
    assert (answer.status_code, answer.json()["action"]) == (200, "CREATE")
    assert bindings_of(api, store)[BINDING["name"]] == BINDING


def test_an_applied_role_binding_is_generated_for_its_resource_too(api, store):
    apply(api, BINDING)
    workspace = store.identity.resource_named("workspace", "ml-team").id
    answer = api.get(
        "/role-bindings/generate-manifest",
        params={"resourceType": "workspace", "resourceId": workspace},
    )
    assert BINDING in answer.json()["data"]


def test_an_applied_role_binding_grants_its_roles(api, store):
    bob = store.identity.subject_named("user", BOB).caller()
    workspace = store.identity.resource_named("workspace", "ml-team")
    assert not store.identity.allowed(bob, "write", workspace)
    apply(api, BINDING)
    assert store.identity.allowed(bob, "write", workspace)


def test_a_manifest_operation_1_generated_comes_back_as_applied(api, store):
    (generated,) = [m for m in bindings_of(api, store).values() if "mlf-project" in m["name"]]
    changed = copy.deepcopy(generated)
    changed["permissions"].append(BINDING["permissions"][0])
    apply(api, changed)
    found = bindings_of(api, store)
    assert found[generated["name"]] == changed and len(found) == 2  # in its place, once


def test_applying_a_binding_again_replaces_it(api, store):
    apply(api, BINDING)
    viewer = copy.deepcopy(BINDING)
    viewer["permissions"][0]["role"] = "workspace-viewer"
    answer = apply(api, viewer).json()
    assert (answer["action"], answer["existingManifest"]) == ("UPDATE", BINDING)
    assert bindings_of(api, store)[BINDING["name"]] == viewer
    bob = store.identity.subject_named("user", BOB).caller()
    assert not store.identity.allowed(
        bob, "write", store.identity.resource_named("workspace", "ml-team")
    )


def test_a_binding_naming_an_unknown_subject_is_404_40423(api):
    manifest = {**BINDING, "subjects": [{"type": "user", "name": "nobody@acme.example"}]}
    assert_error(apply(api, manifest), 404, 40423)


def test_a_binding_naming_an_unknown_resource_is_404_40423(api):
    permission = {**BINDING["permissions"][0], "resourceFqn": "prod-cluster:nowhere"}
    assert_error(apply(api, {**BINDING, "permissions": [permission]}), 404, 40423)


def test_a_role_the_platform_does_not_have_is_400_40013(api, store):
    permission = {**BINDING["permissions"][0], "role": "workspace-owner"}
    assert_error(apply(api, {**BINDING, "permissions": [permission]}), 400, 40013)
    assert store.world.role_bindings == {}


def test_binding_roles_needs_an_admin_role_on_the_resource(api, mock, store):
    bob = httpx.Client(
        base_url=api.base_url, headers={"Authorization": f"Bearer {token_of(mock, BOB)}"}
    )
    assert_error(apply(bob, BINDING), 403, 40301)
    assert store.world.role_bindings == {}


def test_a_dry_run_answers_as_the_apply_and_changes_nothing(api, store):
    before = store.dump()
    answer = apply(api, BINDING, dryRun=True)
    assert (answer.status_code, answer.json()["action"]) == (200, "CREATE")
    assert store.dump() == before


def test_a_deleted_binding_is_generated_no_more_and_its_roles_go(api, store):
    apply(api, BINDING)
    answer = api.post("/delete", json={"manifest": BINDING})
    assert (answer.status_code, answer.json()) == (200, {})
    assert BINDING["name"] not in bindings_of(api, store)
    assert not any(g.binding for g in store.world.grants)


def test_deleting_a_binding_never_applied_is_404_40424(api):
    assert_error(api.post("/delete", json={"manifest": BINDING}), 404, 40424)


def test_deleting_a_resource_takes_its_permissions_out_of_bindings(api, store):
    group = {
        "resourceType": "secret-group",
        "resourceFqn": "acme:llm-keys",
        "role": "secret-group-viewer",
    }
    both = {**BINDING, "permissions": [*BINDING["permissions"], group]}
    apply(api, both)
    api.delete("/secret-groups/secret-group-llm-keys")
    assert bindings_of(api, store)[BINDING["name"]] == BINDING


# -- secret groups -----------------------------------------------------------------------------


def test_an_applied_secret_group_is_made_with_its_secrets_never_shown(api, store):
    answer = apply(api, GROUP)
    body = answer.json()
    assert (answer.status_code, body["action"]) == (200, "CREATE")
    assert [s["name"] for s in body["data"]["associatedSecrets"]] == ["API_KEY", "TOKEN"]
    assert "k-1" not in answer.text and "t-1" not in answer.text
    group = store.secrets.group_named("ci-keys")
    assert [(s.key, [v.value for v in s.versions]) for s in group.secrets.values()] == [
        ("API_KEY", ["k-1"]),
        ("TOKEN", ["t-1"]),
    ]


def test_applying_a_group_again_makes_new_versions_and_drops_keys_not_given(api, store):
    apply(api, GROUP)
    changed = {**GROUP, "secrets": [{"key": "API_KEY", "value": "k-2"}]}
    answer = apply(api, changed).json()
    assert answer["action"] == "UPDATE"
    assert answer["existingManifest"] == {k: v for k, v in GROUP.items() if k != "secrets"}
    group = store.secrets.group_named("ci-keys")
    assert [(s.key, [v.value for v in s.versions]) for s in group.secrets.values()] == [
        ("API_KEY", ["k-1", "k-2"])
    ]


def test_a_secret_key_given_twice_is_400_40013(api, store):
    manifest = {**GROUP, "secrets": [{"key": "A", "value": "1"}, {"key": "A", "value": "2"}]}
    assert_error(apply(api, manifest), 400, 40013)
    assert store.identity.find_resource("secret-group", "ci-keys") is None


def test_creating_a_group_needs_write_on_the_tenant(api, mock):
    bob = httpx.Client(
        base_url=api.base_url, headers={"Authorization": f"Bearer {token_of(mock, BOB)}"}
    )
    assert_error(apply(bob, GROUP), 403, 40301)


def test_deleting_a_group_by_its_manifest_cascades_as_operation_6():
    """The world after `POST /delete` of a group's manifest is the world after operation 6
    deletes it: the group, its secrets, their versions and the grants on it, at once."""
    documents = fixtures.default_fixtures()
    by_manifest, by_id = new_store(0, documents), new_store(0, documents)
    alice = by_manifest.identity.default_user().caller()
    by_manifest.manifests.delete(
        alice,
        {"type": "secret-group", "name": "llm-keys", "integration_fqn": "acme:aws:secrets-manager"},
    )
    by_id.secrets.delete_group(alice, "secret-group-llm-keys", force_delete=False)
    assert by_manifest.dump() == by_id.dump()
    assert by_manifest.world.ids == by_id.world.ids


def test_a_deleted_groups_secrets_reach_no_deployment_any_more(api, store):
    secrets = list(store.secrets.group_named("llm-keys").secrets)
    before = api.post("/secrets/deployments", json={"secretIds": secrets}).json()["data"]
    manifest = {"type": "secret-group", "name": "llm-keys", "integration_fqn": "x"}
    assert api.post("/delete", json={"manifest": manifest}).status_code == 200
    after = api.post("/secrets/deployments", json={"secretIds": secrets}).json()["data"]
    assert (len(before) > 0, after) == (True, [])


def test_deleting_a_group_whose_integration_is_down_is_424_42401_as_operation_6(api, store):
    manifest = {"type": "secret-group", "name": "legacy-vault", "integration_fqn": "x"}
    assert_error(api.post("/delete", json={"manifest": manifest}), 424, 42401)
    assert store.identity.find_resource("secret-group", "legacy-vault") is not None


def test_deleting_an_unknown_group_is_404_40405(api):
    manifest = {"type": "secret-group", "name": "nothing", "integration_fqn": "x"}
    assert_error(api.post("/delete", json={"manifest": manifest}), 404, 40405)


# -- versions and skills ------------------------------------------------------------------------


def test_applying_a_staged_skills_blob_storage_source_finalises_it(api, store):
    manifest = {"type": "agent-skill", "name": "triage", "ml_repo": "demo-repo"}
    inline = {"type": "inline", "skill_md": "---\nname: triage\ndescription: d\n---\n"}
    staged = api.post("/artifact-versions/stage", json={"manifest": {**manifest, "source": inline}})
    uri = staged.json()["storage_root"]
    source = {"type": "blob-storage", "description": "Triages tickets", "uri": uri}
    answer = apply(api, {**manifest, "metadata": {}, "source": source}).json()
    assert answer["action"] == "CREATE"
    assert answer["data"]["fqn"] == "agent-skill:acme/demo-repo/triage:1"
    assert answer["data"]["agent_skill_id"] == staged.json()["artifact_id"]
    assert store.artifacts.version(staged.json()["id"]).status == "ready"


def test_applying_an_inline_skill_makes_a_version_ready_at_once(api, store):
    inline = {"type": "inline", "skill_md": "---\nname: greet\ndescription: d\n---\nHello.\n"}
    manifest = {"type": "agent-skill", "name": "greet", "ml_repo": "demo-repo", "source": inline}
    answer = apply(api, manifest).json()
    assert (answer["action"], answer["data"]["manifest"]["source"]) == ("CREATE", inline)


def test_applying_a_model_version_finalises_it_as_its_own_operation_does(api):
    root = "s3://platform-acme-artifacts/demo-repo/models/sentiment/3/"
    manifest = {"type": "model-version", "name": "sentiment", "ml_repo": "demo-repo"}
    answer = apply(api, {**manifest, "source": {"type": "truefoundry", "uri": root}}).json()
    assert answer["data"]["fqn"] == "model:acme/demo-repo/sentiment:3"
    assert answer["data"]["model_id"] == "model-sentiment"


def test_applying_a_ready_version_again_shows_the_manifest_it_replaced(api):
    root = "s3://platform-acme-artifacts/demo-repo/models/sentiment/1/"
    manifest = {"type": "model-version", "name": "sentiment", "ml_repo": "demo-repo"}
    answer = apply(api, {**manifest, "source": {"type": "truefoundry", "uri": root}}).json()
    assert answer["action"] == "UPDATE"
    assert answer["existingManifest"]["description"] == "First sentiment model"


@pytest.mark.platform_mock(expect_violations=True)
def test_a_kind_the_mock_does_not_apply_is_400_40001(api):
    assert_error(apply(api, {"type": "service", "name": "web"}), 400, 40001)


# -- the dependency tree ----------------------------------------------------------------------


def _node(type_: str, name: str, *needs: tuple[str, str]) -> dict:
    dependencies = [{"resourceType": t, "resourceName": n} for t, n in needs]
    return {"resourceType": type_, "resourceName": name, "dependencies": dependencies}


def test_the_dependency_tree_names_what_each_manifest_needs_from_the_batch(api):
    on_group = {
        "resourceType": "secret-group",
        "resourceFqn": "acme:ci-keys",
        "role": "secret-group-viewer",
    }
    binding = {**BINDING, "permissions": [on_group]}
    version = {"type": "model-version", "name": "m", "ml_repo": "repo-x"}
    repo = {"type": "ml-repo", "name": "repo-x"}
    batch = [binding, GROUP, version, repo, {"type": "settings"}]
    answer = api.post("/dependency-tree", json={"manifests": batch})
    assert answer.json()["data"] == [
        _node("role-binding", BINDING["name"], ("secret-group", "ci-keys")),
        _node("secret-group", "ci-keys"),
        _node("model-version", "m", ("ml-repo", "repo-x")),
        _node("ml-repo", "repo-x"),
        _node("settings", "settings"),
    ]


def test_the_dependency_tree_changes_nothing(api, store):
    before = store.dump()
    api.post("/dependency-tree", json={"manifests": [GROUP]})
    assert store.dump() == before


@pytest.mark.parametrize("permissions", [5, True, "viewer"], ids=["number", "boolean", "text"])
def test_a_batch_manifests_permissions_not_a_list_need_nothing(api, permissions):
    manifest = {"type": "settings", "name": "s", "permissions": permissions}
    answer = api.post("/dependency-tree", json={"manifests": [manifest, GROUP]})
    assert answer.json()["data"] == [_node("settings", "s"), _node("secret-group", "ci-keys")]
