"""Handlers of the admin API (`spec/admin.yaml`): world, fixtures, tokens, journal, faults,
report."""

from __future__ import annotations

from typing import Any

from mock_server import errors, fixtures
from mock_server.faults import FaultRefused
from mock_server.handlers import render
from mock_server.handlers.context import mock


def reset(body: dict[str, Any] | None = None) -> dict:
    mock().reset(seed=(body or {}).get("seed"))
    return {}


def load_fixtures(body: Any) -> dict:
    try:
        if isinstance(body, bytes):
            # YAML (validation let only UTF-8 text through), read as a fixture file is: each
            # error gives the line of the field at fault.
            document = fixtures.parse(body.decode("utf-8"), "request body")
        else:
            document = fixtures.check(body, "request body")
        mock().store.load(document)
    except fixtures.FixtureError as exc:
        raise errors.InvalidRequest(
            "Fixture document is not valid: " + str(exc).splitlines()[0],
            details=[{"location": "body", "message": line} for line in str(exc).splitlines()],
        ) from None
    return {}


def mint_token(body: dict[str, Any]) -> dict[str, Any]:
    """A development token for a subject of the current world, named as `platform-mock token
    --subject` and the pytest plugin's `token_for` name one: after a re-seed or a fixture
    load, the tokens printed at start name subjects that may no longer exist."""
    store = mock().store
    try:
        subject = store.identity.subject_by_reference(body["subject"])
    except ValueError as exc:
        raise errors.SubjectNotFound(
            f"No subject {body['subject']!r} in this world: {exc}",
            details=[{"location": "body", "field": "subject", "message": str(exc)}],
        ) from None
    return {"token": mock().auth.dev_token(subject), "subject": render.subject_reference(subject)}


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
    journal = mock().journal
    return {
        "data": [e.to_dict() for e in found],
        "dropped": journal.dropped,
        "budgetBytes": journal.budget,
        "logDropped": mock().log_dropped(),
    }


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
            delay_ms=body["delayMs"],  # the spec's defaults, filled by validation
            drop=body["drop"],
            match=body.get("match"),
            after=body["after"],
            times=body["times"],
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
