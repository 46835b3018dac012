"""The one escaping rule (`mock_server.core.escape`) itself: which characters it escapes (by
Unicode category, not by a list), which workflow commands it defuses (GitHub's and Azure
Pipelines'), and that JSON written by it reads back as exactly what was given. What reaches
each output through it is tests/test_hostile_texts.py's."""

from __future__ import annotations

import json
import sys
import unicodedata

import orjson
import pytest

from mock_server.core import escape, wire
from tests.corpus import CORPUS, unescaped

# One character of each category escaped, and the characters a hand-made list missed.
ESCAPED = [
    pytest.param("\x1b", id="Cc-escape"),
    pytest.param("\x7f", id="Cc-delete"),
    pytest.param("\x9b", id="Cc-c1-csi"),
    pytest.param("\x85", id="Cc-next-line"),
    pytest.param("\u200b", id="Cf-zero-width-space"),
    pytest.param("\u200d", id="Cf-zero-width-joiner"),
    pytest.param("\ufeff", id="Cf-byte-order-mark"),
    pytest.param("\u202e", id="Cf-bidi-override"),
    pytest.param("\u00ad", id="Cf-soft-hyphen"),
    pytest.param("\U000e0041", id="Cf-tag-latin-a"),
    pytest.param("\u2028", id="Zl-line-separator"),
    pytest.param("\u2029", id="Zp-paragraph-separator"),
    pytest.param("\ud800", id="Cs-surrogate"),
    pytest.param("\uffff", id="noncharacter-xml-refuses"),
]
KEPT = [
    pytest.param("é", id="latin"),
    pytest.param("漢", id="cjk"),
    pytest.param("😀", id="emoji"),
    pytest.param("\u00a0", id="no-break-space"),
    pytest.param(" ", id="space"),
]


@pytest.mark.parametrize("char", ESCAPED)
def test_a_character_of_an_escaped_category_is_shown_as_its_escape(char: str):
    shown = escape.text(f"a{char}b")
    assert char not in shown and shown.startswith("a\\") and shown.endswith("b")


@pytest.mark.parametrize("char", KEPT)
def test_a_printable_character_is_shown_as_it_is(char: str):
    assert escape.text(f"a{char}b") == f"a{char}b"


def test_the_escaped_set_is_every_character_of_the_categories():
    wanted = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    found = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if (unicodedata.category(chr(code)) in wanted) != escape.escaped(chr(code))
        and chr(code) not in escape.ALSO
    ]
    assert found == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("##[error]x", "##\\x5berror]x", id="github-legacy"),
        pytest.param(
            "a ##vso[task.setvariable variable=x]1", "a ##vso\\x5btask.setvariable variable=x]1",
            id="azure",
        ),
        pytest.param("##VSO[task.complete]", "##VSO\\x5btask.complete]", id="azure-upper-case"),
        pytest.param("::add-mask::x", "\\x3a:add-mask::x", id="github-line-opening"),
        pytest.param("  ::error::x", "  \\x3a:error::x", id="github-after-blanks"),
        pytest.param("a::b ##x [c]", "a::b ##x [c]", id="no-command"),
    ],
)  # fmt: skip
def test_workflow_commands_are_defused(text: str, shown: str):
    assert escape.text(text) == shown


@pytest.mark.parametrize("text", list(CORPUS.values()), ids=list(CORPUS))
def test_json_written_by_the_rule_is_inert_and_reads_back_as_given(text: str):
    value = {text: [text, {"k": text}]}
    for written in (escape.json_text(value), escape.json_text(value, indent=2)):
        assert unescaped(written) == [] and json.loads(written) == value
    assert unescaped(escape.json_bytes(value).decode()) == []
    assert orjson.loads(escape.json_bytes(value)) == value


@pytest.mark.parametrize("text", list(CORPUS.values()), ids=list(CORPUS))
def test_escaping_twice_changes_nothing_more(text: str):
    assert escape.text(escape.text(text)) == escape.text(text)


def test_lines_keeps_its_own_line_feeds_and_escapes_the_rest():
    assert escape.lines("a\u2028b\n##vso[x]") == "a\\u2028b\n##vso\\x5bx]"


def test_the_wire_writes_an_integer_past_64_bits_as_compact_json():
    assert (
        wire.json_bytes({"n": 2**75, "s": "é"}) == '{"n":37778931862957161709568,"s":"é"}'.encode()
    )
