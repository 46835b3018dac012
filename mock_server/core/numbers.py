"""How a number is written as text, read the one way by the contract's query and path values,
the fault rules' matches and the command line's options: ASCII digits, an optional leading
`-`, for a number a fraction and an exponent, nothing else (`int()` and `float()` would also
take `1_0`, ` 5`, `+5`, `inf` and digits of other scripts)."""

from __future__ import annotations

import math
import re

INTEGER_TEXT = re.compile(r"-?[0-9]+")
NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def number_problem(text: str, kind: str) -> str | None:
    """Why a text is not an `integer` or a `number` as the contract writes them, if it is not."""
    if kind == "integer" and not INTEGER_TEXT.fullmatch(text):
        return f"{text!r} is not a whole number (ASCII digits, with an optional leading -)"
    if kind == "number" and not (NUMBER_TEXT.fullmatch(text) and math.isfinite(float(text))):
        return f"{text!r} is not a finite number (ASCII digits, an optional - and fraction)"
    return None
