"""The admin API under `/__admin`: its token, reset and re-seeding, fixtures, state, report, docs.

Only the mock's admin token opens it; platform tokens are refused with 403, and the admin
token opens nothing on the platform API. Requests to it are not journaled.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import yaml

from mock_server import PlatformMock, __version__
from mock_server.contract import documents as contract
from mock_server.contract.validation import BODY_LIMITS, MAX_BODY_BYTES
from mock_server.handlers import render
from mock_server.http.mock import MockConfig
from mock_server.http.server import BackgroundServer
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, assert_error, token_of

DANA = "dana@acme.example"
# A job deployment manifest complete for its kind, as fixtures must give it.
JOB_MANIFEST = {
    "image": {"type": "image", "image_uri": "registry.acme.example/nightly:1"},
    "trigger": {"type": "manual"},
}


def _state(admin: httpx.Client) -> dict:
    response = admin.get("/state")
    assert response.status_code == 200, response.text
    return response.json()


def _group_path(store, name: str) -> str:
    return f"/secret-groups/{store.secrets.group_named(name).resource.id}"


def _runs_path(store) -> str:
    return f"/jobs/{store.deployments.application_named('trainer').id}/runs"


# -- who may call it ---------------------------------------------------------------------------


def test_platform_token_cannot_reset_the_world(anonymous, api, mock, store):
    assert api.delete(_group_path(store, "llm-keys")).status_code == 200
    headers = {"Authorization": f"Bearer {token_of(mock, 'bob@acme.example')}"}

    assert_error(anonymous.post("/__admin/reset", headers=headers), 403, 40301)

    assert store.identity.find_resource("secret-group", "llm-keys") is None


def test_admin_token_on_the_platform_api_is_401(anonymous, mock):
    headers = {"Authorization": f"Bearer {mock.auth.admin_token()}"}
    response = anonymous.get(CONTROL_PLANE + "/personal-access-tokens/ci", headers=headers)
    assert_error(response, 401, 40105)


def test_admin_token_on_the_gateway_is_401(anonymous, mock, server):
    headers = {"Authorization": f"Bearer {mock.auth.admin_token()}"}
    response = anonymous.get(
        f"{server.gateway_url}/responses/resp_0000000000000000000000000000demo", headers=headers
    )
    assert_error(response, 401, 40105)


# -- reset -------------------------------------------------------------------------------------


def test_reset_brings_back_a_deleted_secret_group(admin, api, store):
    group_id = store.secrets.group_named("llm-keys").resource.id
    assert api.delete(f"/secret-groups/{group_id}").status_code == 200

    response = admin.post("/reset")

    assert response.status_code == 200, response.text
    assert response.json() == {}
    assert store.secrets.group_named("llm-keys").resource.id == group_id
    assert api.delete(f"/secret-groups/{group_id}").status_code == 200  # deletable again


def test_reset_removes_a_created_token(admin, api, server, store):
    alice = store.identity.default_user()
    created = api.get("/personal-access-tokens/ci")
    assert created.json()["created"] is True

    assert admin.post("/reset", json={}).status_code == 200

    assert (alice.id, "ci") not in store.world.tokens
    # The token issued before the reset no longer authenticates: it names a token that no
    # longer exists (40105), and it was issued after the reset world's clock (40103).
    unauthorized = httpx.get(
        server.url + CONTROL_PLANE + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {created.json()['token']}"},
    )
    assert unauthorized.status_code == 401, unauthorized.text
    assert unauthorized.json()["code"] in (40103, 40105)
    assert api.get("/personal-access-tokens/ci").json()["created"] is True


def test_reset_gives_the_initial_state(admin, api, store):
    initial = _state(admin)
    api.delete(_group_path(store, "llm-keys"))
    api.get("/personal-access-tokens/ci")
    assert _state(admin) != initial

    assert admin.post("/reset").status_code == 200

    assert _state(admin) == initial


@pytest.mark.platform_mock(expect_violations=True)
def test_reset_clears_the_journal(admin, api, mock):
    api.get("/personal-access-tokens/ci")
    api.get("/no-such-path")
    assert admin.get("/journal").json()["data"]

    assert admin.post("/reset").status_code == 200

    assert len(mock.journal) == 0
    assert admin.get("/journal").json()["data"] == []


def test_reset_clears_the_faults(admin, api, mock, store):
    mock.faults.add("listJobRuns", status=503, times=None)

    assert admin.post("/reset").status_code == 200

    assert admin.get("/faults").json() == {"data": []}
    assert api.get(_runs_path(store)).status_code == 200


def test_reset_rejects_an_invalid_body(admin, api, store):
    api.delete(_group_path(store, "llm-keys"))

    assert_error(admin.post("/reset", json={"seed": -1}), 400, 40001)
    assert_error(admin.post("/reset", json={"sed": 7}), 400, 40001)

    assert store.identity.find_resource("secret-group", "llm-keys") is None


def test_reset_with_a_seed_reseeds_and_later_resets_keep_it(admin, mock):
    original_seed = mock.store.seed
    initial_tenant = _state(admin)["tenant"]
    try:
        assert admin.post("/reset", json={"seed": 7}).status_code == 200
        seeded_tenant = _state(admin)["tenant"]

        assert seeded_tenant["name"] == initial_tenant["name"]
        assert seeded_tenant["id"] != initial_tenant["id"]
        assert mock.store.seed == 7

        assert admin.post("/reset").status_code == 200
        assert _state(admin)["tenant"] == seeded_tenant
    finally:
        mock.reset(seed=original_seed)  # seed 0 unless the session was started with another
    assert _state(admin)["tenant"] == initial_tenant


def test_reseeded_world_serves_the_platform_api(admin, mock, server):
    original_seed = mock.store.seed
    try:
        assert admin.post("/reset", json={"seed": 7}).status_code == 200
        token = mock.auth.dev_token()
        response = httpx.get(
            server.url + CONTROL_PLANE + "/personal-access-tokens/ci",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        alice = mock.store.identity.default_user()
        assert response.json()["data"]["createdBySubject"]["subjectId"] == alice.id
    finally:
        mock.reset(seed=original_seed)


# -- fixtures ----------------------------------------------------------------------------------


DANA_DOCUMENT = {
    "users": [{"email": DANA, "displayName": "Dana Data"}],
    "grants": [
        {"subject": f"user:{DANA}", "role": "workspace-viewer", "resource": "workspace:ml-team"}
    ],
}


def test_loaded_fixture_adds_a_user_whose_token_works(admin, mock, server, store):
    response = admin.post("/fixtures", json=DANA_DOCUMENT)

    assert response.status_code == 200, response.text
    assert response.json() == {}
    dana = store.identity.subject_named("user", DANA)
    with httpx.Client(
        base_url=server.url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {mock.auth.dev_token(dana)}"},
    ) as client:
        issued = client.get("/personal-access-tokens/ci")
        assert issued.status_code == 200, issued.text
        assert issued.json()["data"]["createdBySubject"]["subjectSlug"] == DANA
        manifests = client.get(
            "/role-bindings/generate-manifest",
            params={"subjectType": "user", "subjectId": dana.id},
        )
    assert manifests.status_code == 200, manifests.text
    roles = [p["role"] for m in manifests.json()["data"] for p in m["permissions"]]
    assert roles == ["workspace-viewer"]


def test_loaded_fixture_adds_a_secret_group_the_api_can_delete(admin, api, store):
    document = {
        "secretGroups": [
            {
                "name": "extra-keys",
                "integration": {"fqn": "acme:aws:secrets-manager"},
                "secrets": [{"key": "EXTRA", "values": ["v1"]}],
            }
        ]
    }
    assert admin.post("/fixtures", json=document).status_code == 200

    response = api.delete(_group_path(store, "extra-keys"))

    assert response.status_code == 200, response.text
    assert store.identity.find_resource("secret-group", "extra-keys") is None


@pytest.mark.parametrize(
    ("document", "mentions"),
    [
        pytest.param(
            {"users": [{"name": "dana"}]}, ["email", "'name' was unexpected"], id="schema-error"
        ),
        pytest.param({"secretGroups": "llm-keys"}, ["secretGroups"], id="section-of-wrong-type"),
        pytest.param({"planets": []}, ["planets"], id="unknown-section"),
        pytest.param(
            {
                "users": [{"email": DANA}],
                "applications": [
                    {
                        "name": "nightly",
                        "type": "job",
                        "workspace": "no-such-workspace",
                        "deployments": [{"manifest": JOB_MANIFEST}],
                    }
                ],
            },
            ["no-such-workspace"],
            id="unknown-workspace",
        ),
        pytest.param(
            {
                "grants": [
                    {
                        "subject": "user:nobody@acme.example",
                        "role": "workspace-viewer",
                        "resource": "tenant:acme",
                    }
                ]
            },
            ["nobody@acme.example"],
            id="unknown-subject",
        ),
    ],
)
def test_invalid_fixture_is_400_with_details_and_changes_nothing(admin, store, document, mentions):
    before = _state(admin)

    body = assert_error(admin.post("/fixtures", json=document), 400, 40001)

    assert body["details"], body
    text = body["message"] + " ".join(d["message"] for d in body["details"])
    for mention in mentions:
        assert mention in text
    assert _state(admin) == before
    assert store.identity.find_subject("user", DANA) is None


def _held(type_: str, name: str):
    """The id of a default-world record, read from the store (it depends on the seed)."""

    def held(store) -> str:
        identity = store.identity
        if type_ in ("user", "team"):
            return identity.subject_named(type_, name).id
        return identity.resource_named(type_, name).id

    return held


ALICE = "user 'alice@acme.example'"
SECTION_RECORDS: dict[str, dict[str, Any]] = {
    "users": {"email": DANA},
    "teams": {"name": "new-team"},
    "clusters": {"name": "new-cluster"},
    "workspaces": {"name": "new-workspace", "cluster": "prod-cluster"},
    "secretGroups": {"name": "new-keys", "integration": {"fqn": "acme:aws:secrets-manager"}},
    "mlRepos": {"name": "new-repo"},
}


@pytest.mark.parametrize(
    ("section", "held", "holder"),
    [
        pytest.param("users", _held("user", "alice@acme.example"), ALICE, id="user"),
        pytest.param("teams", _held("team", "ml-platform"), "team 'ml-platform'", id="team"),
        pytest.param(
            "clusters", _held("cluster", "prod-cluster"), "cluster 'prod-cluster'", id="cluster"
        ),
        pytest.param(
            "workspaces", _held("workspace", "ml-team"), "workspace 'ml-team'", id="workspace"
        ),
        pytest.param(
            "secretGroups",
            _held("secret-group", "llm-keys"),
            "secret-group 'llm-keys'",
            id="secret-group",
        ),
        pytest.param(
            "mlRepos", _held("mlf-project", "demo-repo"), "mlf-project 'demo-repo'", id="ml-repo"
        ),
        pytest.param("clusters", _held("user", "alice@acme.example"), ALICE, id="other-kind"),
        pytest.param("mlRepos", _held("tenant", "acme"), "tenant 'acme'", id="tenant-id"),
    ],
)
def test_fixture_giving_an_id_the_world_holds_is_400_and_changes_nothing(
    admin, store, section, held, holder
):
    before = _state(admin)
    taken = held(store)
    document = {section: [{**SECTION_RECORDS[section], "id": taken}]}

    body = assert_error(admin.post("/fixtures", json=document), 400, 40001)

    assert f"{section}[0].id: id {taken!r} is already taken by {holder}" in body["message"]
    assert _state(admin) == before


@pytest.mark.parametrize(
    ("document", "field"),
    [
        pytest.param(
            {"users": [{"email": DANA, "id": "x-1"}, {"email": "eve@acme.example", "id": "x-1"}]},
            "users[1].id",
            id="same-section",
        ),
        pytest.param(
            {"users": [{"email": DANA, "id": "x-1"}], "clusters": [{"name": "c9", "id": "x-1"}]},
            "clusters[0].id",
            id="other-section",
        ),
        pytest.param(
            {
                "applications": [
                    {
                        "name": "nightly",
                        "type": "job",
                        "workspace": "ml-team",
                        "deployments": [
                            {"manifest": JOB_MANIFEST, "id": "x-1"},
                            {"manifest": JOB_MANIFEST, "id": "x-1"},
                        ],
                    }
                ]
            },
            "applications[0].deployments[1].id",
            id="nested-records",
        ),
        pytest.param(
            {
                "secretGroups": [
                    {
                        "name": "new-keys",
                        "id": "x-1",
                        "integration": {"fqn": "acme:aws:secrets-manager"},
                        "secrets": [{"key": "K", "id": "x-1"}],
                    }
                ]
            },
            "secretGroups[0].secrets[0].id",
            id="record-and-its-part",
        ),
    ],
)
def test_fixture_giving_one_id_twice_is_400_and_changes_nothing(admin, document, field):
    before = _state(admin)

    body = assert_error(admin.post("/fixtures", json=document), 400, 40001)

    assert f"request body: {field}: id 'x-1' is already taken by" in body["message"]
    assert _state(admin) == before


def test_refused_fixture_with_alices_id_leaves_the_default_token_hers(admin, api, store):
    alice = store.identity.subject_named("user", "alice@acme.example")
    document = {"users": [{"email": "x@y", "id": alice.id}]}
    assert_error(admin.post("/fixtures", json=document), 400, 40001)

    response = api.get("/personal-access-tokens/ci")

    assert response.status_code == 200, response.text
    assert response.json()["data"]["createdBySubject"]["subjectSlug"] == "alice@acme.example"


def test_state_loaded_into_the_world_it_came_from_is_400(admin):
    state = _state(admin)

    body = assert_error(admin.post("/fixtures", json=copy.deepcopy(state)), 400, 40001)

    # The tenant may be restated; every record after it is there already.
    assert "users[0]: user 'alice@acme.example' already exists" in body["message"]
    assert _state(admin) == state


def test_id_of_a_deleted_secret_group_can_be_given_again(admin, api, store):
    group_id = store.secrets.group_named("llm-keys").resource.id
    assert api.delete(f"/secret-groups/{group_id}").status_code == 200
    document = {
        "secretGroups": [
            {"name": "new-keys", "id": group_id, "integration": {"fqn": "acme:aws:secrets-manager"}}
        ]
    }

    response = admin.post("/fixtures", json=document)

    assert response.status_code == 200, response.text
    assert store.secrets.group_named("new-keys").resource.id == group_id


def test_fixture_body_that_is_not_an_object_is_400(admin):
    before = _state(admin)
    assert_error(admin.post("/fixtures", json=[DANA_DOCUMENT]), 400, 40001)
    assert _state(admin) == before


def test_loaded_fixture_is_dropped_by_the_next_reset(admin, store):
    initial = _state(admin)
    assert admin.post("/fixtures", json=DANA_DOCUMENT).status_code == 200
    assert store.identity.find_subject("user", DANA) is not None

    assert admin.post("/reset").status_code == 200

    assert store.identity.find_subject("user", DANA) is None
    assert _state(admin) == initial


# -- state -------------------------------------------------------------------------------------


def test_state_names_the_default_world(admin, store):
    state = _state(admin)

    assert state["tenant"] == {"name": "acme", "id": store.identity.tenant.id}
    assert [u["email"] for u in state["users"]] == [
        "alice@acme.example",
        "bob@acme.example",
        "carol@acme.example",
    ]
    assert sorted(g["name"] for g in state["secretGroups"]) == ["legacy-vault", "llm-keys"]


def test_state_reflects_api_changes(admin, api, store):
    api.delete(_group_path(store, "llm-keys"))

    state = _state(admin)

    assert [g["name"] for g in state["secretGroups"]] == ["legacy-vault"]


def test_state_loaded_into_an_empty_mock_reproduces_it(admin, api, store):
    # Change the world first, so the dump holds more than the defaults.
    assert api.delete(_group_path(store, "llm-keys")).status_code == 200
    assert api.get("/personal-access-tokens/ci").status_code == 200
    assert admin.post("/fixtures", json=DANA_DOCUMENT).status_code == 200
    state = _state(admin)

    other_mock = PlatformMock(MockConfig(default_fixtures=False))
    with (
        BackgroundServer(other_mock) as other,
        httpx.Client(
            base_url=other.url + "/__admin",
            headers={"Authorization": f"Bearer {other_mock.auth.admin_token()}"},
        ) as other_admin,
    ):
        loaded = other_admin.post("/fixtures", json=copy.deepcopy(state))
        assert loaded.status_code == 200, loaded.text
        assert _state(other_admin) == state


def test_a_dump_over_1_mib_loads_back_into_an_equal_world(admin, store):
    store.jobs.generate_runs(store.deployments.application_named("trainer"), 10_000)
    response = admin.get("/state")
    assert len(response.content) > MAX_BODY_BYTES
    state = response.json()

    other_mock = PlatformMock(MockConfig(default_fixtures=False))
    with (
        BackgroundServer(other_mock) as other,
        httpx.Client(
            base_url=other.url + "/__admin",
            headers={"Authorization": f"Bearer {other_mock.auth.admin_token()}"},
            timeout=budget(60),
        ) as other_admin,
    ):
        loaded = other_admin.post(
            "/fixtures", content=response.content, headers={"Content-Type": "application/json"}
        )
        assert loaded.status_code == 200, loaded.text
        assert _state(other_admin) == state


def test_state_of_a_mock_without_fixtures_is_a_document(server):
    """An empty world still dumps (spec: GET /state answers 200, 401 or 403; never 500)."""
    empty_mock = PlatformMock(MockConfig(default_fixtures=False))
    with (
        BackgroundServer(empty_mock) as empty,
        httpx.Client(
            base_url=empty.url + "/__admin",
            headers={"Authorization": f"Bearer {empty_mock.auth.admin_token()}"},
        ) as empty_admin,
    ):
        state = _state(empty_admin)
    assert isinstance(state, dict)
    assert not state.get("users") and not state.get("secretGroups")


# -- report ------------------------------------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
def test_report_counts_the_requests_of_this_test(admin, api, store):
    before = admin.get("/report").json()
    path = _runs_path(store)

    assert api.get(path).status_code == 200
    assert api.get(path, params={"limit": 0}).status_code == 400
    assert admin.get("/state").status_code == 200  # admin requests are not counted

    response = admin.get("/report")
    assert response.status_code == 200, response.text
    after = response.json()
    runs_before, runs_after = (
        before["operations"]["listJobRuns"],
        after["operations"]["listJobRuns"],
    )
    assert runs_after["calls"] == runs_before["calls"] + 2
    assert runs_after["statuses"].get("200", 0) == runs_before["statuses"].get("200", 0) + 1
    assert runs_after["statuses"].get("400", 0) == runs_before["statuses"].get("400", 0) + 1
    # This test breaks the contract on purpose (its marker): counted, but apart.
    assert runs_after["expectedViolations"] == runs_before["expectedViolations"] + 1
    assert runs_after["violations"] == runs_before["violations"]
    assert after["summary"]["requests"] == before["summary"]["requests"] + 2
    assert after["summary"]["expectedViolations"] == before["summary"]["expectedViolations"] + 1
    assert "listJobRuns" not in after["summary"]["operationsNotCalled"]
    assert after["summary"]["operationsInContract"] == len(contract.operations())


@pytest.mark.platform_mock(expect_violations=True)
def test_report_counts_unrouted_requests(admin, api):
    before = admin.get("/report").json()["operations"].get("(no operation)", {"calls": 0})

    assert api.get("/no-such-path").status_code == 404

    after = admin.get("/report").json()["operations"]["(no operation)"]
    assert after["calls"] == before["calls"] + 1


def test_report_survives_a_reset(admin, api):
    before = admin.get("/report").json()["summary"]["requests"]
    api.get("/personal-access-tokens/ci")

    assert admin.post("/reset").status_code == 200

    assert admin.get("/report").json()["summary"]["requests"] == before + 1


# -- the admin API's own contract --------------------------------------------------------------


def test_unknown_query_parameter_on_journal_is_400(admin):
    body = assert_error(admin.get("/journal", params={"operation": "listJobRuns"}), 400, 40001)
    assert [d["field"] for d in body["details"]] == ["operation"]


def test_journal_status_filter_must_be_an_integer(admin):
    body = assert_error(admin.get("/journal", params={"status": "ok"}), 400, 40001)
    assert any(d["field"] == "status" for d in body["details"])


def test_admin_swagger_ui_answers(anonymous):
    response = anonymous.get("/__admin/docs/")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "swagger" in response.text.lower()


# -- every status an operation answers is in spec/admin.yaml -----------------------------------

# PyYAML's C parser: every worker parses the document as it collects the tests.
ADMIN_SPEC = yaml.load(
    (Path(__file__).resolve().parent.parent / "spec/admin.yaml").read_text(), yaml.CSafeLoader
)
METHODS = ("get", "put", "post", "delete", "patch")
ADMIN_OPERATIONS = {
    operation["operationId"]: (method.upper(), path, operation)
    for path, item in ADMIN_SPEC["paths"].items()
    for method, operation in item.items()
    if method in METHODS
}
# A body each operation that takes one accepts, so that only what a test breaks is refused.
ADMIN_BODIES = {
    "adminReset": {},
    "adminLoadFixtures": DANA_DOCUMENT,
    "adminAddFault": {"operationId": "listJobRuns", "status": 503},
    "adminAddReply": {"input": "Say hello.", "replies": [{"text": "Hello."}]},
    "adminMintToken": {"subject": "bob@acme.example"},
    "adminStartTest": {"test": "tests/test_client.py::test_it"},
    "adminCreateWorld": {},
}
# The query each operation that requires one takes, and a path id of the right type.
ADMIN_QUERIES = {"adminListRecords": {"kind": "users"}}
PATH_IDS = {"adminGetRequest": "1"}
# Every operation but the readiness probe, which answers anyone (tested on its own below).
GUARDED = {op: found for op, found in ADMIN_OPERATIONS.items() if found[2].get("security") != []}
EVERY_OPERATION = [pytest.param(op, id=op) for op in GUARDED]
BODY_OPERATIONS = [pytest.param(op, id=op) for op in ADMIN_BODIES]


def test_only_the_readiness_probe_answers_without_a_token():
    assert set(ADMIN_OPERATIONS) - set(GUARDED) == {"adminHealth"}


def _just_over(limit: int) -> bytes:
    return b'{"seed": 1' + b" " * limit + b"}"


def _documented(operation_id: str) -> set[int]:
    return {int(status) for status in ADMIN_OPERATIONS[operation_id][2]["responses"]}


def _send(client: httpx.Client, operation_id: str, **request) -> httpx.Response:
    """The operation's request on the whole server's client, with what the test gives (a
    path parameter names nothing the world holds)."""
    method, path, _ = ADMIN_OPERATIONS[operation_id]
    if operation_id in ADMIN_BODIES and "content" not in request:
        request.setdefault("json", ADMIN_BODIES[operation_id])
    request["params"] = {**ADMIN_QUERIES.get(operation_id, {}), **request.get("params", {})}
    path = path.format(id=PATH_IDS.get(operation_id, "fault-0"))
    return client.request(method, "/__admin" + path, **request)


@pytest.fixture
def changed(api, mock, store) -> None:
    """A world every admin operation would change something of: a deleted secret group, a
    fault rule and a journaled request."""
    assert api.delete(_group_path(store, "llm-keys")).status_code == 200
    mock.faults.add("listJobRuns", status=503, times=None)


def _everything(admin: httpx.Client) -> tuple:
    """What an admin request can change: the world, the fault rules and the journal."""
    return _state(admin), admin.get("/faults").json(), admin.get("/journal").json()


def test_every_admin_operation_that_takes_a_body_has_one_in_these_tests():
    taking = {
        op for op, (_, _, operation) in ADMIN_OPERATIONS.items() if "requestBody" in operation
    }
    assert taking == set(ADMIN_BODIES)


@pytest.mark.parametrize("operation_id", EVERY_OPERATION)
def test_every_admin_error_status_is_the_platform_error_body(operation_id):
    responses = ADMIN_OPERATIONS[operation_id][2]["responses"]
    for status, response in responses.items():
        if int(status) >= 400:
            name = response["$ref"].rsplit("/", 1)[-1]
            content = ADMIN_SPEC["components"]["responses"][name]["content"]
            assert content == {
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
            }
    assert {400, 401, 403, 500} <= _documented(operation_id)


@pytest.mark.parametrize("operation_id", EVERY_OPERATION)
def test_admin_operation_without_a_token_is_a_documented_401(
    admin, anonymous, changed, operation_id
):
    before = _everything(admin)

    assert_error(_send(anonymous, operation_id), 401, 40101)

    assert 401 in _documented(operation_id)
    assert _everything(admin) == before


@pytest.mark.parametrize("operation_id", EVERY_OPERATION)
def test_admin_operation_with_a_platform_token_is_a_documented_403(
    admin, anonymous, changed, token, operation_id
):
    before = _everything(admin)

    response = _send(anonymous, operation_id, headers={"Authorization": f"Bearer {token}"})

    assert "admin" in assert_error(response, 403, 40301)["message"]
    assert 403 in _documented(operation_id)
    assert _everything(admin) == before


@pytest.mark.parametrize("operation_id", EVERY_OPERATION)
def test_admin_operation_with_an_admin_token_of_another_key_is_a_documented_401(
    admin, anonymous, changed, mock, operation_id
):
    claims = jwt.decode(mock.auth.admin_token(), options={"verify_signature": False})
    forged = jwt.encode(claims, "not-the-mock-key" * 4, algorithm="HS256")
    before = _everything(admin)

    response = _send(anonymous, operation_id, headers={"Authorization": f"Bearer {forged}"})

    assert_error(response, 401, 40104)
    assert 401 in _documented(operation_id)
    assert _everything(admin) == before


@pytest.mark.parametrize("operation_id", EVERY_OPERATION)
def test_admin_operation_with_an_unknown_query_parameter_is_a_documented_400(
    admin, anonymous, changed, operation_id
):
    before = _everything(admin)

    response = _send(anonymous, operation_id, params={"dryRun": "true"}, headers=admin.headers)

    body = assert_error(response, 400, 40001)
    assert [d["field"] for d in body["details"]] == ["dryRun"]
    assert 400 in _documented(operation_id)
    assert _everything(admin) == before


@pytest.mark.parametrize("operation_id", BODY_OPERATIONS)
def test_admin_body_that_is_not_json_is_a_documented_400(admin, anonymous, changed, operation_id):
    before = _everything(admin)

    response = _send(
        anonymous,
        operation_id,
        content=b'{"seed": ',
        headers={**admin.headers, "Content-Type": "application/json"},
    )

    body = assert_error(response, 400, 40001)
    assert body["details"][0]["location"] == "body"
    assert 400 in _documented(operation_id)
    assert _everything(admin) == before


@pytest.mark.parametrize("operation_id", BODY_OPERATIONS)
def test_admin_body_over_its_limit_is_a_documented_413(admin, anonymous, changed, operation_id):
    before = _everything(admin)

    response = _send(
        anonymous,
        operation_id,
        content=_just_over(BODY_LIMITS.get(operation_id, MAX_BODY_BYTES)),
        headers={**admin.headers, "Content-Type": "application/json"},
    )

    assert_error(response, 413, 41301)
    assert 413 in _documented(operation_id)
    assert _everything(admin) == before


@pytest.mark.parametrize("operation_id", BODY_OPERATIONS)
def test_admin_body_of_a_media_type_it_does_not_take_is_a_documented_415(
    admin, anonymous, changed, operation_id
):
    before = _everything(admin)

    response = _send(
        anonymous,
        operation_id,
        content=b"seed=7",
        headers={**admin.headers, "Content-Type": "application/x-www-form-urlencoded"},
    )

    assert_error(response, 415, 41501)
    assert 415 in _documented(operation_id)
    assert _everything(admin) == before


def test_deleting_an_unknown_fault_rule_is_a_documented_404(admin, anonymous, changed):
    before = _everything(admin)

    response = _send(anonymous, "adminDeleteFault", headers=admin.headers)

    assert_error(response, 404, 40408)
    assert 404 in _documented("adminDeleteFault")
    assert _everything(admin) == before


# -- Allow names every method of the path ------------------------------------------------------


def _allowed_by_spec(path: str) -> str:
    methods = {method.upper() for method in ADMIN_SPEC["paths"][path] if method in METHODS}
    return ", ".join(sorted(methods | ({"HEAD"} if "GET" in methods else set())))


@pytest.mark.parametrize(
    "path",
    [pytest.param(path, id=path.strip("/").replace("/", "-")) for path in ADMIN_SPEC["paths"]],
)
def test_options_on_an_admin_path_is_405_allowing_every_method_the_spec_gives(admin, changed, path):
    before = _everything(admin)

    response = admin.options(path.format(id="1"))

    assert_error(response, 405, 40501)
    assert response.headers["allow"] == _allowed_by_spec(path)
    assert _everything(admin) == before


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        pytest.param("OPTIONS", "/__admin/faults", "DELETE, GET, HEAD, POST", id="options-faults"),
        pytest.param("PUT", "/__admin/faults", "DELETE, GET, HEAD, POST", id="put-faults"),
        pytest.param("PATCH", "/__admin/journal", "DELETE, GET, HEAD", id="patch-journal"),
        pytest.param("GET", "/__admin/reset", "POST", id="get-reset"),
        pytest.param(
            "OPTIONS", CONTROL_PLANE + "/secret-groups/group-0", "DELETE", id="options-secret-group"
        ),
        pytest.param(
            "PUT", CONTROL_PLANE + "/personal-access-tokens/ci", "GET, HEAD", id="put-token"
        ),
        pytest.param(
            "OPTIONS",
            "/gateway/responses/resp_0",
            "DELETE, GET, HEAD",
            id="options-gateway-response",
        ),
    ],
)
def test_405_allow_names_every_method_the_path_takes(
    admin, anonymous, changed, token, method, path, allowed
):
    before = _everything(admin)

    response = anonymous.request(method, path, headers={"Authorization": f"Bearer {token}"})

    assert_error(response, 405, 40501)
    assert response.headers["allow"] == allowed
    assert _everything(admin)[:2] == before[:2]  # the platform's 405 is journaled, as it should


# -- fixtures in YAML --------------------------------------------------------------------------

DANA_YAML = f"""\
users:
  - email: {DANA}
    displayName: Dana Data
grants:
  - subject: "user:{DANA}"
    role: workspace-viewer
    resource: "workspace:ml-team"
"""


@pytest.mark.parametrize(
    "content_type",
    [
        pytest.param("application/yaml", id="application-yaml"),
        pytest.param("text/yaml", id="text-yaml"),
        pytest.param("application/x-yaml", id="application-x-yaml"),
        pytest.param("application/yaml; charset=utf-8", id="with-charset"),
        pytest.param("Application/YAML", id="any-case"),
    ],
)
def test_yaml_fixture_is_loaded_like_json(admin, store, content_type):
    response = admin.post(
        "/fixtures", content=DANA_YAML.encode(), headers={"Content-Type": content_type}
    )

    assert response.status_code == 200, response.text
    assert response.json() == {}
    dana = store.identity.subject_named("user", DANA)
    assert dana.display_name == "Dana Data"
    assert [u for u in _state(admin)["users"] if u["email"] == DANA]


def test_yaml_fixture_gives_the_same_world_as_its_json(admin, store):
    initial = _state(admin)
    assert admin.post("/fixtures", json=DANA_DOCUMENT).status_code == 200
    from_json = _state(admin)
    assert admin.post("/reset").status_code == 200
    assert _state(admin) == initial

    response = admin.post(
        "/fixtures", content=DANA_YAML.encode(), headers={"Content-Type": "application/yaml"}
    )

    assert response.status_code == 200, response.text
    assert _state(admin) == from_json


@pytest.mark.parametrize(
    ("document", "mention"),
    [
        pytest.param(
            "users:\n  - email: dana@acme.example\n    name: dana\n",
            "request body:2: users[0]: Additional properties are not allowed ('name'",
            id="schema-error-at-its-line",
        ),
        pytest.param(
            "users:\n  - email: dana@acme.example\ngrants:\n  - subject: user:nobody@acme.example\n"
            "    role: tenant-viewer\n    resource: tenant:acme\n",
            "nobody@acme.example",
            id="unknown-subject-after-a-valid-section",
        ),
        pytest.param("users: [\n", "request body:2: not valid YAML", id="not-yaml"),
        pytest.param(
            "a: &x 1\nb: *x\n", "request body:2: not valid YAML: the alias *x", id="alias"
        ),
        pytest.param(
            "- email: dana@acme.example\n", "a fixture document must be a mapping", id="a-list"
        ),
        pytest.param("# nothing\n", "a fixture document must be a mapping", id="no-document"),
    ],
)
def test_invalid_yaml_fixture_is_400_with_details_and_changes_nothing(
    admin, changed, store, document, mention
):
    before = _everything(admin)

    response = admin.post(
        "/fixtures", content=document.encode(), headers={"Content-Type": "application/yaml"}
    )

    body = assert_error(response, 400, 40001)
    assert body["details"], body
    assert mention in body["message"] + " ".join(d["message"] for d in body["details"])
    assert _everything(admin) == before
    assert store.identity.find_subject("user", DANA) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"", "a YAML request body is required", id="empty"),
        pytest.param(b"users: []\n\xff", "is not valid utf-8 text", id="not-utf-8"),
    ],
)
def test_yaml_fixture_body_that_is_no_text_is_400_and_changes_nothing(
    admin, changed, content, message
):
    before = _everything(admin)

    response = admin.post(
        "/fixtures", content=content, headers={"Content-Type": "application/yaml"}
    )

    body = assert_error(response, 400, 40001)
    assert [d["message"] for d in body["details"]] == [message]
    assert _everything(admin) == before


def test_yaml_fixture_in_another_charset_is_415_and_changes_nothing(admin, changed):
    before = _everything(admin)

    response = admin.post(
        "/fixtures",
        content=DANA_YAML.encode("latin-1"),
        headers={"Content-Type": "application/yaml; charset=latin-1"},
    )

    assert_error(response, 415, 41501)
    assert _everything(admin) == before


def test_yaml_fixture_over_64_mib_is_413_and_changes_nothing(admin, changed):
    before = _everything(admin)
    document = DANA_YAML + "#" * (64 * 1024 * 1024) + "\n"

    response = admin.post(
        "/fixtures", content=document.encode(), headers={"Content-Type": "application/yaml"}
    )

    assert_error(response, 413, 41301)
    assert _everything(admin) == before


def test_yaml_fixture_over_1_mib_loads(admin, store):
    document = DANA_YAML + "#" * (1024 * 1024) + "\n"

    response = admin.post(
        "/fixtures", content=document.encode(), headers={"Content-Type": "application/yaml"}
    )

    assert response.status_code == 200, response.text
    assert store.identity.find_subject("user", DANA) is not None


def test_yaml_body_on_reset_is_415_and_changes_nothing(admin, changed):
    before = _everything(admin)

    response = admin.post(
        "/reset", content=b"seed: 7\n", headers={"Content-Type": "application/yaml"}
    )

    assert_error(response, 415, 41501)
    assert _everything(admin) == before


# -- tokens ------------------------------------------------------------------------------------


def _caller(server, token: str) -> dict:
    """The subject a platform request with this token is served as (operation 5 names it)."""
    response = httpx.get(
        server.url + CONTROL_PLANE + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]["createdBySubject"]


@pytest.mark.parametrize(
    ("reference", "type_", "name"),
    [
        pytest.param("bob@acme.example", "user", "bob@acme.example", id="user-by-email"),
        pytest.param("user:carol@acme.example", "user", "carol@acme.example", id="user-by-type"),
        pytest.param("team:ml-platform", "team", "ml-platform", id="team"),
        pytest.param("virtualaccount:ci-bot", "virtualaccount", "ci-bot", id="virtual-account"),
        pytest.param("agent:support-agent", "agent", "support-agent", id="agent"),
    ],
)
def test_minted_token_authenticates_as_the_subject(admin, server, store, reference, type_, name):
    subject = store.identity.subject_named(type_, name)

    response = admin.post("/tokens", json={"subject": reference})

    assert response.status_code == 200, response.text
    assert response.json()["subject"] == render.subject_reference(subject)
    caller = _caller(server, response.json()["token"])
    assert (caller["subjectType"], caller["subjectId"], caller["subjectSlug"]) == (
        type_,
        subject.id,
        subject.slug,
    )


def test_minting_a_token_changes_nothing(admin, changed):
    before = _everything(admin)

    assert admin.post("/tokens", json={"subject": "bob@acme.example"}).status_code == 200

    assert _everything(admin) == before


def test_token_minted_after_a_reseed_works_where_the_first_one_no_longer_does(admin, mock, server):
    original_seed = mock.store.seed
    started_with = admin.post("/tokens", json={"subject": "bob@acme.example"}).json()["token"]
    try:
        assert admin.post("/reset", json={"seed": 7}).status_code == 200
        stale = httpx.get(
            server.url + CONTROL_PLANE + "/personal-access-tokens/ci",
            headers={"Authorization": f"Bearer {started_with}"},
        )
        assert stale.status_code == 401, stale.text

        response = admin.post("/tokens", json={"subject": "bob@acme.example"})

        assert response.status_code == 200, response.text
        bob = mock.store.identity.subject_named("user", "bob@acme.example")
        assert _caller(server, response.json()["token"])["subjectId"] == bob.id
    finally:
        mock.reset(seed=original_seed)


def test_token_for_a_subject_a_fixture_added_works(admin, server, store):
    assert admin.post("/fixtures", json=DANA_DOCUMENT).status_code == 200

    response = admin.post("/tokens", json={"subject": DANA})

    assert response.status_code == 200, response.text
    dana = store.identity.subject_named("user", DANA)
    assert _caller(server, response.json()["token"])["subjectId"] == dana.id


@pytest.mark.parametrize(
    "reference",
    [
        pytest.param(DANA, id="unknown-user"),
        pytest.param("team:no-such-team", id="unknown-team"),
        pytest.param("agent:ml-platform", id="name-of-another-type"),
        pytest.param("planet:mars", id="unknown-type"),
        pytest.param(" ", id="blank"),
    ],
)
def test_token_for_a_subject_the_world_does_not_have_is_404_and_changes_nothing(
    admin, changed, reference
):
    before = _everything(admin)

    body = assert_error(admin.post("/tokens", json={"subject": reference}), 404, 40409)

    assert repr(reference) in body["message"]
    assert [d["field"] for d in body["details"]] == ["subject"]
    assert _everything(admin) == before


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="no-subject"),
        pytest.param({"subject": None}, id="subject-null"),
        pytest.param(None, id="no-body"),
    ],
)
def test_token_request_without_a_subject_is_the_default_users(admin, mock, body):
    minted = admin.post("/tokens", json=body) if body is not None else admin.post("/tokens")
    assert minted.status_code == 200, minted.text
    assert minted.json()["token"] == mock.auth.dev_token()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"subject": ""}, "subject", id="empty-subject"),
        pytest.param({"subject": 7}, "subject", id="subject-not-a-string"),
        pytest.param({"subject": "bob@acme.example", "admin": True}, "admin", id="unknown-field"),
        pytest.param(["bob@acme.example"], "", id="not-an-object"),
    ],
)
def test_malformed_token_request_is_400_and_changes_nothing(admin, changed, body, field):
    before = _everything(admin)

    response = assert_error(admin.post("/tokens", json=body), 400, 40001)

    assert field in [d["field"] for d in response["details"]], response
    assert _everything(admin) == before


def test_fixture_naming_another_tenant_is_400_and_changes_nothing(admin):
    state = _state(admin)
    document = {"tenant": "other", "users": [{"email": "dana@acme.example"}]}
    body = assert_error(admin.post("/fixtures", json=document), 400, 40001)
    assert "the world's tenant is 'acme'" in body["message"]
    assert _state(admin) == state


# -- the readiness probe -------------------------------------------------------------------------


def test_health_answers_without_a_token(anonymous):
    response = anonymous.get("/__admin/health")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ok", "version": __version__}


def test_health_is_recorded_nowhere(anonymous, admin):
    before = admin.get("/report").json()["summary"]["requests"]
    assert anonymous.get("/__admin/health").status_code == 200
    assert admin.get("/journal").json()["data"] == []
    assert admin.get("/report").json()["summary"]["requests"] == before


# -- the test running ----------------------------------------------------------------------------


def test_requests_after_put_test_are_that_tests(admin, api):
    assert admin.put("/test", json={"test": "suite.js > lists runs"}).status_code == 200
    api.get("/personal-access-tokens/ci")
    (entry,) = admin.get("/journal").json()["data"]
    assert entry["test"] == "suite.js > lists runs"


def test_requests_after_delete_test_are_no_ones(admin, api):
    admin.put("/test", json={"test": "t1"})
    assert admin.delete("/test").status_code == 200
    api.get("/personal-access-tokens/ci")
    (entry,) = admin.get("/journal").json()["data"]
    assert entry["test"] is None


def test_delete_test_answers_the_tests_violating_requests(admin, api):
    admin.put("/test", json={"test": "t1"})
    api.get("/personal-access-tokens/ci")
    api.get("/personal-access-tokens/ci", params={"bogus": "1"})
    ended = admin.delete("/test").json()["data"]
    assert [(e["status"], e["query"]) for e in ended] == [(400, {"bogus": ["1"]})]


def test_delete_test_removes_the_faults(admin, mock):
    admin.put("/test", json={"test": "t1"})
    mock.faults.add("listJobRuns", status=503, times=None)
    admin.delete("/test")
    assert admin.get("/faults").json()["data"] == []


def test_a_test_expecting_violations_has_none_counted(admin, api):
    admin.put("/test", json={"test": "negative", "expectViolations": True})
    api.get("/personal-access-tokens/ci", params={"bogus": "1"})
    assert admin.delete("/test").json()["data"] == []
    (entry,) = admin.get("/journal").json()["data"]
    assert (entry["violation"], entry["expected"]) == (True, True)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"test": "t1"}, ["t1", "t1"], id="test"),
        pytest.param({"violation": "true"}, ["t1"], id="violation"),
        pytest.param({"test": "t2", "violation": "false"}, ["t2"], id="test-and-not-violation"),
    ],
)
def test_journal_filters_by_test_and_violation(admin, api, query, expected):
    for test, params in (("t1", {}), ("t1", {"bogus": "1"}), ("t2", {})):
        admin.put("/test", json={"test": test})
        api.get("/personal-access-tokens/ci", params=params)
    found = admin.get("/journal", params=query).json()["data"]
    assert [entry["test"] for entry in found] == expected


# -- a reset with extra documents -------------------------------------------------------------


def test_reset_with_fixtures_adds_them_to_the_initial_world(admin):
    assert admin.post("/reset", json={"fixtures": [DANA_DOCUMENT]}).status_code == 200
    assert DANA in [user["email"] for user in _state(admin)["users"]]


def test_reset_with_fixtures_that_cannot_enter_is_a_400_and_changes_nothing(admin, changed):
    before = _everything(admin)
    bad = {"users": [{"email": DANA}, {"email": DANA}]}
    assert_error(admin.post("/reset", json={"fixtures": [bad]}), 400, 40001)
    assert _everything(admin) == before


# -- worlds served beside this one ---------------------------------------------------------------


@pytest.fixture
def world(admin) -> Iterator[dict]:
    # A world is a mock built and served anew: on a busy machine that takes more than
    # httpx's default 5 s, which would fail the test for the machine's load alone.
    created = admin.post("/worlds", json={}, timeout=120)
    assert created.status_code == 201, created.text
    yield created.json()
    admin.delete(f"/worlds/{created.json()['id']}")


def test_a_world_serves_the_platform_api_with_its_own_token(world):
    with httpx.Client(base_url=world["apiUrl"]) as client:
        response = client.get(
            "/personal-access-tokens/ci", headers={"Authorization": f"Bearer {world['token']}"}
        )
    assert response.status_code == 200, response.text


def test_a_worlds_changes_stay_in_it(world, admin, store):
    group = store.secrets.group_named("llm-keys").resource.id
    with httpx.Client(base_url=world["apiUrl"]) as client:
        deleted = client.delete(
            f"/secret-groups/{group}", headers={"Authorization": f"Bearer {world['token']}"}
        )
    assert deleted.status_code == 200, deleted.text
    assert group in [g["id"] for g in _state(admin)["secretGroups"]]


def test_a_worlds_requests_count_in_this_mocks_report(world, admin):
    before = admin.get("/report").json()["summary"]["requests"]
    with httpx.Client(base_url=world["apiUrl"]) as client:
        client.get(
            "/personal-access-tokens/ci", headers={"Authorization": f"Bearer {world['token']}"}
        )
    assert admin.get("/report").json()["summary"]["requests"] == before + 1


def test_a_worlds_admin_api_takes_its_own_admin_token_only(world, mock):
    with httpx.Client(base_url=world["adminUrl"]) as client:
        own = client.get("/faults", headers={"Authorization": f"Bearer {world['adminToken']}"})
        other = client.get(
            "/faults", headers={"Authorization": f"Bearer {mock.auth.admin_token()}"}
        )
    assert own.status_code == 200
    assert_error(other, 401, 40104)


def test_a_deleted_world_is_served_no_more(admin, world):
    assert admin.delete(f"/worlds/{world['id']}").status_code == 200
    with pytest.raises(httpx.TransportError), httpx.Client(base_url=world["url"]) as client:
        client.get("/__admin/health")


def test_deleting_an_unknown_world_is_404(admin):
    assert_error(admin.delete("/worlds/world-0"), 404, 40410)
