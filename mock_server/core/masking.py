"""What the live view hides of what it shows: credentials and secret values.

A browser tab is shown on a shared screen, in a screenshot, in a recorded demo. The journal
keeps what a request and its answer carried (a personal access token is the body of its
get-or-create; a client may send a token in a body by mistake), and the world keeps the
values of its secrets. The view shows where such a value is, its first characters and its
length, never the value: every JSON Web Token in any text, the value of a field or header
whose name says it holds a credential, and every secret value of the world.
"""

from __future__ import annotations

import re
from typing import Any

# Three base64url parts, the first two JSON objects (`{"` is `eyJ` in base64).
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*")
# Field and header names, lower case without `-` and `_`, that hold a credential.
_CREDENTIAL_NAMES = frozenset(
    {
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "apikey",
        "xapikey",
        "password",
        "secret",
        "clientsecret",
        "authorization",
        "proxyauthorization",
        "cookie",
        "setcookie",
    }
)
SHOWN = 6  # characters of a hidden value that are shown


def hidden(value: str) -> str:
    """A credential as the view shows it: its first characters and its length."""
    return f"{value[:SHOWN]}… (hidden, {len(value)} characters)"


def holds_credential(name: str) -> bool:
    """Whether a field or header of this name holds a credential."""
    return name.lower().replace("-", "").replace("_", "") in _CREDENTIAL_NAMES


def text(value: str) -> str:
    """A text with every JSON Web Token in it hidden."""
    return _JWT.sub(lambda found: hidden(found.group()), value)


def masked(value: Any, name: str = "") -> Any:
    """A JSON value with its credentials hidden: the string value of a field whose name
    says it holds one, and every JSON Web Token in any string (keys kept as they are)."""
    if isinstance(value, str):
        return hidden(value) if name and holds_credential(name) else text(value)
    if isinstance(value, list):
        return [masked(item, name) for item in value]
    if isinstance(value, dict):
        return {key: masked(item, str(key)) for key, item in value.items()}
    return value


def headers(found: dict[str, str]) -> dict[str, str]:
    """Headers with the value of each that carries a credential hidden."""
    return {
        name: hidden(value) if holds_credential(name) else text(value)
        for name, value in found.items()
    }
