"""The hostile texts every output is tested with: one table, shared by every suite that sends
them through a door (a request's parts, fixture fields, a target's answers, file names).

Each text holds MARK, to find where it went. The texts of the escaping rule would act on a
terminal or on CI if printed raw; the texts of the masking rule each hold a credential,
whose every character after SECRET must reach no output (the rule shows `<hidden>` in its
place). `OWN_CREDENTIAL` is a caller's own token, opaque, hidden only because the caller
sent it as its credential; `CREDENTIAL_FIELDS` are names whose values are hidden whatever
they look like.
"""

from __future__ import annotations

import re

from mock_server.core import escape

MARK = "ZQJ"
SECRET = "SEKRIT"  # in every credential of the table, and nowhere else
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLWFsaWNlIn0.SEKRITjwtSignature0123"

ESCAPING = {
    "add-mask": "\n::add-mask::ZQJ-secret",
    "stop-commands": "\r\n::stop-commands::ZQJ",
    "fake-error": "\n  ::error title=x::ZQJ",
    "legacy-command": "##[error]ZQJ",
    "azure-set-variable": "##vso[task.setvariable variable=ZQJ]1",
    "azure-any-case": "x ##VsO[task.complete result=Failed]ZQJ",
    "teamcity-service-message": "x ##teamcity[setParameter name='env.ZQJ' value='1']",
    "osc-title": "\x1b]0;ZQJ\x07",
    "csi-colour": "\x1b[31mZQJ\x1b[0m",
    "c1-csi": "\x9b31mZQJ",
    "nul": "\x00ZQJ",
    "del": "ZQJ\x7f",
    "next-line": "ZQJ\x85agents: [{name: injected}]",
    "bidi-override": "\u202eZQJ\u202c",
    "bidi-isolate": "\u2066ZQJ\u2069",
    "line-separator": "ZQJ\u2028::warning::x",
    "paragraph-separator": "ZQJ\u2029agents: [{name: injected}]",
    "zero-width": "\u200bZQJ\u200d",
    "byte-order-mark": "\ufeffZQJ",
    "tag-characters": "ZQJ\U000e0041\U000e0042",
    "markdown": "@everyone [ZQJ](https://evil.example) <img src=x onerror=alert(1)> `|` **b**",
}
MASKING = {
    "jwt-in-text": f"ZQJ {JWT}",
    "bearer-in-text": "ZQJ Authorization: Bearer SEKRITbearerValue42",
    "platform-api-key": "ZQJ tfy_SEKRITplatformKey42",
    "github-token": "ZQJ ghp_SEKRITgithubToken000000000000000",
    "access-token-query": "ZQJ ?access_token=SEKRITaccessToken42&page=2",
    "yaml-password": "ZQJ\npassword: SEKRITyamlPassword42",
    "json-text-secret": 'ZQJ {"clientSecret": "SEKRITjsonSecret42"',
}
CORPUS = {**ESCAPING, **MASKING}
OWN_CREDENTIAL = "opaque-SEKRIT-own-credential-0042"
# A caller's own credential in other shapes, each sent again as a client could: its request's
# headers, then a path (with its query) on the control plane and the JSON body it posts there.
STAGE, TOKEN = "/artifact-versions/stage", "/personal-access-tokens/ci"
OWN_CREDENTIAL_SHAPES: dict[str, tuple[dict[str, str], str, str | None]] = {
    "json-escapes-in-a-body": (
        {"Authorization": "Bearer opaque/SEKRIT/escaped-0042"}, STAGE,
        '{"note": "\\u006fpaque\\/SEKRIT\\/escaped-0042"}',
    ),
    "json-escapes-in-a-body-that-is-not-json": (
        {"Authorization": "Bearer opaque-SEKRIT-not-json-0042"}, STAGE,
        '{"note": "opaque\\u002dSEKRIT-not-json-0042",}',
    ),
    "basic-password-in-a-query": (
        {"Authorization": "Basic YWxpY2U6U0VLUklULXBhc3N3b3Jk"},  # alice:SEKRIT-password
        f"{TOKEN}?note=SEKRIT-password", None,
    ),
    "a-key-with-a-comma": (
        {"X-Api-Key": "SEKRIT1,opaque2"}, f"{TOKEN}?note=SEKRIT1,opaque2", None,
    ),
    "basic-padding-as-a-query-key": (
        {"Authorization": "Basic dXNlcjpSEKRITcGFzcw=="}, f"{TOKEN}?dXNlcjpSEKRITcGFzcw==", None,
    ),
    "plus-in-a-query-value": (
        {"Authorization": "Bearer opaque+SEKRIT+plus-0042"},
        f"{TOKEN}?note=opaque+SEKRIT+plus-0042", None,
    ),
    "token-scheme": (
        {"Authorization": "Token opaque-SEKRIT-token-0042"},
        f"{TOKEN}?note=opaque-SEKRIT-token-0042", None,
    ),
    "tab-after-bearer": (
        {"Authorization": "Bearer\topaque-SEKRIT-tab-0042"}, f"{TOKEN}?note=opaque-SEKRIT-tab-0042",
        None,
    ),
    "nameless-cookie": (
        {"Cookie": "opaque-SEKRIT-cookie-0042"}, f"{TOKEN}?note=opaque-SEKRIT-cookie-0042", None,
    ),
    "quoted-cookie": (
        {"Cookie": 'session="opaque-SEKRIT-quoted-0042"'},
        f"{TOKEN}?note=opaque-SEKRIT-quoted-0042", None,
    ),
    "in-a-header-name": (
        {"Authorization": "Bearer Opaque-SEKRIT-Name-0042", "X-Opaque-SEKRIT-Name-0042": "1"},
        TOKEN, None,
    ),
}  # fmt: skip
CREDENTIAL_FIELDS = (
    "password",
    "token",
    "apiKey",
    "clientSecret",
    "HF_TOKEN",
    "OPENAI_API_KEY",
    "DB_PASSWORD",
    "access_token",
)


def field_secret(field: str) -> str:
    """The value sent or stored under a credential-named field."""
    return f"{SECRET}-{field}-value"


# What a workflow command of GitHub, Azure Pipelines or TeamCity needs to be one.
_COMMAND = re.compile(r"##\[|##vso\[|##teamcity\[", re.IGNORECASE)


def unescaped(text: str, *, meant: re.Pattern[str] | None = None) -> list[str]:
    """The lines of an output that break the escaping rule: one holding a character the rule
    escapes (a tab aside: the mock's own columns), a workflow command of Azure or GitHub
    anywhere in it, or a line that is a GitHub command the mock did not mean (`meant`)."""
    found = []
    for line in text.split("\n"):
        if (
            any(escape.escaped(char) for char in line.replace("\t", ""))
            or _COMMAND.search(line)
            or (line.lstrip().startswith("::") and not (meant and meant.match(line)))
        ):
            found.append(line[:160])
    return found


def unmasked(text: str) -> list[str]:
    """The lines of an output that break the masking rule: one holding a credential (in any
    case: a header's name is kept lower-cased)."""
    return [line[:160] for line in text.split("\n") if SECRET.lower() in line.lower()]
