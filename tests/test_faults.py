"""Fault injection: rules from Python (`mock.faults.add`) and `/__admin/faults`, and `Prefer`.

A rule makes an operation answer a status its contract documents (with the platform error
body of that condition), wait, or drop the connection; it never bypasses authentication or
validation, and a faulted request changes nothing. Rules are cleared before each test.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from mock_server.handlers import catalog
from mock_server.services.faults import FaultRefused
from tests.conftest import CONTROL_PLANE, assert_error
from tests.test_catalog import send_example

FAULT_HEADER = "x-platform-mock-fault"


def _group_id(store, name: str) -> str:
    return store.secrets.group_named(name).resource.id


def _job_id(store) -> str:
    return store.deployments.application_named("trainer").id


def _group_exists(store, name: str) -> bool:
    return store.identity.find_resource("secret-group", name) is not None


def _sentiment_version_id(store) -> str:
    artifact = next(
        a
        for a in store.world.artifacts.values()
        if (a.type, a.name) == ("model-version", "sentiment")
    )
    return artifact.versions[1]


def _version_count(store) -> int:
    return len(store.world.artifact_versions)


@pytest.fixture
def call(server, mock) -> Callable[..., httpx.Response]:
    """The catalog's valid request of an operation, as its caller; answered 200 without
    faults."""

    def send(operation_id: str, **kwargs) -> httpx.Response:
        return send_example(server, mock, operation_id, **kwargs)

    return send


# -- a status rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation_id", "status", "code"),
    [
        pytest.param("deleteSecretGroup", 424, 42401, id="delete-424-integration-down"),
        pytest.param("deleteSecretGroup", 404, 40405, id="delete-404-group-not-found"),
        pytest.param("deleteSecretGroup", 403, 40301, id="delete-403-no-grant"),
        pytest.param("deleteSecretGroup", 500, 50002, id="delete-500-platform-failed"),
        pytest.param("listJobRuns", 503, 50301, id="job-runs-503-unavailable"),
        pytest.param("listJobRuns", 404, 40406, id="job-runs-404-job-not-found"),
        pytest.param("listJobRuns", 422, 42201, id="job-runs-422-not-a-job"),
        pytest.param("getOrCreatePersonalAccessToken", 400, 40003, id="token-400-bad-team"),
        pytest.param("generateRoleBindingManifests", 400, 40002, id="role-bindings-400-mode"),
        pytest.param("generateRoleBindingManifests", 404, 40402, id="role-bindings-404"),
        pytest.param("stageArtifactVersion", 404, 40403, id="stage-404-repo-not-found"),
        pytest.param("stageArtifactVersion", 409, 40902, id="stage-409-version-exists"),
        pytest.param("applyArtifactVersionTags", 404, 40404, id="tags-404-version-not-found"),
        pytest.param("applyArtifactVersionTags", 409, 40901, id="tags-409-tag-in-use"),
        pytest.param("listSecretDeployments", 503, 50301, id="deployments-503-unavailable"),
        pytest.param("getModelResponse", 404, 40407, id="gateway-404-response-not-found"),
        pytest.param("getModelResponse", 400, 40004, id="gateway-400-bad-metadata"),
    ],
)
def test_status_rule_answers_the_error_of_that_condition(mock, call, operation_id, status, code):
    rule = mock.faults.add(operation_id, status=status)

    response = call(operation_id)

    assert_error(response, status, code)
    assert response.headers[FAULT_HEADER] == rule.id


@pytest.mark.parametrize(
    ("operation_id", "status"),
    [
        pytest.param(op, status, id=f"{op}-{status}")
        for op, entry in catalog.PLATFORM.items()
        for status in sorted(entry.errors)
    ],
)
def test_every_documented_error_can_be_injected_as_its_catalog_condition(
    mock, call, operation_id, status
):
    rule = mock.faults.add(operation_id, status=status)

    response = call(operation_id)

    assert_error(response, status, catalog.CATALOG[operation_id].errors[status].code)
    assert response.headers[FAULT_HEADER] == rule.id


def test_injected_424_message_names_force_delete(mock, call):
    mock.faults.add("deleteSecretGroup", status=424)
    body = assert_error(call("deleteSecretGroup"), 424, 42401)
    assert "forceDelete" in body["message"]


def test_injected_fault_is_journaled_with_its_rule(mock, call):
    rule = mock.faults.add("listJobRuns", status=503)
    assert_error(call("listJobRuns"), 503, 50301)
    entry = mock.journal.assert_called("listJobRuns", times=1, status=503)[0]
    assert (entry.fault, entry.code) == (rule.id, 50301)


def test_normal_response_has_no_fault_header(mock, call):
    mock.faults.add("listJobRuns", status=503, match={"jobId": "another-job"})
    response = call("listJobRuns")
    assert response.status_code == 200, response.text
    assert FAULT_HEADER not in response.headers


# -- how often ---------------------------------------------------------------------------------


def test_rule_applies_once_by_default(mock, call):
    mock.faults.add("listJobRuns", status=503)

    assert_error(call("listJobRuns"), 503, 50301)
    second = call("listJobRuns")

    assert second.status_code == 200, second.text
    assert FAULT_HEADER not in second.headers


def test_rule_with_times_3_applies_three_times(mock, call):
    rule = mock.faults.add("listJobRuns", status=503, times=3)

    statuses = [call("listJobRuns").status_code for _ in range(4)]

    assert statuses == [503, 503, 503, 200]
    assert rule.applied == 3


def test_rule_with_times_none_always_applies(mock, call):
    rule = mock.faults.add("listJobRuns", status=503, times=None)

    statuses = [call("listJobRuns").status_code for _ in range(5)]

    assert statuses == [503] * 5
    assert rule.applied == 5


def test_after_1_fails_the_second_delete(api, mock, store):
    """A 424 on the second delete: the first matching call goes through."""
    mock.faults.add("deleteSecretGroup", status=424, after=1)

    first = api.delete(f"/secret-groups/{_group_id(store, 'llm-keys')}")
    second = api.delete(
        f"/secret-groups/{_group_id(store, 'legacy-vault')}", params={"forceDelete": "true"}
    )

    assert first.status_code == 200, first.text
    assert not _group_exists(store, "llm-keys")
    assert_error(second, 424, 42401)
    assert _group_exists(store, "legacy-vault")


# -- which requests ----------------------------------------------------------------------------


def test_match_on_a_path_parameter_hits_only_that_id(api, mock, store):
    llm_keys = _group_id(store, "llm-keys")
    mock.faults.add("deleteSecretGroup", status=424, match={"id": llm_keys}, times=None)

    other = api.delete(
        f"/secret-groups/{_group_id(store, 'legacy-vault')}", params={"forceDelete": "true"}
    )
    matched = api.delete(f"/secret-groups/{llm_keys}")

    assert other.status_code == 200, other.text
    assert_error(matched, 424, 42401)
    assert _group_exists(store, "llm-keys")


def test_match_on_a_query_parameter_hits_only_that_value(api, mock, store):
    path = f"/jobs/{_job_id(store)}/runs"
    mock.faults.add("listJobRuns", status=503, match={"order": "asc"}, times=None)

    assert api.get(path, params={"order": "desc"}).status_code == 200
    assert api.get(path).status_code == 200
    assert_error(api.get(path, params={"order": "asc"}), 503, 50301)


def test_match_on_an_integer_query_parameter(api, mock, store):
    path = f"/jobs/{_job_id(store)}/runs"
    mock.faults.add("listJobRuns", status=503, match={"limit": 5}, times=None)

    assert api.get(path, params={"limit": 6}).status_code == 200
    assert_error(api.get(path, params={"limit": 5}), 503, 50301)


@pytest.mark.parametrize(
    ("matched", "sent"),
    [
        pytest.param(5, "05", id="int-matches-leading-zero"),
        pytest.param("05", "5", id="text-matches-the-same-integer"),
        pytest.param("-0", "0", id="minus-zero-is-zero"),
    ],
)
def test_integer_match_compares_integers_not_text(api, mock, store, matched, sent):
    path = f"/jobs/{_job_id(store)}/runs"
    mock.faults.add("listJobRuns", status=503, match={"offset": matched}, times=None)
    assert_error(api.get(f"{path}?offset={sent}"), 503, 50301)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("1_0", id="underscore"),
        pytest.param("+5", id="plus-sign"),
        pytest.param(" 5", id="leading-space"),
        pytest.param("\u0665", id="arabic-indic-digit"),
        pytest.param(True, id="boolean"),
        pytest.param(5.0, id="float"),
    ],
)
def test_integer_match_outside_the_integer_grammar_is_refused(mock, value):
    with pytest.raises(FaultRefused, match="limit"):
        mock.faults.add("listJobRuns", status=503, match={"limit": value})
    assert mock.faults.rules() == []


def test_admin_match_on_a_boolean_query_parameter(admin, api, store):
    """`match` values may be JSON booleans (admin spec); they match `?forceDelete=true`."""
    added = admin.post(
        "/faults",
        json={"operationId": "deleteSecretGroup", "status": 503, "match": {"forceDelete": True}},
    )
    assert added.status_code == 201, added.text

    response = api.delete(
        f"/secret-groups/{_group_id(store, 'legacy-vault')}", params={"forceDelete": "true"}
    )

    assert_error(response, 503, 50301)
    assert _group_exists(store, "legacy-vault")


def test_rule_on_another_operation_does_not_apply(mock, call):
    mock.faults.add("deleteSecretGroup", status=424, times=None)
    assert call("listJobRuns").status_code == 200


# -- delay and drop ----------------------------------------------------------------------------


def test_delay_slows_the_request_then_answers_normally(mock, call):
    rule = mock.faults.add("listJobRuns", delay_ms=300)

    started = time.perf_counter()
    response = call("listJobRuns")
    elapsed = time.perf_counter() - started

    assert response.status_code == 200, response.text
    assert response.json()["pagination"]["total"] > 0
    assert response.headers[FAULT_HEADER] == rule.id
    assert 0.29 <= elapsed < 10


def test_drop_closes_the_connection_without_a_response(mock, call):
    mock.faults.add("listJobRuns", drop=True)

    with pytest.raises(httpx.RemoteProtocolError):
        call("listJobRuns")


def test_dropped_request_is_journaled_with_status_none(mock, call):
    rule = mock.faults.add("listJobRuns", drop=True)

    with pytest.raises(httpx.RemoteProtocolError):
        call("listJobRuns")

    entry = mock.journal.last
    assert (entry.operation_id, entry.status, entry.fault) == ("listJobRuns", None, rule.id)


def test_dropped_delete_changes_nothing(mock, call, store):
    mock.faults.add("deleteSecretGroup", drop=True)

    with pytest.raises(httpx.RemoteProtocolError):
        call("deleteSecretGroup")

    assert _group_exists(store, "llm-keys")


# -- refused rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation_id", "status"),
    [
        pytest.param("getOrCreatePersonalAccessToken", 424, id="token-424-undocumented"),
        pytest.param("getOrCreatePersonalAccessToken", 403, id="token-403-undocumented"),
        pytest.param("getModelResponse", 409, id="gateway-409-undocumented"),
        pytest.param("listSecretDeployments", 404, id="deployments-404-undocumented"),
        pytest.param("deleteSecretGroup", 201, id="success-status-201"),
        pytest.param("listJobRuns", 200, id="success-status-200"),
        pytest.param("listJobRuns", 999, id="not-a-status-999"),
    ],
)
def test_undocumented_status_is_refused(mock, operation_id, status):
    with pytest.raises(FaultRefused, match=str(status)):
        mock.faults.add(operation_id, status=status)
    assert mock.faults.rules() == []


@pytest.mark.parametrize(
    "effect",
    [
        pytest.param({"times": 2**64}, id="times-past-2^53-1"),
        pytest.param({"after": 2**53}, id="after-past-2^53-1"),
        pytest.param({"after": -1}, id="after-negative"),
        pytest.param({"match": {"x-platform-metadata": "{}"}}, id="match-on-a-header"),
    ],
)
def test_python_fault_the_admin_api_would_refuse_is_refused(mock, admin, effect):
    with pytest.raises(FaultRefused):
        mock.faults.add("getModelResponse", status=503, **effect)
    assert admin.get("/faults").status_code == 200
    assert mock.faults.rules() == []


def test_unknown_operation_is_refused(mock):
    with pytest.raises(FaultRefused, match="noSuchOperation"):
        mock.faults.add("noSuchOperation", status=503)
    assert mock.faults.rules() == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            {"operationId": "getOrCreatePersonalAccessToken", "status": 424}, id="token-424"
        ),
        pytest.param({"operationId": "deleteSecretGroup", "status": 201}, id="status-201"),
        pytest.param({"operationId": "listJobRuns", "status": 999}, id="status-999"),
        pytest.param({"operationId": "noSuchOperation", "status": 503}, id="unknown-operation"),
        pytest.param(
            {"operationId": "listJobRuns", "status": 503, "after": 2**53}, id="after-past-2^53-1"
        ),
        pytest.param(
            {"operationId": "listJobRuns", "status": 503, "times": 2**64}, id="times-past-2^64"
        ),
        pytest.param(
            {"operationId": "listJobRuns", "status": 503, "match": {"jobid": "x"}},
            id="match-names-no-parameter",
        ),
        pytest.param(
            {"operationId": "listJobRuns", "status": 503, "match": {"sortBy": "size"}},
            id="match-value-outside-the-enum",
        ),
        pytest.param(
            {"operationId": "listJobRuns", "status": 503, "match": {"status": ["RUNNING", "x"]}},
            id="match-list-value-outside-the-enum",
        ),
        pytest.param(
            {"operationId": "deleteSecretGroup", "status": 503, "match": {"forceDelete": "yes"}},
            id="match-boolean-neither-true-nor-false",
        ),
    ],
)
def test_admin_refuses_a_fault_the_contract_does_not_allow(admin, mock, body):
    response = admin.post("/faults", json=body)

    error = assert_error(response, 400, 40001)
    assert error["details"]
    assert mock.faults.rules() == []
    assert admin.get("/faults").json() == {"data": []}


def test_refused_rule_leaves_the_operation_normal(mock, call):
    with pytest.raises(FaultRefused):
        mock.faults.add("getOrCreatePersonalAccessToken", status=424)
    assert call("getOrCreatePersonalAccessToken").status_code == 200


# -- Prefer header -----------------------------------------------------------------------------


def test_prefer_code_424_on_delete_answers_424(call, store):
    response = call("deleteSecretGroup", headers={"Prefer": "code=424"})

    assert_error(response, 424, 42401)
    assert response.headers[FAULT_HEADER] == "prefer"
    assert _group_exists(store, "llm-keys")


def test_prefer_code_and_delay(call, store):
    started = time.perf_counter()
    response = call("deleteSecretGroup", headers={"Prefer": "code=503, delay=100"})
    elapsed = time.perf_counter() - started

    assert_error(response, 503, 50301)
    assert 0.09 <= elapsed < 10
    assert _group_exists(store, "llm-keys")


def test_prefer_delay_alone_answers_normally(call):
    started = time.perf_counter()
    response = call("listJobRuns", headers={"Prefer": "delay=100"})
    assert response.status_code == 200, response.text
    assert time.perf_counter() - started >= 0.09


def test_prefer_undocumented_code_is_400_and_changes_nothing(api, store):
    alice = store.identity.default_user()

    response = api.get("/personal-access-tokens/prefer-probe", headers={"Prefer": "code=424"})

    body = assert_error(response, 400, 40005)
    assert "424" in body["message"]
    assert body["details"] and body["details"][0]["field"] == "Prefer"
    assert (alice.id, "prefer-probe") not in store.world.tokens
    later = api.get("/personal-access-tokens/prefer-probe")
    assert later.status_code == 200, later.text
    assert later.json()["created"] is True


@pytest.mark.parametrize(
    "prefer",
    [
        pytest.param("code=abc", id="code-not-a-number"),
        pytest.param("code=503, delay=-5", id="negative-delay"),
        pytest.param("delay=1.5", id="delay-not-whole"),
        pytest.param("code=\u00b2", id="superscript-digit"),
        pytest.param("delay=" + "1" * 5000, id="5000-digits"),
    ],
)
def test_prefer_value_that_is_not_a_whole_number_is_400_in_plain_words(api, store, prefer):
    # As bytes: a header is Latin-1 on the wire, and httpx sends str headers as ASCII only.
    response = api.get(
        "/personal-access-tokens/prefer-probe", headers={"Prefer": prefer.encode("latin-1")}
    )

    body = assert_error(response, 400, 40005)
    assert "is not a whole number" in body["message"]
    assert "invalid literal" not in body["message"]
    assert (store.identity.default_user().id, "prefer-probe") not in store.world.tokens


def test_prefer_code_applies_to_that_request_only(call):
    assert call("listJobRuns", headers={"Prefer": "code=503"}).status_code == 503
    assert call("listJobRuns").status_code == 200


# -- faults and the rest of the contract -------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
def test_fault_does_not_bypass_validation(api, mock, store):
    rule = mock.faults.add("listJobRuns", status=503, times=None)
    path = f"/jobs/{_job_id(store)}/runs"

    assert_error(api.get(path, params={"limit": 0}), 400, 40001)

    assert rule.applied == 0
    assert_error(api.get(path), 503, 50301)


@pytest.mark.platform_mock(expect_violations=True)
def test_fault_does_not_bypass_authentication(anonymous, mock, call):
    rule = mock.faults.add("getOrCreatePersonalAccessToken", status=503, times=None)

    assert_error(anonymous.get(CONTROL_PLANE + "/personal-access-tokens/ci"), 401, 40101)

    assert rule.applied == 0
    assert_error(call("getOrCreatePersonalAccessToken"), 503, 50301)


@pytest.mark.platform_mock(expect_violations=True)
def test_prefer_does_not_bypass_validation(api, store):
    response = api.get(
        f"/jobs/{_job_id(store)}/runs", params={"limit": 0}, headers={"Prefer": "code=503"}
    )
    assert_error(response, 400, 40001)


def test_faulted_delete_leaves_the_group(mock, call, store):
    mock.faults.add("deleteSecretGroup", status=424)

    assert_error(call("deleteSecretGroup"), 424, 42401)

    assert _group_exists(store, "llm-keys")
    assert len(store.secrets.group_named("llm-keys").secrets) == 2
    assert call("deleteSecretGroup").status_code == 200  # the rule is used up
    assert not _group_exists(store, "llm-keys")


def test_faulted_stage_creates_no_version(mock, call, store):
    before = _version_count(store)
    mock.faults.add("stageArtifactVersion", status=503)

    assert_error(call("stageArtifactVersion"), 503, 50301)

    assert _version_count(store) == before


def test_faulted_tagging_applies_no_tag(mock, call, store):
    mock.faults.add("applyArtifactVersionTags", status=500)

    assert_error(call("applyArtifactVersionTags"), 500, 50002)

    assert "canary" not in store.artifacts.version(_sentiment_version_id(store)).tags


def test_faulted_token_request_creates_no_token(mock, call, store):
    alice = store.identity.default_user()
    mock.faults.add("getOrCreatePersonalAccessToken", status=503)

    assert_error(call("getOrCreatePersonalAccessToken"), 503, 50301)

    assert (alice.id, "ci") not in store.world.tokens


# -- a clean slate for every test --------------------------------------------------------------


def test_faults_are_cleared_before_each_test(mock, call):
    assert mock.faults.rules() == []
    assert call("listJobRuns").status_code == 200
    mock.faults.add("listJobRuns", status=503, times=None)


def test_faults_are_cleared_before_the_next_test_too(mock, call):
    assert mock.faults.rules() == []
    assert call("listJobRuns").status_code == 200
    mock.faults.add("listJobRuns", status=503, times=None)


# -- the admin API -----------------------------------------------------------------------------


def test_admin_adds_a_rule_that_applies(admin, call):
    response = admin.post("/faults", json={"operationId": "listJobRuns", "status": 503})

    assert response.status_code == 201, response.text
    rule = response.json()
    assert rule["operationId"] == "listJobRuns"
    assert (rule["status"], rule["times"], rule["after"], rule["applied"]) == (503, 1, 0, 0)
    faulted = call("listJobRuns")
    assert_error(faulted, 503, 50301)
    assert faulted.headers[FAULT_HEADER] == rule["id"]
    assert call("listJobRuns").status_code == 200


def test_admin_rule_with_times_null_always_applies(admin, call):
    response = admin.post(
        "/faults", json={"operationId": "listJobRuns", "status": 503, "times": None}
    )
    assert response.status_code == 201, response.text
    assert [call("listJobRuns").status_code for _ in range(3)] == [503] * 3


def test_admin_lists_rules_with_applied_counts(admin, mock, call):
    first = mock.faults.add("listJobRuns", status=503, times=None)
    second = mock.faults.add("deleteSecretGroup", status=424)
    call("listJobRuns")
    call("listJobRuns")

    response = admin.get("/faults")

    assert response.status_code == 200, response.text
    listed = {r["id"]: r for r in response.json()["data"]}
    assert list(listed) == [first.id, second.id]
    assert listed[first.id]["applied"] == 2
    assert listed[first.id]["times"] is None
    assert listed[second.id]["applied"] == 0
    assert listed[second.id]["operationId"] == "deleteSecretGroup"


def test_admin_deletes_one_rule(admin, mock, call):
    removed = mock.faults.add("listJobRuns", status=503, times=None)
    kept = mock.faults.add("deleteSecretGroup", status=424, times=None)

    response = admin.delete(f"/faults/{removed.id}")

    assert response.status_code == 200, response.text
    assert [r["id"] for r in admin.get("/faults").json()["data"]] == [kept.id]
    assert call("listJobRuns").status_code == 200
    assert_error(call("deleteSecretGroup"), 424, 42401)


def test_admin_delete_of_an_unknown_rule_is_404(admin, mock):
    rule = mock.faults.add("listJobRuns", status=503)

    body = assert_error(admin.delete("/faults/fault-does-not-exist"), 404, 40408)

    assert "fault-does-not-exist" in body["message"]
    assert [r.id for r in mock.faults.rules()] == [rule.id]


def test_admin_delete_faults_clears_every_rule(admin, mock, call):
    mock.faults.add("listJobRuns", status=503, times=None)
    mock.faults.add("deleteSecretGroup", status=424, times=None)

    response = admin.delete("/faults")

    assert response.status_code == 200, response.text
    assert response.json() == {}
    assert admin.get("/faults").json() == {"data": []}
    assert call("listJobRuns").status_code == 200
    assert call("deleteSecretGroup").status_code == 200


def test_prefer_header_on_the_admin_api_is_ignored(admin):
    response = admin.get("/faults", headers={"Prefer": "code=424"})
    assert response.status_code == 200, response.text


def test_integer_match_of_five_thousand_digits_is_refused(mock):
    with pytest.raises(FaultRefused, match="limit"):
        mock.faults.add("listJobRuns", status=503, match={"limit": "1" * 5000})


@pytest.mark.parametrize(
    ("operation_id", "match", "message"),
    [
        pytest.param("listJobRuns", {"order": "ASC"}, "order is never 'ASC'", id="enum-case"),
        pytest.param(
            "deleteSecretGroup", {"forceDelete": 1}, "forceDelete is never '1'", id="boolean"
        ),
    ],
)
def test_python_match_value_the_parameter_never_takes_is_refused(
    mock, operation_id, match, message
):
    with pytest.raises(FaultRefused, match=message):
        mock.faults.add(operation_id, status=503, match=match)
