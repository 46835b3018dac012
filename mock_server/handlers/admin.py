"""Handlers of the admin API (`spec/admin.yaml`): world, fixtures, journal, faults, report."""

from __future__ import annotations

from typing import Any

from mock_server import errors, fixtures
from mock_server.faults import FaultRefused
from mock_server.handlers.context import mock


def reset(body: dict[str, Any] | None = None) -> dict:
    mock().reset(seed=(body or {}).get("seed"))
    return {}


def load_fixtures(body: dict[str, Any]) -> dict:
    try:
        mock().store.load(fixtures.check(body, "request body"))
    except fixtures.FixtureError as exc:
        raise errors.InvalidRequest(
            "Fixture document is not valid: " + str(exc).splitlines()[0],
            details=[{"location": "body", "message": line} for line in str(exc).splitlines()],
        ) from None
    return {}


def get_state() -> dict[str, Any]:
    return fixtures.dump(mock().store)


def get_journal(operation_id: str | None = None, status: int | None = None) -> dict:
    try:
        found = mock().journal.calls(operation_id, status=status)
    except ValueError as exc:  # an operation the contract does not have
        raise errors.InvalidRequest(
            f"Request does not conform to the API contract: query operationId: {exc}",
            details=[{"location": "query", "field": "operationId", "message": str(exc)}],
        ) from None
    return {"data": [e.to_dict() for e in found]}


def clear_journal() -> dict:
    mock().journal.clear()
    return {}


def list_faults() -> dict:
    return {"data": [rule.to_dict() for rule in mock().faults.rules()]}


def add_fault(body: dict[str, Any]) -> tuple[dict, int]:
    try:
        rule = mock().faults.add(
            body["operationId"],
            status=body.get("status"),
            delay_ms=body.get("delayMs", 0),
            drop=body.get("drop", False),
            match=body.get("match"),
            after=body.get("after", 0),
            times=body.get("times", 1),
        )
    except FaultRefused as exc:
        raise errors.InvalidRequest(
            f"Fault refused: {exc}", details=[{"location": "body", "message": str(exc)}]
        ) from None
    return rule.to_dict(), 201


def clear_faults() -> dict:
    mock().faults.clear()
    return {}


def delete_fault(id_: str) -> dict:
    if not mock().faults.remove(id_):
        raise errors.FaultNotFound(f"No fault rule with id {id_!r}")
    return {}


def get_report() -> dict[str, Any]:
    return mock().report.to_dict()
