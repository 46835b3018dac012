"""Why a request missed the contract, and what it came closest to: for the live view.

A violation says what was wrong (`query page_size: is not a parameter of this operation`).
A client author fixes it faster told what the contract has nearest: the parameter meant
(`limit`), the value of the closed set meant, the route whose path is nearest to the one
sent, the methods a path takes. `rules` gives, for each rule a request broke (named as the
contract report names it), its violations each with such a hint where the contract has one.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from mock_server.contract.documents import Operation
from mock_server.core import errors
from mock_server.reports.report import rule_name, rules_broken
from mock_server.services.journal import Entry

_ITEM = re.compile(r"\[[0-9]+\]$")
CUTOFF = 0.6  # how alike two names must be for one to be offered for the other (difflib)


def rules(
    entry: Entry, operations: dict[str, Operation], gateway_prefix: str
) -> list[dict[str, Any]]:
    """Each rule the request broke, `{"rule", "violations": [{location, field, message,
    hint}]}`; [] when it broke none (an answer a fault injected breaks nothing)."""
    if not entry.violation:
        return []
    operation = operations.get(entry.operation_id or "")
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in rules_broken(entry)}
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
