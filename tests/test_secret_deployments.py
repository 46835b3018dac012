"""Active deployments behind secrets (operation 2): association, activity, read access, paging.

Default world: trainer (job) mounts HF_TOKEN in both versions, v2 active; chat-api uses
OPENAI_API_KEY as a build secret and in env; legacy-etl has DB_PASSWORD (legacy-vault) in env;
reporting's v1 mounted OPENAI_API_KEY but its active version 2 references no secret.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime

import pytest

from tests.conftest import assert_error

PATH = "/secrets/deployments"
# What a service manifest needs besides what a test is about: a complete one for its kind.
SERVICE = {
    "image": {"type": "image", "image_uri": "registry.acme.example/app:1.0.0"},
    "ports": [{"port": 8000, "protocol": "TCP"}],
    "replicas": 1,
}


def _secret_id(store, group: str, key: str) -> str:
    secrets = store.secrets.group_named(group).secrets.values()
    return next(s.id for s in secrets if s.key == key)


def _all_secret_ids(store) -> list[str]:
    return [sid for g in store.world.secret_groups.values() for sid in g.secrets]


def _active_deployment_id(store, application: str) -> str:
    app = store.deployments.application_named(application)
    return app.deployment_ids[app.active_version]


def _page(client, secret_ids, **params) -> dict:
    response = client.post(PATH, json={"secretIds": secret_ids}, params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data", "pagination"}
    return body


def _apps(body: dict) -> list[str]:
    return [d["application"]["name"] for d in body["data"]]


def _add_service(store, name: str, manifest: dict):
    alice = store.identity.subject_named("user", "alice@acme.example")
    app = store.deployments.add_application(
        name, type_="service", workspace_name="ml-team", created_by=alice
    )
    return store.deployments.add_deployment(app, {**SERVICE, **manifest})


# -- association -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "key", "application"),
    [
        pytest.param("llm-keys", "HF_TOKEN", "trainer", id="mount-secret-fqn"),
        pytest.param("llm-keys", "OPENAI_API_KEY", "chat-api", id="build-secret-and-env"),
        pytest.param("legacy-vault", "DB_PASSWORD", "legacy-etl", id="env-value"),
    ],
)
def test_returns_the_active_deployment_referencing_the_secret(api, store, group, key, application):
    body = _page(api, [_secret_id(store, group, key)])

    assert [d["id"] for d in body["data"]] == [_active_deployment_id(store, application)]
    assert body["pagination"]["total"] == 1


def test_returned_deployment_is_the_active_version_of_its_application(api, store):
    (deployment,) = _page(api, [_secret_id(store, "llm-keys", "HF_TOKEN")])["data"]

    trainer = store.deployments.application_named("trainer")
    assert deployment["applicationId"] == trainer.id
    assert deployment["application"]["activeVersion"] == deployment["version"] == 2
    assert deployment["manifest"]["mounts"][0]["secret_fqn"] == "acme:llm-keys:HF_TOKEN"


def test_secret_referenced_twice_by_one_deployment_returns_it_once(api, store):
    # chat-api refers to OPENAI_API_KEY both as a build secret and in env.
    body = _page(api, [_secret_id(store, "llm-keys", "OPENAI_API_KEY")])
    assert _apps(body) == ["chat-api"]


def test_returns_the_union_over_the_given_secrets(api, store):
    body = _page(
        api,
        [
            _secret_id(store, "llm-keys", "HF_TOKEN"),
            _secret_id(store, "llm-keys", "OPENAI_API_KEY"),
            _secret_id(store, "legacy-vault", "DB_PASSWORD"),
        ],
    )
    assert sorted(_apps(body)) == ["chat-api", "legacy-etl", "trainer"]
    assert body["pagination"]["total"] == 3


def test_deployment_using_two_given_secrets_appears_once(api, store):
    both = _add_service(
        store,
        "hybrid",
        {
            "mounts": [
                {"type": "secret", "mount_path": "/s/hf", "secret_fqn": "acme:llm-keys:HF_TOKEN"}
            ],
            "env": {"OPENAI_API_KEY": "platform-secret://acme:llm-keys:OPENAI_API_KEY"},
        },
    )
    ids = [
        _secret_id(store, "llm-keys", "HF_TOKEN"),
        _secret_id(store, "llm-keys", "OPENAI_API_KEY"),
    ]

    body = _page(api, ids)

    assert [d["id"] for d in body["data"]].count(both.id) == 1
    assert sorted(_apps(body)) == ["chat-api", "hybrid", "trainer"]
    assert body["pagination"]["total"] == 3


def test_same_secret_id_given_twice_counts_once(api, store):
    secret_id = _secret_id(store, "llm-keys", "OPENAI_API_KEY")
    body = _page(api, [secret_id, secret_id])
    assert _apps(body) == ["chat-api"]
    assert body["pagination"]["total"] == 1


def test_non_active_version_referencing_the_secret_is_not_returned(api, store):
    reporting = store.deployments.application_named("reporting")
    v1 = store.world.deployments[reporting.deployment_ids[1]]
    assert reporting.active_version == 2
    assert "acme:llm-keys:OPENAI_API_KEY" in v1.secret_fqns  # the premise of the test

    body = _page(api, [_secret_id(store, "llm-keys", "OPENAI_API_KEY")])

    assert "reporting" not in _apps(body)
    assert v1.id not in [d["id"] for d in body["data"]]


def test_new_active_version_without_the_secret_drops_the_application(api, store):
    openai = _secret_id(store, "llm-keys", "OPENAI_API_KEY")
    assert _apps(_page(api, [openai])) == ["chat-api"]

    chat_api = store.deployments.application_named("chat-api")
    store.deployments.add_deployment(chat_api, {**SERVICE, "replicas": 3})

    body = _page(api, [openai])
    assert body["data"] == []
    assert body["pagination"]["total"] == 0


def test_new_active_deployment_referencing_the_secret_is_returned(api, store):
    hf = _secret_id(store, "llm-keys", "HF_TOKEN")
    added = _add_service(store, "embedder", {"env": {"HF_TOKEN": "acme:llm-keys:HF_TOKEN"}})

    body = _page(api, [hf])

    assert added.id in [d["id"] for d in body["data"]]
    assert body["pagination"]["total"] == 2


def test_deployments_are_ordered_newest_first(api, store):
    body = _page(api, _all_secret_ids(store))

    keys = [(_instant(d["createdAt"]), d["id"]) for d in body["data"]]
    assert len({instant for instant, _ in keys}) == 3  # distinct times: the order is strict
    # Newest createdAt first; ties broken by id ascending.
    assert keys == sorted(keys, key=lambda k: (-k[0], k[1]))


def _instant(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


# -- ids that contribute nothing ---------------------------------------------------------------


def test_unknown_secret_ids_give_empty_data(api):
    body = _page(api, ["secret-does-not-exist", "another-missing-one"])
    assert body["data"] == []
    assert body["pagination"]["total"] == 0


def test_unknown_secret_ids_do_not_change_the_result_of_known_ones(api, store):
    hf = _secret_id(store, "llm-keys", "HF_TOKEN")
    alone = _page(api, [hf])
    mixed = _page(api, ["secret-does-not-exist", hf, "secret-nope"])
    assert mixed == alone
    assert _apps(mixed) == ["trainer"]


def test_empty_secret_ids_give_empty_data(api):
    body = _page(api, [])
    assert body == {"data": [], "pagination": {"total": 0, "offset": 0, "limit": 100}}


def test_caller_without_any_read_access_sees_nothing(as_user, store):
    carol = as_user("carol@acme.example")
    body = _page(carol, _all_secret_ids(store))
    assert body["data"] == []
    assert body["pagination"]["total"] == 0


def test_secrets_the_caller_may_not_read_contribute_nothing(as_user, store):
    bob = as_user("bob@acme.example")  # secret-group-viewer on llm-keys only
    body = _page(bob, _all_secret_ids(store))
    assert sorted(_apps(body)) == ["chat-api", "trainer"]
    assert body["pagination"]["total"] == 2


def test_unreadable_secret_alone_gives_empty_data(as_user, store):
    bob = as_user("bob@acme.example")
    body = _page(bob, [_secret_id(store, "legacy-vault", "DB_PASSWORD")])
    assert body["data"] == []
    assert body["pagination"]["total"] == 0


def test_read_grant_added_in_the_store_takes_effect(as_user, store):
    bob_client = as_user("bob@acme.example")
    db_password = _secret_id(store, "legacy-vault", "DB_PASSWORD")
    assert _page(bob_client, [db_password])["data"] == []

    bob = store.identity.subject_named("user", "bob@acme.example")
    vault = store.identity.resource_named("secret-group", "legacy-vault")
    store.identity.add_grant(bob, "secret-group-viewer", vault)

    assert _apps(_page(bob_client, [db_password])) == ["legacy-etl"]


# -- pagination --------------------------------------------------------------------------------


@pytest.fixture
def many(store) -> list[str]:
    """Seven more services mounting HF_TOKEN, so HF_TOKEN has eight active deployments."""
    for number in range(7):
        _add_service(
            store,
            f"hf-user-{number}",
            {
                "mounts": [
                    {"type": "secret", "mount_path": "/hf", "secret_fqn": "acme:llm-keys:HF_TOKEN"}
                ]
            },
        )
    return [_secret_id(store, "llm-keys", "HF_TOKEN")]


def test_default_limit_and_offset_are_echoed(api, many):
    body = _page(api, many)
    assert body["pagination"] == {"total": 8, "offset": 0, "limit": 100}
    assert len(body["data"]) == 8


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(1, id="limit-1"),
        pytest.param(3, id="limit-3-uneven"),
        pytest.param(4, id="limit-4-even"),
        pytest.param(8, id="limit-equals-total"),
    ],
)
def test_pages_add_up_to_the_total_without_duplicates(api, many, limit):
    everything = [d["id"] for d in _page(api, many)["data"]]
    seen: list[str] = []
    for offset in range(0, 8, limit):
        body = _page(api, many, limit=limit, offset=offset)
        assert body["pagination"] == {"total": 8, "offset": offset, "limit": limit}
        assert len(body["data"]) == min(limit, 8 - offset)
        seen += [d["id"] for d in body["data"]]
    assert len(seen) == len(set(seen)) == 8
    assert seen == everything


@pytest.mark.parametrize(
    "offset",
    [pytest.param(8, id="just-past-the-end"), pytest.param(500, id="far-past-the-end")],
)
def test_page_past_the_end_is_empty_with_the_true_total(api, many, offset):
    body = _page(api, many, limit=5, offset=offset)
    assert body == {"data": [], "pagination": {"total": 8, "offset": offset, "limit": 5}}


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("params", "field"),
    [
        pytest.param({"limit": 0}, "limit", id="limit-0"),
        pytest.param({"limit": 1001}, "limit", id="limit-1001"),
        pytest.param({"offset": -1}, "offset", id="offset-negative"),
        pytest.param({"limit": "many"}, "limit", id="limit-not-integer"),
    ],
)
def test_paging_parameters_out_of_range_are_400(api, store, params, field):
    response = api.post(PATH, json={"secretIds": _all_secret_ids(store)}, params=params)
    body = assert_error(response, 400, 40001)
    assert {"location": "query", "field": field} in [
        {"location": d["location"], "field": d["field"]} for d in body["details"]
    ]


# -- malformed bodies --------------------------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param({}, id="missing"),
        pytest.param({"secretIds": "secret-1"}, id="string-not-array"),
        pytest.param({"secretIds": None}, id="null"),
        pytest.param({"secretIds": {"id": "secret-1"}}, id="object-not-array"),
        pytest.param({"secretIds": [1, 2]}, id="items-not-strings"),
    ],
)
def test_bad_secret_ids_are_400_naming_secret_ids(api, body):
    response = api.post(PATH, json=body)
    error = assert_error(response, 400, 40001)
    fields = [d["field"] for d in error["details"]]
    assert any(f == "secretIds" or f.startswith("secretIds[") for f in fields), error
    assert all(d["location"] == "body" for d in error["details"])


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "body",
    [
        pytest.param([], id="array"),
        pytest.param("secret-1", id="string"),
        pytest.param(None, id="null"),
        pytest.param(42, id="number"),
    ],
)
def test_body_that_is_not_an_object_is_400(api, body):
    response = api.post(
        PATH, content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    error = assert_error(response, 400, 40001)
    # The one violation is the body itself (field ""): it must be an object.
    assert [(d["location"], d["field"]) for d in error["details"]] == [("body", "")], error
    assert "object" in error["details"][0]["message"]


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_body_field_is_400(api, store):
    response = api.post(PATH, json={"secretIds": _all_secret_ids(store), "secretId": "x"})
    error = assert_error(response, 400, 40001)
    assert [d["field"] for d in error["details"]] == ["secretId"]


def test_manifest_resources_carry_ephemeral_storage_at_the_sdks_defaults(api, store):
    # trainer's manifest gives cpu and memory only (fixtures/default.yaml).
    secret_ids = [s for g in store.world.secret_groups.values() for s in g.secrets]
    body = api.post("/secrets/deployments", json={"secretIds": secret_ids}).json()
    with_resources = [
        d["manifest"]["resources"] for d in body["data"] if "resources" in d["manifest"]
    ]
    assert with_resources
    for resources in with_resources:
        assert resources["ephemeral_storage_request"] == 1000
        assert resources["ephemeral_storage_limit"] == 2000


def test_ephemeral_storage_a_manifest_gives_is_kept(store):
    application = store.deployments.application_named("trainer")
    manifest = copy.deepcopy(store.world.deployments[application.deployment_ids[1]].manifest)
    manifest["resources"] = {"cpu_request": 1, "ephemeral_storage_limit": 5000}
    deployment = store.deployments.add_deployment(application, manifest)
    assert deployment.manifest["resources"] == {
        "cpu_request": 1,
        "ephemeral_storage_limit": 5000,
        "ephemeral_storage_request": 1000,
    }
