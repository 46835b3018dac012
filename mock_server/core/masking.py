"""The one masking rule: what of a credential leaves the process (nothing but `<hidden>`).

A journal entry is shown in a browser tab on a shared screen, a log line in a CI job's
public log, a report and a recording are files meant to be committed. Each of them is made
from what clients sent, what a target answered or what the world holds, and any of those may
carry a credential: the caller's own token (sent as a header, and again by mistake in a
query, a path or a body, or echoed by a target in an error), a personal access token in the
answer that made it, an API key or a password in a manifest's environment. So every such
value goes through this module before it is kept or shown, and what it hides is replaced by
`HIDDEN`, whole: neither its first characters nor its length.

What is hidden:

- in any text: anything shaped like a JSON Web Token (signed or not); an opaque platform API
  key (`tfy_...`) and the keys of well-known services by their prefix (GitHub's `ghp_...`,
  OpenAI's `sk-...`, Hugging Face's `hf_...`, AWS access key ids, Slack's `xox.-...`, GitLab's
  `glpat-...`); the credential of an authorization scheme (`Bearer ...`, `Basic ...`); the
  value of a credential-named field written as `name=value` or `name: value` (a query string's
  `?access_token=...`, a YAML or JSON text cut short);
- in a JSON value, besides: the value of every field whose name says it holds a credential
  (`token`, `password`, `apiKey`, `clientSecret`, `HF_TOKEN`, `OPENAI_API_KEY`, `DB_PASSWORD`,
  `authorization`, `cookie`, ...: by its last word, in any case, snake, kebab or camel), the
  `value` of an item whose `name` or `key` is such a name (`env: [{name: DB_PASSWORD, value:
  ...}]`), and the `value` (or `values`) of each item of a list of secrets (`secrets`,
  `build_secrets`);
- everywhere: the values given as `credentials` (the caller's own, read from its request's
  headers by `credentials_of`), wherever they appear, whatever their shape.

Kept: a `platform-secret://` reference, which names a secret without holding it; names that
only mention a credential (`token_type`, `tokenId`, `max_tokens`); an empty value; and
`HIDDEN` itself, so that masking twice changes nothing.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

HIDDEN = "<hidden>"
SECRET_REFERENCE = "platform-secret://"
# A value given to hide wherever it appears must be long enough not to be a common word.
MIN_CREDENTIAL = 8

# The last word of a field name that says its value is a credential: the whole name, or its
# last word after `_`, `-`, `.` or a letter (`HF_TOKEN`, `x-api-key`, `apiKey`, `accesstoken`,
# `clientSecret`); `token_type`, `tokenId` or `max_tokens` name no credential. `auth` is a
# word of its own after `_`, `-`, `.`, in camel case (`X-Auth`, `basicAuth`), or in capitals
# after an acronym (`HTTPAuth`, `XAUTH`): `oauth`, `OAuth` and `preauth` name no credential.
# An auth key (`X-Auth-Key`, Cloudflare's API key) is a key as any other.
_CREDENTIAL_WORD = (
    r"(?:token|secret|password|passwd|passphrase|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|signing[_-]?key|subscription[_-]?key|functions[_-]?key|"
    r"account[_-]?key|master[_-]?key|session[_-]?key|auth[_-]?key|credentials?|"
    r"authentication|authorization|cookie)"
)
_CREDENTIAL_NAME = re.compile(
    rf"(?i:(?:^|[_.-]|(?<=[a-z])){_CREDENTIAL_WORD})$"
    r"|(?:^|[_.-]|(?<=[a-z])(?=A)|(?<=[A-Z])(?<!^O)(?=A))(?i:auth)$"
)
# Lists whose items each hold a secret in `value`.
_SECRET_LISTS = frozenset({"secrets", "build_secrets", "buildSecrets"})

# Credentials known by their shape: a JWT (its header is a JSON object, `{"` is `eyJ`), a
# JWE or JWS of any number of parts (sought by `_without_jwts`), and keys known by their
# prefix. A JWT lower-cased (as a header's name, or a media type's parameter, is shown) or
# upper-cased has a header of 17 characters at least (`{"alg":"none"}` is 19): fewer
# would take names for one (`heyjude.tar.gz`).
_JWT = re.compile(
    r"eyJ[A-Za-z0-9_-]*+(?:\.[A-Za-z0-9_-]*+){2,4}"
    r"|(?:eyj|EYJ)[A-Za-z0-9_-]{14,}+(?:\.[A-Za-z0-9_-]*+){2,4}"
)
_JWT_START = re.compile(r"eyJ|eyj|EYJ")
_JWT_PART = re.compile(r"[A-Za-z0-9_-]*+")
_TOKEN = re.compile(
    r"\btfy_[A-Za-z0-9_-]+"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bsk-[A-Za-z0-9_-]{20,}"
    r"|\bhf_[A-Za-z0-9]{20,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
)
# The credential of an authorization scheme, as a header value or a text quoting one.
_SCHEME = re.compile(r"\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/-]{8,}=*)", re.IGNORECASE)
# A credential-named field's value in a text: `name=value` anywhere (a query string's
# `?access_token=...`, a form, an environment), `"name": value` (JSON or a dict's text, cut
# short or not JSON at all), `name: value` opening a line (YAML, a header) or what an
# escaped text shows as a line (after `\n`, `\x0a`, `\u2028`), and anywhere for a name
# that is no word of prose (`DB_PASSWORD: ...`, `password: ...`); not `no token: send one`.
# A name is sought from where a run of a name's characters begins (or after a lead), past the
# run's leading digits, dots and dashes (`-token`), and read whole (no backtracking): tried
# from each character of a run, a run of 16,000 characters cost seconds (quadratic).
_ASSIGNMENT = re.compile(
    r"""(?:(?P<lead>(?:^|\\(?:[nr]|x0[ad]|x85|u202[89]))[ \t]*(?:-[ \t]+)?|["'])"""
    r"""|(?<![A-Za-z0-9_.-])(?P<skip>[0-9.-]*+))"""
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*+)"""
    r"""(?P<between>["']?[ \t]*[:=][ \t]*)"""
    r"""(?P<scheme>(?:[Bb]earer|[Bb]asic)[ \t]+)?"""
    r"""(?P<value><hidden>|\[[^\]\n]*\]?|"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s&;,"'<>(){}\[\]]+)""",
    re.MULTILINE,
)
# A name written as a field is named, not as a word of prose (`DB_PASSWORD`, `apiKey`,
# `X-Api-Key`): its value after a `:` is hidden anywhere in a line; so is a password's.
_IDENTIFIER = re.compile(r"[_.-]|[a-z][A-Z]|^[A-Z0-9]+$")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase"})
# What a schema's message about a value begins with: the value, then what is wrong with it
# (`'x' is too short`, `['x'] is not of type 'string'`).
_QUOTED_FIRST = re.compile(r"^\S.*?(?= (?:is|does|was|has|should|must|expected)\b)", re.DOTALL)
# What any of the rules above needs in a text (lower-cased): a text holding none is left as
# it is. A long text is scanned once per word: a regex of them all, ignoring case, costs
# 50 times more on 16 KiB.
_HINTS = (
    "eyj", "tfy_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "hf_", "akia",
    "asia", "xox", "glpat-", "bearer", "basic", "token", "secret", "passw", "passphrase", "key",
    "credential", "auth", "cookie",
)  # fmt: skip
_HINT_BYTES = tuple(word.encode() for word in _HINTS)


def _by_first_letter(words: tuple[str, ...]) -> re.Pattern[str]:
    # The words grouped by their first letter (`t(?:fy_|oken)`): the search then tries a
    # position's group alone, a third faster on a request's texts than one branch a word.
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(re.escape(word[1:]))
    return re.compile("|".join(f"{re.escape(c)}(?:{'|'.join(r)})" for c, r in groups.items()))


_HINT = _by_first_letter(_HINTS)
SHORT = 256  # characters of a text under which one regex beats a scan per word


def _hinted(text: str) -> bool:
    # The words are sought lower-cased, in ASCII; the rules' own searches ignore case as
    # Python's `re` folds it, which takes a long s (U+017F) for an `s` and a dotted capital
    # I (U+0130) for an `i`: a text outside ASCII is read by the rules whatever its words.
    if not text.isascii():
        return True
    lowered = text.lower()
    if len(lowered) < SHORT:
        return _HINT.search(lowered) is not None
    return any(word in lowered for word in _HINTS)


# Short texts the rule gives back as they are, remembered: the same header names and values
# come with every request, and a name that only looks like a credential's (`authorization`)
# cost the rule's three searches, about ten microseconds, each time. Only such texts are
# kept (what the rule changes never is), at most _PLAIN_TEXTS of fewer than SHORT
# characters, forgotten all at once when full.
_PLAIN: dict[str, None] = {}
_PLAIN_TEXTS = 4096


def holds_credential(name: str) -> bool:
    """Whether a field, header or parameter of this name holds a credential."""
    return _named_for_a_credential(name[-_REMEMBERED_NAME:])


# The rule's search tries each position of a name against every word: a few microseconds a
# name, which the same dozen header and field names paid at every request, and tens of
# milliseconds for a name of 64,000 characters. It decides by a name's last word (of at
# most 21 characters, and the one before it), so a name's last 64 characters are read, and
# remembered (4,096 of them: a few hundred KiB whatever a client sends).
_REMEMBERED_NAME = 64


@functools.lru_cache(maxsize=4096)
def _named_for_a_credential(name: str) -> bool:
    return bool(_CREDENTIAL_NAME.search(name))


def credentials_of(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The caller's own credentials in its request's headers, to hide wherever they appear:
    of each header whose name says it holds one (`Authorization`, `X-Api-Key`,
    `Ocp-Apim-Subscription-Key`, `X-Auth`, ...), the value, each of a header sent twice
    (joined by `, `) apart, and the credential after a scheme's name (`Bearer VALUE`, `Token
    VALUE`: any word, then spaces or tabs), and a Basic credential's `user:password` and
    password; of a cookie, each cookie's value (a quoted one unquoted, a nameless one whole).
    Each is given too as a parsed query would show what a client sent of it in a query (`+`
    read as a space, `%` escapes read, its parts between `=` and `&` apart) and as its bytes
    read as UTF-8 (a header's are read as Latin-1). None shorter than MIN_CREDENTIAL (it
    could be a word); at most MAX_CREDENTIALS, `Authorization`'s first, then the other
    headers' (the longest first), their forms, the cookies' (the longest first) and theirs,
    each hidden before any shorter one."""
    # By rank: `Authorization`'s, the other headers', their forms, the cookies' and theirs.
    authorization: list[str] = []
    others: list[str] = []
    cookies: list[str] = []
    for name, value in headers.items():
        if not holds_credential(name):
            continue
        lowered = name.lower()
        if lowered == "cookie":  # `a=1; session=VALUE; "VALUE"`: each cookie's value
            for cookie in value.split(";"):
                named, equals, given = cookie.partition("=")
                cookies.append((given if equals else named).strip().strip('"'))
            continue
        found = authorization if lowered == "authorization" else others
        pieces = value.split(",")
        if len(pieces) > 1 and not _SCHEME_NAME.match(value):
            found.append(value.strip())  # a key with a comma in it (`ab,cd`), before its parts
        for piece in pieces:
            scheme = _SCHEME_NAME.match(piece)
            named = scheme[0].strip().lower() if scheme else ""
            if scheme:
                found.append(piece[scheme.end() :].strip())
            if named == "basic":  # `user:password`, and the password
                found += _basic_credentials(piece[scheme.end() :].strip() if scheme else "")
            if named not in ("bearer", "basic"):
                found.append(piece.strip())  # a value with a space in it, `Bearer`'s aside
    if not (others or cookies) and len(authorization) == 1:
        only = authorization[0]  # a token, as most are: no form of it differs
        if _PLAIN_CREDENTIAL.fullmatch(only):
            return (only,) if len(only) >= MIN_CREDENTIAL else ()
    sent = [*authorization, *sorted(others, key=len, reverse=True)]
    cookies.sort(key=len, reverse=True)
    ranked = [*sent, *_forms(sent), *cookies, *_forms(cookies)]
    # The first MAX_CREDENTIALS by rank, hidden longest first: a longer one may hold a shorter.
    kept = list(dict.fromkeys(c for c in ranked if len(c) >= MIN_CREDENTIAL))[:MAX_CREDENTIALS]
    return tuple(sorted(kept, key=lambda c: (-len(c), c)))


def _forms(credentials: list[str]) -> list[str]:
    # As a query's parse reads each, and its bytes read as UTF-8 (a header's are read as
    # Latin-1, a query's and a body's as UTF-8).
    forms = [form for credential in credentials for form in _query_forms(credential)]
    return forms + [form for c in [*credentials, *forms] if (form := _as_utf8(c))]


# At most this many credentials of one request: each is sought in every text of its entry,
# and a header of 60 KB holding 6,500 parts between `=`, or as many cookies, would multiply
# that search by thousands. (A client sending more pushes out of it what it ranks lowest.)
MAX_CREDENTIALS = 32


def _basic_credentials(encoded: str) -> list[str]:
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return []
    return [decoded, decoded.partition(":")[2]]


def _as_utf8(credential: str) -> str | None:
    if credential.isascii():
        return None
    try:
        return credential.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None


# A credential a query's parse and a reading as UTF-8 leave as it is.
_PLAIN_CREDENTIAL = re.compile(r"[A-Za-z0-9._~/-]*")


# A scheme's name before a credential in an authorization header (`Bearer `, `Token\t`).
_SCHEME_NAME = re.compile(r"\s*[A-Za-z][A-Za-z0-9_-]*[ \t]+(?=\S)")


def _query_forms(credential: str) -> list[str]:
    # What a query's parse makes of a credential sent in a query as it is: `+` read as a
    # space, `%41` as `A`, and a key and a value at each `=` (a Basic credential's padding:
    # `?dXNlcjpw==`) or pairs at each `&`.
    if _PLAIN_CREDENTIAL.fullmatch(credential):
        return []
    read = urllib.parse.unquote_plus(credential)
    return [read, *re.split(r"[=&]+", credential), *re.split(r"[=&]+", read)]


# How deep a value is read for assignments within it (`"note": "token=..."` is 2): text built
# to nest further (`key: [key: [...`, 1,200 deep in 7 KB) would cost a scan of the rest of
# the line at each depth, and Python's stack; past it, the rest is hidden whole.
MAX_NESTING = 8


def _assigned(found: re.Match[str], depth: int = 0) -> str:
    lead, skipped = found["lead"] or "", found["skip"] or ""
    if depth >= MAX_NESTING:
        return f"{lead}{skipped}{found['name']}{found['between']}{HIDDEN}"
    inner = functools.partial(_assigned, depth=depth + 1)
    name, between = found["name"], found["between"]
    before = f"{lead}{skipped}{name}{between}{found['scheme'] or ''}"
    value = found["value"]
    bare = value.strip("\"'")
    if "=" not in between:
        quoted = lead in ('"', "'") and between.startswith(lead)
        opening = found["lead"] is not None and lead not in ('"', "'")
        # A name of a field in prose (`query access_token: is not a parameter`) is followed
        # by words, not by a value.
        named = _IDENTIFIER.search(name) or name.lower() in _PASSWORD_WORDS
        named = named and not (value.isalpha() and value.islower())
        if not (quoted or opening or named) or value.startswith("//"):  # prose, a URL
            return before + _ASSIGNMENT.sub(inner, value)
    if not holds_credential(name) or bare in ("", HIDDEN):
        # What the value says may name a credential in its turn (`"note": "token=..."`).
        return before + _ASSIGNMENT.sub(inner, value)
    quote = value[0] if value[0] in "\"'" else ""
    closing = quote if len(value) > 1 and value.endswith(quote) else ""
    return f"{before}{quote}{HIDDEN}{closing}"


def without(text: str, credentials: Iterable[str]) -> str:
    """The text with each of `credentials` (the caller's own) hidden wherever it appears."""
    for credential in credentials:
        if credential in text:
            text = text.replace(credential, HIDDEN)
    return text


def without_in(value: Any, credentials: tuple[str, ...]) -> Any:
    """A JSON value with each of `credentials` hidden in its texts and keys (`without`)."""
    if isinstance(value, str):
        return without(value, credentials)
    if isinstance(value, dict):
        return {without_in(k, credentials): without_in(v, credentials) for k, v in value.items()}
    if isinstance(value, list):
        return [without_in(item, credentials) for item in value]
    return value


# What follows a JSON string's opening quote up to its end (its closing quote, a line's end
# or the text's): characters and escapes, read whole.
_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\.)*+')


def without_in_strings(text: str, credentials: tuple[str, ...]) -> str:
    """A text that is not JSON as a whole (a trailing comma, a body cut at its limit or
    nested too deeply) with each of `credentials` hidden in its JSON strings as their escapes
    read (`\\u0041`, `\\/`; an escape JSON has not, a raw tab, a string left open are read
    as they are): one pass, from each string's end to the next quote."""
    pieces: list[str] = []
    shown = at = 0
    while (start := text.find('"', at)) >= 0:
        found = _STRING_BODY.match(text, start + 1)
        end = found.end() if found else start + 1  # (it matches, if only nothing)
        closed = text.startswith('"', end)
        written = text[start + 1 : end]
        if "\\" in written:
            read = _ESCAPE.sub(_escaped, written)
            hidden = without(read, credentials)
            if hidden != read:  # written again in ASCII: a lone surrogate stays an escape
                again = json.dumps(hidden)
                pieces += (text[shown:start], again if closed else again[:-1])
                shown = end + closed
        at = end + closed
    return "".join((*pieces, text[shown:])) if pieces else text


# JSON's escapes, as a reader of JSON reads them.
_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _escaped(found: re.Match[str]) -> str:
    return chr(int(found[1], 16)) if found[1] else _ESCAPED[found[2]]


def masked_text(text: str, credentials: Iterable[str] = ()) -> str:
    """A text with every credential in it hidden (see the module)."""
    text = without(text, credentials)
    if text in _PLAIN or not _hinted(text):
        return text
    shown = _TOKEN.sub(HIDDEN, _without_jwts(text))
    shown = _ASSIGNMENT.sub(_assigned, _SCHEME.sub(_scheme, shown))
    if shown == text:
        _remember(_PLAIN, (text,))
    return shown


def _without_jwts(text: str) -> str:
    """The text with each JWT in it hidden (`_JWT`), in one pass: where one is sought from an
    `eyJ` and not found, none is found from another `eyJ` of the same part (the same dots
    follow), so the search goes on from the part's end, not from each of its characters (a
    text of 16,000 `eyJ` cost seconds so)."""
    pieces: list[str] = []
    shown = at = 0
    while start := _JWT_START.search(text, at):
        found = _JWT.match(text, start.start())
        if found:
            pieces += (text[shown : found.start()], HIDDEN)
            shown = at = found.end()
        else:
            part = _JWT_PART.match(text, start.start())
            at = part.end() if part else start.end()
    return "".join((*pieces, text[shown:])) if pieces else text


def _remember(memo: dict[str, None], texts: Iterable[str]) -> None:
    """Keep the short texts (fewer than SHORT characters) in a memo of at most _PLAIN_TEXTS,
    forgotten all at once when full: whatever a client sends, a few hundred KiB."""
    for text in texts:
        if len(text) < SHORT:
            if len(memo) >= _PLAIN_TEXTS:
                memo.clear()
            memo[text] = None


def _scheme(found: re.Match[str]) -> str:
    # `Bearer <hidden>` once hidden: the scheme and its spacing kept. A word of lower-case
    # letters after a scheme's name is prose (`basic authentication`), not a credential.
    if found[3].isalpha() and found[3].islower():
        return found.group()
    return f"{found[1]}{found[2]}{HIDDEN}"


def masked(value: Any, name: str = "", credentials: Iterable[str] = ()) -> Any:
    """A JSON value with every credential in it hidden (see the module); `name` is the field
    that holds it. The value given is not changed."""
    return _masked(value, name, tuple(credentials))


def _masked(value: Any, name: str, credentials: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        if value and name and holds_credential(name) and not _kept(value):
            return HIDDEN
        return masked_text(value, credentials)
    if isinstance(value, dict):
        return _masked_object(value, credentials)
    if isinstance(value, list):
        if name in _SECRET_LISTS:
            return [_secret_item(item, credentials) for item in value]
        return [_masked(item, name, credentials) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool) and holds_credential(name):
        return HIDDEN  # a PIN or a numeric key is a credential too
    return value


def _kept(value: str) -> bool:
    return value == HIDDEN or value.startswith(SECRET_REFERENCE)


def _masked_object(value: dict[Any, Any], credentials: tuple[str, ...]) -> dict[Any, Any]:
    # `{name: DB_PASSWORD, value: ...}`: the item's name says what its value is.
    named = value.get("name", value.get("key"))
    secret_value = isinstance(named, str) and holds_credential(named)
    shown: dict[Any, Any] = {}
    for key, item in value.items():
        field = "secret" if secret_value and key == "value" else str(key)
        shown_key = masked_text(key, credentials) if isinstance(key, str) else key
        shown[shown_key] = _masked(item, field, credentials)
    # A problem found in a field (`{field: body.password, message: "'x' is too short"}`):
    # the message quotes the value first, as a schema's messages do.
    where, message = value.get("field"), shown.get("message")
    if isinstance(where, str) and isinstance(message, str) and holds_credential(last_word(where)):
        shown["message"] = _QUOTED_FIRST.sub(HIDDEN, message, count=1)
    return shown


def last_word(path: str) -> str:
    """The name a field path ends with (`api_key` of `metadata.api_key`, `token` of
    `data[0].token`)."""
    words = [word for word in re.split(r"[.\[\]/]", path) if word and not word.isdigit()]
    return words[-1] if words else ""


def _secret_item(item: Any, credentials: tuple[str, ...]) -> Any:
    if not isinstance(item, dict):
        return _masked(item, "", credentials)
    shown = _masked_object(item, credentials)
    for key in ("value", "values"):  # a secret's value, or a fixture's list of its versions
        if key in item:
            shown[key] = _masked(item[key], "secret", ())
    return shown


def headers(found: Mapping[str, str], credentials: Iterable[str] = ()) -> dict[str, str]:
    """Headers with the value of each that carries a credential hidden."""
    shown: dict[str, str] = masked(dict(found), "", credentials)
    return shown


def known_plain(text: str, credentials: Iterable[str] = ()) -> bool:
    """Whether the rule is known to give the text back as it is: a short text it gave back
    unchanged before (remembered), holding none of `credentials`."""
    return text in _PLAIN and not any(credential in text for credential in credentials)


# Short texts holding no word the rules look for (`_HINTS`), remembered: a request's header
# and parameter names, media types and statuses come again with every request, and the
# search for the words cost more than the rest of the journal's look at an entry. At most
# _PLAIN_TEXTS of fewer than SHORT characters, forgotten all at once when full.
_UNHINTED: dict[str, None] = {}


def might_hold_any(texts: Sequence[str], credentials: Iterable[str] = ()) -> bool:
    """Whether any of `texts` may hold something the rules hide, by its own words or under
    another's name, or one of `credentials`: as `might_hold_text` of each (a word sought
    cannot span two texts), with the texts known to hold no word the rules look for."""
    found = tuple(credentials)
    if found:
        joined = "\n".join(texts)
        if any(credential in joined for credential in found):
            return True
    unknown = [text for text in texts if text not in _UNHINTED]
    if not unknown:
        return False
    if _hinted("\n".join(unknown)):
        return True
    _remember(_UNHINTED, unknown)
    return False


def might_hold_text(text: str, credentials: Iterable[str] = ()) -> bool:
    """Whether a text may hold something the rules hide, or one of `credentials`: when not,
    `masked_text` would give it back as it is."""
    return any(credential in text for credential in credentials) or _hinted(text)


def might_hold(raw: bytes) -> bool:
    """Whether a body of these bytes may hold something the rules hide (the caller's own
    credentials aside): when not, it is kept as it came, without being read."""
    if not raw.isascii():  # as a text's (`_hinted`)
        return True
    lowered = raw.lower()
    return any(word in lowered for word in _HINT_BYTES)


def hidden_values(value: Any, name: str = "") -> set[str]:
    """The values of a JSON value that `masked` hides by their field's name, long enough to
    be hidden wherever else they appear (an answer echoing a password it was sent)."""
    found: set[str] = set()
    if isinstance(value, str):
        if len(value) >= MIN_CREDENTIAL and holds_credential(name) and not _kept(value):
            found.add(value)
    elif isinstance(value, dict):
        named = value.get("name", value.get("key"))
        secret_value = isinstance(named, str) and holds_credential(named)
        for key, item in value.items():
            found |= hidden_values(item, "secret" if secret_value and key == "value" else str(key))
    elif isinstance(value, list):
        for item in value:
            if name in _SECRET_LISTS and isinstance(item, dict):
                found |= hidden_values(item.get("value"), "secret")
                found |= hidden_values(item.get("values"), "secret")
            found |= hidden_values(item, name)
    return found
