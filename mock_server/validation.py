"""Request and response validation plugged into Connexion: every violation reported at once.

Connexion's own validators stop at the first error and rebuild a jsonschema validator on every
request. These report one `details` entry per violation (with its location and field), build
each validator once per schema, and raise the platform's error classes instead of
`application/problem+json` problems.

Each schema is checked by jsonschema-rs first (compiled once, a hundred times faster than
jsonschema on a page of job runs); only an instance it rejects goes to the Python jsonschema
validator, whose errors explain each violation.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import typing as t
from collections import Counter
from urllib.parse import parse_qsl

import jsonschema_rs
import orjson
from connexion.datastructures import MediaTypeDict
from connexion.json_schema import Draft4RequestValidator, Draft4ResponseValidator
from connexion.lifecycle import ConnexionRequest
from connexion.middleware.request_validation import (
    RequestValidationAPI,
    RequestValidationOperation,
)
from connexion.middleware.request_validation import (
    RequestValidationMiddleware as ConnexionRequestValidationMiddleware,
)
from connexion.uri_parsing import OpenAPIURIParser
from connexion.utils import is_nullable
from connexion.validators import (
    JSONRequestBodyValidator,
    JSONResponseBodyValidator,
)
from connexion.validators import (
    ParameterValidator as ConnexionParameterValidator,
)
from jsonschema import Draft4Validator, ValidationError
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send
from werkzeug.http import parse_options_header

from mock_server import errors

MAX_BODY_BYTES = 1024 * 1024
# Operations that take more: a state dump of a world of 100,000 job runs (about 25 MB of
# JSON) loads back through the admin API in one request (spec/admin.yaml says so).
BODY_LIMITS = {"adminLoadFixtures": 64 * 1024 * 1024}
MAX_DETAILS = 100  # violations listed in one error body
MAX_DEPTH = 64  # levels of nesting a JSON value may have (orjson writes at most 255)
UTF8_CHARSETS = ("utf-8", "utf8", "us-ascii", "ascii")  # ASCII is UTF-8 too
Detail = dict[str, t.Any]

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

    def __init__(self, schema: dict, cls: type[Draft4Validator]):
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


def compiled(schema: dict, cls: type[Draft4Validator] = Draft4RequestValidator) -> CompiledSchema:
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


def explain(error: ValidationError, location: str, prefix: tuple = ()) -> list[Detail]:
    """One detail per violation in a jsonschema error, following the discriminator of a oneOf."""
    where = field_path([*prefix, *error.absolute_path])
    instance, schema = error.instance, error.schema
    if error.validator == "required":
        match = re.match(r"'(.+)' is a required property", error.message)
        name = match.group(1) if match else ""
        return [{"location": location, "field": _join(where, name), "message": "is required"}]
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        allowed = set(schema.get("properties", {}))
        return [
            {
                "location": location,
                "field": _join(where, extra),
                "message": f"is not a field of this object (allowed: {', '.join(sorted(allowed))})",
            }
            for extra in sorted(set(instance) - allowed)
        ]
    if error.validator == "oneOf" and "discriminator" in schema and isinstance(instance, dict):
        prop = schema["discriminator"]["propertyName"]
        index = _discriminated_index(instance, schema)
        if index is not None:
            found = [e for e in error.context or () if e.relative_schema_path[0] == index]
            return [d for e in found for d in explain(e, location, prefix)]
        choices = [v["properties"][prop]["enum"][0] for v in schema["oneOf"]]
        return [
            {
                "location": location,
                "field": _join(where, prop),
                "message": f"must be one of {', '.join(choices)}",
            }
        ]
    return [{"location": location, "field": where, "message": error.message}]


def violations(
    schema: CompiledSchema, instance: t.Any, location: str, prefix: tuple = ()
) -> list[Detail]:
    """Every violation of the schema by the instance, explained; [] when it is valid."""
    if schema.is_valid(instance):
        return []
    # A body of half a million wrong items has as many violations: explaining them all would
    # hold the event loop for seconds and answer tens of megabytes. The first ones say it.
    found = [
        detail
        for error in itertools.islice(schema.explainer.iter_errors(instance), MAX_DETAILS)
        for detail in explain(error, location, prefix)
    ][:MAX_DETAILS]
    if not found and schema.fast is not None:
        # jsonschema-rs is the stricter of the two (it checks formats jsonschema may skip).
        try:
            found = [
                {"location": location, "field": field_path([*prefix, *e.instance_path]),
                 "message": e.message}
                for e in schema.fast.iter_errors(instance)
            ]  # fmt: skip
        except Exception:
            found = []
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


class RepeatedKeysURIParser(OpenAPIURIParser):
    """Connexion's OpenAPI URI parser, reading an exploded form array (`?status=A&status=B`,
    the style of every array query parameter of the contract) as its repeated keys only.
    Connexion joins the values with commas and splits them again, so `?status=A,B` was read
    as two statuses; by the contract it is one value, `A,B`, which is not a status (and
    `?triggeredBy=a,b` names one slug, `a,b`)."""

    @staticmethod
    def _resolve_param_duplicates(values: t.Any, param_defn: dict, _in: str) -> t.Any:
        style = param_defn.get("style", OpenAPIURIParser.style_defaults[_in])
        if _in == "query" and style == "form" and param_defn.get("explode", True):
            return list(values)
        return OpenAPIURIParser._resolve_param_duplicates(values, param_defn, _in)

    @staticmethod
    def _split(value: t.Any, param_defn: dict, _in: str) -> t.Any:
        if isinstance(value, list):  # the repeated keys, kept as they came
            return value
        return OpenAPIURIParser._split(value, param_defn, _in)


# The one grammar of numbers in a query: what JSON writes, with leading zeros allowed. Python's
# int() and float() would also take `1_0`, ` 5`, `+5`, `inf` and digits of other scripts.
INTEGER_TEXT = re.compile(r"-?[0-9]+")
NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def number_problem(text: str, kind: str) -> str | None:
    """Why a query value is not an integer or number as the contract writes them, if it is not."""
    if kind == "integer" and not INTEGER_TEXT.fullmatch(text):
        return f"{text!r} is not a whole number (ASCII digits, with an optional leading -)"
    if kind == "number" and not (NUMBER_TEXT.fullmatch(text) and math.isfinite(float(text))):
        return f"{text!r} is not a finite number (ASCII digits, an optional - and fraction)"
    return None


def _scalar_type(schema: dict) -> str | None:
    """The type of a parameter's values: its own, or its items' for an array."""
    if schema.get("type") == "array":
        return (schema.get("items") or {}).get("type")
    return schema.get("type")


class ParameterValidator(ConnexionParameterValidator):
    """Checks path, query and header parameters; unknown or repeated query keys are errors,
    and so is a number not written as the contract writes numbers."""

    def validate(self, scope: Scope) -> None:
        request = ConnexionRequest(scope, uri_parser=self.uri_parser)
        details: list[Detail] = []
        known = {p["name"]: p for p in self.parameters.get("query", [])}
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        raw_keys = [key for key, _ in pairs]
        misspelt: set[str] = set()
        seen: Counter[str] = Counter()
        for key, value in pairs:
            param = known.get(key)
            schema = param.get("schema", {}) if param else {}
            kind = _scalar_type(schema)
            problem = number_problem(value, kind) if kind in ("integer", "number") else None
            field = f"{key}[{seen[key]}]" if schema.get("type") == "array" else key
            seen[key] += 1
            if problem and (key not in misspelt or field != key):
                misspelt.add(key)
                details.append({"location": "query", "field": field, "message": problem})
        for key in dict.fromkeys(raw_keys):
            param = known.get(key)
            if param is None:
                if self.strict_validation:
                    details.append(
                        {
                            "location": "query",
                            "field": key,
                            "message": "is not a parameter of this operation",
                        }
                    )
            elif raw_keys.count(key) > 1 and param.get("schema", {}).get("type") != "array":
                details.append(
                    {
                        "location": "query",
                        "field": key,
                        "message": "takes one value but was given several",
                    }
                )
        sources = {
            "query": request.query_params,
            "path": request.path_params,
            "header": request.headers,
        }
        for location, values in sources.items():
            for param in self.parameters.get(location, []):
                name = param["name"]
                if location == "query" and name in misspelt:
                    continue  # said above; its value as Python read it would mislead
                value = values.get(name if location != "path" else name.replace("-", "_"))
                details.extend(self._check(location, param, value))
        if details:
            raise invalid_request(details)

    @staticmethod
    def _check(location: str, param: dict, value: t.Any) -> list[Detail]:
        name = param["name"]
        if value is None:
            if param.get("required"):
                return [{"location": location, "field": name, "message": "is required"}]
            return []
        return violations(compiled(param.get("schema", {})), value, location, (name,))


_NO_BODY = object()


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
            text, parse_constant=_not_json, parse_float=_finite, object_pairs_hook=_unique_keys
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
    index = _discriminated_index(value, schema)
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


def _discriminated_index(value: dict, schema: dict) -> int | None:
    """The index of the variant of a discriminated `oneOf` the value's discriminator names."""
    if "oneOf" not in schema or "discriminator" not in schema:
        return None
    prop = schema["discriminator"]["propertyName"]
    for index, variant in enumerate(schema["oneOf"]):
        if value.get(prop) in variant.get("properties", {}).get(prop, {}).get("enum", ()):
            return index
    return None


def _body_problem(message: str) -> errors.InvalidRequest:
    return invalid_request([{"location": "body", "field": "", "message": message}])


def body_limit(scope: Scope) -> int:
    """The most bytes the body of the request's operation may have."""
    routing = scope.get("extensions", {}).get("connexion_routing", {})
    return BODY_LIMITS.get(routing.get("operation_id"), MAX_BODY_BYTES)


class JSONBodyValidator(JSONRequestBodyValidator):
    """Checks a JSON request body: size, media type, encoding, syntax, then the schema.

    It reads the body itself, with or without Content-Length (chunked), stopping at the
    size limit, and replays it to the handler unchanged.
    """

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length is not None and not length.isdigit():
            raise invalid_request(
                [{"location": "header", "field": "content-length", "message": "is not a number"}]
            )
        limit = body_limit(scope)
        if length is not None and int(length) > limit:
            raise errors.PayloadTooLarge(
                f"Request body is {int(length)} bytes; the limit is {limit} bytes "
                f"({limit >> 20} MiB)"
            )
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if (chunked or int(length or 0)) and "content-type" not in headers:
            raise errors.UnsupportedMediaType(
                "Request has a body but no Content-Type; send application/json"
            )
        messages: list[t.MutableMapping[str, t.Any]] = []
        size = 0
        more_body = True
        while more_body:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > limit:
                raise errors.PayloadTooLarge(
                    f"Request body is over the limit of {limit} bytes ({limit >> 20} MiB)"
                )
            more_body = message.get("more_body", False)
        raw = b"".join(m.get("body", b"") for m in messages)
        body = self._decode(raw)
        if body is _NO_BODY:
            if self._required:
                raise _body_problem("a JSON request body is required")
        else:
            cleaned = without_null_optionals(body, self._schema)
            self._validate(cleaned)
            if cleaned is not body:
                # The handler reads the body as the contract does: nulls read as absent.
                raw = json.dumps(cleaned, ensure_ascii=False).encode()  # any size of int
                messages = [{"type": "http.request", "body": raw, "more_body": False}]
                length = None
        if length is None:
            # The WSGI side reads only as many bytes as Content-Length says: a chunked body,
            # now read whole (or rewritten without its nulls), is handed on with its length.
            kept = [
                (name, value)
                for name, value in scope["headers"]
                if name not in (b"content-length", b"transfer-encoding")
            ]
            scope = {**scope, "headers": [*kept, (b"content-length", str(len(raw)).encode())]}
        return self._insert_messages(receive, messages=messages), scope

    def _decode(self, raw: bytes) -> t.Any:
        if not raw:
            return _NO_BODY
        try:
            text = raw.decode(self._encoding)
        except (UnicodeDecodeError, LookupError):
            raise _body_problem(f"is not valid {self._encoding} text") from None
        try:
            return read_json(text)
        except ValueError as exc:
            raise _body_problem(f"is not valid JSON: {exc}") from None

    def _validate(self, body: t.Any) -> None:
        details = violations(compiled(self._schema), body, "body")
        if details:
            raise invalid_request(details)


class _CollectingOperation(RequestValidationOperation):
    """Connexion's request validation, reporting parameter and body violations together."""

    def extract_content_type(self, headers: list[tuple[bytes, bytes]]) -> tuple[str, str]:
        """The media type, lower-cased (`APPLICATION/JSON` is `application/json`), and the
        charset, wherever the header's parameters put it (Connexion's parser misses
        `; charset=...` with a space)."""
        value = dict(headers).get(b"content-type")
        if value is None:
            return super().extract_content_type(headers)
        mime_type, options = parse_options_header(value.decode("latin-1"))
        return mime_type.lower(), options.get("charset", "utf-8").lower()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        operation = self._operation
        uri_parser = operation._uri_parser_class(operation.parameters, operation.body_definition())
        details: list[Detail] = []
        try:
            self._validator_map["parameter"](
                operation.parameters,
                uri_parser=uri_parser,
                strict_validation=self.strict_validation,
                security_query_params=self.security_query_params,
            ).validate(scope)
        except errors.InvalidRequest as exc:
            details = exc.details
        mime_type, encoding = self.extract_content_type(scope["headers"])
        self.validate_mime_type(mime_type)
        schema = operation.body_schema(mime_type)
        body_validator = self._validator_map["body"].get(mime_type) if schema else None
        if body_validator is not None and encoding not in UTF8_CHARSETS:
            # JSON is UTF-8 (RFC 8259); read any other way, the handler would disagree.
            raise errors.UnsupportedMediaType(
                f"JSON request bodies are UTF-8; charset={encoding} is not supported"
            )
        if body_validator is not None:
            scope = _plain_content_type(scope, mime_type)
            validator = body_validator(
                schema=schema,
                required=operation.request_body.get("required", False),
                nullable=is_nullable(operation.body_definition(mime_type)),
                encoding=encoding,
                strict_validation=self.strict_validation,
            )
            try:
                receive, scope = await validator.wrap_receive(receive, scope=scope)
            except errors.InvalidRequest as exc:
                details = details + exc.details
        if details:
            raise invalid_request(details)
        await self.next_app(scope, receive, send)


def _plain_content_type(scope: Scope, mime_type: str) -> Scope:
    """The scope with a Content-Type header, if it has one, reduced to the lower-case media
    type: the handler's side reads a body as JSON only under exactly `application/json`."""
    headers = scope["headers"]
    if not any(name == b"content-type" for name, _ in headers):
        return scope
    kept = [(name, value) for name, value in headers if name != b"content-type"]
    return {**scope, "headers": [*kept, (b"content-type", mime_type.encode())]}


class _CollectingAPI(RequestValidationAPI):
    def make_operation(self, operation: t.Any) -> RequestValidationOperation:
        return _CollectingOperation(
            self.next_app,
            operation=operation,
            strict_validation=self.strict_validation,
            validator_map=self.validator_map,
        )


class RequestValidationMiddleware(ConnexionRequestValidationMiddleware):
    """Drop-in for Connexion's request validation middleware (see `_CollectingOperation`)."""

    api_cls = _CollectingAPI


class JSONResponseValidator(JSONResponseBodyValidator):
    """Checks every response body against the contract; a failure is a bug in the mock."""

    def wrap_send(self, send: Send) -> Send:
        # HEAD is answered as its GET without the body (a 405 lists HEAD beside GET in
        # `Allow`): its status and headers are checked as ever, there is no body to check.
        if self._scope["method"] == "HEAD":
            return send
        return super().wrap_send(send)

    def _parse(self, stream: t.Generator[bytes, None, None]) -> t.Any:
        body = b"".join(stream)
        return orjson.loads(body) if body else None

    def _validate(self, body: t.Any) -> None:
        details = violations(compiled(self._schema, Draft4ResponseValidator), body, "response")
        if details:
            raise errors.MockFailure(
                "The mock produced a response that breaks its contract: " + summary(details),
                details=details,
            )


VALIDATOR_MAP = {
    "parameter": ParameterValidator,
    "body": MediaTypeDict({"*/*json": JSONBodyValidator}),
    "response": MediaTypeDict({"*/*json": JSONResponseValidator}),
}
