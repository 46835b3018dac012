"""The one masking rule (`mock_server.core.masking`) itself: what it hides of a JSON value and
of a text, what it keeps, and where it is applied once for all outputs (the journal's
writer, with the caller's own credential). What reaches each output through it is
tests/test_hostile_texts.py's."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import mock_server
from mock_server.core import errors, masking
from mock_server.core.masking import (
    HIDDEN,
    MAX_CREDENTIALS,
    credentials_of,
    masked,
    masked_text,
)
from mock_server.proxy.recording import Recorder
from mock_server.services.journal import BODY_LIMIT, Entry, Journal
from tests.corpus import JWT, MASKING, OWN_CREDENTIAL, SECRET

H = HIDDEN


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"token": "abc"}, {"token": H}, id="token"),
        pytest.param({"password": "hunter2"}, {"password": H}, id="password"),
        pytest.param({"apiKey": "k"}, {"apiKey": H}, id="camel-api-key"),
        pytest.param({"clientSecret": "s"}, {"clientSecret": H}, id="camel-client-secret"),
        pytest.param({"HF_TOKEN": "hf"}, {"HF_TOKEN": H}, id="upper-snake-token"),
        pytest.param({"OPENAI_API_KEY": "sk"}, {"OPENAI_API_KEY": H}, id="upper-snake-api-key"),
        pytest.param({"DB_PASSWORD": "p"}, {"DB_PASSWORD": H}, id="upper-snake-password"),
        pytest.param({"x-api-key": "k"}, {"x-api-key": H}, id="kebab-header"),
        pytest.param(
            {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": H}, id="authorization",
        ),
        pytest.param({"set-cookie": "s=1"}, {"set-cookie": H}, id="cookie"),
        pytest.param({"pin": 1, "token": 1234}, {"pin": 1, "token": H}, id="numeric-credential"),
        pytest.param({"tokens": ["a", "b"]}, {"tokens": ["a", "b"]}, id="plural-names-none"),
        pytest.param({"note": f"use {JWT}"}, {"note": f"use {H}"}, id="jwt-in-text"),
        pytest.param({"key": "tfy_abc123"}, {"key": H}, id="platform-api-key"),
        pytest.param({"n": "ghp_" + "a" * 36}, {"n": H}, id="github-token"),
        pytest.param({"n": "sk-proj-" + "a" * 30}, {"n": H}, id="openai-key"),
        pytest.param({"n": "AKIAABCDEFGHIJKLMNOP"}, {"n": H}, id="aws-access-key-id"),
        pytest.param({JWT: 1}, {H: 1}, id="jwt-as-a-key"),
        pytest.param(
            {"env": [{"name": "DB_PASSWORD", "value": "p"}]},
            {"env": [{"name": "DB_PASSWORD", "value": H}]}, id="named-item",
        ),
        pytest.param(
            {"secrets": [{"key": "A", "value": "v"}]}, {"secrets": [{"key": "A", "value": H}]},
            id="secret-list",
        ),
        pytest.param(
            {"build_secrets": [{"id": "x", "value": "s3cr3t"}]},
            {"build_secrets": [{"id": "x", "value": H}]}, id="build-secret",
        ),
        pytest.param(
            {"field": "body.password", "message": "'hunter2' is too short"},
            {"field": "body.password", "message": f"{H} is too short"}, id="quoted-in-a-problem",
        ),
        pytest.param(
            {"env": {"HF_TOKEN": "platform-secret://acme:g:HF_TOKEN"}},
            {"env": {"HF_TOKEN": "platform-secret://acme:g:HF_TOKEN"}}, id="secret-reference-kept",
        ),
        pytest.param(
            {"token_type": "jwt", "tokenId": "t-1", "max_tokens": 5, "secretIds": ["secret-a"]},
            {"token_type": "jwt", "tokenId": "t-1", "max_tokens": 5, "secretIds": ["secret-a"]},
            id="names-that-only-mention-one",
        ),
        pytest.param({"password": ""}, {"password": ""}, id="empty-kept"),
    ],
)  # fmt: skip
def test_masking_a_json_value(value: Any, expected: Any):
    assert masked(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "GET /x?access_token=abc123&page=2", f"GET /x?access_token={H}&page=2", id="query",
        ),
        pytest.param("Authorization: Bearer abcdefgh12", f"Authorization: Bearer {H}", id="bearer"),
        pytest.param("Authorization: Basic dXNlcjpwYXNz", f"Authorization: Basic {H}", id="basic"),
        pytest.param("a\npassword: hunter2\nb: c", f"a\npassword: {H}\nb: c", id="yaml"),
        pytest.param('{"clientSecret": "abc', f'{{"clientSecret": "{H}', id="json-cut-short"),
        pytest.param("'a\\npassword: x' is bad", f"'a\\npassword: {H}' is bad", id="escaped-line"),
        pytest.param("env DB_PASSWORD: x1 set", f"env DB_PASSWORD: {H} set", id="field-in-a-line"),
        pytest.param("keys: ['tfy_abc', 'x']", f"keys: ['{H}', 'x']", id="in-a-list"),
    ],
)  # fmt: skip
def test_masking_a_text(text: str, expected: str):
    assert masked_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("No bearer token: send 'Authorization: Bearer <token>'", id="how-to-send"),
        pytest.param("query access_token: is not a parameter of this operation", id="problem"),
        pytest.param("basic authentication required", id="prose"),
        pytest.param("max_tokens=5 token_type=jwt", id="names-that-only-mention-one"),
        pytest.param("platform-secret://acme:g:HF_TOKEN", id="secret-reference"),
        pytest.param("https://platform.acme.example/api?page=2", id="url"),
    ],
)
def test_text_with_no_credential_is_left_as_it_is(text: str):
    assert masked_text(text) == text


def test_the_mocks_own_texts_hold_no_credential_the_rule_would_hide():
    # Every message of the mock reaches the journal and the log through the rule.
    messages = [errors.condition(cls.code) for cls in errors.error_classes()]
    source = Path(mock_server.__file__).parent
    for module in source.rglob("*.py"):
        if module.name != "masking.py":
            tree = ast.parse(module.read_text())
            messages += [
                node.value
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "\n" not in node.value  # docstrings: of several lines, never shown
            ]
    assert [text for text in messages if masked_text(text) != text] == []


@pytest.mark.parametrize("text", list(MASKING.values()), ids=list(MASKING))
def test_masking_twice_changes_nothing_more(text: str):
    assert masked_text(masked_text(text)) == masked_text(text)
    assert SECRET not in masked_text(text)


def test_the_callers_own_credential_is_hidden_wherever_it_appears():
    credentials = credentials_of({"authorization": f"Bearer {OWN_CREDENTIAL}"})
    said = f"the token {OWN_CREDENTIAL} expired"
    assert masked({"error": said}, credentials=credentials) == {"error": f"the token {H} expired"}


@pytest.mark.parametrize(
    "name",
    ["x-functions-key", "Ocp-Apim-Subscription-Key", "Authentication", "X-Auth", "x-auth-token"],
)
def test_a_header_named_for_a_credential_is_hidden(name: str):
    assert masked({name: "opaque-value-1234"}) == {name: H}


@pytest.mark.parametrize("name", ["oauth", "preauth", "OAuth", "noauth"])
def test_a_field_whose_name_holds_auth_inside_a_word_is_shown(name: str):
    assert masked({name: "https://idp.example/authorize"}) == {
        name: "https://idp.example/authorize"
    }


# `auth` after an acronym, or a name in capitals, is a word of its own all the same: these
# were hidden before `auth` had to be its own word, and named credentials then as now.
@pytest.mark.parametrize("name", ["HTTPAuth", "XAuth", "LDAPAuth", "JWTAuth", "SMTPAUTH", "XAUTH"])
def test_a_field_named_auth_after_an_acronym_is_hidden(name: str):
    assert masked({name: "opaque-value-1234"}) == {name: H}


# A key named by `auth` as its first word: Cloudflare's `X-Auth-Key` header carries its API key.
@pytest.mark.parametrize("name", ["X-Auth-Key", "authKey", "AUTH_KEY", "auth_key"])
def test_a_field_named_an_auth_key_is_hidden(name: str):
    assert masked({name: "opaque-value-1234"}) == {name: H}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param(
            {"authorization": "Bearer first-credential, Bearer second-credential"},
            ("second-credential", "first-credential"), id="authorization-sent-twice",
        ),
        pytest.param(
            {"authorization": "Token opaque-value-1234"},
            ("Token opaque-value-1234", "opaque-value-1234"), id="any-scheme",
        ),
        pytest.param(
            {"authorization": "Bearer\topaque-value-1234"}, ("opaque-value-1234",),
            id="tab-after-the-scheme",
        ),
        pytest.param(
            {"authorization": "Basic dXNlcjpwYXNzd29yZA=="},
            ("dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA", "user:password", "password"),
            id="basic-read-as-a-query-key-and-decoded",
        ),
        pytest.param(
            {"x-api-key": "opaque,value"}, ("opaque,value",), id="a-key-with-a-comma-in-it",
        ),
        pytest.param(
            {"x-api-key": "opaque-valué".encode().decode("latin-1")},
            ("opaque-valuÃ©", "opaque-valué"), id="not-ascii-read-as-utf-8",
        ),
        pytest.param(
            {"authorization": "Bearer opaque+value%2F1234"},
            ("opaque+value%2F1234", "opaque value/1234"), id="as-a-query-reads-it",
        ),
        pytest.param(
            {"authorization": "Bearer opaque-value-1234&page=second-part"},
            ("opaque-value-1234&page=second-part", "opaque-value-1234", "second-part"),
            id="pairs-of-a-query",
        ),
        pytest.param({"x-functions-key": "opaque-value-1234"}, ("opaque-value-1234",), id="key"),
        pytest.param(
            {"cookie": "theme=dark; session=session-value-1"}, ("session-value-1",), id="cookie",
        ),
        pytest.param(
            {"cookie": 'session="session-value-1"'}, ("session-value-1",), id="quoted-cookie",
        ),
        pytest.param({"cookie": "session-value-1"}, ("session-value-1",), id="nameless-cookie"),
        pytest.param({"content-type": "application/json"}, (), id="no-credential-header"),
    ],
)  # fmt: skip
def test_the_callers_own_credentials_are_read_from_each_credential_header(
    headers: dict[str, str], expected: tuple[str, ...]
):
    assert credentials_of(headers) == expected


@pytest.mark.parametrize("case", [str.lower, str.upper], ids=["lower-cased", "upper-cased"])
def test_a_jwt_whose_case_was_changed_is_still_known_by_its_shape(case):
    assert masked_text(f"x-{case(JWT)}") == f"x-{H}"


@pytest.mark.parametrize(
    "text", ["/files/heyjude.tar.gz", "host heyjoe.example.com", "MONKEYJUMP.EXAMPLE.COM"]
)
def test_a_dotted_name_holding_eyj_in_another_case_is_no_jwt(text):
    assert masked_text(text) == text


def test_the_callers_key_is_kept_among_many_cookies():
    cookies = "; ".join(f"c{index}=cookie-value-{index:010}" for index in range(40))
    found = credentials_of({"cookie": cookies, "x-api-key": "the-callers-key"})
    assert "the-callers-key" in found and len(found) == MAX_CREDENTIALS


def test_a_credential_too_short_to_be_told_from_a_word_is_not_hidden_everywhere():
    assert credentials_of({"authorization": "Bearer abc"}) == ()


# -- where it is applied: the journal's writer ----------------------------------------------------


def _entry(**fields: Any) -> Entry:
    base: dict[str, Any] = {
        "seq": 1, "method": "GET", "path": "/api/svc/v1/session", "query": {},
        "path_params": {}, "raw_headers": {}, "raw_body": b"", "operation_id": "getSession",
        "status": 200,
    }  # fmt: skip
    return Entry(**{**base, **fields})


def _recorded() -> Entry:
    journal = Journal()
    journal.record(
        _entry(
            path=f"/api/svc/v1/x/{OWN_CREDENTIAL}",
            query={"access_token": ["opaque"], "note": [OWN_CREDENTIAL]},
            raw_body=b'{"password": "hunter2-long", "note": "' + OWN_CREDENTIAL.encode() + b'"}',
            raw_response=b'{"echo": "hunter2-long", "token": "' + JWT.encode() + b'"}',
            message=f"refused {OWN_CREDENTIAL}",
            credentials=credentials_of({"authorization": f"Bearer {OWN_CREDENTIAL}"}),
        )
    )
    (kept,) = list(journal)
    return kept


def test_the_journal_shows_no_credential_of_an_entry():
    kept = _recorded()
    shown = repr(kept.to_dict()) + kept.shown_response.decode() + repr(kept.response_body)
    assert "hunter2" not in shown and SECRET not in shown and "opaque" not in shown


def test_the_journal_keeps_nothing_of_the_callers_credential():
    kept = _recorded()
    held = repr(kept) + kept.raw_body.decode() + kept.raw_response.decode()
    assert OWN_CREDENTIAL not in held and kept.credentials == ()


def test_the_journal_keeps_the_request_headers_without_the_callers_credential():
    journal = Journal()
    sent = {"authorization": f"Bearer {OWN_CREDENTIAL}", "x-echo": f"sent {OWN_CREDENTIAL}"}
    journal.record(_entry(raw_headers=sent, credentials=credentials_of(sent)))
    (kept,) = list(journal)
    assert OWN_CREDENTIAL not in repr(kept.raw_headers) and kept.credentials == ()


def test_the_request_headers_are_shown_masked_when_first_read():
    journal = Journal()
    sent = {"authorization": f"Bearer {OWN_CREDENTIAL}", "x-api-key": "opaque-value-1"}
    journal.record(_entry(raw_headers=sent, credentials=credentials_of(sent)))
    (kept,) = list(journal)
    assert kept.headers == {"authorization": "<hidden>", "x-api-key": "<hidden>"}


def test_a_body_cut_in_the_middle_of_the_callers_credential_shows_none_of_it():
    journal = Journal()
    cut = (b"x" * (BODY_LIMIT - 10) + OWN_CREDENTIAL.encode())[:BODY_LIMIT]
    sent = {"authorization": f"Bearer {OWN_CREDENTIAL}"}
    journal.record(_entry(raw_body=cut, credentials=credentials_of(sent)))
    (kept,) = list(journal)
    assert kept.shown_body.endswith(b"x" + H.encode())


def test_a_body_not_json_writing_the_callers_credential_with_escapes_shows_none_of_it():
    journal = Journal()
    escaped = OWN_CREDENTIAL.replace("-", "\\u002d")
    sent = {"authorization": f"Bearer {OWN_CREDENTIAL}"}
    body = f'{{"note": "{escaped}", "other": "a\\nb",}}'.encode()  # a trailing comma
    journal.record(_entry(raw_body=body, credentials=credentials_of(sent)))
    (kept,) = list(journal)
    assert kept.body == f'{{"note": "{H}", "other": "a\\nb",}}'


def test_a_body_not_json_holding_a_lone_surrogate_and_the_callers_credential_is_recorded():
    journal = Journal()
    sent = {"authorization": f"Bearer {OWN_CREDENTIAL}"}
    escaped = OWN_CREDENTIAL.replace("-", "\\u002d")
    body = f'["\\ud800 {escaped}",'.encode()  # a lone surrogate; not JSON as a whole
    journal.record(_entry(raw_body=body, credentials=credentials_of(sent)))
    (kept,) = list(journal)
    assert kept.body == f'["\\ud800 {H}",'


ESCAPED_OWN = OWN_CREDENTIAL.replace("-", "\\u002d")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(f'{{"n": "{ESCAPED_OWN}",}}', f'{{"n": "{H}",}}', id="trailing-comma"),
        pytest.param(f'{{"n": "a\tb {ESCAPED_OWN}"}}', f'{{"n": "a\\tb {H}"}}', id="raw-tab"),
        pytest.param(
            f'{{"n": "it\\\'s {ESCAPED_OWN}"}}', f'{{"n": "it\\\\\'s {H}"}}',
            id="an-escape-json-has-not",
        ),
        pytest.param(f'{{"n": "{ESCAPED_OWN}', f'{{"n": "{H}', id="left-open-as-a-cut-body-is"),
    ],
)  # fmt: skip
def test_the_callers_credential_written_with_escapes_in_a_text_not_json_is_hidden(text, shown):
    assert masking.without_in_strings(text, (OWN_CREDENTIAL,)) == shown


def test_the_authorization_header_is_kept_among_many_credential_headers():
    headers = {f"x-{index}-token": f"opaque-token-value-{index:04}" for index in range(40)}
    found = credentials_of({**headers, "authorization": "Bearer the-callers-key"})
    assert "the-callers-key" in found


def test_a_key_with_more_parts_than_credentials_kept_is_kept_whole():
    key = ",".join(f"part-{index:04}" for index in range(40))
    assert key in credentials_of({"x-api-key": key})


def test_the_forms_of_a_key_are_kept_among_many_cookies():
    cookies = "; ".join(f"c{index}=cookie-value-{index:010}" for index in range(40))
    found = credentials_of({"cookie": cookies, "x-api-key": "opaque+key%41"})
    assert "opaque keyA" in found


def test_a_request_holds_at_most_its_first_credentials():
    key = "=".join(f"part-{index:04}" for index in range(6_500))
    found = credentials_of({"x-api-key": key})
    assert (len(found), found[0]) == (MAX_CREDENTIALS, key)


def test_the_journal_keeps_a_body_without_credentials_as_it_came():
    journal = Journal()
    journal.record(_entry(raw_body=b'{"secretIds": ["a"]}'))
    assert journal.last is not None and journal.last.raw_body == b'{"secretIds": ["a"]}'


def test_the_recorder_hides_the_callers_credential_echoed_in_an_answer():
    recorder = Recorder()
    run = {
        "id": "r-1", "name": "r", "status": "FAILED", "createdAt": 1700000000000,
        "duration": 1000, "deploymentVersion": 1, "applicationName": "trainer",
        "error": f"401 for {OWN_CREDENTIAL}",
    }  # fmt: skip
    recorder.observe(
        "listJobRuns", path_params={"jobId": "app-1"}, query={}, body=None, status=200,
        answer={"data": [run]}, caller=None,
        credentials=credentials_of({"authorization": f"Bearer {OWN_CREDENTIAL}"}),
    )  # fmt: skip
    document, _ = recorder.document()
    (runs,) = [app["runs"] for app in document["applications"]]
    assert runs[0]["error"] == f"401 for {H}"


def test_text_nested_past_the_rules_depth_is_hidden_whole_not_overflowed():
    # 7 KB of `key: [` once overflowed the stack of every door that masks (issue: a request
    # went unanswered, the journal's readers answered 500).
    shown = masked_text("key: [" * 10_000)
    assert shown.endswith(HIDDEN) and len(shown) < 200


def test_a_text_the_rule_hides_is_hidden_every_time_it_comes():
    # Texts the rule leaves as they are are remembered; one it changes must never be.
    text = "authorization: token=abcdefghijkl0123"
    assert [masking.masked_text(text) for _ in range(3)] == [masking.masked_text(text)] * 3
    assert "abcdefghijkl0123" not in masking.masked_text(text)


def test_the_texts_remembered_as_plain_stay_within_their_count():
    for number in range(masking._PLAIN_TEXTS + 10):
        masking.masked_text(f"authorization-{number}")
    assert 0 < len(masking._PLAIN) <= masking._PLAIN_TEXTS


# -- what the rule looks for before it reads a text ------------------------------------------


@pytest.mark.parametrize("word", masking._HINTS, ids=str)
def test_a_short_text_holding_a_hint_word_is_read_by_the_rule(word: str) -> None:
    assert masking.might_hold_text(f"/api/svc/v1/x{word.upper()}y?limit=20")


@pytest.mark.parametrize(
    "text",
    [*MASKING.values(), "/api/svc/v1/jobs/app-1/runs"],
    ids=[*MASKING, "plain-path"],
)
def test_the_search_of_short_texts_finds_what_a_look_for_each_word_finds(text: str) -> None:
    lowered = text.lower()
    assert (masking._HINT.search(lowered) is not None) == any(w in lowered for w in masking._HINTS)


def test_a_path_the_rule_left_as_it_is_is_known_plain_unless_it_holds_the_callers_credential():
    path = "/api/svc/v1/personal-access-tokens/ci"
    assert masked_text(path) == path
    assert masking.known_plain(path) and not masking.known_plain(path, ["access-tokens"])


def test_texts_remembered_as_holding_no_hint_still_find_the_callers_credential() -> None:
    texts = ["limit", "20", f"note {OWN_CREDENTIAL[:4]}"]
    assert not masking.might_hold_any(texts)  # now remembered
    assert masking.might_hold_any([*texts, OWN_CREDENTIAL], [OWN_CREDENTIAL])


@pytest.mark.parametrize("text", list(MASKING.values()), ids=list(MASKING))
def test_a_hostile_text_among_remembered_plain_ones_is_looked_at(text: str) -> None:
    plain = ["limit", "20", "content-type", "application/json"]
    masking.might_hold_any(plain)
    assert masking.might_hold_any([*plain, text]) == masking.might_hold_text(text)


def test_a_query_key_naming_a_credential_sends_the_query_through_the_rule() -> None:
    journal = Journal()
    for value in ("opaque-1", "opaque-2"):  # the second time, both texts are known
        journal.record(_entry(query={"access_token": [value], "limit": ["20"]}))
    assert [e.query["access_token"] for e in journal] == [[HIDDEN], [HIDDEN]]


def test_a_header_named_with_the_callers_credential_is_hidden_by_its_name_as_sent():
    # A cookie's value is a credential to hide everywhere, here inside another header's name.
    sent = {"cookie": "login=access-token", "x-access-token": "pin123"}
    journal = Journal()
    journal.record(_entry(raw_headers=sent, credentials=credentials_of(sent)))
    (kept,) = list(journal)
    assert kept.headers == {"cookie": HIDDEN, f"x-{HIDDEN}": HIDDEN}


@pytest.mark.parametrize(
    "name",
    ["\u017fecret", "pa\u017fsword", "credent\u0131als", "credent\u0130al"],
    ids=["long-s-secret", "long-s-password", "dotless-i-credentials", "dotted-capital-i"],
)
def test_a_credential_name_spelt_with_a_letter_case_folding_reads_as_ascii_is_hidden(name: str):
    journal = Journal()
    journal.record(_entry(query={name: ["hunter2hunter2"], "limit": ["20"]}))
    (kept,) = list(journal)
    assert kept.query[name] == [HIDDEN]
