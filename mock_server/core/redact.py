"""Keeping credentials and secret values out of what the drift proxy keeps and writes.

The proxy forwards a caller's token to the target and never keeps it: no header but the
journal's few harmless ones is kept, and every body, message or recording it keeps goes
through `masked` (JSON values) or `masked_text` (free text) first. What is replaced:
anything shaped like a JWT (the platform's tokens, whatever field carries them), an opaque
platform API key (`tfy_...`), and the string value of any field whose name says it holds a
credential (`token`, `HF_TOKEN`, `DB_PASSWORD`, `OPENAI_API_KEY`, ...) or a build secret's
`value`; a `platform-secret://` reference names a secret without holding it and is kept.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
SECRET_REFERENCE = "platform-secret://"
# Three base64url segments, the first a JSON object (`{"` is `eyJ`): a JWT, signed or not.
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")
_API_KEY = re.compile(r"\btfy_[A-Za-z0-9_-]+")
# A field name that says its value is a credential: alone, or as the last word of a name
# (`HF_TOKEN`, `api-key`, `clientSecret`); `token_type` or `tokenId` name no credential.
_SECRET_NAME = re.compile(
    r"(?:^|[_-]|(?<=[a-z]))(?:token|secret|password|passwd|api[_-]?key|apikey|credentials?|"
    r"private[_-]?key)$",
    re.IGNORECASE,
)
# Lists whose items hold a secret in `value` (a manifest's build secrets).
_SECRET_ITEMS = frozenset({"build_secrets", "buildSecrets"})


def secret_name(name: str) -> bool:
    """Whether a field of this name holds a credential."""
    return bool(_SECRET_NAME.search(name))


def masked_text(text: str) -> str:
    """Free text with every token in it replaced."""
    return _API_KEY.sub(REDACTED, _JWT.sub(REDACTED, text))


def masked(value: Any, name: str = "") -> Any:
    """A JSON value with every credential and secret value in it replaced (see the module);
    `name` is the field that holds it. The value given is not changed."""
    if isinstance(value, str):
        if secret_name(name) and not value.startswith(SECRET_REFERENCE):
            return REDACTED
        return masked_text(value)
    if isinstance(value, dict):
        return {key: masked(item, key) for key, item in value.items()}
    if isinstance(value, list):
        if name in _SECRET_ITEMS:
            return [_masked_item(item) for item in value]
        return [masked(item, name) for item in value]
    return value


def _masked_item(item: Any) -> Any:
    if isinstance(item, dict) and isinstance(item.get("value"), str):
        return {**masked(item), "value": masked(item["value"], "secret")}
    return masked(item)
