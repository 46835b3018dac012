"""The contract as data: the spec documents, read once, and their operations.

Connexion enforces the documents; this module is for where the mock reasons about them
(which statuses a fault may inject, what a report counts as exercised, the schema a
complete model response in a fixture must meet, the sequences of calls its links name).
What the documents cannot say of an operation (its handler, an example request, its error
conditions) is `mock_server.handlers.catalog`'s.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import orjson

from mock_server.core import start_cache
from mock_server.core.jsonvalue import JsonObject
from mock_server.core.resources import package_file

CONTROL_PLANE_SPEC = "control-plane.yaml"
GATEWAY_SPEC = "gateway.yaml"
ADMIN_SPEC = "admin.yaml"
PLATFORM_SPECS = (CONTROL_PLANE_SPEC, GATEWAY_SPEC)
METHODS = ("get", "put", "post", "delete", "patch")


def resolved(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of the document with each local `$ref` replaced by what it names, merged into
    the referring object (as Connexion resolves them; `tests/test_connexion_hooks.py` checks
    the two agree). A schema named twice is one shared object, as in Connexion's result."""
    return _resolve(copy.deepcopy(document))


def _resolve(copied: dict[str, Any]) -> dict[str, Any]:
    """`copied` with each local `$ref` replaced, in place (see `resolved`)."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict) and "$ref" in node:
            target: Any = copied
            for key in node["$ref"].removeprefix("#/").split("/"):
                target = target[key]  # a KeyError: a reference to nothing, a bug of the spec
            node.update(target)
            if isinstance(target, dict) and "$ref" in target:
                node = walk(node)
            node.pop("$ref", None)
        elif isinstance(node, dict):
            for key, value in node.items():
                node[key] = walk(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                node[index] = walk(value)
        return node

    result: dict[str, Any] = walk(copied)
    return result


@dataclass(frozen=True)
class Operation:
    operation_id: str
    statuses: frozenset[int]
    parameters: tuple[str, ...]  # those a request's URL carries: path and query
    integers: frozenset[str] = frozenset()  # those of them whose value is one integer
    method: str = ""  # upper case, as sent
    path: str = ""  # the document's path template, `{name}` for each path parameter
    document: str = ""  # the spec document that holds it
    body: bool = False  # whether it takes a request body
    query: tuple[str, ...] = ()  # the query parameters, which a client may leave out
    # The closed sets of values of query parameters (an enum, or an array of one), by name.
    enums: tuple[tuple[str, tuple[str, ...]], ...] = ()
    booleans: frozenset[str] = frozenset()  # those whose value is `true` or `false`
    token: bool = True  # whether it takes a bearer token (`security: []`: it answers without)

    @cached_property
    def enum_sets(self) -> dict[str, frozenset[str]]:
        """The closed sets of values of query parameters, by name, to look values up in."""
        return {name: frozenset(values) for name, values in self.enums}

    def check_parameters(self, names: Iterable[str]) -> None:
        """Raises ValueError naming any of `names` that is not a parameter of this operation
        (a journal question or a fault match that could never be true)."""
        unknown = sorted(set(names) - set(self.parameters))
        if unknown:
            raise ValueError(
                f"{self.operation_id} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters: {', '.join(self.parameters) or 'none'}"
            )

    def check_values(self, values: Mapping[str, Any]) -> None:
        """Raises ValueError naming a value (or a value of a list) that parameter can never
        take: one outside its enum, or a boolean parameter's that is not true or false."""
        allowed = dict(self.enums)
        for name, value in values.items():
            for one in value if isinstance(value, list | tuple) else [value]:
                text = as_text(one)
                if name in allowed and text not in allowed[name]:
                    raise ValueError(
                        f"{name} is never {text!r}; it is one of {', '.join(allowed[name])}"
                    )
                if name in self.booleans and text not in ("true", "false"):
                    raise ValueError(f"{name} is never {text!r}; it is true or false")


def as_text(value: Any) -> str:
    """A parameter value as it appears in a URL: JSON booleans are `true` and `false`."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@cache
def _parsed(name: str) -> tuple[JsonObject, bytes | None]:
    """A document as parsed, and as JSON when JSON holds it (`core.start_cache`)."""
    parsed, data = start_cache.yaml_document(package_file("spec") / name)
    return parsed, data


def spec(name: str) -> dict[str, Any]:
    """A spec document, parsed once per process; each caller gets its own copy (Connexion
    fills defaults into the document it is given). Its readers walk it as OpenAPI says it
    is, without a check at each step: a document of the contract, not a caller's JSON."""
    parsed, data = _parsed(name)
    copied: JsonObject = orjson.loads(data) if data is not None else copy.deepcopy(parsed)
    return copied


@cache
def _resolved_spec(name: str) -> dict[str, Any]:
    """A spec document resolved (`resolved`), made once per process and shared by the
    readers below: do not change."""
    return _resolve(spec(name))


@cache
def component(name: str, schema: str) -> JsonObject:
    """A component schema of a spec document, every `$ref` in it resolved (made once)."""
    found: JsonObject = _resolved_spec(name)["components"]["schemas"][schema]
    return found


def _enum(schema: JsonObject) -> tuple[str, ...]:
    """The values a parameter of this schema may take, if they are a closed set of strings."""
    items = schema.get("items")
    array = schema.get("type") == "array"
    values = items.get("enum") if array and isinstance(items, dict) else None
    listed = values or schema.get("enum") or ()
    return tuple(map(str, listed)) if isinstance(listed, list | tuple) else ()


def _operations_of(name: str) -> Iterator[Operation]:
    document = _resolved_spec(name)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            in_url = [p for p in operation.get("parameters", []) if p["in"] in ("path", "query")]
            query = [p for p in in_url if p["in"] == "query"]
            yield Operation(
                operation["operationId"],
                frozenset(int(status) for status in operation["responses"]),
                tuple(p["name"] for p in in_url),
                frozenset(
                    p["name"] for p in in_url if p.get("schema", {}).get("type") == "integer"
                ),
                method.upper(),
                path,
                name,
                "requestBody" in operation,
                tuple(p["name"] for p in query),
                tuple((p["name"], values) for p in query if (values := _enum(p.get("schema", {})))),
                frozenset(
                    p["name"] for p in in_url if p.get("schema", {}).get("type") == "boolean"
                ),
                operation.get("security", document.get("security", [])) != [],
            )


@cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every operation of the platform API as its spec document defines it (parameters,
    request body, responses), every `$ref` resolved, by operationId: for checking traffic
    that no Connexion app of the mock serves (the drift proxy's). Made once; do not change."""
    found = {}
    for name in PLATFORM_SPECS:
        for item in _resolved_spec(name)["paths"].values():
            for method, operation in item.items():
                if method in METHODS:
                    found[operation["operationId"]] = operation
    return found


@cache
def operations() -> dict[str, Operation]:
    """Every operation of the platform API (not the admin API), by operationId."""
    return {op.operation_id: op for name in PLATFORM_SPECS for op in _operations_of(name)}


WORKFLOW = "x-workflow"  # the extension naming the workflow a link of the spec belongs to


def workflows() -> dict[str, dict[tuple[str, str], JsonObject]]:
    """The control plane's links, by the workflow each names (`x-workflow`): workflow ->
    (operationId, status) -> links by name, without the extension. A sequence of calls worth
    checking is written in the contract as such a link; the fuzzing runs each workflow."""
    found: dict[str, dict[tuple[str, str], JsonObject]] = {}
    for methods in _resolved_spec(CONTROL_PLANE_SPEC)["paths"].values():
        for definition in methods.values():
            for status, response in definition["responses"].items():
                for name, link in response.get("links", {}).items():
                    kept = {k: v for k, v in link.items() if k != WORKFLOW}
                    by_source = found.setdefault(link[WORKFLOW], {})
                    by_source.setdefault((definition["operationId"], status), {})[name] = kept
    return found


@cache
def admin_operations() -> dict[str, Operation]:
    """Every operation of the mock's own admin API, by operationId."""
    return {op.operation_id: op for op in _operations_of(ADMIN_SPEC)}
