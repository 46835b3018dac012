"""JSON as the mock writes it on the wire: compact UTF-8 bytes, whatever integer a client sent.

orjson writes it (fast), but refuses an integer past 64 bits, which a client may send and
the mock echo back (a tool's parameter schema in a gateway request, read by the contract's
reader, whose integers have no 64-bit bound): such a value is written by the standard
library instead, to the same compact form, rather than failing the answer with a 500.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def json_bytes(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer past 64 bits: orjson's only refusal of a value read as JSON
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
