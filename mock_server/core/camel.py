"""A record's wire form: its fields under the wire's camelCase keys, by one converter for all.

A record the mock writes as JSON and reads back (a journal entry, a fault rule, a request
line, where a served mock is) is a dataclass; its wire form is a `TypedDict` beside it, whose
keys are the wire's, in the wire's order. `to_wire` reads each key from the record's
attribute of that name in snake_case (`operationId` from `operation_id`; a property as well
as a field, as an entry's `violation`), `from_wire` makes the record again from the keys its
constructor takes. A key added to the TypedDict is written and read with nothing else to
keep in step by hand.

Why this and not msgspec's Structs (`rename="camel"`, `msgspec.to_builtins` and
`msgspec.convert`), measured on a journal entry (`timeit`, best of 5, Python 3.11, on this
tree's machine): writing one, on the request path of every journal read, took 5.30 us by the
hand-written `to_dict`, 5.53 us by `to_wire`, and 5.37 us through a Struct. Its cost is the
entry's body read as JSON, whatever writes the rest. A Struct would not make the records
simpler: their wire forms hold properties (an entry's `body` and `violation`, a mock's
`apiUrl`) and leave fields out (an entry's raw bytes and credentials), so each would need a
second Struct for the wire beside it, and the project a compiled dependency, for no time
saved. Reading one back is off the request path: `convert` took 0.43 us, the hand-written
`from_dict` 1.2 us and `from_wire` a few microseconds, but only clients of another process's
journal read entries back, over HTTP, where either is noise.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from operator import attrgetter
from typing import TypeVar, cast

_Record = TypeVar("_Record")
_Wire = TypeVar("_Wire")
_UPPER = re.compile(r"([A-Z])")


def snake(key: str) -> str:
    """The attribute a camelCase key of the wire is read from: `operationId`, `operation_id`."""
    return _UPPER.sub(lambda found: "_" + found.group(1).lower(), key)


_READERS: dict[type, tuple[tuple[str, ...], attrgetter[tuple[object, ...]]]] = {}
_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}


def _reader(shape: type) -> tuple[tuple[str, ...], attrgetter[tuple[object, ...]]]:
    found = _READERS.get(shape)
    if found is None:
        keys = tuple(shape.__annotations__)  # a TypedDict's keys, its bases' first, in order
        if len(keys) < 2:  # attrgetter of one name gives the value, not a tuple
            raise TypeError(f"{shape.__name__}: a wire form of one key needs no converter")
        found = _READERS[shape] = (keys, attrgetter(*map(snake, keys)))
    return found


def to_wire(record: object, shape: type[_Wire]) -> _Wire:
    """`record` as its wire form `shape` (a TypedDict): each key, in the order `shape` lists
    them, from the record's attribute of that name in snake_case. The values are the
    record's own, not copies."""
    keys, read = _reader(shape)
    # The one cast of the converter: the dict holds `shape`'s keys by construction.
    return cast(_Wire, dict(zip(keys, read(record), strict=True)))


def _fields(record: type) -> tuple[tuple[str, str], ...]:
    found = _FIELDS.get(record)
    if found is None:
        taken = dataclasses.fields(record)
        found = _FIELDS[record] = tuple((_camel(f.name), f.name) for f in taken if f.init)
    return found


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def from_wire(record: type[_Record], found: Mapping[str, object], **given: object) -> _Record:
    """The dataclass `record` made from its wire form `found`: each field its constructor
    takes from the key of its name in camelCase, where `found` has it (the field's default
    where not), and from `given` (by field name) where the wire form is not the field."""
    taken = {
        name: found[key] for key, name in _fields(record) if key in found and name not in given
    }
    return record(**taken, **given)
