"""Hostile input at every door: a corpus of attacks, as an attacker or an unlucky user would
try them, each bounded in time and memory (child processes run under resource limits).

Doors: credentials (no token can be made from public facts), the admin API's host and
origin, the request log's reader, fixture files and uploads, signals and the processes
`run` starts, idle and half-sent connections, refused requests (which change nothing) and
the cost of a request against the data at rest.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import httpx
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.auth import ALGORITHM, ISSUER
from mock_server.fixtures import dump
from tests.conftest import CONTROL_PLANE, assert_error, http_client

# -- refused requests change nothing -----------------------------------------------------


@pytest.fixture
def pat(api, server) -> tuple[str, httpx.Client]:
    """A personal access token of alice's, and a control-plane client using it."""
    issued = api.get("/personal-access-tokens/ci").json()
    client = http_client(
        base_url=server.url + CONTROL_PLANE,
        headers={"Authorization": f"Bearer {issued['token']}"},
    )
    return issued["data"]["id"], client


def _last_use(store, token_id: str):
    (token,) = [t for t in store.world.tokens.values() if t.id == token_id]
    return token.last_accessed_at


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        pytest.param("GET", "/personal-access-tokens/x", {"params": {"bogus": 1}}, 400, id="400"),
        pytest.param(
            "POST",
            "/secrets/deployments",
            {"content": b"{", "headers": {"Content-Type": "application/json"}},
            400,
            id="400-body",
        ),
        pytest.param("POST", "/secrets/deployments", {"content": b"{}"}, 415, id="415"),
        pytest.param("GET", "/jobs/no-such-job/runs", {}, 404, id="404-in-handler"),
        pytest.param(
            "GET", "/personal-access-tokens/x", {"params": {"teamName": "nope"}}, 400, id="400-team"
        ),
        pytest.param("PATCH", "/personal-access-tokens/x", {}, 405, id="405"),
    ],
)
def test_a_refused_request_leaves_its_tokens_last_use_as_it_was(
    pat, store, method, path, kwargs, status
):
    token_id, client = pat
    before = dump(store)
    assert client.request(method, path, **kwargs).status_code == status
    assert _last_use(store, token_id) is None
    assert dump(store) == before


def test_a_faulted_request_leaves_its_tokens_last_use_as_it_was(pat, store, mock):
    token_id, client = pat
    mock.faults.add("getOrCreatePersonalAccessToken", status=400)
    assert client.get("/personal-access-tokens/x").status_code == 400
    assert _last_use(store, token_id) is None


def test_a_served_request_records_its_tokens_last_use(pat, store):
    token_id, client = pat
    assert client.get("/personal-access-tokens/other").status_code == 200
    assert _last_use(store, token_id) is not None


# -- cost by index: a request walks no container of the world ------------------------------


class _Unwalkable(dict):
    """A container of the world that a request may look into but never walk."""

    def _walked(self, *_):
        raise AssertionError("a request walked every entry of the world's container")

    __iter__ = values = items = keys = _walked  # type: ignore[assignment]


class _UnwalkableList(list):
    def __iter__(self):
        raise AssertionError("a request walked every grant of the world")


def _unwalkable(world) -> None:
    """The world's tokens, grants, subjects, resources, secret groups and deployments, as
    containers a request may only look into."""
    for name in ("tokens", "subjects", "resources", "secret_groups", "deployments"):
        setattr(world, name, _Unwalkable(getattr(world, name)))
    world.grants = _UnwalkableList(world.grants)


def test_requests_of_every_kind_look_things_up_by_index(pat, store, api, gateway):
    _, with_pat = pat
    tenant = store.identity.tenant.id
    secrets = list(store.secrets.group_named("llm-keys").secrets)
    alice = store.identity.default_user().id
    trainer = store.deployments.application_named("trainer").id
    manifests = "/role-bindings/generate-manifest"
    with store.lock:
        _unwalkable(store.world)
    calls = [
        with_pat.get("/personal-access-tokens/ci"),
        api.get(manifests, params={"resourceType": "tenant", "resourceId": tenant}),
        api.get(manifests, params={"subjectType": "user", "subjectId": alice}),
        api.post("/secrets/deployments", json={"secretIds": secrets}),
        api.get(f"/jobs/{trainer}/runs", params={"limit": 5}),
        gateway.get("/responses/resp_0000000000000000000000000000demo"),
    ]
    assert [call.status_code for call in calls] == [200] * len(calls)


def test_a_token_is_found_by_its_id_among_many(api, store, server):
    alice = store.identity.caller(*_ids(store.identity.default_user()))
    for n in range(2000):
        store.tokens.get_or_create(alice, f"bulk-{n}", None)
    issued = store.tokens.get_or_create(alice, "bulk-1999", None).token
    with http_client(
        base_url=server.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {issued.token}"}
    ) as client:
        assert client.get("/personal-access-tokens/ci").status_code == 200
    store.tokens.revoke(alice.subject_id, "bulk-1999")
    with http_client(
        base_url=server.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {issued.token}"}
    ) as client:
        assert_error(client.get("/personal-access-tokens/ci"), 401, 40105)


def _ids(subject) -> tuple[str, str]:
    return subject.type, subject.id


# -- credentials nobody can derive -----------------------------------------------------------


def _forged_admin_token(key: str) -> str:
    claims = {
        "iss": ISSUER,
        "sub": "platform-mock-admin",
        "subjectType": "admin",
        "subjectSlug": "admin",
        "iat": 0,
        "exp": 253402300800,
    }

    # Signed by hand: PyJWT refuses an empty key and warns about a short one.
    def part(value: dict) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")

    signed = part({"alg": ALGORITHM, "typ": "JWT"}) + b"." + part(claims)
    signature = hmac.new(key.encode(), signed, hashlib.sha256).digest()
    return (signed + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


@pytest.mark.parametrize(
    "key",
    [
        # What the key used to be: derived from the seed, which is documented.
        pytest.param(
            hashlib.sha256(b"platform-mock-signing-key:0").hexdigest(), id="old-derivation"
        ),
        pytest.param("platform-mock-signing-key:0", id="seed-text"),
        pytest.param("", id="empty-key"),
        pytest.param("0", id="the-seed"),
    ],
)
def test_an_admin_token_signed_with_a_public_guess_is_refused(anonymous, key):
    forged = _forged_admin_token(key)
    response = anonymous.post("/__admin/reset", headers={"Authorization": f"Bearer {forged}"})
    assert_error(response, 401, 40104)


def test_a_token_printed_offline_for_the_same_seed_is_refused(anonymous):
    offline = PlatformMock(MockConfig(seed=0))  # `platform-mock token --admin --seed 0`
    admin_token = offline.auth.admin_token()
    response = anonymous.get("/__admin/journal", headers={"Authorization": f"Bearer {admin_token}"})
    assert_error(response, 401, 40104)
    user = offline.auth.dev_token()
    response = anonymous.get(
        CONTROL_PLANE + "/personal-access-tokens/ci", headers={"Authorization": f"Bearer {user}"}
    )
    assert_error(response, 401, 40104)


def test_the_key_is_the_servers_for_its_life_a_reseed_keeps_it(admin, mock):
    key = mock.store.signer.key
    assert admin.post("/reset", json={"seed": 9}).status_code == 200
    assert mock.store.signer.key == key
    assert admin.get("/journal").status_code == 200
