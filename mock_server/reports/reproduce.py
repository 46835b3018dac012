"""A `curl` command line that sends a journaled request again, to any mock.

A reviewer reads it in a report a whole team sees, so it names neither the mock's address nor
a credential: the base URL is `$PLATFORM_MOCK_URL` and the token `$TOKEN`, both read from the
shell that runs it (`platform-mock run` sets the first; `platform-mock token` prints a
token). It is made of what the journal kept, every credential in it hidden already (the one
masking rule): the path and query percent-encoded as they go on the wire, a JSON body as the
same JSON written with `escape.json_text` (its controls and workflow commands as JSON's own
escapes, read back as what was sent), each word quoted by `shlex.quote`. A client's text can
then hold nothing a terminal or CI acts on but in a header's value, which the sink's
escaping (`escape.text`) shows escaped, and which is then not sent as it was.
"""

from __future__ import annotations

import json
import shlex
from urllib.parse import quote

from mock_server.core import errors, escape
from mock_server.services.journal import Entry

MAX_BODY = 1024  # bytes of a body written into the line; past it, the line says so
# The headers the journal keeps that change what the mock makes of a request.
HEADERS = ("content-type", "prefer", "x-platform-metadata")
# What a path segment may hold as it is (RFC 3986 `pchar`); the rest is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;="
# For a request refused for a token that was no JWT: one, the credential as every output
# shows it, hidden (no sink's masking changes it).
NOT_A_JWT = "'Authorization: Bearer <hidden>'"


def curl(entry: Entry) -> str:
    """The `curl` line that sends `entry`'s request again (see the module)."""
    words = ["curl", "-sS"]
    if entry.method == "HEAD":
        words.append("--head")
    elif entry.method != "GET" or entry.raw_body:
        words += ["-X", shlex.quote(entry.method)]
    target = quote(entry.path, safe=_PATH_SAFE)
    pairs = [(key, value) for key, values in entry.query.items() for value in values]
    if pairs:
        target += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
    words.append(f'"$PLATFORM_MOCK_URL"{shlex.quote(target)}')
    if entry.code == errors.MalformedToken.code:
        words += ["-H", NOT_A_JWT]
    elif entry.code != errors.MissingToken.code:
        words += ["-H", '"Authorization: Bearer $TOKEN"']
    for name in HEADERS:
        if name in entry.headers:
            words += ["-H", shlex.quote(f"{name}: {entry.headers[name]}")]
    raw = entry.shown_body
    if raw:
        if "content-type" not in entry.headers:  # else curl would send a form's
            words += ["-H", "'content-type:'"]
        if len(raw) > MAX_BODY:
            words += ["--data-binary", "@body.json", f"# its body of {len(raw)} bytes"]
        else:
            words += ["--data-binary", shlex.quote(_body(raw))]
    return " ".join(words)


def _body(raw: bytes) -> str:
    """A body as the line sends it: JSON as the same JSON made inert, text as it is."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return escape.json_text(json.loads(text))
    except (ValueError, RecursionError):
        return text
