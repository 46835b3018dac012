"""Deleting a secret group (operation 6): what goes, who may, the faulty-integration rule.

Default world: llm-keys (healthy integration; bob is a viewer) holds OPENAI_API_KEY and
HF_TOKEN; legacy-vault (faulty integration) holds DB_PASSWORD. Alice is tenant admin.
"""

from __future__ import annotations

import pytest

from tests.conftest import assert_error

DEPLOYMENTS = "/secrets/deployments"
ROLE_BINDINGS = "/role-bindings/generate-manifest"


def _group(store, name: str):
    return store.secrets.group_named(name)


def _path(group_id: str) -> str:
    return f"/secret-groups/{group_id}"


def _deployment_apps(api, secret_ids: list[str]) -> list[str]:
    response = api.post(DEPLOYMENTS, json={"secretIds": secret_ids})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["pagination"]["total"] == len(body["data"])
    return sorted(d["application"]["name"] for d in body["data"])


def _exists(store, group_id: str) -> bool:
    return group_id in store.world.secret_groups


def _snapshot(store, name: str) -> tuple:
    """Everything the delete must not touch when it fails: the group, secrets and versions."""
    group = _group(store, name)
    return (
        group.resource.id,
        group.resource.fqn,
        group.integration_healthy,
        {
            sid: (s.key, s.fqn, [(v.id, v.version, v.value) for v in s.versions])
            for sid, s in group.secrets.items()
        },
    )


# -- successful delete -------------------------------------------------------------------------


def test_delete_returns_an_empty_object(api, store):
    group_id = _group(store, "llm-keys").resource.id

    response = api.delete(_path(group_id))

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {}


def test_deleted_group_is_gone_from_the_store(api, store):
    group = _group(store, "llm-keys")

    assert api.delete(_path(group.resource.id)).status_code == 200

    assert not _exists(store, group.resource.id)
    assert store.identity.find_resource("secret-group", "llm-keys") is None
    assert _exists(store, _group(store, "legacy-vault").resource.id)  # the other one stays


def test_deleted_secrets_no_longer_return_deployments(api, store):
    secret_ids = list(_group(store, "llm-keys").secrets)
    assert _deployment_apps(api, secret_ids) == ["chat-api", "trainer"]

    assert api.delete(_path(_group(store, "llm-keys").resource.id)).status_code == 200

    assert _deployment_apps(api, secret_ids) == []


def test_deleting_one_group_leaves_the_other_groups_secrets(api, store):
    llm_keys = _group(store, "llm-keys")
    every_id = [*llm_keys.secrets, *_group(store, "legacy-vault").secrets]

    assert api.delete(_path(llm_keys.resource.id)).status_code == 200

    assert _deployment_apps(api, every_id) == ["legacy-etl"]


def test_second_delete_is_404(api, store):
    group_id = _group(store, "llm-keys").resource.id
    assert api.delete(_path(group_id)).status_code == 200

    body = assert_error(api.delete(_path(group_id)), 404, 40405)

    assert group_id in body["message"]


def test_unknown_id_is_404_and_changes_nothing(api, store):
    before = {name: _snapshot(store, name) for name in ("llm-keys", "legacy-vault")}

    body = assert_error(api.delete(_path("secret-group-does-not-exist")), 404, 40405)

    assert "secret-group-does-not-exist" in body["message"]
    assert {name: _snapshot(store, name) for name in before} == before


def test_id_of_another_kind_of_resource_is_404(api, store):
    workspace = store.identity.resource_named("workspace", "ml-team")
    assert_error(api.delete(_path(workspace.id)), 404, 40405)
    assert store.identity.find_resource("workspace", "ml-team") is not None


# -- access ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "email",
    [
        pytest.param("bob@acme.example", id="viewer-of-the-group"),
        pytest.param("carol@acme.example", id="no-grant-at-all"),
    ],
)
def test_caller_without_delete_grant_is_403_and_the_group_stays(as_user, api, store, email):
    group = _group(store, "llm-keys")
    before = _snapshot(store, "llm-keys")

    assert_error(as_user(email).delete(_path(group.resource.id)), 403, 40301)

    assert _snapshot(store, "llm-keys") == before
    assert _deployment_apps(api, list(group.secrets)) == ["chat-api", "trainer"]


def test_editor_of_the_group_may_not_delete_it(as_user, store):
    group = _group(store, "llm-keys")
    carol = store.identity.subject_named("user", "carol@acme.example")
    store.identity.add_grant(carol, "secret-group-editor", group.resource)

    assert_error(as_user("carol@acme.example").delete(_path(group.resource.id)), 403, 40301)

    assert _exists(store, group.resource.id)


def test_admin_of_the_group_may_delete_it(as_user, store):
    group = _group(store, "llm-keys")
    carol = store.identity.subject_named("user", "carol@acme.example")
    store.identity.add_grant(carol, "secret-group-admin", group.resource)

    response = as_user("carol@acme.example").delete(_path(group.resource.id))

    assert response.status_code == 200, response.text
    assert not _exists(store, group.resource.id)


def test_unknown_id_is_404_even_for_a_caller_without_grants(as_user):
    carol = as_user("carol@acme.example")
    assert_error(carol.delete(_path("secret-group-does-not-exist")), 404, 40405)


# -- faulty integration and forceDelete --------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({}, id="without-force-delete"),
        pytest.param({"forceDelete": "false"}, id="force-delete-false"),
    ],
)
def test_faulty_integration_without_force_is_424_and_deletes_nothing(api, store, params):
    group = _group(store, "legacy-vault")
    before = _snapshot(store, "legacy-vault")

    body = assert_error(api.delete(_path(group.resource.id), params=params), 424, 42401)

    assert "forceDelete" in body["message"]
    assert _snapshot(store, "legacy-vault") == before
    assert _deployment_apps(api, list(group.secrets)) == ["legacy-etl"]


def test_force_delete_removes_a_group_with_a_faulty_integration(api, store):
    group = _group(store, "legacy-vault")
    secret_ids = list(group.secrets)

    response = api.delete(_path(group.resource.id), params={"forceDelete": "true"})

    assert response.status_code == 200, response.text
    assert response.json() == {}
    assert not _exists(store, group.resource.id)
    assert _deployment_apps(api, secret_ids) == []


def test_force_delete_on_a_healthy_group_deletes_it(api, store):
    group_id = _group(store, "llm-keys").resource.id
    response = api.delete(_path(group_id), params={"forceDelete": "true"})
    assert response.status_code == 200, response.text
    assert not _exists(store, group_id)


def test_faulty_group_can_be_force_deleted_after_a_refused_delete(api, store):
    group_id = _group(store, "legacy-vault").resource.id
    assert_error(api.delete(_path(group_id)), 424, 42401)

    response = api.delete(_path(group_id), params={"forceDelete": "true"})

    assert response.status_code == 200, response.text
    assert not _exists(store, group_id)


def test_force_delete_does_not_bypass_the_grant(as_user, store):
    group_id = _group(store, "legacy-vault").resource.id
    bob = as_user("bob@acme.example")
    assert_error(bob.delete(_path(group_id), params={"forceDelete": "true"}), 403, 40301)
    assert _exists(store, group_id)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "value",
    [pytest.param("notabool", id="word"), pytest.param("2", id="number")],
)
def test_force_delete_not_a_boolean_is_400_and_deletes_nothing(api, store, value):
    group_id = _group(store, "llm-keys").resource.id
    before = _snapshot(store, "llm-keys")

    response = api.delete(_path(group_id), params={"forceDelete": value})

    body = assert_error(response, 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("query", "forceDelete")]
    assert _snapshot(store, "llm-keys") == before


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_query_parameter_is_400_and_deletes_nothing(api, store):
    group_id = _group(store, "llm-keys").resource.id

    response = api.delete(_path(group_id), params={"force": "true"})

    body = assert_error(response, 400, 40001)
    assert [d["field"] for d in body["details"]] == ["force"]
    assert _exists(store, group_id)


# -- role bindings of the deleted group --------------------------------------------------------


def test_role_bindings_on_the_deleted_group_are_404(api, store):
    group_id = _group(store, "llm-keys").resource.id
    params = {"resourceType": "secret-group", "resourceId": group_id}
    assert api.get(ROLE_BINDINGS, params=params).json()["data"]  # bob and the agent hold grants

    assert api.delete(_path(group_id)).status_code == 200

    assert_error(api.get(ROLE_BINDINGS, params=params), 404, 40402)


def test_subjects_lose_their_grants_on_the_deleted_group(api, store):
    group = _group(store, "llm-keys")
    bob = store.identity.subject_named("user", "bob@acme.example")
    params = {"subjectType": "user", "subjectId": bob.id}

    def bob_roles() -> set[str]:
        response = api.get(ROLE_BINDINGS, params=params)
        assert response.status_code == 200, response.text
        return {p["role"] for m in response.json()["data"] for p in m["permissions"]}

    assert bob_roles() == {"secret-group-viewer", "mlf-project-editor"}

    assert api.delete(_path(group.resource.id)).status_code == 200

    assert bob_roles() == {"mlf-project-editor"}
    assert all(g.resource_id != group.resource.id for g in store.world.grants)
