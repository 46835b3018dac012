"""The one escaping rule for text that came from a request, wherever the mock prints or writes it.

A client chooses its paths, query keys and values, headers and bodies, and test suites send odd
ones on purpose. Printed raw, a line feed would start a line of the mock's output that the mock
did not write (`::add-mask::...` or `::stop-commands::...`, which GitHub's runner obeys at the
start of a line, `##[error]`, which it obeys anywhere in one), an escape sequence would drive
the reader's terminal, and a bidi control would make a line read other than it is. So every
such text leaves the process through one of these functions, each for one kind of sink:

- `text`: terminals, logs, the text report, pytest's report sections, JUnit XML, and the
  data of GitHub's workflow commands (then `workflow_data`). Control characters (C0, DEL,
  C1), bidi controls and the Unicode line and paragraph separators are shown as visible
  escapes (`\\x1b`, `\\u202e`); `##[` becomes `##\\x5b`, and a `::` that would open a line
  `\\x3a:`.
- `json_text`: JSON written as lines of output or as files: the same characters as JSON's own
  `\\u` escapes, which a JSON reader turns back into exactly what was sent.
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
from typing import Any

# Bidi embeddings, overrides, isolates and marks; the line and paragraph separators; and what
# XML 1.0 cannot hold even escaped (surrogates, U+FFFE, U+FFFF).
_FORMAT = [
    *(0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029),
    *range(0xD800, 0xE000),
    *(0xFFFE, 0xFFFF),
]
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
ESCAPED = frozenset(map(chr, [*_CONTROLS, *_FORMAT]))
_VISIBLE = {ord(c): (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in ESCAPED}
# json.dumps escapes C0 itself, and writes a line break of its own only between tokens.
_AS_JSON = {ord(c): f"\\u{ord(c):04x}" for c in ESCAPED if ord(c) >= 0x20}
# GitHub's runner acts on `##[command]` anywhere in a line (its legacy form).
_LEGACY_COMMAND = re.compile(r"(?<=##)\[")
# A workflow command is a line that, leading blanks aside, starts with `::`.
_LEADING_COMMAND = re.compile(r"^(\s*):(?=:)")


def text(value: Any) -> str:
    """A client's text as it may be printed: one line, nothing a terminal or CI acts on."""
    shown = str(value).translate(_VISIBLE)
    shown = _LEGACY_COMMAND.sub(r"\\x5b", shown)
    return _LEADING_COMMAND.sub(r"\1\\x3a", shown)


def json_text(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON that no terminal or CI acts on, read back as exactly `value`."""
    compact = (",", ":") if indent is None else None
    written = json.dumps(value, ensure_ascii=False, indent=indent, separators=compact)
    # Inside a JSON string these characters can only be the client's; JSON's own syntax
    # has none of them, and `[` after `##` is in a string as well (`##` is no JSON token).
    written = written.translate(_AS_JSON)
    return _LEGACY_COMMAND.sub(r"\\u005b", written)


def markdown_code(value: Any, *, in_table: bool = False) -> str:
    """A client's text as a Markdown code span: shown as it is (escaped as `text` escapes
    it), never read as a link, HTML, emphasis or a mention. In a table cell a `|` is escaped
    too, since GitHub splits cells on it even inside a code span."""
    shown = text(value)
    if in_table:
        shown = shown.replace("|", "\\|")
    if not shown:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    padding = " " if shown.startswith(("`", " ")) or shown.endswith(("`", " ")) else ""
    return f"{fence}{padding}{shown}{padding}{fence}"


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
