"""GET /api/svc/v1/session (`getSession`): who the caller is, as the platform's library reads
it when a key does not say so itself, for every kind of subject a token can name."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import CONTROL_PLANE, assert_error, http_client

SESSION = CONTROL_PLANE + "/session"


def session_of(server, token: str) -> dict:
    with http_client(headers={"Authorization": f"Bearer {token}"}) as client:
        response = client.get(server.url + SESSION)
    assert response.status_code == 200, response.text
    return response.json()["user"]


def test_a_user_session_names_the_user_by_e_mail(server, mock, token):
    user = session_of(server, token)
    alice = mock.store.identity.subject_named("user", "alice@acme.example")
    assert (user["id"], user["effectiveUserId"]) == (alice.id, alice.id)
    assert (user["subjectType"], user["subjectSlug"]) == ("user", "alice@acme.example")
    assert user["email"] == "alice@acme.example"


def test_a_session_names_the_tenant_as_its_account(server, mock, token):
    user = session_of(server, token)
    tenant = mock.store.identity.tenant
    assert user["tenantName"] == "acme"
    assert user["accounts"] == [{"id": tenant.id, "name": "acme"}]


def test_a_user_session_lists_the_users_teams(server, mock, token):
    team = mock.store.identity.subject_named("team", "ml-platform")
    assert session_of(server, token)["teams"] == [{"id": team.id, "name": "ml-platform"}]


def test_a_user_session_lists_the_roles_held_directly_and_through_teams(server, mock):
    # bob's own grants and ml-platform's (fixtures/default.yaml), each role once, sorted.
    bob = mock.store.identity.subject_named("user", "bob@acme.example")
    assert session_of(server, mock.auth.dev_token(bob))["roles"] == [
        "mlf-project-editor",
        "secret-group-viewer",
        "workspace-viewer",
    ]


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        pytest.param("team", "ml-platform", id="team"),
        pytest.param("virtualaccount", "ci-bot", id="virtual-account"),
        pytest.param("agent", "support-agent", id="agent"),
    ],
)
def test_another_subjects_session_names_it_without_an_e_mail(server, mock, kind, name):
    subject = mock.store.identity.subject_named(kind, name)
    user = session_of(server, mock.auth.dev_token(subject))
    assert (user["subjectType"], user["subjectSlug"], user["id"]) == (kind, name, subject.id)
    assert "email" not in user
    assert user["teams"] == []


def test_a_personal_access_token_has_its_owners_session(server, api, token):
    issued = api.get("/personal-access-tokens/ci").json()["token"]
    assert session_of(server, issued) == session_of(server, token)


@pytest.mark.platform_mock(expect_violations=True)
def test_session_without_a_token_is_401(anonymous):
    assert_error(anonymous.get(SESSION), 401, 40101)


def test_session_of_a_revoked_token_is_401(anonymous, api, mock, store):
    issued = api.get("/personal-access-tokens/ci").json()["token"]
    store.tokens.revoke(store.identity.default_user().id, "ci")
    response = anonymous.get(SESSION, headers={"Authorization": f"Bearer {issued}"})
    assert_error(response, 401, 40105)


@pytest.mark.platform_mock(expect_violations=True)
def test_session_takes_no_query_parameter(api: httpx.Client):
    body = assert_error(api.get("/session", params={"user": "bob"}), 400, 40001)
    assert [d["field"] for d in body["details"]] == ["user"]
