"""A request written as a `curl` command line that sends it again, to any mock.

The line is shown to a person (the live view's "Copy as curl") and may be pasted in a shared
chat or a CI job, so it names neither the mock's address nor a credential: the base URL is
`$PLATFORM_MOCK_URL` and the token `$PLATFORM_MOCK_TOKEN`, both read from the shell that runs
it (`platform-mock run` sets both). It is made of what the journal kept, every credential in
it hidden already by the one masking rule: the request's `Authorization` (hidden) is sent as
`Bearer $PLATFORM_MOCK_TOKEN`, and any other header whose value is hidden is left out, named
in a closing comment. Each word is quoted by `shlex.quote`, the path and query percent-
encoded as they go on the wire, a JSON body written with `escape.json_text` (its controls as
JSON's own escapes, read back as what was sent); what a client chose can then act on nothing
but in a header's value, which the caller shows through `escape.text` like any text of a
client.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from urllib.parse import quote

from mock_server.core import escape, masking

# Headers curl writes itself, or that would change what it prints (a compressed answer),
# or that would be wrong once the line is edited (the body's length).
NOT_SENT = frozenset(
    {"host", "content-length", "connection", "accept-encoding", "transfer-encoding", "expect"}
)
# What a path segment may hold as it is (RFC 3986 `pchar`); the rest is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;="
BEARER = '"Authorization: Bearer $PLATFORM_MOCK_TOKEN"'  # the request's credential, from the shell


def curl_command(
    method: str,
    path: str,
    query: Mapping[str, list[str]],
    headers: Mapping[str, str],
    body: bytes = b"",
    *,
    authorization: str = BEARER,
    max_body: int | None = None,
) -> str:
    """The `curl` line that sends this request again (see the module); `headers` by their
    lower-case names, credentials hidden, as the journal keeps them. `authorization` is the
    quoted header word sent for the request's `Authorization`; a body over `max_body` bytes
    is read from `body.json` instead of written into the line."""
    words = ["curl", "-sS"]
    if method == "HEAD":
        words.append("--head")
    elif method != "GET" or body:
        words += ["-X", shlex.quote(method)]
    target = quote(path, safe=_PATH_SAFE)
    pairs = [(key, value) for key, values in query.items() for value in values]
    if pairs:
        target += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
    words.append(f'"$PLATFORM_MOCK_URL"{shlex.quote(target)}')
    left_out: list[str] = []
    for name, value in headers.items():
        if name == "authorization":
            words += ["-H", authorization]
        elif masking.HIDDEN in value and masking.holds_credential(name):
            left_out.append(name)
        elif name not in NOT_SENT:
            words += ["-H", shlex.quote(f"{name}: {value}")]
    if body:
        if "content-type" not in headers:  # else curl would send it as a form's
            words += ["-H", "'content-type:'"]
        if max_body is not None and len(body) > max_body:
            words += ["--data-binary", "@body.json", f"# its body of {len(body)} bytes"]
        else:
            words += ["--data-binary", shlex.quote(_body(body))]
    if left_out:
        words.append(f"# not sent, hidden: {', '.join(left_out)}")
    return " ".join(words)


def _body(raw: bytes) -> str:
    """A body as the line sends it: JSON as the same JSON made inert, text as it is."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return escape.json_text(json.loads(text))
    except (ValueError, RecursionError):
        return text
