"""Every entry of the source document's Limits table, each exercised at and past its bounds.

limit and offset of every operation that pages (2 and 7) are checked over HTTP at both
edges, with their defaults. The role-binding rules (name pattern, subject name,
resourceType, resourceFqn and role lengths) only appear in responses, so they are checked
twice: the served contract rejects a manifest that breaks them, and the mock never
produces one, even from grants at the bounds; a fixture cannot bring a value past a bound
into the world.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import httpx
import pytest
from connexion.json_schema import Draft4ResponseValidator, resolve_refs

from mock_server.contract import documents as contract
from mock_server.fixtures import loader as fixtures
from mock_server.fixtures.loader import FixtureError
from mock_server.handlers import catalog
from mock_server.state import Store
from tests.conftest import assert_error, new_store

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{1,64}[a-z0-9]$")
# Every operation that pages (`limit` and `offset`), from the contract: each is checked with its
# catalog example, so a new one is checked here with no line added.
OPERATIONS = tuple(
    op for op, o in contract.operations().items() if {"limit", "offset"} <= set(o.query)
)


def test_the_contract_has_operations_that_page():
    assert "listJobRuns" in OPERATIONS and "listSecretDeployments" in OPERATIONS


def _page(api: httpx.Client, store, operation: str, params: dict[str, Any]) -> httpx.Response:
    """One page of an operation's catalog example (filled for the world), with `params`."""
    request = catalog.example(operation).request(store)
    assert contract.operations()[operation].document == contract.CONTROL_PLANE_SPEC
    return api.request(
        request.method,
        api.base_url.join(request.path),
        params={**request.query, **params},
        json=request.body,
    )


def _cases(values: list[tuple[str, Any]]) -> list:
    return [
        pytest.param(operation, value, id=f"{operation}-{label}")
        for operation in OPERATIONS
        for label, value in values
    ]


# -- limit and offset (operations 2 and 7) -------------------------------------------------


@pytest.mark.parametrize("operation", [pytest.param(op, id=op) for op in OPERATIONS])
def test_each_example_list_has_more_than_one_item_so_limit_1_bites(api, store, operation):
    # Default world: the example's secrets (OPENAI_API_KEY, HF_TOKEN) are used by two active
    # deployments (chat-api and trainer); trainer has 9 + 16 runs.
    assert _page(api, store, operation, {}).json()["pagination"]["total"] > 1


@pytest.mark.parametrize(("operation", "limit"), _cases([("min-1", 1), ("max-1000", 1000)]))
def test_limit_at_its_bounds_is_accepted(api, store, operation, limit):
    response = _page(api, store, operation, {"limit": limit})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["pagination"]["limit"] == limit
    assert len(body["data"]) == min(limit, body["pagination"]["total"])


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("operation", "limit"),
    _cases([("0", 0), ("1001", 1001), ("negative", -5), ("fraction", "1.5"), ("text", "ten")]),
)
def test_limit_outside_1_to_1000_is_400_naming_limit(api, store, operation, limit):
    body = assert_error(_page(api, store, operation, {"limit": limit}), 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("query", "limit")]


@pytest.mark.parametrize(("operation", "offset"), _cases([("min-0", 0), ("one", 1)]))
def test_offset_at_least_0_is_accepted(api, store, operation, offset):
    response = _page(api, store, operation, {"offset": offset})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["pagination"]["offset"] == offset
    assert len(body["data"]) == body["pagination"]["total"] - offset


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(("operation", "offset"), _cases([("minus-1", -1), ("text", "zero")]))
def test_offset_below_0_is_400_naming_offset(api, store, operation, offset):
    body = assert_error(_page(api, store, operation, {"offset": offset}), 400, 40001)
    assert [(d["location"], d["field"]) for d in body["details"]] == [("query", "offset")]


@pytest.mark.parametrize("operation", [pytest.param(op, id=op) for op in OPERATIONS])
def test_offset_past_the_end_is_an_empty_page_with_the_true_total(api, store, operation):
    total = _page(api, store, operation, {}).json()["pagination"]["total"]
    body = _page(api, store, operation, {"offset": total + 10}).json()
    assert body["data"] == []
    assert body["pagination"] == {"total": total, "offset": total + 10, "limit": 100}


@pytest.mark.parametrize("operation", [pytest.param(op, id=op) for op in OPERATIONS])
def test_default_limit_100_and_offset_0_are_echoed(api, store, operation):
    response = _page(api, store, operation, {})
    assert response.status_code == 200, response.text
    pagination = response.json()["pagination"]
    assert (pagination["limit"], pagination["offset"]) == (100, 0)


def test_default_limit_is_100_items_of_job_runs(api, store):
    trainer = store.deployments.application_named("trainer")
    store.jobs.generate_runs(trainer, 150)
    body = _page(api, store, "listJobRuns", {}).json()
    assert body["pagination"]["total"] == 176
    assert len(body["data"]) == 100


# -- role-binding manifests: (a) the served contract ---------------------------------------


@pytest.fixture(scope="module")
def manifest_validator(server) -> Draft4ResponseValidator:
    """The RoleBindingManifest schema of the spec the server serves, $refs resolved."""
    served = httpx.get(f"{server.url}/openapi.json").raise_for_status().json()
    schema = resolve_refs(served)["components"]["schemas"]["RoleBindingManifest"]
    return Draft4ResponseValidator(schema)


VALID_MANIFEST = {
    "type": "role-binding",
    "name": "workspace-editor",
    "subjects": [{"type": "user", "name": "jane@example.com"}],
    "permissions": [
        {"resourceType": "workspace", "resourceFqn": "c:w", "role": "workspace-editor"}
    ],
}
NAME = ("name",)
SUBJECT_NAME = ("subjects", 0, "name")
RESOURCE_TYPE = ("permissions", 0, "resourceType")
RESOURCE_FQN = ("permissions", 0, "resourceFqn")
ROLE = ("permissions", 0, "role")


def _manifest_with(path: tuple, value: str) -> dict:
    manifest = copy.deepcopy(VALID_MANIFEST)
    target: Any = manifest
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return manifest


def _rule(label: str, path: tuple, value: str, accepted: bool):
    return pytest.param(
        path, value, accepted, id=f"{label}-{'accepted' if accepted else 'rejected'}"
    )


RULES = [
    _rule("name-3-chars", NAME, "a1b", True),
    _rule("name-2-chars", NAME, "ab", False),
    _rule("name-66-chars", NAME, "a" + "-" * 64 + "z", True),
    _rule("name-67-chars", NAME, "a" + "b" * 65 + "c", False),
    _rule("name-digit-first", NAME, "1abc", False),
    _rule("name-dash-last", NAME, "abc-", False),
    _rule("name-uppercase", NAME, "Workspace-editor", False),
    _rule("name-underscore", NAME, "workspace_editor", False),
    _rule("name-dot", NAME, "workspace.editor", False),
    _rule("subject-name-1", SUBJECT_NAME, "x", True),
    _rule("subject-name-empty", SUBJECT_NAME, "", False),
    _rule("subject-name-1024", SUBJECT_NAME, "x" * 1024, True),
    _rule("subject-name-1025", SUBJECT_NAME, "x" * 1025, False),
    _rule("resource-type-1", RESOURCE_TYPE, "w", True),
    _rule("resource-type-empty", RESOURCE_TYPE, "", False),
    _rule("resource-type-128", RESOURCE_TYPE, "w" * 128, True),
    _rule("resource-type-129", RESOURCE_TYPE, "w" * 129, False),
    _rule("resource-fqn-1", RESOURCE_FQN, "f", True),
    _rule("resource-fqn-empty", RESOURCE_FQN, "", False),
    _rule("resource-fqn-1024", RESOURCE_FQN, "f" * 1024, True),
    _rule("resource-fqn-1025", RESOURCE_FQN, "f" * 1025, False),
    _rule("role-1", ROLE, "r", True),
    _rule("role-empty", ROLE, "", False),
    _rule("role-255", ROLE, "r" * 255, True),
    _rule("role-256", ROLE, "r" * 256, False),
]


def test_contract_accepts_the_reference_manifest(manifest_validator):
    assert list(manifest_validator.iter_errors(VALID_MANIFEST)) == []


@pytest.mark.parametrize(("path", "value", "accepted"), RULES)
def test_contract_enforces_role_binding_limit(manifest_validator, path, value, accepted):
    errors = list(manifest_validator.iter_errors(_manifest_with(path, value)))
    if accepted:
        assert errors == [], [e.message for e in errors]
    else:
        assert [tuple(e.absolute_path) for e in errors] == [path], [e.message for e in errors]


# -- role-binding manifests: (b) the mock never produces a breaking one --------------------


def _manifests(api: httpx.Client, **params: str) -> list[dict]:
    response = api.get("/role-bindings/generate-manifest", params=params)
    # The mock validates its own responses: a manifest past a limit would be 500 / 50001.
    assert response.status_code == 200, response.text[:500]
    return response.json()["data"]


def _alice(store):
    return store.identity.subject_named("user", "alice@acme.example")


def test_mock_reports_a_manifest_past_a_limit_as_its_own_500(api, store):
    # The safety net the tests below rely on: a grant the contract cannot express.
    alice = _alice(store)
    store.identity.add_grant(alice, "r" * 256, store.identity.tenant)
    response = api.get(
        "/role-bindings/generate-manifest", params={"subjectType": "user", "subjectId": alice.id}
    )
    body = assert_error(response, 500, 50001)
    assert any(d["field"].endswith("permissions[0].role") for d in body["details"]), body


@pytest.mark.parametrize(
    "role",
    [
        pytest.param("r" * 255, id="255-chars"),
        pytest.param("r", id="1-char"),
        pytest.param("9-Odd_Role.Name!", id="digits-case-punctuation"),
        pytest.param("-" * 40, id="only-dashes"),
    ],
)
def test_role_at_the_bounds_gives_a_valid_manifest(api, store, role):
    alice = _alice(store)
    workspace = store.identity.resource_named("workspace", "ml-team")
    store.identity.add_grant(alice, role, workspace)
    for params in (
        {"subjectType": "user", "subjectId": alice.id},
        {"resourceType": "workspace", "resourceId": workspace.id},
    ):
        manifests = _manifests(api, **params)
        held = [m for m in manifests if m["permissions"][0]["role"] == role]
        assert len(held) == 1, manifests
        assert all(NAME_PATTERN.match(m["name"]) for m in manifests), manifests
        assert len({m["name"] for m in manifests}) == len(manifests)


def test_resource_fqn_of_1024_chars_gives_a_valid_manifest(api, store):
    alice = _alice(store)
    tenant = store.identity.tenant.name
    server = store.identity.add_resource("mcp-server", "m" * (1024 - len(tenant) - 1))
    assert len(server.fqn) == 1024
    store.identity.add_grant(alice, "mcp-server-viewer", server)
    for params in (
        {"resourceType": "mcp-server", "resourceId": server.id},
        {"subjectType": "user", "subjectId": alice.id},
    ):
        manifests = _manifests(api, **params)
        fqns = [p["resourceFqn"] for m in manifests for p in m["permissions"]]
        assert server.fqn in fqns
        assert all(NAME_PATTERN.match(m["name"]) for m in manifests), manifests


def test_subject_name_of_1024_chars_gives_a_valid_manifest(api, store):
    domain = "@acme.example"
    user = store.identity.add_subject("user", "u" * (1024 - len(domain)) + domain)
    assert len(user.name) == 1024
    workspace = store.identity.resource_named("workspace", "ml-team")
    store.identity.add_grant(user, "workspace-viewer", workspace)
    for params in (
        {"subjectType": "user", "subjectId": user.id},
        {"resourceType": "workspace", "resourceId": workspace.id},
    ):
        manifests = _manifests(api, **params)
        names = [s["name"] for m in manifests for s in m["subjects"]]
        assert user.name in names
        assert all(NAME_PATTERN.match(m["name"]) for m in manifests), manifests


def test_every_manifest_of_the_default_world_has_a_valid_name(api, store):
    seen = 0
    for subject in list(store.world.subjects.values()):
        for manifest in _manifests(api, subjectType=subject.type, subjectId=subject.id):
            assert NAME_PATTERN.match(manifest["name"]), manifest
            seen += 1
    assert seen == 7  # seven grants in the default world, no subject holds a role twice


# -- fixtures cannot bring a value past a limit into the world -----------------------------


def _grant_fixture(role: str) -> dict:
    return {
        "grants": [{"subject": "user:alice@acme.example", "role": role, "resource": "tenant:acme"}]
    }


def test_fixture_with_the_longest_role_the_platform_knows_is_accepted():
    roles = fixtures.fixture_schema()["properties"]["grants"]["items"]["properties"]["role"]
    fixtures.check(_grant_fixture(max(roles["enum"], key=len)))


@pytest.mark.parametrize(
    "role",
    [pytest.param("r" * 256, id="256-chars"), pytest.param("", id="empty")],
)
def test_fixture_with_role_past_its_bounds_is_rejected(role):
    with pytest.raises(FixtureError, match="role"):
        fixtures.check(_grant_fixture(role))


def _admit(document: dict) -> Store:
    """Check a fixture document and build a world from the default one plus it."""
    return new_store(0, [*fixtures.default_fixtures(), fixtures.check(document)])


def test_fixture_within_the_limits_builds_a_world():
    store = _admit(
        {
            "users": [{"email": "dana@acme.example"}],
            "resources": [{"type": "mcp-server", "name": "tools", "fqn": "f" * 1024}],
            "grants": [
                {
                    "subject": "user:dana@acme.example",
                    "role": "mcp-server-viewer",
                    "resource": "mcp-server:tools",
                }
            ],
        }
    )
    assert store.identity.resource_named("mcp-server", "tools").fqn == "f" * 1024


def test_fixture_with_subject_name_over_1024_chars_cannot_enter_the_world():
    email = "u" * (1025 - len("@acme.example")) + "@acme.example"
    assert len(email) == 1025
    with pytest.raises(FixtureError):
        _admit({"users": [{"email": email}]})


def test_fixture_with_resource_fqn_over_1024_chars_cannot_enter_the_world():
    with pytest.raises(FixtureError):
        _admit({"resources": [{"type": "mcp-server", "name": "tools", "fqn": "f" * 1025}]})
