"""Why a request missed the contract: the rules it broke, named alike, and what it came closest to.

A violation says what was wrong (`query page_size: is not a parameter of this operation`).
`rules_broken` names the rules a request broke alike across requests and runs, for the
contract report to count them. A client author fixes them faster told what was sent there
and what the contract has nearest: the parameter meant (`limit`), the value of the closed
set meant, the route whose path is nearest to the one sent, the methods a path takes.
`rules` gives, for each rule a request broke, its violations each with such a hint where
the contract has one (the live view); `explained` gives the same of each violation, with
the value sent at its place (the contract report).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import TypedDict

from mock_server.contract.documents import Operation
from mock_server.core import errors
from mock_server.core.errors import Violation
from mock_server.core.jsonvalue import JsonValue
from mock_server.services.journal import Entry

_ITEM = re.compile(r"\[[0-9]+\]$")
_INDEX = re.compile(r"\[[0-9]+\]")
_STEP = re.compile(r"\[([0-9]+)\]|([^.\[\]]+)")
CUTOFF = 0.6  # how alike two names must be for one to be offered for the other (difflib)
MAX_SHOWN_DETAILS = 10  # violations of one request named and explained


class RuleBroken(TypedDict):
    """A rule a request broke, with its violations, each with its hint (`rules`)."""

    rule: str
    violations: list[Violation]


def rules_broken(entry: Entry) -> list[str]:
    """The rules of the contract a request broke, named alike across requests and runs: the
    place in the request (`query limit`, `body manifest.tags[]`) with the violation's
    message where the request has a violation per place, else the condition's code and
    message (`40101: No bearer token...`). Indexes in field paths are dropped, values kept
    out, so that every request that broke one rule is counted under one name."""
    return rule_names(entry.details) or [f"{entry.code}: {errors.condition(entry.code)}"]


def rule_names(details: Sequence[Violation]) -> list[str]:
    """The rules a request's violations (`details`) broke, named as `rules_broken` names
    them: the place in the request, indexes dropped, values kept out."""
    named = []
    for detail in details[:MAX_SHOWN_DETAILS]:
        name = rule_name(detail)
        if name and name not in named:
            named.append(name)
    return named


def rule_name(detail: Violation) -> str:
    """The rule one violation broke, as `rules_broken` names it ("" if it names no place)."""
    field_ = _INDEX.sub("[]", str(detail.get("field", "")))
    return " ".join(part for part in (str(detail.get("location", "")), field_) if part)


def explained(
    entry: Entry, operations: dict[str, Operation], gateway_prefix: str
) -> tuple[list[Violation], str]:
    """The request's violations (the first MAX_SHOWN_DETAILS), each with its `hint` ("" where
    the contract has none) and, where the request held a value at its place, that value as
    JSON as `sent` (a query, path or header value is a string); and the hint for the
    condition it met when it broke no rule of a place (no route, no such method)."""
    operation = operations.get(entry.operation_id or "")
    body: list[JsonValue] = []  # read once, if a violation is in the body
    shown: list[Violation] = []
    for detail in entry.details[:MAX_SHOWN_DETAILS]:
        location, field = str(detail.get("location", "")), str(detail.get("field", ""))
        message = str(detail.get("message", ""))
        one: Violation = {**detail, "hint": _hint(location, field, message, operation)}
        if location == "body" and not body:
            body.append(entry.body)
        value = _sent(entry, location, field, body[0] if body else None)
        if value is not None:
            one["sent"] = value
        shown.append(one)
    condition = "" if shown else _route_hint(entry, operations, gateway_prefix)
    return shown, condition


def _sent(entry: Entry, location: str, field: str, body: JsonValue) -> str | None:
    """The value a request held at a violation's place, as JSON, if it held one there."""
    steps = [(int(index) if index else name) for index, name in _STEP.findall(field)]
    found: JsonValue = None
    if location == "query" and steps and isinstance(steps[0], str):
        values = entry.query.get(steps[0])
        if values and len(steps) > 1 and isinstance(steps[1], int):
            found = values[steps[1]] if steps[1] < len(values) else None
        elif values:
            found = values[0] if len(values) == 1 else [*values]
    elif location == "path":
        found = entry.path_params.get(field)
    elif location == "header":
        found = entry.headers.get(field.lower())
    elif location == "body":
        found = body
        for step in steps:  # an index into a list, a name (the only keys of JSON) of a dict
            if isinstance(found, list) and isinstance(step, int) and step < len(found):
                found = found[step]
                continue
            if isinstance(found, dict) and isinstance(step, str) and step in found:
                found = found[step]
                continue
            return None
        if found is None:
            return "null"
    return None if found is None else json.dumps(found, ensure_ascii=False)


def rules(entry: Entry, operations: dict[str, Operation], gateway_prefix: str) -> list[RuleBroken]:
    """Each rule the request broke, `{"rule", "violations": [{location, field, message,
    hint}]}`; [] when it broke none (an answer a fault injected breaks nothing)."""
    if not entry.violation:
        return []
    operation = operations.get(entry.operation_id or "")
    found: dict[str, list[Violation]] = {name: [] for name in rules_broken(entry)}
    for detail in entry.details:
        location, field = str(detail.get("location", "")), str(detail.get("field", ""))
        message = str(detail.get("message", ""))
        violations = found.get(rule_name(detail))
        if violations is not None:  # past the rules the report names, none is shown
            hint = _hint(location, field, message, operation)
            violations.append(
                {"location": location, "field": field, "message": message, "hint": hint}
            )
    for violations in found.values():
        if not violations:  # a condition rather than a place: no route, no token, ...
            violations.append(
                {
                    "location": "",
                    "field": "",
                    "message": entry.message or errors.condition(entry.code),
                    "hint": _route_hint(entry, operations, gateway_prefix),
                }
            )
    return [{"rule": name, "violations": violations} for name, violations in found.items()]


def _hint(location: str, field: str, message: str, operation: Operation | None) -> str:
    if operation is None:
        return ""
    if location == "query" and "is not a parameter" in message:
        close = difflib.get_close_matches(field, operation.query, n=1, cutoff=CUTOFF)
        takes = ", ".join(operation.query) or "no query parameter"
        meant = f"did you mean {close[0]!r}? " if close else ""
        return f"{meant}{operation.operation_id} takes: {takes}"
    if "is not a field of this object (allowed: " in message:
        allowed_fields = message.split("(allowed: ", 1)[1].rstrip(")").split(", ")
        name = _ITEM.sub("", field).rsplit(".", 1)[-1]
        close = difflib.get_close_matches(name, allowed_fields, n=1, cutoff=CUTOFF)
        return f"did you mean {close[0]!r}?" if close else ""
    if location == "query":
        allowed = dict(operation.enums).get(_ITEM.sub("", field))  # `status[0]`: `status`
        if allowed and "is not one of" in message:
            value = message.split(" is not one of", 1)[0].strip("'\"")
            close = difflib.get_close_matches(value, allowed, n=1, cutoff=CUTOFF)
            return f"did you mean {close[0]!r}?" if close else f"one of {', '.join(allowed)}"
    return ""


def _route_hint(entry: Entry, operations: dict[str, Operation], gateway_prefix: str) -> str:
    """For a request no route took (404) or whose path does not take its method (405): the
    nearest route of the contract, or the methods its path takes."""
    if entry.code == errors.MethodNotAllowed.code:
        allowed = entry.response_headers.get("allow")
        return f"this path takes: {allowed}" if allowed else ""
    if entry.code != errors.RouteNotFound.code:
        return ""
    sent = entry.path.strip("/").split("/")
    best: tuple[float, Operation | None, str] = (0.0, None, "")
    for operation in operations.values():
        template = operation.path
        if not template.startswith("/api/"):  # a gateway operation, under its prefix
            template = gateway_prefix.rstrip("/") + template
        score = _likeness(sent, template.strip("/").split("/"))
        if score > best[0]:
            best = (score, operation, template)
    score, nearest, template = best
    if nearest is None or score < CUTOFF:
        return ""
    return f"the nearest route: {nearest.method} {template} ({nearest.operation_id})"


def _likeness(sent: list[str], template: list[str]) -> float:
    """How alike a path is to a route's template, from 0 to 1, segment by segment (a `{...}`
    segment takes any value)."""
    pairs = zip(sent, template, strict=False)
    alike = sum(
        1.0
        if wanted.startswith("{") or given == wanted
        else difflib.SequenceMatcher(None, given, wanted).ratio()
        for given, wanted in pairs
    )
    return alike / max(len(sent), len(template))
