"""Checking JSON against the contract's schemas, explaining every violation; reading JSON strictly.

This is the part of validation that knows nothing of the HTTP stack: the request and response
validators plugged into Connexion (`mock_server.http.validators`), the fixture loader and the
state's own checks all use it.

Each schema is checked by jsonschema-rs first (compiled once, a hundred times faster than
jsonschema on a page of job runs); only an instance it rejects goes to the Python jsonschema
validator, whose errors explain each violation.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import json
import math
import re
import threading
import typing as t
from collections import Counter

import jsonschema_rs
from jsonschema import Draft4Validator, ValidationError
from jsonschema.validators import extend

from mock_server.core import errors


# The two dialects of JSON Schema an OpenAPI 3.0 document speaks (as Connexion's own
# validators do: `tests/test_connexion_hooks.py` checks they agree): Draft 4 where `nullable`
# admits null, and, for what the server sends, where a `writeOnly` property may not appear.
def _nullable(check: t.Callable[..., t.Iterator[ValidationError]]) -> t.Any:
    def nullable(
        validator: t.Any, value: t.Any, instance: t.Any, schema: dict[str, t.Any]
    ) -> t.Iterator[ValidationError]:
        if instance is None and (schema.get("x-nullable") is True or schema.get("nullable")):
            return
        yield from check(validator, value, instance, schema)

    return nullable


def _write_only(
    validator: t.Any, value: t.Any, instance: t.Any, schema: dict[str, t.Any]
) -> t.Iterator[ValidationError]:
    yield ValidationError("Property is write-only")


_NULLABLE = {
    "type": _nullable(Draft4Validator.VALIDATORS["type"]),
    "enum": _nullable(Draft4Validator.VALIDATORS["enum"]),
}
RequestValidator: type[Draft4Validator] = extend(Draft4Validator, _NULLABLE)
ResponseValidator: type[Draft4Validator] = extend(
    Draft4Validator, {**_NULLABLE, "writeOnly": _write_only, "x-writeOnly": _write_only}
)

MAX_BODY_BYTES = 1024 * 1024
# Operations that take more: a state dump of a world of 100,000 job runs (about 25 MB of
# JSON) loads back through the admin API in one request (spec/admin.yaml says so).
BODY_LIMITS = {"adminLoadFixtures": 64 * 1024 * 1024}
# Held while a body over MAX_BODY_BYTES is read or checked (off the event loop): reading one
# takes several times its size in memory, so big bodies are read one at a time.
ONE_BIG_BODY = threading.Lock()
MAX_DETAILS = 100  # violations listed in one error body
MAX_DEPTH = 64  # levels of nesting a JSON value may have (orjson writes at most 255)
UTF8_CHARSETS = ("utf-8", "utf8", "us-ascii", "ascii")  # ASCII is UTF-8 too
Detail = errors.Violation
Ruled = tuple[str, Detail]  # a violation and the JSON Schema keyword it broke

# Keywords of OpenAPI 3.0 schemas that JSON Schema does not have.
_OPENAPI_ONLY = frozenset({"nullable", "discriminator", "example", "xml", "externalDocs"})
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties"})
_SUBSCHEMAS = frozenset({"items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"})


def json_schema(node: t.Any) -> t.Any:
    """An OpenAPI 3.0 schema as plain JSON Schema draft 4: `nullable` becomes a `null` type
    (and a `None` enum value), the OpenAPI-only keywords go. Property names are kept as they
    are, whatever they are called."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, t.Any] = {}
    for key, value in node.items():
        if key in _OPENAPI_ONLY or key.startswith("x-"):
            continue
        if key in _SUBSCHEMA_MAPS:
            out[key] = {name: json_schema(sub) for name, sub in value.items()}
        else:
            out[key] = json_schema(value) if key in _SUBSCHEMAS else value
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        if "type" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


class CompiledSchema:
    """One schema's validators: jsonschema-rs decides, Python jsonschema explains."""

    def __init__(self, schema: dict[str, t.Any], cls: type[Draft4Validator]):
        self.schema = schema
        self.explainer = cls(schema, format_checker=Draft4Validator.FORMAT_CHECKER)
        try:
            self.fast: t.Any = jsonschema_rs.Draft4Validator(
                json_schema(schema), validate_formats=True
            )
        except Exception:  # a schema jsonschema-rs cannot compile is checked in Python only
            self.fast = None

    def is_valid(self, instance: t.Any) -> bool | None:
        """True or False when jsonschema-rs can tell; None when it cannot take the instance
        (e.g. an integer too large for it)."""
        if self.fast is None:
            return None
        try:
            return bool(self.fast.is_valid(instance))
        except Exception:
            return None


# Compiled schemas by schema identity. The schemas belong to the loaded specification and live
# as long as it does; the entry keeps its schema alive so the id is never reused.
_compiled: dict[tuple[int, type], CompiledSchema] = {}


def compiled(
    schema: dict[str, t.Any], cls: type[Draft4Validator] = RequestValidator
) -> CompiledSchema:
    """The compiled form of a schema, built on first use."""
    entry = _compiled.get((id(schema), cls))
    if entry is None or entry.schema is not schema:
        entry = _compiled[(id(schema), cls)] = CompiledSchema(schema, cls)
    return entry


def field_path(path: t.Iterable[t.Any]) -> str:
    """`manifest.source.type`, `tags[2]`: a JSON path a client author can read."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def explain(error: ValidationError, location: str, prefix: tuple[t.Any, ...] = ()) -> list[Detail]:
    """One detail per violation in a jsonschema error, following the discriminator of a oneOf."""
    return [detail for _, detail in _explained(error, location, prefix)]


# What a value with fewer items or fields breaks: where the cut shortened a list or an object,
# such a violation is the cut's, not the value's.
_FEWER = frozenset({"minItems", "minProperties", "required", "contains", "dependentRequired"})


def _explained(
    error: ValidationError,
    location: str,
    prefix: tuple[t.Any, ...],
    shortened: frozenset[tuple[t.Any, ...]] = frozenset(),
) -> list[Ruled]:
    if error.validator in _FEWER and tuple(error.absolute_path) in shortened:
        return []
    where = field_path([*prefix, *error.absolute_path])
    instance, schema = error.instance, error.schema
    if error.validator == "required":
        match = re.match(r"'(.+)' is a required property", error.message)
        name = match.group(1) if match else ""
        detail: Detail = {
            "location": location,
            "field": _join(where, name),
            "message": "is required",
        }
        return [("required", detail)]
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        allowed = set(schema.get("properties", {}))
        message = f"is not a field of this object (allowed: {', '.join(sorted(allowed))})"
        # The first in order of the fields an answer lists (of 125,000 sent, 100).
        extras = heapq.nsmallest(MAX_DETAILS, set(instance) - allowed)
        return [
            (
                "additionalProperties",
                {"location": location, "field": _join(where, extra), "message": message},
            )
            for extra in extras
        ]
    if error.validator == "oneOf" and "discriminator" in schema and isinstance(instance, dict):
        prop = schema["discriminator"]["propertyName"]
        index = discriminated_index(instance, schema)
        if index is not None:
            found = [e for e in error.context or () if e.relative_schema_path[0] == index]
            return [pair for e in found for pair in _explained(e, location, prefix, shortened)]
        choices = [v["properties"][prop]["enum"][0] for v in schema["oneOf"]]
        detail = {
            "location": location,
            "field": _join(where, prop),
            "message": f"must be one of {', '.join(choices)}",
        }
        return [("enum", detail)]
    detail = {"location": location, "field": where, "message": _short(error.message)}
    return [(str(error.validator), detail)]


# Characters of a schema's message kept: jsonschema writes the whole value into it (`[...] is
# too long` of a 100,000-item array was 1.5 MB, then journaled, masked and reported), so a
# long one keeps its start and its end (what is wrong with the value).
MAX_MESSAGE = 400


def _short(message: str) -> str:
    if len(message) <= MAX_MESSAGE:
        return message
    head, tail = message[: MAX_MESSAGE // 2], message[-MAX_MESSAGE // 4 :]
    return f"{head}… ({len(message)} characters) …{tail}"


def violations(
    schema: CompiledSchema, instance: t.Any, location: str, prefix: tuple[t.Any, ...] = ()
) -> list[Detail]:
    """Every violation of the schema by the instance, explained; [] when it is valid."""
    return [detail for _, detail in ruled_violations(schema, instance, location, prefix)]


def ruled_violations(
    schema: CompiledSchema, instance: t.Any, location: str, prefix: tuple[t.Any, ...] = ()
) -> list[Ruled]:
    """Every violation of the schema by the instance, each with the JSON Schema keyword it
    broke (`required`, `additionalProperties`, `type`, `enum`, `pattern`, ...; an empty
    keyword when only jsonschema-rs could say); [] when it is valid."""
    verdict = schema.is_valid(instance)
    if verdict:
        return []
    huge = _more_values_than(instance, MAX_EXPLAINED_VALUES)
    shortened: frozenset[tuple[t.Any, ...]] = frozenset()
    if huge:
        # Both libraries explain a oneOf by checking each branch whole and keeping every
        # error of each: 100,000 items under a oneOf was 700,000 descents, 3 s of the event
        # loop and 600 MB (jsonschema), or 200,000 error objects and 2 s (jsonschema-rs). Past
        # a size, what is explained is the value cut to its first values; if nothing is wrong
        # with those (what is wrong lies past the cut), the value is said not to match.
        # A huge value jsonschema-rs cannot read (verdict None: a lone surrogate in a
        # response the journal shows) is judged by its first values.
        instance, shortened = _cut(instance)
        if schema.is_valid(instance):
            return [_not_explained(location, prefix)]
    # A body of half a million wrong items has as many violations: explaining them all would
    # hold the event loop for seconds and answer tens of megabytes. The first ones say it.
    found = [
        pair
        for error in itertools.islice(schema.explainer.iter_errors(instance), MAX_DETAILS)
        for pair in _explained(error, location, prefix, shortened)
    ][:MAX_DETAILS]
    if not found and schema.fast is not None:
        # jsonschema-rs is the stricter of the two (it checks formats jsonschema may skip).
        found = _fast_violations(schema, instance, location, prefix, shortened)
    if not found and huge and verdict is False:
        found = [_not_explained(location, prefix)]
    return found


def _not_explained(location: str, prefix: tuple[t.Any, ...]) -> Ruled:
    message = (
        "does not match the contract's schema (a value of more than "
        f"{MAX_EXPLAINED_VALUES:,} JSON values is not explained further)"
    )
    return ("", {"location": location, "field": field_path(list(prefix)), "message": message})


# JSON values of a value explained whole; a larger one is explained by its first values
# (jsonschema took 0.12 s to explain 10,000 under the embeddings' `oneOf`). More than any
# `maxItems` of the contract (2,048), so that a list too long near the start is still one.
MAX_EXPLAINED_VALUES = 3_000


def _cut(instance: t.Any) -> tuple[t.Any, frozenset[tuple[t.Any, ...]]]:
    """A copy of the value with its lists cut, depth first, to `MAX_EXPLAINED_VALUES` values
    in all (a cut of each list alone left 500 lists of 650 numbers whole: seconds of the
    event loop to explain). Objects keep their fields, so that no field sent is said to be
    missing, but their first `MAX_EXPLAINED_VALUES` only: no object of the contract names
    as many, so the rest are fields it does not have (125,000 of them, under a `oneOf`, were
    0.8 s). With it, where it shortened a list or an object: what fewer items or fields
    break there (`minItems`, `required`, ...) is the cut's doing, not the value's."""
    room = MAX_EXPLAINED_VALUES
    shortened: set[tuple[t.Any, ...]] = set()

    def cut(value: t.Any, path: tuple[t.Any, ...]) -> t.Any:
        nonlocal room
        room -= 1
        if isinstance(value, list):
            kept = []
            for index, item in enumerate(value[:MAX_EXPLAINED_VALUES]):
                if room <= 0:
                    break
                kept.append(cut(item, (*path, index)))
            if len(kept) < len(value):
                shortened.add(path)
            return kept
        if isinstance(value, dict):
            fields = itertools.islice(value.items(), MAX_EXPLAINED_VALUES)
            out = {key: cut(field, (*path, key)) for key, field in fields}
            if len(out) < len(value):
                shortened.add(path)
            return out
        return value

    return cut(instance, ()), frozenset(shortened)


def _more_values_than(instance: t.Any, limit: int) -> bool:
    """Whether the JSON value holds more than `limit` values, counting no further."""
    pending, counted = [instance], 0
    while pending:
        value = pending.pop()
        counted += 1
        if counted > limit:
            return True
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


def _fast_violations(
    schema: CompiledSchema,
    instance: t.Any,
    location: str,
    prefix: tuple[t.Any, ...],
    shortened: frozenset[tuple[t.Any, ...]] = frozenset(),
) -> list[Ruled]:
    """jsonschema-rs's violations, less any where the cut shortened the value (its errors
    do not name their keyword: the cut's are told apart by their place)."""
    assert schema.fast is not None
    try:
        return [
            ("", {"location": location, "field": field_path([*prefix, *e.instance_path]),
                  "message": _short(e.message)})
            for e in itertools.islice(schema.fast.iter_errors(instance), MAX_DETAILS)
            if tuple(e.instance_path) not in shortened
        ]  # fmt: skip
    except Exception:  # a value jsonschema-rs cannot read: the other library's verdict stands
        return []


def stream_events(raw: bytes) -> list[dict[str, str]]:
    """The events of a server-sent event stream, each as its fields (`event`, `data`, ...);
    a line without a colon is a field with an empty value, as the format has it. Raises
    UnicodeDecodeError for a stream that is not UTF-8."""
    events = []
    for block in raw.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):  # a comment
                continue
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


def stream_violations(
    schema: dict[str, t.Any], events: list[dict[str, str]], cls: type
) -> list[Ruled]:
    """Every violation of a server-sent event stream of the contract, whose schema describes
    one event, `{"event", "data"}` (or `{"data"}` alone), as OpenAPI before 3.2 does: each
    event is checked against it, the JSON in its `data` against the schema its
    `x-data-schema` names, and the `type` in the data must be the one its `event` line
    names. Where `data` names an end marker (`x-done`, such as `[DONE]`), the stream ends
    with it, and with it alone. Each with the keyword it broke."""
    found: list[Ruled] = []
    data_field = schema.get("properties", {}).get("data", {})
    data_schema, done = data_field.get("x-data-schema"), data_field.get("x-done")
    if done is not None and (not events or events[-1].get("data") != done):
        detail: Detail = {"location": "response", "field": "event",
                  "message": f"the stream does not end with {done}"}  # fmt: skip
        found.append(("const", detail))
    for index, event in enumerate(events):
        where = ("event", str(index))
        if done is not None and event.get("data") == done:
            if index != len(events) - 1:
                detail = {"location": "response", "field": ".".join(where),
                          "message": f"{done} before the end of the stream"}  # fmt: skip
                found.append(("const", detail))
            continue
        found += ruled_violations(compiled(schema, cls), event, "response", where)
        if found or data_schema is None:
            continue
        try:
            payload = read_json(event["data"])
        except ValueError as exc:
            detail = {"location": "response", "field": field_path([*where, "data"]),
                      "message": f"is not JSON: {exc}"}  # fmt: skip
            found.append(("type", detail))
            continue
        found += ruled_violations(compiled(data_schema, cls), payload, "response", (*where, "data"))
        named = event.get("event")
        if (
            not found
            and named is not None
            and isinstance(payload, dict)
            and payload.get("type") != named
        ):
            detail = {"location": "response", "field": ".".join(where),
                      "message": "event names another type than its data"}  # fmt: skip
            found.append(("const", detail))
    return found


def summary(details: list[Detail]) -> str:
    """The first violations as one line, `field: message; ...`."""
    return "; ".join(f"{d['field']}: {d['message']}" for d in details[:3])


def invalid_request(details: list[Detail]) -> errors.InvalidRequest:
    shown = "; ".join(
        f"{d['location']} {d['field']}: {d['message']}"
        if d["field"]
        else f"{d['location']}: {d['message']}"
        for d in details[:3]
    )
    more = f" (and {len(details) - 3} more)" if len(details) > 3 else ""
    return errors.InvalidRequest(
        f"Request does not conform to the API contract: {shown}{more}", details=details
    )


def scalar_type(schema: dict[str, t.Any]) -> str | None:
    """The type of a parameter's values: its own, or its items' for an array."""
    if schema.get("type") == "array":
        return (schema.get("items") or {}).get("type")
    return schema.get("type")


def _unique_keys(pairs: list[tuple[str, t.Any]]) -> dict[str, t.Any]:
    # JSON leaves repeated keys undefined; Python would keep the last one silently.
    found = dict(pairs)
    if len(found) != len(pairs):
        repeated = min(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise ValueError(f"key {repeated!r} appears more than once in an object")
    return found


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # only then can a string be broken


def is_unicode(value: t.Any) -> bool:
    """Whether every string in a parsed JSON value is Unicode text: `json` reads a `\\udfff`
    escape as a lone surrogate, which no UTF-8 encoder (orjson's included) will write."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _not_json(constant: str) -> t.NoReturn:
    # Python's json module reads NaN and Infinity, which JSON does not have.
    raise ValueError(f"{constant} is not a JSON value")


MAX_INTEGER_DIGITS = 300  # of an integer in JSON text: far past 2^53 - 1, far below int()'s


def _integer(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INTEGER_DIGITS:  # int() would refuse past 4,300 digits, naming Python
        raise ValueError(f"an integer of {digits} digits is out of the range of a number")
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: JSON text, but no number a client can mean
        raise ValueError(f"{text} is out of the range of a number")
    return value


def depth(value: t.Any) -> int:
    """How deeply a JSON value nests arrays and objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def read_json(text: str) -> t.Any:
    """JSON text read strictly, the one reader of bodies and JSON-in-header values: no NaN,
    Infinity or out-of-range number, no repeated key, no lone surrogate, bounded nesting.
    Raises ValueError saying why."""
    try:
        value = json.loads(
            text,
            parse_constant=_not_json,
            parse_float=_finite,
            parse_int=_integer,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if depth(value) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    if _SURROGATE_ESCAPE.search(text) and not is_unicode(value):
        raise ValueError("a \\u escape gives a lone surrogate, not a character")
    return value


def without_null_optionals(value: t.Any, schema: t.Any) -> t.Any:
    """The body with every optional, non-nullable field given as `null` left out: the
    platform's SDK sends `null` for an optional field its caller set to `None`, and the
    contract reads that as absent. A required field given as `null` stays, to be refused.
    Returns `value` itself when nothing was left out."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = [without_null_optionals(item, schema["items"]) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if not isinstance(value, dict):
        return value
    index = discriminated_index(value, schema)
    if index is not None:
        return without_null_optionals(value, schema["oneOf"][index])
    properties, required = schema.get("properties", {}), set(schema.get("required", ()))
    out: dict[str, t.Any] = {}
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None:
            out[key] = item  # not a field of the object: validation says so
        elif item is None and key not in required and not sub.get("nullable"):
            continue
        else:
            out[key] = without_null_optionals(item, sub)
    changed = len(out) != len(value) or any(out[k] is not value[k] for k in out)
    return out if changed else value


def with_defaults(value: t.Any, schema: t.Any) -> t.Any:
    """A valid body with the spec's default for each field it leaves out, at every level of
    objects, so that a handler restates no default of the contract. Returns `value` itself
    when nothing was filled."""
    if not isinstance(schema, dict) or not isinstance(value, dict):
        return value
    index = discriminated_index(value, schema)
    if index is not None:
        return with_defaults(value, schema["oneOf"][index])
    properties = schema.get("properties", {})
    out = dict(value)
    for name, sub in properties.items():
        if name not in out and isinstance(sub, dict) and "default" in sub:
            out[name] = copy.deepcopy(sub["default"])
        elif name in out:
            out[name] = with_defaults(out[name], sub)
    changed = len(out) != len(value) or any(out[k] is not value[k] for k in value)
    return out if changed else value


def discriminated_index(value: dict[str, t.Any], schema: dict[str, t.Any]) -> int | None:
    """The index of the variant of a discriminated `oneOf` the value's discriminator names."""
    if "oneOf" not in schema or "discriminator" not in schema:
        return None
    prop = schema["discriminator"]["propertyName"]
    for index, variant in enumerate(schema["oneOf"]):
        if value.get(prop) in variant.get("properties", {}).get(prop, {}).get("enum", ()):
            return index
    return None


def body_problem(message: str) -> errors.InvalidRequest:
    return invalid_request([{"location": "body", "field": "", "message": message}])


def body_limit(operation_id: str | None) -> int:
    """The most bytes the body of a request of this operation may have."""
    return BODY_LIMITS.get(operation_id or "", MAX_BODY_BYTES)


NO_BODY = object()  # what `read_request_body` gives for a request that sent no body


def read_request_body(
    raw: bytes, schema: dict[str, t.Any], *, required: bool, encoding: str = "utf-8"
) -> t.Any:
    """A request's JSON body as the contract reads it, for the mock and the proxy alike: its
    text in `encoding`, read strictly (`read_json`), an optional field sent as null read as
    absent, checked against `schema`; `NO_BODY` when none was sent and none is required.
    Raises InvalidRequest naming the first problem of reading, or every violation."""
    if not raw:
        if required:
            raise body_problem("a JSON request body is required")
        return NO_BODY
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise body_problem(f"is not valid {encoding} text") from None
    try:
        body = read_json(text)
    except ValueError as exc:
        raise body_problem(f"is not valid JSON: {exc}") from None
    cleaned = without_null_optionals(body, schema)
    details = violations(compiled(schema), cleaned, "body")
    if details:
        raise invalid_request(details)
    return cleaned
