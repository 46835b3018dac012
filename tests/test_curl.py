"""The curl line of a journaled request (`mock_server.core.curl`): what it sends again, and
what it never holds. The live view's tests run one with bash against a live mock."""

from __future__ import annotations

import shlex

import pytest

from mock_server.core.curl import curl_command
from mock_server.core.masking import HIDDEN


def test_a_hidden_credential_header_is_left_out_and_named():
    line = curl_command("GET", "/api/svc/v1/session", {}, {"cookie": HIDDEN, "x-api-key": HIDDEN})

    assert HIDDEN not in line
    assert line.endswith("# not sent, hidden: cookie, x-api-key")


def test_the_authorization_is_sent_as_the_token_variable():
    line = curl_command("GET", "/api/svc/v1/session", {}, {"authorization": HIDDEN})

    assert shlex.split(line) == [
        "curl", "-sS", "$PLATFORM_MOCK_URL/api/svc/v1/session",
        "-H", "Authorization: Bearer $PLATFORM_MOCK_TOKEN",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "body", "words"),
    [
        pytest.param("HEAD", b"", ["--head"], id="head"),
        pytest.param("DELETE", b"", ["-X", "DELETE"], id="delete"),
        pytest.param("POST", b'{"a": "it\'s"}', ["-X", "POST"], id="post-json"),
    ],
)
def test_the_method_and_body_are_sent_as_they_came(method, body, words):
    line = curl_command(method, "/p", {"q": ["a b", "c&d"]}, {"content-type": "x/y"}, body)

    split = shlex.split(line)
    assert split[2 : 2 + len(words)] == words
    assert "$PLATFORM_MOCK_URL/p?q=a%20b&q=c%26d" in split
    if body:
        assert split[-2:] == ["--data-binary", '{"a":"it\'s"}']


def test_headers_curl_writes_itself_are_not_sent():
    sent = {"host": "127.0.0.1:1", "content-length": "9", "accept-encoding": "gzip", "x-a": "1"}

    line = curl_command("GET", "/p", {}, sent)

    assert shlex.split(line)[3:] == ["-H", "x-a: 1"]
