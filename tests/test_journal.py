"""The request journal: `mock.journal` from Python and `GET/DELETE /__admin/journal`.

Every platform request is recorded once, in order, whatever the mock answered (validation,
auth, routing errors included), without the bearer token, with a `violation` flag for
requests that broke the contract. The admin API itself is not journaled.
"""

from __future__ import annotations

import json
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.contract import documents as contract
from mock_server.core.coordinates import MAX_TEST_NAME, TEST_HEADER
from mock_server.handlers import catalog
from mock_server.http.server import BackgroundServer
from mock_server.services.journal import (
    ENTRY_OVERHEAD,
    HEADER_BUDGET,
    Entry,
    Journal,
    within_budget,
)
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, assert_error
from tests.test_catalog import send_example

TOKENS = "/personal-access-tokens/ci"
DEPLOYMENTS = "/secrets/deployments"


def _group_id(store, name: str) -> str:
    return store.secrets.group_named(name).resource.id


def _job_id(store) -> str:
    return store.deployments.application_named("trainer").id


def _runs(job_id: str) -> str:
    return f"/jobs/{job_id}/runs"


# -- what is recorded --------------------------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
def test_every_request_is_recorded_once_in_order(api, anonymous, mock, store):
    job_id = _job_id(store)
    sent = [
        ("GET", CONTROL_PLANE + _runs(job_id), api.get(_runs(job_id)).status_code),
        (
            "GET",
            CONTROL_PLANE + _runs(job_id),
            api.get(_runs(job_id), params={"limit": 0}).status_code,
        ),
        ("GET", CONTROL_PLANE + TOKENS, anonymous.get(CONTROL_PLANE + TOKENS).status_code),
        ("GET", CONTROL_PLANE + "/no-such-path", api.get("/no-such-path").status_code),
        ("POST", CONTROL_PLANE + TOKENS, api.post(TOKENS).status_code),
        (
            "DELETE",
            CONTROL_PLANE + "/secret-groups/nope",
            api.delete("/secret-groups/nope").status_code,
        ),
    ]
    assert [s for _, _, s in sent] == [200, 400, 401, 404, 405, 404]

    entries = list(mock.journal)

    assert [(e.method, e.path, e.status) for e in entries] == sent
    seqs = [e.seq for e in entries]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


@pytest.mark.platform_mock(expect_violations=True)
def test_validation_failure_is_recorded_with_its_error(api, mock):
    response = api.post(DEPLOYMENTS, params={"limit": 0}, json={"secretIds": ["s-1"]})
    body = assert_error(response, 400, 40001)

    entry = mock.journal.last

    assert entry.operation_id == "listSecretDeployments"
    assert (entry.method, entry.path) == ("POST", CONTROL_PLANE + DEPLOYMENTS)
    assert entry.query == {"limit": ["0"]}
    assert entry.body == {"secretIds": ["s-1"]}
    assert (entry.status, entry.code) == (400, 40001)
    assert entry.message == body["message"]
    assert entry.details == body["details"]
    assert any(d["field"] == "limit" for d in entry.details)


def test_successful_request_carries_query_lists_path_params_and_no_error(api, mock, store):
    job_id = _job_id(store)
    response = api.get(_runs(job_id), params={"status": ["FAILED", "RUNNING"], "limit": 5})
    assert response.status_code == 200, response.text

    entry = mock.journal.last

    assert entry.operation_id == "listJobRuns"
    assert entry.query == {"status": ["FAILED", "RUNNING"], "limit": ["5"]}
    assert entry.path_params == {"jobId": job_id}
    assert entry.body is None
    assert (entry.status, entry.code, entry.message, entry.details) == (200, None, None, [])


def test_json_body_is_stored_parsed(api, mock):
    api.post(DEPLOYMENTS, json={"secretIds": ["a", "b"]})
    assert mock.journal.last.body == {"secretIds": ["a", "b"]}


@pytest.mark.platform_mock(expect_violations=True)
def test_missing_token_is_recorded_as_401_of_its_operation(anonymous, mock):
    assert_error(anonymous.get(CONTROL_PLANE + TOKENS), 401, 40101)

    entry = mock.journal.last

    assert (entry.operation_id, entry.status, entry.code) == (
        "getOrCreatePersonalAccessToken",
        401,
        40101,
    )
    assert entry.path_params == {"name": "ci"}


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_path_is_recorded_without_operation(api, mock):
    assert_error(api.get("/no-such-path"), 404, 40401)

    entry = mock.journal.last

    assert entry.path == CONTROL_PLANE + "/no-such-path"
    assert (entry.operation_id, entry.status, entry.code) == (None, 404, 40401)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/favicon.ico", id="browser-favicon"),
        pytest.param("/health", id="readiness-probe"),
        pytest.param("/docs/", id="api-docs"),
        pytest.param("/gateway/docs/", id="gateway-api-docs"),
        pytest.param("/gateway/docs/favicon-32x32.png", id="gateway-docs-asset"),
    ],
)
def test_request_outside_the_api_is_answered_but_not_recorded(server, mock, path):
    response = httpx.get(server.url + path)

    assert response.status_code in (200, 404)
    assert mock.journal.last is None


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/svc/v2/jobs", id="another-api-version"),
        pytest.param("/gateway/no-such-thing", id="under-the-gateway-prefix"),
    ],
)
def test_unknown_path_of_the_api_is_recorded(server, mock, path):
    httpx.get(server.url + path)

    # Without a token, the gateway answers 401 before its 404, as the platform's does.
    code = 40101 if path.startswith("/gateway/") else 40401
    assert (mock.journal.last.path, mock.journal.last.code) == (path, code)


@pytest.mark.platform_mock(expect_violations=True)
def test_wrong_method_is_recorded_as_405(api, mock):
    assert_error(api.post(TOKENS), 405, 40501)

    entry = mock.journal.last

    assert (entry.method, entry.path) == ("POST", CONTROL_PLANE + TOKENS)
    assert (entry.operation_id, entry.status, entry.code) == (None, 405, 40501)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "authorized",
    [pytest.param(True, id="accepted-token"), pytest.param(False, id="rejected-token")],
)
def test_authorization_header_is_never_stored(server, mock, token, authorized):
    bearer = token if authorized else token + "tampered"
    response = httpx.get(
        server.url + CONTROL_PLANE + TOKENS, headers={"Authorization": f"Bearer {bearer}"}
    )
    assert response.status_code == (200 if authorized else 401), response.text

    entry = mock.journal.last

    assert entry.headers["authorization"] == "<hidden>"
    assert bearer not in json.dumps(entry.to_dict())
    assert token.split(".")[2] not in json.dumps(entry.to_dict())


def test_client_leaving_mid_body_of_a_get_is_journaled_unanswered(server, mock, store, token):
    with socket.create_connection((server.host, server.port)) as raw:
        raw.sendall(
            f"GET {CONTROL_PLANE}{_runs(_job_id(store))} HTTP/1.1\r\nHost: mock\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n0123456789".encode()
        )
    deadline = time.monotonic() + budget(10)  # a wait for the server to notice, not a timing check
    while mock.journal.last is None and time.monotonic() < deadline:
        time.sleep(0.01)

    entry = mock.journal.last

    assert entry is not None
    assert (entry.status, entry.code, entry.dropped, entry.violation) == (None, None, False, False)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{"secretIds": ["\\udfff"]}', id="lone-surrogate"),
        pytest.param(b'{"secretIds": [' + b"9" * 30 + b"]}", id="integer-past-64-bits"),
    ],
)
def test_journal_of_a_body_json_cannot_echo_stays_readable(admin, api, mock, raw):
    api.post(DEPLOYMENTS, content=raw, headers={"Content-Type": "application/json"})

    response = admin.get("/journal")

    assert response.status_code == 200, response.text
    assert response.json()["data"][-1]["body"] == raw.decode()


def test_admin_requests_are_not_journaled(admin, api, mock):
    api.get(TOKENS)
    assert admin.get("/state").status_code == 200
    assert admin.get("/journal").status_code == 200
    assert admin.get("/faults").status_code == 200

    assert [e.operation_id for e in mock.journal] == ["getOrCreatePersonalAccessToken"]
    assert not any(e.path.startswith("/__admin") for e in mock.journal)


@pytest.mark.platform_mock(expect_violations=True)
def test_entries_are_labelled_with_the_current_test(api, mock, request):
    api.get(TOKENS)
    api.get("/no-such-path")
    assert [e.test for e in mock.journal] == [request.node.nodeid] * 2


def test_the_test_header_names_the_test_that_sent_a_request(api, mock, request):
    api.get(TOKENS, headers={TEST_HEADER: "suite.test.mjs > lists tokens"})
    api.get(TOKENS)
    assert [e.test for e in mock.journal] == ["suite.test.mjs > lists tokens", request.node.nodeid]


def test_a_test_named_by_header_does_not_inherit_the_mock_wide_expectation(api, mock):
    mock.journal.begin_test("negative test", expecting=True)
    api.get(TOKENS, params={"bogus": 1}, headers={TEST_HEADER: "another test"})
    (entry,) = mock.journal
    assert (entry.test, entry.violation, entry.expected) == ("another test", True, False)


def test_a_repeated_test_header_names_the_test_by_its_first(api, mock):
    api.get(TOKENS, headers=[(TEST_HEADER, "first test"), (TEST_HEADER, "second test")])
    (entry,) = mock.journal
    assert entry.test == "first test"


def test_a_test_name_holding_the_callers_token_is_journaled_hidden(api, mock, token):
    api.get(TOKENS, headers={TEST_HEADER: f"lists tokens token={token}"})
    (entry,) = mock.journal
    assert entry.test is not None and token not in entry.test
    assert token not in json.dumps(entry.to_dict())


def test_a_described_request_holds_no_character_a_terminal_acts_on(api, mock):
    api.get(TOKENS, params={"note": "a\x1b[31m\r\nb\u202e"})
    (entry,) = mock.journal
    described = entry.describe()
    assert not any(c in described for c in "\x1b\r\n\u202e")


def test_a_test_name_past_its_bound_is_cut(api, mock):
    api.get(TOKENS, headers={TEST_HEADER: "t" * (MAX_TEST_NAME + 10)})
    (entry,) = mock.journal
    assert entry.test == "t" * MAX_TEST_NAME


# -- violation ---------------------------------------------------------------------------------


def _limit_zero(api, anonymous, store):
    return api.get(_runs(_job_id(store)), params={"limit": 0})


def _no_route(api, anonymous, store):
    return api.get("/no-such-path")


def _wrong_method(api, anonymous, store):
    return api.post(TOKENS)


def _not_json(api, anonymous, store):
    return api.post(DEPLOYMENTS, content=b"secretIds=a", headers={"Content-Type": "text/plain"})


def _too_large(api, anonymous, store):
    big = b'{"secretIds": ["' + b"a" * (1024 * 1024) + b'"]}'
    return api.post(DEPLOYMENTS, content=big, headers={"Content-Type": "application/json"})


def _no_token(api, anonymous, store):
    return anonymous.get(CONTROL_PLANE + TOKENS)


def _ok(api, anonymous, store):
    return api.get(_runs(_job_id(store)))


def _unknown_group(api, anonymous, store):
    return api.delete("/secret-groups/secret-group-does-not-exist")


def _tag_conflict(api, anonymous, store):
    staged = api.post(
        "/artifact-versions/stage",
        json={
            "manifest": {
                "type": "model-version",
                "name": "sentiment",
                "ml_repo": "demo-repo",
                "source": {"type": "platform"},
            }
        },
    )
    assert staged.status_code == 200, staged.text
    return api.put(
        "/artifact-versions/tags",
        json={"artifact_version_id": staged.json()["id"], "tags": ["production"]},
    )


def _faulty_integration(api, anonymous, store):
    return api.delete(f"/secret-groups/{_group_id(store, 'legacy-vault')}")


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("send", "status", "code"),
    [
        pytest.param(_limit_zero, 400, 40001, id="invalid-parameter-40001"),
        pytest.param(_no_route, 404, 40401, id="no-route-404"),
        pytest.param(_wrong_method, 405, 40501, id="wrong-method-405"),
        pytest.param(_not_json, 415, 41501, id="not-json-415"),
        pytest.param(_too_large, 413, 41301, id="body-too-large-413"),
        pytest.param(_no_token, 401, 40101, id="missing-token-401"),
    ],
)
def test_contract_breaking_request_is_a_violation(api, anonymous, mock, store, send, status, code):
    assert_error(send(api, anonymous, store), status, code)
    assert mock.journal.last.violation is True
    assert mock.journal.last.to_dict()["violation"] is True


def test_forbidden_request_is_not_a_violation(as_user, mock, store):
    carol = as_user("carol@acme.example")
    assert_error(carol.delete(f"/secret-groups/{_group_id(store, 'llm-keys')}"), 403, 40301)
    assert mock.journal.last.violation is False


@pytest.mark.parametrize(
    ("send", "status", "code"),
    [
        pytest.param(_ok, 200, None, id="ok-200"),
        pytest.param(_unknown_group, 404, 40405, id="unknown-resource-404"),
        pytest.param(_tag_conflict, 409, 40901, id="conflict-409"),
        pytest.param(_faulty_integration, 424, 42401, id="failed-dependency-424"),
    ],
)
def test_request_within_the_contract_is_not_a_violation(
    api, anonymous, mock, store, send, status, code
):
    response = send(api, anonymous, store)
    if code is None:
        assert response.status_code == status, response.text
    else:
        assert_error(response, status, code)
    assert mock.journal.last.violation is False
    assert mock.journal.last.to_dict()["violation"] is False


# -- querying from Python ----------------------------------------------------------------------


@pytest.fixture
def three_deletes(api, store) -> dict[str, str]:
    """A journal of: delete llm-keys (200), delete an unknown group (404), list runs (200),
    delete legacy-vault without force (424)."""
    ids = {
        "llm-keys": _group_id(store, "llm-keys"),
        "legacy-vault": _group_id(store, "legacy-vault"),
        "unknown": "secret-group-does-not-exist",
        "job": _job_id(store),
    }
    assert api.delete(f"/secret-groups/{ids['llm-keys']}").status_code == 200
    assert api.delete(f"/secret-groups/{ids['unknown']}").status_code == 404
    assert api.get(_runs(ids["job"]), params={"limit": 3}).status_code == 200
    assert api.delete(f"/secret-groups/{ids['legacy-vault']}").status_code == 424
    return ids


def test_calls_filters_by_operation(mock, three_deletes):
    calls = mock.journal.calls("deleteSecretGroup")
    assert [c.path_params["id"] for c in calls] == [
        three_deletes["llm-keys"],
        three_deletes["unknown"],
        three_deletes["legacy-vault"],
    ]
    assert len(mock.journal.calls()) == 4


def test_calls_filters_by_status(mock, three_deletes):
    assert [c.path_params["id"] for c in mock.journal.calls("deleteSecretGroup", status=404)] == [
        three_deletes["unknown"]
    ]
    assert [c.operation_id for c in mock.journal.calls(status=200)] == [
        "deleteSecretGroup",
        "listJobRuns",
    ]


def test_calls_filters_by_path_and_query_parameters(mock, three_deletes):
    by_id = mock.journal.calls("deleteSecretGroup", id=three_deletes["legacy-vault"])
    assert [c.status for c in by_id] == [424]
    assert [c.operation_id for c in mock.journal.calls(limit=3)] == ["listJobRuns"]
    assert mock.journal.calls("listJobRuns", limit=4) == []


def test_calls_matches_a_boolean_query_parameter_given_as_a_bool(api, mock, store):
    group_id = _group_id(store, "legacy-vault")
    assert (
        api.delete(f"/secret-groups/{group_id}", params={"forceDelete": "true"}).status_code == 200
    )

    assert [c.status for c in mock.journal.calls("deleteSecretGroup", forceDelete=True)] == [200]
    assert mock.journal.calls("deleteSecretGroup", forceDelete=False) == []


def test_call_count_and_last(mock, three_deletes):
    assert mock.journal.call_count == 4
    assert len(mock.journal) == 4
    last = mock.journal.last
    assert (last.operation_id, last.path_params["id"], last.status) == (
        "deleteSecretGroup",
        three_deletes["legacy-vault"],
        424,
    )


def test_last_is_none_on_an_empty_journal(mock):
    assert mock.journal.last is None
    assert mock.journal.call_count == 0


def test_assert_called_passes_and_returns_the_matching_calls(mock, three_deletes):
    found = mock.journal.assert_called("deleteSecretGroup")
    assert len(found) == 3
    mock.journal.assert_called("deleteSecretGroup", times=3)
    mock.journal.assert_called("listJobRuns", times=1)


def test_assert_called_matches_a_path_parameter_and_status(mock, three_deletes):
    found = mock.journal.assert_called(
        "deleteSecretGroup", times=1, id=three_deletes["llm-keys"], status=200
    )
    assert found[0].path_params["id"] == three_deletes["llm-keys"]
    mock.journal.assert_called("deleteSecretGroup", id=three_deletes["legacy-vault"], status=424)


def test_assert_called_fails_when_never_called(mock, three_deletes):
    with pytest.raises(AssertionError) as failure:
        mock.journal.assert_called("stageArtifactVersion")
    message = str(failure.value)
    assert "expected stageArtifactVersion at least once, found 0" in message
    assert "Closest requests recorded" in message


def test_assert_called_fails_on_the_wrong_count(mock, three_deletes):
    with pytest.raises(AssertionError) as failure:
        mock.journal.assert_called("deleteSecretGroup", times=2)
    message = str(failure.value)
    assert "deleteSecretGroup" in message
    assert "2 time(s)" in message
    assert "found 3" in message


def test_assert_called_fails_on_the_wrong_status(mock, three_deletes):
    with pytest.raises(AssertionError) as failure:
        mock.journal.assert_called("deleteSecretGroup", id=three_deletes["llm-keys"], status=424)
    message = str(failure.value)
    assert f"id={three_deletes['llm-keys']!r}" in message
    assert "424" in message
    assert "found 0" in message


def test_assert_called_failure_lists_the_closest_request_first(api, mock, store):
    job_id = _job_id(store)
    for offset in range(6):  # more unrelated requests than the message lists
        assert api.get(_runs(job_id), params={"offset": offset}).status_code == 200
    group_id = _group_id(store, "llm-keys")
    assert api.delete(f"/secret-groups/{group_id}").status_code == 200
    assert api.get(_runs(job_id), params={"offset": 6}).status_code == 200

    with pytest.raises(AssertionError) as failure:
        mock.journal.assert_called("deleteSecretGroup", id=group_id, status=424)

    message = str(failure.value)
    closest = message.split("Closest requests recorded:\n", 1)[1].splitlines()
    assert f"DELETE {CONTROL_PLANE}/secret-groups/{group_id} -> 200" in closest[0]
    assert len(closest) == 5


def test_assert_called_failure_on_an_empty_journal_says_so(mock):
    with pytest.raises(AssertionError, match="found 0") as failure:
        mock.journal.assert_called("listJobRuns")
    assert "No request was recorded" in str(failure.value)


def test_assert_not_called_passes_when_not_called(mock, three_deletes):
    mock.journal.assert_not_called("stageArtifactVersion")
    mock.journal.assert_not_called("deleteSecretGroup", id="some-other-group")


def test_assert_not_called_fails_when_called(mock, three_deletes):
    with pytest.raises(AssertionError) as failure:
        mock.journal.assert_not_called("deleteSecretGroup", id=three_deletes["unknown"])
    message = str(failure.value)
    assert "0 time(s)" in message and "found 1" in message
    assert f"/secret-groups/{three_deletes['unknown']}" in message


@pytest.mark.parametrize(
    ("ask", "named"),
    [
        pytest.param(lambda j: j.calls("deleteSecretGroups"), "'deleteSecretGroups'", id="calls"),
        pytest.param(
            lambda j: j.assert_not_called("listJobRun"), "'listJobRun'", id="assert-not-called"
        ),
        pytest.param(
            lambda j: j.assert_not_called("deleteSecretGroup", groupId="x"),
            "'groupId'",
            id="assert-not-called-parameter",
        ),
        pytest.param(
            lambda j: j.assert_called("listJobRuns", jobid="x"), "'jobid'", id="assert-called"
        ),
    ],
)
def test_query_naming_what_the_contract_lacks_is_an_error_not_an_empty_answer(
    mock, three_deletes, ask, named
):
    with pytest.raises(ValueError, match=named):
        ask(mock.journal)


def test_admin_journal_filter_by_an_unknown_operation_is_400(admin, api):
    api.get(TOKENS)

    response = admin.get("/journal", params={"operationId": "getOrCreatePersonalAccessTokens"})

    error = assert_error(response, 400, 40001)
    assert error["details"][0]["field"] == "operationId"


# -- a fresh journal for every test ------------------------------------------------------------


@pytest.mark.platform_mock(expect_violations=True)
def test_journal_is_empty_at_the_start_of_a_test(api, mock):
    assert len(mock.journal) == 0
    api.get(TOKENS)
    api.get("/no-such-path")
    assert len(mock.journal) == 2


def test_journal_is_empty_at_the_start_of_the_next_test_too(api, mock):
    assert len(mock.journal) == 0
    api.get(TOKENS)
    assert len(mock.journal) == 1


# -- the admin API -----------------------------------------------------------------------------


def test_admin_journal_returns_the_same_entries(admin, mock, three_deletes):
    response = admin.get("/journal")

    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data == [e.to_dict() for e in mock.journal]
    assert [e["seq"] for e in data] == [e.seq for e in mock.journal]
    assert {"operationId", "pathParams", "durationMs", "violation"} <= set(data[0])
    assert "operation_id" not in data[0] and "path_params" not in data[0]


def test_admin_journal_filters_by_operation_id(admin, three_deletes):
    data = admin.get("/journal", params={"operationId": "deleteSecretGroup"}).json()["data"]
    assert [e["pathParams"]["id"] for e in data] == [
        three_deletes["llm-keys"],
        three_deletes["unknown"],
        three_deletes["legacy-vault"],
    ]


def test_admin_journal_filters_by_status(admin, three_deletes):
    data = admin.get("/journal", params={"status": 200}).json()["data"]
    assert [e["operationId"] for e in data] == ["deleteSecretGroup", "listJobRuns"]


def test_admin_journal_filters_by_operation_id_and_status(admin, three_deletes):
    data = admin.get("/journal", params={"operationId": "deleteSecretGroup", "status": 424}).json()[
        "data"
    ]
    assert [(e["pathParams"]["id"], e["code"]) for e in data] == [
        (three_deletes["legacy-vault"], 42401)
    ]


def test_admin_delete_journal_clears_it(admin, mock, three_deletes):
    response = admin.delete("/journal")

    assert response.status_code == 200, response.text
    assert response.json() == {}
    assert len(mock.journal) == 0
    assert admin.get("/journal").json()["data"] == []


# -- every request header, bounded, credentials hidden -----------------------------------------


def test_a_clients_own_headers_are_journaled(admin, api, mock, store):
    sent = {"X-Request-Id": "req-42", "Accept": "application/json", "X-Team-Trace": "blue,7"}
    assert api.get(_runs(_job_id(store)), headers=sent).status_code == 200

    (entry,) = admin.get("/journal").json()["data"]

    assert {k: entry["headers"][k.lower()] for k in sent} == sent
    assert entry["headersDropped"] == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("Authorization", "Basic dXNlcjpwYXNzd29yZA==", id="authorization"),
        pytest.param("Cookie", "session=s3cr3t-cookie-value", id="cookie"),
        pytest.param("X-Api-Key", "key-0123456789abcdef", id="x-api-key"),
    ],
)
def test_a_credential_header_is_journaled_hidden(server, admin, token, name, value):
    headers = {"Authorization": f"Bearer {token}", name: value}
    httpx.get(server.url + CONTROL_PLANE + TOKENS, headers=headers)

    entry = admin.get("/journal").json()["data"][-1]

    assert entry["headers"][name.lower()] == "<hidden>"
    assert value not in json.dumps(entry)


def test_each_cookie_of_two_cookie_headers_is_hidden_where_the_request_echoes_it(
    server, mock, token
):
    query = "note=second-value&other=first-cookie-value"
    with httpx.Client(base_url=server.url) as client:
        request = client.build_request("GET", CONTROL_PLANE + TOKENS + "?" + query)
        request.headers = httpx.Headers(
            [
                *request.headers.raw,
                (b"authorization", f"Bearer {token}".encode()),
                (b"cookie", b"theme=dark; session=first-cookie-value"),
                (b"cookie", b"id=second-value"),
            ]
        )
        client.send(request)

    entry = mock.journal.last
    assert entry is not None
    assert "second-value" not in repr(entry.query) and "first-cookie" not in repr(entry.query)


def test_a_huge_header_set_is_kept_within_the_entrys_header_budget(api, mock):
    # 90 headers of 600 bytes: 54 KiB, within what a request may send (64 KiB).
    sent = {f"X-Big-{index:02d}": "v" * 600 for index in range(90)}
    api.get("/no-such-path", headers=sent)

    entry = mock.journal.last
    kept = sum(len(name) + len(value) for name, value in entry.headers.items())

    assert kept <= HEADER_BUDGET
    assert entry.headers_dropped > 0
    assert entry.headers["x-big-00"] == "v" * 600  # the first ones whole
    assert len(entry.headers) + entry.headers_dropped == len(api.headers) + len(sent) + 1  # host
    assert entry.size < ENTRY_OVERHEAD + 3 * HEADER_BUDGET


def test_headers_the_rule_lengthens_past_the_budget_are_counted_when_recorded():
    # Within the budget as sent; past it once each value is `<hidden>`.
    sent = {f"x{index}-token": "a" for index in range(700)}
    assert sum(len(name) + len(value) for name, value in sent.items()) <= HEADER_BUDGET
    journal = Journal()
    journal.record(_with_headers(journal, sent))
    (entry,) = journal
    dropped = entry.headers_dropped
    assert dropped > 0 and len(entry.headers) + dropped == len(sent)


def _with_headers(journal: Journal, headers: dict[str, str]) -> Entry:
    entry = _entry(journal)
    entry.raw_headers = headers
    return entry


def test_a_header_past_the_budget_is_cut_saying_so():
    kept, dropped = within_budget({"a": "x" * 10, "b": "y" * 10, "c": "z"}, 15)

    assert kept == {"a": "x" * 10, "b": "yy…"}
    assert dropped == 1


# -- concurrency -------------------------------------------------------------------------------


def test_concurrent_requests_are_each_recorded_once(server, mock, store, token):
    url = server.url + CONTROL_PLANE + _runs(_job_id(store))
    headers = {"Authorization": f"Bearer {token}"}

    def worker(thread: int) -> list[int]:
        with httpx.Client(headers=headers) as client:
            return [
                client.get(url, params={"searchPrefix": f"p{thread}-{i}"}).status_code
                for i in range(10)
            ]

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = [s for result in pool.map(worker, range(20)) for s in result]

    assert statuses == [200] * 200
    entries = list(mock.journal)
    assert len(entries) == 200
    assert len({e.seq for e in entries}) == 200
    prefixes = sorted(e.query["searchPrefix"][0] for e in entries)
    assert prefixes == sorted(f"p{t}-{i}" for t in range(20) for i in range(10))


def _entry(journal: Journal, body: bytes = b"") -> Entry:
    return Entry(
        seq=journal.next_seq(),
        method="POST",
        path="/api/svc/v1/secrets/deployments",
        query={},
        path_params={},
        raw_headers={},
        raw_body=body,
        operation_id="listSecretDeployments",
        status=200,
    )


def test_journal_keeps_the_newest_entries_within_its_byte_budget():
    probe = Journal()
    size = _entry(probe, b"x" * 1000).size
    journal = Journal(budget=3 * size)
    for _ in range(5):
        journal.record(_entry(journal, b"x" * 1000))
    assert [entry.seq for entry in journal] == [3, 4, 5]


def test_journal_counts_what_it_dropped_and_a_clear_starts_over():
    journal = Journal(budget=1)
    for _ in range(4):
        journal.record(_entry(journal))
    assert (len(journal), journal.dropped) == (1, 3)
    journal.clear()
    assert (len(journal), journal.dropped, journal.bytes) == (0, 0, 0)


def test_journal_reads_a_kept_body_as_json_only_when_asked():
    journal = Journal()
    journal.record(_entry(journal, b'{"secretIds": ["a"]}'))
    entry = journal.last
    assert entry is not None
    assert (entry.raw_body, entry.body) == (b'{"secretIds": ["a"]}', {"secretIds": ["a"]})


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_flood_of_large_bodies_stays_within_the_budget_and_memory_stays_flat():
    budget = 4 * 1024 * 1024
    body = json.dumps({"secretIds": [f"s-{i:06d}" for i in range(5600)]}).encode()  # 64 KB
    mock = PlatformMock(MockConfig(journal_budget=budget))
    headers = {"Authorization": f"Bearer {mock.auth.dev_token()}"}
    with (
        BackgroundServer(mock) as server,
        httpx.Client(base_url=server.url + CONTROL_PLANE, headers=headers) as api,
    ):

        def flood(count: int) -> None:
            for _ in range(count):
                response = api.post(
                    "/secrets/deployments",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                assert response.status_code == 200

        flood(150)  # past the budget (150 x 64 KB = 9.6 MB): the level it keeps from here on
        settled = _resident_bytes()
        flood(600)  # another 38 MB of bodies
        grown = _resident_bytes() - settled
    assert mock.journal.bytes <= budget
    assert mock.journal.dropped > 0
    assert grown < 16 * 1024 * 1024, f"resident memory grew by {grown} bytes"


def test_admin_journal_says_what_the_budget_dropped(admin, api, mock, monkeypatch):
    monkeypatch.setattr(mock.journal, "budget", 1)  # each new entry pushes out the one before
    for _ in range(3):
        api.get("/personal-access-tokens/ci")
    body = admin.get("/journal").json()
    assert (len(body["data"]), body["dropped"], body["budgetBytes"]) == (1, 2, 1)


# -- every operation -------------------------------------------------------------------------


def _entry_of_one_request(mock: PlatformMock) -> Entry:
    # The mock records an entry just after the response has left: wait for it, bounded.
    deadline = time.monotonic() + budget(5)
    while mock.journal.last is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(mock.journal) == 1, [e.describe() for e in mock.journal]
    return mock.journal.calls()[0]


@pytest.mark.parametrize("operation_id", [pytest.param(op, id=op) for op in contract.operations()])
def test_every_operations_request_is_journaled_under_it_with_its_path_parameters(
    server, mock, operation_id
):
    # Filled before the request: a deletion takes its own id out of the world.
    path_params = catalog.fill(dict(catalog.example(operation_id).params), mock.store)
    response = send_example(server, mock, operation_id)
    entry = _entry_of_one_request(mock)
    assert (entry.operation_id, entry.status) == (operation_id, response.status_code)
    assert entry.path_params == path_params


def test_question_with_a_value_the_parameter_never_takes_is_refused(mock):
    with pytest.raises(ValueError, match="sortBy is never 'size'"):
        mock.journal.assert_called("listJobRuns", sortBy="size")


def test_a_client_leaving_mid_body_is_journaled_unanswered_and_no_violation(server, mock):
    violations = mock.report.violation_count  # the report lives as long as the server
    with socket.create_connection((server.host, server.port)) as raw:
        raw.sendall(
            b"POST /api/svc/v1/secrets/deployments HTTP/1.1\r\nHost: mock\r\n"
            b"Authorization: Bearer " + mock.auth.dev_token().encode() + b"\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"secret'
        )
    deadline = time.monotonic() + budget(5)
    while not mock.journal.calls("listSecretDeployments") and time.monotonic() < deadline:
        time.sleep(0.01)
    (entry,) = mock.journal.calls("listSecretDeployments")
    assert (entry.status, entry.dropped, entry.code, entry.violation) == (None, False, None, False)
    assert mock.report.violation_count == violations
