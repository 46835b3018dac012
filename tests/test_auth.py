"""Bearer authentication: which tokens are refused with 401, and who a valid token names."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import httpx
import jwt
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.services.auth import ALGORITHM, ISSUER
from tests.conftest import CONTROL_PLANE, assert_error

TOKENS_PATH = CONTROL_PLANE + "/personal-access-tokens/ci"


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _claims(mock, **overrides) -> dict:
    alice = mock.store.identity.default_user()
    now = int(mock.store.sources.clock.now().timestamp())
    claims = {
        "iss": ISSUER,
        "sub": alice.id,
        "subjectType": "user",
        "subjectSlug": alice.slug,
        "iat": now,
        "nbf": now,
        "exp": now + 3600,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def _signed(mock, **overrides) -> str:
    return jwt.encode(_claims(mock, **overrides), mock.store.signer.key, algorithm=ALGORITHM)


def _get(anonymous: httpx.Client, authorization: str | None) -> httpx.Response:
    headers = {} if authorization is None else {"Authorization": authorization}
    return anonymous.get(TOKENS_PATH, headers=headers)


def test_valid_token_is_accepted(anonymous, mock):
    response = _get(anonymous, f"Bearer {_signed(mock)}")
    assert response.status_code == 200


def test_token_names_its_subject_as_caller(anonymous, mock):
    body = _get(anonymous, f"Bearer {_signed(mock)}").json()
    assert body["data"]["createdBySubject"]["subjectSlug"] == "alice@acme.example"


@pytest.mark.platform_mock(expect_violations=True)
def test_missing_header_is_401(anonymous):
    assert_error(_get(anonymous, None), 401, 40101)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "header",
    [
        pytest.param("Basic YWxpY2U6c2VjcmV0", id="basic-scheme"),
        pytest.param("Bearer", id="bearer-without-token"),
        pytest.param("Token abc", id="unknown-scheme"),
    ],
)
def test_header_without_bearer_token_is_401(anonymous, header):
    assert_error(_get(anonymous, header), 401, 40101)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "token",
    [
        pytest.param("not-a-jwt", id="garbage"),
        pytest.param("a.b.c", id="three-garbage-parts"),
        pytest.param("eyJhbGciOiJIUzI1NiJ9.e30", id="two-parts"),
    ],
)
def test_malformed_token_is_401(anonymous, token):
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40102)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "header",
    [
        pytest.param({"alg": "HS256", "crit": ["exp"]}, id="crit-extension"),
        pytest.param({"alg": "HS256", "kid": 7}, id="kid-not-a-string"),
    ],
)
def test_token_whose_header_the_jwt_library_refuses_is_401(anonymous, header):
    token = f"{_b64(header)}.{_b64({'exp': 1})}.Z2FyYmFnZQ"
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40102)


def test_expired_token_is_401(anonymous, mock):
    now = int(mock.store.sources.clock.now().timestamp())
    body = assert_error(_get(anonymous, f"Bearer {_signed(mock, exp=now - 1)}"), 401, 40103)
    assert "expired" in body["message"]


def test_token_not_yet_valid_is_401(anonymous, mock):
    later = mock.store.sources.clock.now() + timedelta(hours=1)
    token = _signed(mock, nbf=int(later.timestamp()))
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40103)


def test_token_signed_with_another_key_is_401(anonymous, mock):
    token = jwt.encode(
        _claims(mock), "a-key-that-is-not-the-servers-signing-key", algorithm=ALGORITHM
    )
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40104)


def test_alg_none_token_is_401(anonymous, mock):
    token = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(_claims(mock))}."
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40104)


def test_tampered_payload_is_401(anonymous, mock):
    header, _, signature = _signed(mock).split(".")
    forged = _b64(_claims(mock, sub="user-someone-else"))
    assert_error(_get(anonymous, f"Bearer {header}.{forged}.{signature}"), 401, 40104)


@pytest.mark.platform_mock(expect_violations=True)
def test_token_without_expiry_is_401(anonymous, mock):
    token = jwt.encode(_claims(mock, exp=None), mock.store.signer.key, algorithm=ALGORITHM)
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40102)


def test_token_without_subject_is_401(anonymous, mock):
    assert_error(_get(anonymous, f"Bearer {_signed(mock, sub=None)}"), 401, 40105)


def test_token_of_unknown_subject_is_401(anonymous, mock):
    token = _signed(mock, sub="user-does-not-exist")
    assert_error(_get(anonymous, f"Bearer {token}"), 401, 40105)


def test_revoked_personal_access_token_is_401(anonymous, api, mock):
    issued = api.get("/personal-access-tokens/ci").json()
    owner = issued["data"]["createdBySubject"]["subjectId"]
    mock.store.tokens.revoke(owner, "ci")
    assert_error(_get(anonymous, f"Bearer {issued['token']}"), 401, 40105)


@pytest.mark.platform_mock(expect_violations=True)
def test_gateway_requires_a_token(anonymous, server):
    response = anonymous.get(
        f"{server.gateway_url}/responses/resp_0000000000000000000000000000demo"
    )
    assert_error(response, 401, 40101)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("claim", "value"),
    [
        pytest.param("exp", float("nan"), id="exp-nan"),
        pytest.param("exp", "4102444800", id="exp-numeric-string"),
        pytest.param("exp", 4102444800.5, id="exp-fraction"),
        pytest.param("exp", True, id="exp-boolean"),
        pytest.param("nbf", float("nan"), id="nbf-nan"),
        pytest.param("nbf", "0", id="nbf-numeric-string"),
        pytest.param("iat", float("inf"), id="iat-infinite"),
    ],
)
def test_time_claim_that_is_not_a_whole_number_is_401(anonymous, mock, claim, value):
    body = assert_error(_get(anonymous, f"Bearer {_signed(mock, **{claim: value})}"), 401, 40102)
    assert claim in body["message"]


# -- no lock-out: clocks, re-seeds and token ids ----------------------------------------------


@pytest.mark.parametrize(
    "clock",
    [
        pytest.param("2036-01-02T00:00:00Z", id="past-2036"),
        pytest.param("8999-12-31T23:59:59Z", id="last-instant-a-clock-may-show"),
        pytest.param("1999-01-01T00:00:00Z", id="before-the-start-of-the-world"),
    ],
)
def test_printed_tokens_work_whatever_the_world_clock(anonymous, admin, mock, clock):
    assert admin.post("/fixtures", json={"clock": clock}).status_code == 200
    assert _get(anonymous, f"Bearer {mock.auth.dev_token()}").status_code == 200
    assert admin.get("/journal").status_code == 200


def test_admin_token_outlives_a_reset_after_a_late_clock(admin, mock):
    assert admin.post("/fixtures", json={"clock": "2036-01-02T00:00:00Z"}).status_code == 200
    assert admin.post("/reset").status_code == 200
    assert admin.get("/journal").status_code == 200


def test_after_a_reseed_a_token_minted_for_the_new_world_works(anonymous, admin):
    assert admin.post("/reset", json={"seed": 7}).status_code == 200
    minted = admin.post("/tokens", json={"subject": "alice@acme.example"}).json()["token"]
    assert _get(anonymous, f"Bearer {minted}").status_code == 200


def test_after_a_reseed_a_token_of_the_same_key_and_seed_works(anonymous, admin, mock):
    # `platform-mock token --seed 7 --signing-key K` for a server started with K.
    assert admin.post("/reset", json={"seed": 7}).status_code == 200
    offline = PlatformMock(MockConfig(seed=7, signing_key=mock.store.signer.key))
    assert _get(anonymous, f"Bearer {offline.auth.dev_token()}").status_code == 200


def test_after_a_reseed_the_admin_token_still_opens_the_admin_api(admin):
    assert admin.post("/reset", json={"seed": 7}).status_code == 200
    assert admin.get("/journal").status_code == 200


def test_after_a_reseed_a_token_naming_a_subject_of_the_old_world_is_401(anonymous, admin, mock):
    # The key stays; the seed drew bob another id, so the old token names no one.
    old = mock.auth.dev_token(mock.store.identity.subject_named("user", "bob@acme.example"))
    assert admin.post("/reset", json={"seed": 7}).status_code == 200
    assert_error(_get(anonymous, f"Bearer {old}"), 401, 40105)


def test_after_a_reseed_a_token_of_a_subject_with_a_fixed_id_still_works(anonymous, admin, mock):
    assert admin.post("/fixtures", json={"users": [{"email": "f@acme.example", "id": "u-f"}]})
    fixed = mock.auth.dev_token(mock.store.identity.subject_named("user", "f@acme.example"))
    assert admin.post("/reset", json={"seed": 7}).status_code == 200
    assert admin.post("/fixtures", json={"users": [{"email": "f@acme.example", "id": "u-f"}]})
    assert _get(anonymous, f"Bearer {fixed}").status_code == 200


def test_a_token_id_given_to_another_owner_does_not_revive_a_token(anonymous, api, admin):
    # After a reset, a fixture gives bob's token the id alice's old token carried.
    issued = api.get("/personal-access-tokens/ci").json()
    assert admin.post("/reset").status_code == 200
    bob_token = {"owner": "bob@acme.example", "name": "ci", "jwtId": issued["data"]["jwtId"]}
    assert admin.post("/fixtures", json={"personalAccessTokens": [bob_token]}).status_code == 200
    assert_error(_get(anonymous, f"Bearer {issued['token']}"), 401, 40105)


# -- the claims the platform's CLI and library read (they decode without checking) -----------


def _decoded(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_a_users_development_token_names_the_tenant_and_the_e_mail(mock):
    claims = _decoded(mock.auth.dev_token())
    assert (claims["tenantName"], claims["email"]) == ("acme", "alice@acme.example")
    assert "username" not in claims
    assert type(claims["exp"]) is int


def test_a_personal_access_token_names_the_tenant_the_e_mail_and_its_expiry(api, mock):
    issued = api.get("/personal-access-tokens/ci").json()
    claims = _decoded(issued["token"])
    assert (claims["tenantName"], claims["email"]) == ("acme", "alice@acme.example")
    expiry = mock.store.world.tokens[(claims["sub"], "ci")].expires_at
    assert claims["exp"] == int(expiry.timestamp())


@pytest.mark.parametrize(
    "reference",
    [
        pytest.param("virtualaccount:ci-bot", id="virtual-account"),
        pytest.param("team:ml-platform", id="team"),
        pytest.param("agent:support-agent", id="agent"),
    ],
)
def test_another_subjects_token_names_it_as_username(mock, reference):
    subject = mock.store.identity.subject_by_reference(reference)
    claims = _decoded(mock.auth.dev_token(subject))
    assert (claims["tenantName"], claims["username"]) == ("acme", reference.partition(":")[2])
    assert "email" not in claims


def test_a_virtual_accounts_personal_access_token_names_it_as_username(server, mock):
    bot = mock.store.identity.subject_by_reference("virtualaccount:ci-bot")
    headers = {"Authorization": f"Bearer {mock.auth.dev_token(bot)}"}
    with httpx.Client(base_url=server.url + CONTROL_PLANE, headers=headers) as client:
        issued = client.get("/personal-access-tokens/deploy").json()
    claims = _decoded(issued["token"])
    assert (claims["tenantName"], claims["username"], claims["subjectType"]) == (
        "acme",
        "ci-bot",
        "virtualaccount",
    )


def test_the_admin_token_names_no_tenant(mock):
    claims = _decoded(mock.auth.admin_token())
    assert not {"tenantName", "email", "username"} & set(claims)
