"""How a request's path, query and header parameters are read and checked against the contract:
the one parameter check, which the mock's request validation (`http.validators`) and the
drift proxy both call.

The query is read as its `key=value` pairs; an array parameter is its repeated keys
(`?status=A&status=B`, the exploded form style of every array of the contract: `?status=A,B`
is one value, `A,B`); a parameter given once is that value. Numbers are read by the
contract's grammar (`core.numbers`: `int()` would take `1_0`, ` 1` and other scripts'
digits: `null` is no number either), a nullable text or boolean sent as `null` is left out
(an array's items are its values as sent), and each value is then checked
against its schema, every violation reported. What the handler is given: the values in the
contract's types (numbers as Python reads them, `number`s as floats, booleans from
`true`/`false`), and each default of a query parameter left out.
"""

from __future__ import annotations

import copy
import typing as t
from collections import Counter
from collections.abc import Mapping
from urllib.parse import parse_qsl

from mock_server.contract.validation import (
    Detail,
    compiled,
    invalid_request,
    scalar_type,
    violations,
)
from mock_server.core.numbers import number_problem


def query_pairs(query_string: bytes) -> list[tuple[str, str]]:
    """A query string's (key, value) pairs, in the order sent, blank values kept."""
    return parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)


def by_key(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """The pairs' values grouped by key, in the order given."""
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped


def _boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError(text)
    return lowered == "true"


_CONVERT: dict[str, t.Callable[[str], t.Any]] = {
    "integer": int,
    "number": float,
    "string": str,
    "boolean": _boolean,
}


def _converted(text: str, kind: str | None) -> t.Any:
    """A text as the contract's type reads it; as it came where it is not one (the schema's
    check then says so)."""
    convert = _CONVERT.get(kind or "")
    if convert is None:
        return text
    try:
        return convert(text)
    except ValueError:
        return text


class ParameterCheck:
    """The contract's check of one operation's parameters (`parameters`: the operation's
    resolved parameter objects), built once; `parse` reads a request's."""

    def __init__(self, parameters: t.Iterable[Mapping[str, t.Any]], *, strict: bool = True):
        self.parameters: dict[str, list[Mapping[str, t.Any]]] = {}
        for param in parameters:
            self.parameters.setdefault(param["in"], []).append(param)
        self.strict = strict  # a query key the operation does not take is an error
        self.known = {p["name"]: p for p in self.parameters.get("query", [])}
        # What a handler is given for a query parameter the request leaves out.
        self.defaults = {
            p["name"]: p["schema"]["default"]
            for p in self.parameters.get("query", [])
            if "default" in p.get("schema", {})
        }

    def parse(
        self,
        pairs: list[tuple[str, str]],
        path: Mapping[str, str],
        headers: Mapping[str, str],
        grouped: dict[str, list[str]] | None = None,
    ) -> dict[str, t.Any]:
        """The request's path and query parameters (`pairs`: its query's, `query_pairs`;
        `path`: its path's, by name; `grouped`: the pairs `by_key`, if at hand), converted
        to the contract's types, with the defaults of the query parameters it leaves out;
        raises InvalidRequest listing every violation, of these and of the header
        parameters."""
        details: list[Detail] = []
        known = self.known
        misspelt: set[str] = set()
        seen: Counter[str] = Counter()
        for key, value in pairs:
            param = known.get(key)
            schema = param.get("schema", {}) if param else {}
            kind = scalar_type(schema)
            problem = number_problem(value, kind) if kind in ("integer", "number") else None
            field = f"{key}[{seen[key]}]" if schema.get("type") == "array" else key
            seen[key] += 1
            if problem and (key not in misspelt or field != key):
                misspelt.add(key)
                details.append({"location": "query", "field": field, "message": problem})
        # A path's number is read by the same rule.
        misspelt_path: set[str] = set()
        for param in self.parameters.get("path", []):
            kind = scalar_type(param.get("schema", {}))
            text = path.get(param["name"])
            if kind in ("integer", "number") and isinstance(text, str):
                problem = number_problem(text, kind)
                if problem:
                    misspelt_path.add(param["name"])
                    details.append({"location": "path", "field": param["name"], "message": problem})
        grouped = by_key(pairs) if grouped is None else grouped
        for key, given in grouped.items():
            param = known.get(key)
            if param is None:
                if self.strict:
                    message = "is not a parameter of this operation"
                    details.append({"location": "query", "field": key, "message": message})
            elif len(given) > 1 and param.get("schema", {}).get("type") != "array":
                message = "takes one value but was given several"
                details.append({"location": "query", "field": key, "message": message})
        arguments: dict[str, t.Any] = {}
        for location, values in (("query", grouped), ("path", path), ("header", headers)):
            for param in self.parameters.get(location, []):
                name = param["name"]
                if name in (misspelt if location == "query" else misspelt_path):
                    continue  # said above; its value as Python read it would mislead
                sent = values.get(name)
                found = None if sent is None else _read(sent, param, location)
                if found is None:  # left out, or a nullable one's `null`
                    if param.get("required"):
                        message = "is required"
                        details.append({"location": location, "field": name, "message": message})
                    continue
                details += violations(compiled(param.get("schema", {})), found, location, (name,))
                if location != "header":
                    arguments[name] = found
        if details:
            raise invalid_request(details)
        for name, default in self.defaults.items():
            if name not in arguments:
                # A list or an object is the handler's to change: each request its own copy.
                mutable = isinstance(default, list | dict)
                arguments[name] = copy.deepcopy(default) if mutable else default
        return arguments


def _read(given: str | list[str], param: Mapping[str, t.Any], location: str) -> t.Any:
    """A parameter's value as sent (a query's: every value of its key), in its type."""
    schema = param.get("schema", {})
    if location == "header":
        return given  # checked as the text it is
    if schema.get("type") == "array":
        values = given if isinstance(given, list) else [given]
        kind = (schema.get("items") or {}).get("type")
        return [_converted(value, kind) for value in values]
    value = given[-1] if isinstance(given, list) else given
    if schema.get("nullable") and value.strip() in ("null", "None"):
        return None
    return _converted(value, schema.get("type"))
