"""Role-binding manifests (operation 1): resource and subject modes, the tenant-only filter, errors.

The manifests are derived from the grants held in the store, so several tests add a resource,
a subject or a grant through the store and check that the next call reflects it.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import assert_error

PATH = "/role-bindings/generate-manifest"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{1,64}[a-z0-9]$")


def _by_resource(api, resource, **extra):
    return api.get(PATH, params={"resourceType": resource.type, "resourceId": resource.id, **extra})


def _by_subject(api, subject, **extra):
    return api.get(PATH, params={"subjectType": subject.type, "subjectId": subject.id, **extra})


def _data(response) -> list[dict]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data"}
    return body["data"]


def _by_role(manifests: list[dict]) -> dict[str, dict]:
    """Manifests keyed by their single role; fails if a manifest mixes roles or a role repeats."""
    keyed: dict[str, dict] = {}
    for manifest in manifests:
        roles = {p["role"] for p in manifest["permissions"]}
        assert len(roles) == 1, manifest
        (role,) = roles
        assert role not in keyed, f"two manifests for role {role}"
        keyed[role] = manifest
    return keyed


def _subjects(manifest: dict) -> set[tuple[str, str]]:
    return {(s["type"], s["name"]) for s in manifest["subjects"]}


def _permissions(manifest: dict) -> set[tuple[str, str, str]]:
    return {(p["resourceType"], p["resourceFqn"], p["role"]) for p in manifest["permissions"]}


# -- resource mode -----------------------------------------------------------------------------


def test_resource_mode_returns_one_manifest_per_role_on_the_resource(api, store):
    llm_keys = store.identity.resource_named("secret-group", "llm-keys")
    ci_bot = store.identity.subject_named("virtualaccount", "ci-bot")
    store.identity.add_grant(ci_bot, "secret-group-admin", llm_keys)

    manifests = _by_role(_data(_by_resource(api, llm_keys)))

    assert set(manifests) == {"secret-group-viewer", "secret-group-admin"}
    assert all(m["type"] == "role-binding" for m in manifests.values())


def test_resource_mode_lists_every_subject_holding_the_role(api, store):
    llm_keys = store.identity.resource_named("secret-group", "llm-keys")

    (manifest,) = _data(_by_resource(api, llm_keys))

    # The fixtures grant secret-group-viewer on llm-keys to bob and to the support agent.
    assert _subjects(manifest) == {("user", "bob@acme.example"), ("agent", "support-agent")}


def test_resource_mode_permission_names_the_resource_fqn(api, store):
    workspace = store.identity.resource_named("workspace", "ml-team")

    (manifest,) = _data(_by_resource(api, workspace))

    assert manifest["permissions"] == [
        {"resourceType": "workspace", "resourceFqn": workspace.fqn, "role": "workspace-viewer"}
    ]
    assert _subjects(manifest) == {("team", "ml-platform")}


def test_resource_with_no_grants_gives_empty_data(api, store):
    cluster = store.identity.resource_named("cluster", "prod-cluster")
    assert _data(_by_resource(api, cluster)) == []


def test_new_resource_without_grants_gives_empty_data(api, store):
    project = store.identity.add_resource("tracing-project", "empty-traces")
    assert _data(_by_resource(api, project)) == []


def test_grant_added_to_the_store_shows_up_in_the_next_call(api, store):
    project = store.identity.resource_named("tracing-project", "chat-traces")
    carol = store.identity.subject_named("user", "carol@acme.example")
    before = _by_role(_data(_by_resource(api, project)))
    assert ("user", "carol@acme.example") not in _subjects(before["tracing-project-viewer"])

    store.identity.add_grant(carol, "tracing-project-viewer", project)
    store.identity.add_grant(carol, "tracing-project-admin", project)
    after = _by_role(_data(_by_resource(api, project)))

    assert _subjects(after["tracing-project-viewer"]) == {
        ("team", "data-science"),
        ("user", "carol@acme.example"),
    }
    assert _subjects(after["tracing-project-admin"]) == {("user", "carol@acme.example")}


def test_include_only_tenant_roles_is_ignored_in_resource_mode(api, store):
    llm_keys = store.identity.resource_named("secret-group", "llm-keys")

    plain = _data(_by_resource(api, llm_keys))
    filtered = _data(_by_resource(api, llm_keys, includeOnlyTenantRoles="true"))

    assert plain  # llm-keys has grants, none of them on the tenant
    assert filtered == plain


# -- subject mode ------------------------------------------------------------------------------


def test_subject_mode_returns_one_manifest_per_role_held_by_the_subject(api, store):
    bob = store.identity.subject_named("user", "bob@acme.example")

    manifests = _by_role(_data(_by_subject(api, bob)))

    assert set(manifests) == {"secret-group-viewer", "mlf-project-editor"}
    for manifest in manifests.values():
        assert manifest["type"] == "role-binding"
        assert manifest["subjects"] == [{"type": "user", "name": "bob@acme.example"}]


def test_subject_mode_permissions_list_every_resource_of_the_role(api, store):
    identity = store.identity
    bob = identity.subject_named("user", "bob@acme.example")
    llm_keys = identity.resource_named("secret-group", "llm-keys")
    legacy_vault = identity.resource_named("secret-group", "legacy-vault")
    identity.add_grant(bob, "secret-group-viewer", legacy_vault)

    manifests = _by_role(_data(_by_subject(api, bob)))

    assert _permissions(manifests["secret-group-viewer"]) == {
        ("secret-group", llm_keys.fqn, "secret-group-viewer"),
        ("secret-group", legacy_vault.fqn, "secret-group-viewer"),
    }
    assert len(manifests["secret-group-viewer"]["permissions"]) == 2


def test_subject_mode_names_a_team_by_its_name(api, store):
    team = store.identity.subject_named("team", "ml-platform")
    workspace = store.identity.resource_named("workspace", "ml-team")

    (manifest,) = _data(_by_subject(api, team))

    assert manifest["subjects"] == [{"type": "team", "name": "ml-platform"}]
    assert _permissions(manifest) == {("workspace", workspace.fqn, "workspace-viewer")}


def test_subject_with_no_grants_gives_empty_data(api, store):
    carol = store.identity.subject_named("user", "carol@acme.example")
    assert _data(_by_subject(api, carol)) == []


def test_grant_added_to_a_subject_shows_up_in_the_next_call(api, store):
    carol = store.identity.subject_named("user", "carol@acme.example")
    workspace = store.identity.resource_named("workspace", "ml-team")
    assert _data(_by_subject(api, carol)) == []

    store.identity.add_grant(carol, "workspace-editor", workspace)
    (manifest,) = _data(_by_subject(api, carol))

    assert _permissions(manifest) == {("workspace", workspace.fqn, "workspace-editor")}


# -- includeOnlyTenantRoles --------------------------------------------------------------------


def test_include_only_tenant_roles_keeps_only_tenant_grants_of_a_user(api, store):
    identity = store.identity
    alice = identity.subject_named("user", "alice@acme.example")
    workspace = identity.resource_named("workspace", "ml-team")
    identity.add_grant(alice, "workspace-viewer", workspace)
    assert set(_by_role(_data(_by_subject(api, alice)))) == {"tenant-admin", "workspace-viewer"}

    (manifest,) = _data(_by_subject(api, alice, includeOnlyTenantRoles="true"))

    assert _permissions(manifest) == {("tenant", identity.tenant.fqn, "tenant-admin")}


def test_include_only_tenant_roles_gives_empty_data_for_a_user_without_tenant_grants(api, store):
    bob = store.identity.subject_named("user", "bob@acme.example")
    assert _data(_by_subject(api, bob))  # bob holds grants, none on the tenant
    assert _data(_by_subject(api, bob, includeOnlyTenantRoles="true")) == []


def test_include_only_tenant_roles_keeps_only_tenant_grants_of_a_team(api, store):
    identity = store.identity
    team = identity.subject_named("team", "ml-platform")
    identity.add_grant(team, "tenant-viewer", identity.tenant)
    assert set(_by_role(_data(_by_subject(api, team)))) == {"tenant-viewer", "workspace-viewer"}

    (manifest,) = _data(_by_subject(api, team, includeOnlyTenantRoles="true"))

    assert _permissions(manifest) == {("tenant", identity.tenant.fqn, "tenant-viewer")}


def test_include_only_tenant_roles_false_keeps_every_grant(api, store):
    bob = store.identity.subject_named("user", "bob@acme.example")
    plain = _data(_by_subject(api, bob))
    assert _data(_by_subject(api, bob, includeOnlyTenantRoles="false")) == plain


@pytest.mark.parametrize(
    ("subject_type", "name"),
    [
        pytest.param("virtualaccount", "ci-bot", id="virtualaccount"),
        pytest.param("agent", "support-agent", id="agent"),
    ],
)
def test_include_only_tenant_roles_is_ignored_for_other_subject_types(
    api, store, subject_type, name
):
    subject = store.identity.subject_named(subject_type, name)

    plain = _data(_by_subject(api, subject))
    filtered = _data(_by_subject(api, subject, includeOnlyTenantRoles="true"))

    assert plain  # the fixtures grant each of them a role on a non-tenant resource
    assert all(p["resourceType"] != "tenant" for m in plain for p in m["permissions"])
    assert filtered == plain


# -- modes given wrongly -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(("resourceType", "resourceId", "subjectType", "subjectId"), id="both-modes"),
        pytest.param((), id="neither-mode"),
        pytest.param(("includeOnlyTenantRoles",), id="only-include-only-tenant-roles"),
        pytest.param(("resourceType",), id="resource-type-only"),
        pytest.param(("resourceId",), id="resource-id-only"),
        pytest.param(("subjectType",), id="subject-type-only"),
        pytest.param(("subjectId",), id="subject-id-only"),
        pytest.param(("resourceType", "subjectId"), id="resource-type-with-subject-id"),
        pytest.param(("subjectType", "resourceId"), id="subject-type-with-resource-id"),
    ],
)
def test_not_exactly_one_complete_mode_is_400(api, store, keys):
    llm_keys = store.identity.resource_named("secret-group", "llm-keys")
    bob = store.identity.subject_named("user", "bob@acme.example")
    values = {
        "resourceType": llm_keys.type,
        "resourceId": llm_keys.id,
        "subjectType": bob.type,
        "subjectId": bob.id,
        "includeOnlyTenantRoles": "true",
    }

    response = api.get(PATH, params={key: values[key] for key in keys})

    assert_error(response, 400, 40002)


# -- unknown targets ---------------------------------------------------------------------------


def test_unknown_resource_id_is_404(api):
    response = api.get(
        PATH, params={"resourceType": "secret-group", "resourceId": "secret-group-does-not-exist"}
    )
    body = assert_error(response, 404, 40402)
    assert "secret-group-does-not-exist" in body["message"]


def test_unknown_subject_id_is_404(api):
    response = api.get(PATH, params={"subjectType": "user", "subjectId": "user-does-not-exist"})
    body = assert_error(response, 404, 40402)
    assert "user-does-not-exist" in body["message"]


def test_subject_id_of_another_type_is_404(api, store):
    team = store.identity.subject_named("team", "ml-platform")
    response = api.get(PATH, params={"subjectType": "user", "subjectId": team.id})
    assert_error(response, 404, 40402)


def test_resource_id_of_another_type_is_404(api, store):
    workspace = store.identity.resource_named("workspace", "ml-team")
    response = api.get(PATH, params={"resourceType": "secret-group", "resourceId": workspace.id})
    assert_error(response, 404, 40402)


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_resource_type_is_a_contract_violation(api, store):
    llm_keys = store.identity.resource_named("secret-group", "llm-keys")
    response = api.get(PATH, params={"resourceType": "bucket", "resourceId": llm_keys.id})
    body = assert_error(response, 400, 40001)
    assert any(d["field"] == "resourceType" for d in body["details"])


# -- manifest names ----------------------------------------------------------------------------

ODD_NAMES = [
    pytest.param("x" * 300, id="very-long"),
    pytest.param("Traces Of The ÜBER Project (2025) — v2!", id="spaces-unicode-punctuation"),
    pytest.param("42-starts-with-a-digit", id="leading-digit"),
    pytest.param("---", id="only-dashes"),
    pytest.param("🚀🚀🚀", id="only-emoji"),
    pytest.param("UPPER_snake.dotted", id="upper-snake-dotted"),
    pytest.param("-trailing-", id="leading-and-trailing-dash"),
    pytest.param("a" + "-" * 80 + "b", id="long-run-of-dashes"),
]


def _assert_valid_names(manifests: list[dict]) -> None:
    names = [m["name"] for m in manifests]
    for name in names:
        assert NAME_PATTERN.match(name), f"{name!r} breaks the role-binding name pattern"
    assert len(set(names)) == len(names), f"duplicate names in one response: {names}"


@pytest.mark.parametrize("name", ODD_NAMES)
def test_manifest_names_match_the_pattern_for_odd_resource_names(api, store, name):
    project = store.identity.add_resource("tracing-project", name)
    carol = store.identity.subject_named("user", "carol@acme.example")
    store.identity.add_grant(carol, "tracing-project-viewer", project)
    store.identity.add_grant(carol, "tracing-project-admin", project)

    manifests = _data(_by_resource(api, project))

    assert len(manifests) == 2
    assert {p["resourceFqn"] for m in manifests for p in m["permissions"]} == {project.fqn}
    _assert_valid_names(manifests)


@pytest.mark.parametrize("name", ODD_NAMES)
def test_manifest_names_match_the_pattern_for_odd_subject_names(api, store, name):
    account = store.identity.add_subject("virtualaccount", name)
    workspace = store.identity.resource_named("workspace", "ml-team")
    store.identity.add_grant(account, "workspace-viewer", workspace)
    store.identity.add_grant(account, "workspace-editor", workspace)

    manifests = _data(_by_subject(api, account))

    assert len(manifests) == 2
    assert {(s["type"], s["name"]) for m in manifests for s in m["subjects"]} == {
        ("virtualaccount", name)
    }
    _assert_valid_names(manifests)


ROLE_SETS = [
    pytest.param(("viewer.x", "viewer_x", "viewer-x", "viewer x"), id="punctuation-collapses"),
    pytest.param(("Viewer", "viewer", "VIEWER"), id="differ-only-in-case"),
    pytest.param(tuple("r" * 120 + suffix for suffix in ("a", "b", "c")), id="long-common-prefix"),
    pytest.param(("!!", "??", "--"), id="no-letters"),
]


@pytest.mark.parametrize("roles", ROLE_SETS)
def test_manifest_names_are_unique_in_resource_mode(api, store, roles):
    project = store.identity.resource_named("tracing-project", "chat-traces")
    carol = store.identity.subject_named("user", "carol@acme.example")
    for role in roles:
        store.identity.add_grant(carol, role, project)

    manifests = _data(_by_resource(api, project))

    assert set(_by_role(manifests)) == {"tracing-project-viewer", *roles}
    _assert_valid_names(manifests)


@pytest.mark.parametrize("roles", ROLE_SETS)
def test_manifest_names_are_unique_in_subject_mode(api, store, roles):
    carol = store.identity.subject_named("user", "carol@acme.example")
    project = store.identity.resource_named("tracing-project", "chat-traces")
    for role in roles:
        store.identity.add_grant(carol, role, project)

    manifests = _data(_by_subject(api, carol))

    assert set(_by_role(manifests)) == set(roles)
    _assert_valid_names(manifests)


def test_default_world_manifest_names_are_valid_and_unique_per_response(api, store):
    identity = store.identity
    for subject in [
        identity.subject_named("user", "alice@acme.example"),
        identity.subject_named("user", "bob@acme.example"),
        identity.subject_named("team", "ml-platform"),
        identity.subject_named("virtualaccount", "ci-bot"),
        identity.subject_named("agent", "support-agent"),
    ]:
        _assert_valid_names(_data(_by_subject(api, subject)))
    for resource in [
        identity.tenant,
        identity.resource_named("secret-group", "llm-keys"),
        identity.resource_named("mlf-project", "demo-repo"),
        identity.resource_named("tracing-project", "chat-traces"),
    ]:
        manifests = _data(_by_resource(api, resource))
        assert manifests
        _assert_valid_names(manifests)
