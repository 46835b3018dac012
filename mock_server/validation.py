"""Request and response validation plugged into Connexion: every violation reported at once.

Connexion's own validators stop at the first error and rebuild a jsonschema validator on every
request. These report one `details` entry per violation (with its location and field), build
each validator once per schema, and raise the platform's error classes instead of
`application/problem+json` problems.
"""

from __future__ import annotations

import json
import re
import typing as t
from urllib.parse import parse_qsl

from connexion.datastructures import MediaTypeDict
from connexion.json_schema import Draft4RequestValidator, Draft4ResponseValidator
from connexion.lifecycle import ConnexionRequest
from connexion.validators import (
    JSONRequestBodyValidator,
    JSONResponseBodyValidator,
)
from connexion.validators import (
    ParameterValidator as ConnexionParameterValidator,
)
from jsonschema import Draft4Validator, ValidationError
from starlette.datastructures import Headers
from starlette.types import Receive, Scope

from mock_server import errors

MAX_BODY_BYTES = 1024 * 1024
Detail = dict[str, t.Any]

# Compiled validators by schema identity. The schemas belong to the loaded specification and
# live as long as it does; the entry keeps its schema alive so the id is never reused.
_compiled: dict[int, tuple[dict, Draft4Validator]] = {}


def compiled(schema: dict, cls: type[Draft4Validator] = Draft4RequestValidator) -> Draft4Validator:
    """The validator for a schema, built on first use."""
    key = id(schema) ^ id(cls)
    entry = _compiled.get(key)
    if entry is None or entry[0] is not schema:
        entry = (schema, cls(schema, format_checker=Draft4Validator.FORMAT_CHECKER))
        _compiled[key] = entry
    return entry[1]


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
        for index, variant in enumerate(schema["oneOf"]):
            if instance.get(prop) in variant.get("properties", {}).get(prop, {}).get("enum", ()):
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
    validator: Draft4Validator, instance: t.Any, location: str, prefix: tuple = ()
) -> list[Detail]:
    return [
        detail
        for error in validator.iter_errors(instance)
        for detail in explain(error, location, prefix)
    ]


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


class ParameterValidator(ConnexionParameterValidator):
    """Checks path, query and header parameters; unknown or repeated query keys are errors."""

    def validate(self, scope: Scope) -> None:
        request = ConnexionRequest(scope, uri_parser=self.uri_parser)
        details: list[Detail] = []
        known = {p["name"]: p for p in self.parameters.get("query", [])}
        raw_keys = [
            key
            for key, _ in parse_qsl(
                scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            )
        ]
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


class JSONBodyValidator(JSONRequestBodyValidator):
    """Checks a JSON request body: size, media type, encoding, syntax, then the schema."""

    async def wrap_receive(self, receive: Receive, *, scope: Scope) -> tuple[Receive, Scope]:
        headers = Headers(scope=scope)
        length = headers.get("content-length", "0")
        if not length.isdigit():
            raise invalid_request(
                [{"location": "header", "field": "content-length", "message": "is not a number"}]
            )
        if int(length) > MAX_BODY_BYTES:
            raise errors.PayloadTooLarge(
                f"Request body is {int(length)} bytes; the limit is {MAX_BODY_BYTES} bytes (1 MiB)"
            )
        if int(length) and "content-type" not in headers:
            raise errors.UnsupportedMediaType(
                "Request has a body but no Content-Type; send application/json"
            )
        if not int(length) and self._required:
            raise invalid_request(
                [{"location": "body", "field": "", "message": "a JSON request body is required"}]
            )
        return await super().wrap_receive(receive, scope=scope)

    async def _parse(self, stream: t.AsyncGenerator[bytes, None], scope: Scope) -> t.Any:
        chunks, size = [], 0
        async for chunk in stream:
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise errors.PayloadTooLarge()
            chunks.append(chunk)
        raw = b"".join(chunks)
        if not raw:
            return None
        try:
            text = raw.decode(self._encoding)
        except (UnicodeDecodeError, LookupError):
            raise invalid_request(
                [
                    {
                        "location": "body",
                        "field": "",
                        "message": f"is not valid {self._encoding} text",
                    }
                ]
            ) from None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise invalid_request(
                [{"location": "body", "field": "", "message": f"is not valid JSON: {exc}"}]
            ) from None

    def _validate(self, body: t.Any) -> dict | None:
        details = violations(compiled(self._schema), body, "body")
        if details:
            raise invalid_request(details)
        return None


class JSONResponseValidator(JSONResponseBodyValidator):
    """Checks every response body against the contract; a failure is a bug in the mock."""

    def _validate(self, body: t.Any) -> None:
        details = violations(compiled(self._schema, Draft4ResponseValidator), body, "response")
        if details:
            raise errors.MockFailure(
                "The mock produced a response that breaks its contract: "
                + "; ".join(f"{d['field']}: {d['message']}" for d in details[:3]),
                details=details,
            )


VALIDATOR_MAP = {
    "parameter": ParameterValidator,
    "body": MediaTypeDict({"*/*json": JSONBodyValidator}),
    "response": MediaTypeDict({"*/*json": JSONResponseValidator}),
}
