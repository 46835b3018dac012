"""The one escaping rule for text the mock did not write, wherever the mock prints or writes it.

A client chooses its paths, query keys and values, headers and bodies; a target platform its
answers; a person the names of fixture files and the fields in them. Printed raw, a line
feed would start a line of the mock's output that the mock did not write (`::add-mask::...`
or `::stop-commands::...`, which GitHub's runner obeys at the start of a line), an escape
sequence would drive the reader's terminal, a bidi control or a zero-width character would
make a line read other than it is, and a workflow command found anywhere in a line
(GitHub's `##[error]`, Azure Pipelines' `##vso[task.setvariable ...]`, TeamCity's
`##teamcity[setParameter ...]`) would act on CI.

What is escaped is defined by Unicode's general categories, not by a list: every character
of category Cc (control: C0, DEL, C1 with U+0085, which YAML reads as a line break), Cf
(format: bidi controls, zero-width space and joiner, the byte order mark, tag characters),
Zl and Zp (the line and paragraph separators) and Cs (surrogates), and the two
noncharacters XML 1.0 cannot hold even escaped (U+FFFE, U+FFFF). Workflow commands are
defused: GitHub's `##[`, Azure's `##vso[` and TeamCity's `##teamcity[` (in any case)
anywhere in a line, and a `::` that would open one.

Every such text leaves the process through one of these functions, each for one kind of sink:

- `text`: terminals, logs, the text reports, pytest's report sections, JUnit XML, the data of
  GitHub's workflow commands (then `workflow_data`), a recording's comments. Each escaped
  character is shown as a visible escape (`\\x1b`, `\\u202e`, `\\U000e0041`); the `[` of a
  workflow command becomes `\\x5b`, and a `:` that would open a line `\\x3a`.
- `json_text`, `json_bytes`: JSON written as lines of output or files, or answered by the
  admin API and its event stream: the same characters as JSON's own `\\u` escapes, which a
  JSON reader turns back into exactly what was there.
- `markdown_code`: a code span, in which Markdown makes no link, HTML, emphasis or mention.
- `workflow_data`, `workflow_property`: GitHub's escaping of a workflow command's message
  and of its properties (`%25`, `%0D`, `%0A`; in properties also `%3A` and `%2C`).
- `logging_command_data`: Azure Pipelines' escaping of a logging command's message
  (`##vso[task.logissue ...]MESSAGE`): `%AZP25`, `%0D`, `%0A`, and `%5D` and `%3B` as its
  agent's own task library escapes them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from mock_server.core import wire

CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# NEL is a control (Cc) already, named for what YAML and Unicode make of it: a line break.
# U+FFFE and U+FFFF are noncharacters (Cn) no XML 1.0 document may hold, even escaped.
ALSO = frozenset({"\x85", "\ufffe", "\uffff"})
# Runs of what is not printable ASCII: only these are looked at, one character at a time.
_NOT_ASCII_PRINTABLE = re.compile(r"[^\x20-\x7e]+")
# A workflow command found anywhere in a line: GitHub's `##[...]`, Azure's `##vso[...]`,
# TeamCity's service messages (`##teamcity[...]`), in any case.
_ANYWHERE_COMMAND = re.compile(
    r"(?:(?<=##)|(?<=##[vV][sS][oO])|(?<=##[tT][eE][aA][mM][cC][iI][tT][yY]))\["
)
# A workflow command of GitHub is a line that, leading blanks aside, starts with `::`.
_LEADING_COMMAND = re.compile(r"^(\s*):(?=:)")


def escaped(char: str) -> bool:
    """Whether one character is escaped wherever a text is shown (see the module)."""
    return char in ALSO or unicodedata.category(char) in CATEGORIES


def _visible(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _as_json(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character past the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escaping(form: Any, *, spare_c0: bool = False) -> Any:
    def run(found: re.Match[str]) -> str:
        chars = found.group()
        if chars.isprintable():
            return chars
        return "".join(
            form(c) if escaped(c) and not (spare_c0 and c < "\x20") else c for c in chars
        )

    return run


_SHOWN = _escaping(_visible)
# json.dumps escapes C0 in strings itself; one left is its own (the line breaks of `indent`).
_JSON = _escaping(_as_json, spare_c0=True)


def text(value: Any) -> str:
    """A text as it may be printed: one line, nothing a terminal or CI acts on."""
    shown = str(value)
    if not shown.isprintable():  # a character of another category only: Zs, Co, Cn
        shown = _NOT_ASCII_PRINTABLE.sub(_SHOWN, shown)
    if "##" in shown:
        shown = _ANYWHERE_COMMAND.sub(r"\\x5b", shown)
    return _LEADING_COMMAND.sub(r"\1\\x3a", shown) if ":" in shown else shown


def _inert_json(written: str) -> str:
    # Inside a JSON string these characters can only be what was given: JSON's own syntax
    # has none of them, and `##` is no JSON token, so a `[` after it is in a string as well.
    written = _NOT_ASCII_PRINTABLE.sub(_JSON, written)
    return _ANYWHERE_COMMAND.sub(r"\\u005b", written) if "##" in written else written


def json_text(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON that no terminal or CI acts on, read back as exactly `value`."""
    compact = (",", ":") if indent is None else None
    written = json.dumps(value, ensure_ascii=False, indent=indent, separators=compact)
    return _inert_json(written)


def json_bytes(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON (as orjson writes it) that no terminal or CI acts on,
    read back as exactly `value`: an answer of the admin API, an event of its stream."""
    written = wire.json_bytes(value)
    if written.isascii() and b"\x7f" not in written and b"##" not in written:
        return written  # orjson escapes C0 itself: nothing is left to escape
    return _inert_json(written.decode("utf-8")).encode("utf-8")


def markdown_code(value: Any, *, in_table: bool = False) -> str:
    """A text as a Markdown code span: shown as it is (escaped as `text` escapes it), never
    read as a link, HTML, emphasis or a mention. In a table cell a `|` is escaped too, since
    GitHub splits cells on it even inside a code span."""
    shown = text(value)
    if in_table:
        shown = shown.replace("|", "\\|")
    if not shown:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    padding = " " if shown.startswith(("`", " ")) or shown.endswith(("`", " ")) else ""
    return f"{fence}{padding}{shown}{padding}{fence}"


def lines(value: str) -> str:
    """A message of several lines, each escaped as `text` escapes one: its own line feeds
    kept, nothing else that would break or steer a line (a message that quotes what a file
    or a client held)."""
    return "\n".join(map(text, value.split("\n")))


def workflow_data(value: str) -> str:
    """The message of a GitHub workflow command (`::error ...::MESSAGE`), escaped as GitHub's
    toolkit escapes it: its line breaks are the reader's, never a new command."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(value: str) -> str:
    """A property's value in a GitHub workflow command (`title=...`)."""
    return workflow_data(value).replace(":", "%3A").replace(",", "%2C")


def logging_command_data(value: str) -> str:
    """The message of an Azure Pipelines logging command (`##vso[task.logissue
    type=error]MESSAGE`), escaped as the agent's task library escapes it: its line breaks
    are the reader's, never a new command."""
    escaped = value.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")
    return escaped.replace("]", "%5D").replace(";", "%3B")
