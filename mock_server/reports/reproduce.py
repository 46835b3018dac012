"""A `curl` command line that sends a journaled request again, to any mock: which of its
headers and credential a report's line sends; `core.curl` writes the line, as it does the
live view's "Copy as curl".

A reviewer reads it in a report a whole team sees, so it names neither the mock's address nor
a credential: the base URL is `$PLATFORM_MOCK_URL` and the token `$PLATFORM_MOCK_TOKEN`,
both read from the shell that runs it (`platform-mock run` sets both; `platform-mock token`
prints a token). It is made of what the journal kept, every credential in it hidden already (the one
masking rule): the path and query percent-encoded as they go on the wire, a JSON body as the
same JSON written with `escape.json_text` (its controls and workflow commands as JSON's own
escapes, read back as what was sent), each word quoted by `shlex.quote`. A client's text can
then hold nothing a terminal or CI acts on but in a header's value, which the sink's
escaping (`escape.text`) shows escaped, and which is then not sent as it was.
"""

from __future__ import annotations

from mock_server.core import errors
from mock_server.core.curl import BEARER, curl_command
from mock_server.services.journal import Entry

MAX_BODY = 1024  # bytes of a body written into the line; past it, the line says so
# The headers the journal keeps that change what the mock makes of a request.
HEADERS = ("content-type", "prefer", "x-platform-metadata")
# For a request refused for a token that was no JWT: one, the credential as every output
# shows it, hidden (no sink's masking changes it).
NOT_A_JWT = "'Authorization: Bearer <hidden>'"


def curl(entry: Entry) -> str:
    """The `curl` line that sends `entry`'s request again (see the module): the headers that
    change what the mock makes of it, and a credential unless the request lacked one."""
    headers = {name: entry.headers[name] for name in HEADERS if name in entry.headers}
    if entry.code != errors.MissingToken.code:
        headers = {"authorization": "", **headers}
    bearer = NOT_A_JWT if entry.code == errors.MalformedToken.code else BEARER
    return curl_command(
        entry.method,
        entry.path,
        entry.query,
        headers,
        entry.shown_body or b"",
        authorization=bearer,
        max_body=MAX_BODY,
    )
