"""JSON values as types: what a record holds when the mock passes it along without reading it.

A record whose fields the mock reads or writes is a `TypedDict` of its own, beside the code
that owns it (its keys are the wire's, camelCase). What is left is JSON the mock carries but
does not look into: a manifest as a client applied it, a tool's parameter schema, a stored
answer. Those are `JsonObject`, a dict of `JsonValue`, which mypy follows all the way down, so
reading a field of one needs a check of what it is (no `Any` lets a wrong guess through).
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
JsonList: TypeAlias = "list[JsonValue]"
