"""What a refused token's 401 says: why, in the mock's own words, and how to get a good one;
never a library's text."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import jwt
import pytest

from mock_server import PlatformMock
from mock_server.services import auth
from tests.conftest import CONTROL_PLANE, assert_error, http_client

# The messages a malformed token's 401 may carry: the mock's own, and only those.
OWN_MESSAGES = {
    auth.NOT_A_JWT,
    auth.NOT_SIGNED_HERE,
    "Bearer token header is not one this mock writes (alg HS256, typ JWT)",
    "Bearer token claims are not those of a token this mock minted",
}


def _part(value: object) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _signed(mock: PlatformMock, claims: dict, header: dict | None = None) -> str:
    return jwt.encode(claims, mock.store.signer.key, algorithm="HS256", headers=header)


@pytest.fixture
def control(server) -> Iterator[httpx.Client]:
    with http_client(base_url=server.url + CONTROL_PLANE) as client:
        yield client


def _refusal(client: httpx.Client, token: str, path: str = "/personal-access-tokens/ci") -> str:
    # As bytes: a header may hold any byte a client sends (latin-1, as HTTP reads it).
    response = client.get(path, headers={b"Authorization": b"Bearer " + token.encode("latin-1")})
    return str(assert_error(response, 401, response.json()["code"])["message"])


@pytest.mark.parametrize("admin", [False, True], ids=["user-token", "admin-token"])
def test_a_token_of_another_server_start_is_refused_saying_how_to_get_a_fresh_one(
    server, admin: bool
):
    earlier = PlatformMock()  # another start: a key of its own
    stale = earlier.auth.admin_token() if admin else earlier.auth.dev_token()
    path = "/__admin/journal" if admin else CONTROL_PLANE + "/personal-access-tokens/ci"
    with http_client(base_url=server.url) as client:
        response = client.get(path, headers={"Authorization": f"Bearer {stale}"})
    body = assert_error(response, 401, 40104)
    assert "not signed by this server" in body["message"]
    assert "`platform-mock token`" in body["message"] and "--admin" in body["message"]


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("eyJ\xb7.e30.c2ln", id="non-ascii-header"),
        pytest.param(_part(b"\xb7\xff\xfe") + ".e30.c2ln", id="header-not-utf-8"),
        pytest.param(_part(b"[1, 2]") + ".e30.c2ln", id="header-not-an-object"),
        pytest.param("abc", id="one-part"),
        pytest.param("a.b", id="two-parts"),
        pytest.param("a.b.c.d", id="four-parts"),
        pytest.param(_part({"alg": "HS256"}) + ".%%%.c2ln", id="payload-not-base64"),
        pytest.param(_part({"alg": "HS256", "kid": 5}) + ".e30.c2ln", id="kid-not-a-string"),
        pytest.param(_part({"alg": "HS256"}) + ".e30.***", id="signature-not-base64"),
    ],
)
def test_a_malformed_token_is_refused_in_the_mocks_words(control, token: str):
    message = _refusal(control, token)
    assert message in OWN_MESSAGES, message


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        pytest.param(
            {"iss": "platform-mock", "sub": "x"},
            "has no 'exp' claim: it is not a token this mock minted",
            id="no-exp",
        ),
        pytest.param(
            {"exp": 2**40, "sub": "x"},
            "has no 'iss' claim: it is not a token this mock minted",
            id="no-iss",
        ),
        pytest.param(
            {"iss": "someone-else", "exp": 2**40},
            "was not issued by this mock (its 'iss' claim is not 'platform-mock')",
            id="other-issuer",
        ),
        pytest.param(
            {"iss": "platform-mock", "exp": 2**40, "aud": "other"},
            "claims are not those of a token this mock minted",
            id="audience",
        ),
        pytest.param(
            {"iss": "platform-mock", "exp": 2**40, "sub": 5},
            "claims are not those of a token this mock minted",
            id="subject-not-a-string",
        ),
    ],
)
def test_a_signed_token_with_wrong_claims_says_which_in_the_mocks_words(
    control, mock, claims: dict, expected: str
):
    assert _refusal(control, _signed(mock, claims)) == f"Bearer token {expected}"


def test_a_signed_payload_that_is_not_json_is_not_a_jwt(control, mock):
    token = jwt.api_jws.PyJWS().encode(b"not json", mock.store.signer.key, algorithm="HS256")
    assert _refusal(control, token) == auth.NOT_A_JWT
