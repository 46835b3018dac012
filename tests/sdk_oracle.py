"""The platform's published clients as the oracle of record shapes.

`disagreements(model, raw)` parses a raw JSON body with a client's pydantic model (the
platform SDK's or the `openai` package's, or one of the platform library's, which are
pydantic's v1 models) and lists every way the body and the model disagree, strictly:

- the model refuses the body (a required field missing, a value of the wrong kind);
- the model accepts it only by coercing a value (`"3"` read as 3, `1` read as true): strict
  mode in all but name. pydantic's own `strict=True` cannot be used with the SDK, whose
  models turn JSON into Python objects before validating, where strict mode refuses every
  ISO 8601 string for a datetime field; so each parsed value is compared with the JSON
  value it came from instead;
- the body has a field the model does not declare (the SDK's models keep unknown fields,
  so a misspelt or misplaced field would pass unseen);
- a value of a closed set that the SDK does not know (its enums keep unknown values under
  a placeholder member rather than refusing them).
"""

from __future__ import annotations

import enum
import json
from datetime import datetime
from typing import Any

import pydantic
from pydantic import v1


def disagreements(model: Any, raw: bytes | str, extras: frozenset[str] = frozenset()) -> list[str]:
    """Every disagreement between a raw JSON body and a client model; [] when none.
    `extras` names top-level fields known to be beyond the model (and allowed)."""
    data = json.loads(raw)
    try:
        if isinstance(model, type) and issubclass(model, v1.BaseModel):
            parsed = model.parse_obj(data)
        else:
            parsed = pydantic.TypeAdapter(model).validate_python(data)
    except (pydantic.ValidationError, v1.ValidationError) as exc:
        return [
            f"{'.'.join(map(str, error['loc'])) or '(body)'}: {error['msg']}"
            for error in exc.errors()
        ]
    found: list[str] = []
    _compare(data, parsed, "", found)
    return [f for f in found if f.split(":")[0] not in extras]


def _compare(raw: Any, value: Any, path: str, found: list[str]) -> None:
    where = path or "(body)"
    if isinstance(value, pydantic.BaseModel):
        fields = type(value).model_fields
        for name, info in fields.items():
            key = info.alias or name
            if isinstance(raw, dict) and key in raw:
                _compare(raw[key], getattr(value, name), f"{path}.{key}".lstrip("."), found)
        for extra in value.model_extra or {}:
            found.append(f"{path}.{extra}".lstrip(".") + f": not a field of {type(value).__name__}")
    elif isinstance(value, v1.BaseModel):
        # A v1 model drops the fields it does not declare: they are seen in the raw body.
        declared = {info.alias: name for name, info in type(value).__fields__.items()}
        for key in raw if isinstance(raw, dict) else {}:
            child = f"{path}.{key}".lstrip(".")
            if key in declared:
                _compare(raw[key], getattr(value, declared[key]), child, found)
            else:
                found.append(f"{child}: not a field of {type(value).__name__}")
    elif isinstance(value, list):
        if not isinstance(raw, list) or len(raw) != len(value):
            found.append(f"{where}: read as a list from {raw!r}")
            return
        for index, (raw_item, item) in enumerate(zip(raw, value, strict=True)):
            _compare(raw_item, item, f"{path}[{index}]", found)
    elif isinstance(value, dict):
        if not isinstance(raw, dict):
            found.append(f"{where}: read as an object from {raw!r}")
            return
        for key, item in value.items():
            _compare(raw.get(key), item, f"{path}.{key}".lstrip("."), found)
    elif isinstance(value, enum.Enum):
        if value.name == "_UNKNOWN":
            found.append(f"{where}: {raw!r} is not a value {type(value).__name__} knows")
        elif raw != value.value or type(raw) is not type(value.value):
            found.append(f"{where}: {raw!r} coerced into {type(value).__name__}.{value.name}")
    elif not _same_kind(raw, value):
        found.append(f"{where}: {raw!r} coerced into {type(value).__name__} {value!r}")


def _same_kind(raw: Any, value: Any) -> bool:
    """Whether a JSON value reached the model as the same kind of value (an integer may
    stand for a float, as JSON has one number type; a string for a datetime)."""
    if value is None or isinstance(value, bool):
        return raw is value
    if isinstance(value, int):
        return type(raw) is int
    if isinstance(value, float):
        return type(raw) in (int, float)
    if isinstance(value, datetime):
        return isinstance(raw, str)
    if isinstance(value, str):
        return isinstance(raw, str) and raw == value
    return True  # a free-form value (Any): taken as it came
