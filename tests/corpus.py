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


# What a workflow command of GitHub or Azure Pipelines needs to be one.
_COMMAND = re.compile(r"##\[|##vso\[", re.IGNORECASE)


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
    """The lines of an output that break the masking rule: one holding a credential."""
    return [line[:160] for line in text.split("\n") if SECRET in line]
