"""Handlers of the admin API (`spec/admin.yaml`): health, world, fixtures, tokens, journal,
the test running, faults, report, and the worlds served beside this one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from mock_server import errors, fixtures
from mock_server.faults import FaultRefused
from mock_server.handlers import render
from mock_server.handlers.context import mock
from mock_server.handlers.operation import operation
from mock_server.journal import Entry
from mock_server.version import __version__


@operation("adminHealth")
def health() -> dict[str, Any]:
    return {"status": "ok", "version": __version__}


@operation("adminReset")
def reset(body: dict[str, Any] | None = None) -> dict[str, Any]:
    body = body or {}
    with _fixture_errors():
        extra = [
            fixtures.check(document, f"request body fixtures[{index}]")
            for index, document in enumerate(body.get("fixtures") or [])
        ]
        mock().reset(seed=body.get("seed"), extra=extra)
    return {}


@operation("adminLoadFixtures")
def load_fixtures(body: Any) -> dict[str, Any]:
    with _fixture_errors():
        if isinstance(body, bytes):
            # YAML (validation let only UTF-8 text through), read as a fixture file is: each
            # error gives the line of the field at fault.
            document = fixtures.parse(body.decode("utf-8"), "request body")
        else:
            document = fixtures.check(body, "request body")
        mock().store.load(document)
    return {}


@contextlib.contextmanager
def _fixture_errors() -> Iterator[None]:
    """A fixture document that cannot enter the world, answered as a 400 naming each
    problem (nothing has changed)."""
    try:
        yield
    except fixtures.FixtureError as exc:
        raise errors.InvalidRequest(
            "Fixture document is not valid: " + str(exc).splitlines()[0],
            details=[{"location": "body", "message": line} for line in str(exc).splitlines()],
        ) from None


@operation("adminMintToken")
def mint_token(body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A development token for a subject of the current world, named as `platform-mock token
    --subject` and the pytest plugin's `token_for` name one: after a re-seed or a fixture
    load, the tokens printed at start name subjects that may no longer exist."""
    store = mock().store
    named = (body or {}).get("subject")
    try:
        subject = store.identity.subject_by_reference(named)
    except (ValueError, errors.MockFailure) as exc:  # MockFailure: no user to be the default
        what = f"subject {named!r}" if named else "user"
        raise errors.SubjectNotFound(
            f"No {what} in this world: {exc}",
            details=[{"location": "body", "field": "subject", "message": str(exc)}],
        ) from None
    return {"token": mock().auth.dev_token(subject), "subject": render.subject_reference(subject)}


@operation("adminGetState")
def get_state() -> dict[str, Any]:
    return fixtures.dump(mock().store)


@operation("adminGetJournal")
def get_journal(
    operation_id: str | None = None,
    status: int | None = None,
    test: str | None = None,
    violation: bool | None = None,
) -> dict[str, Any]:
    try:
        found = [
            entry
            for entry in mock().journal.calls(operation_id, status=status)
            if (test is None or entry.test == test)
            and (violation is None or _counted_violation(entry) == violation)
        ]
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


def _counted_violation(entry: Entry) -> bool:
    """Whether a request broke the contract and counts against the run for it."""
    return entry.violation and not entry.expected


@operation("adminClearJournal")
def clear_journal() -> dict[str, Any]:
    mock().journal.clear()
    return {}


@operation("adminStartTest")
def start_test(body: dict[str, Any]) -> dict[str, Any]:
    mock().journal.begin_test(body["test"], expecting=body["expectViolations"])
    return {}


@operation("adminEndTest")
def end_test() -> dict[str, Any]:
    journal = mock().journal
    ended = journal.label
    journal.end_test()
    mock().faults.clear()
    broken = [e for e in journal if ended and e.test == ended and _counted_violation(e)]
    return {"data": [entry.to_dict() for entry in broken]}


@operation("adminListFaults")
def list_faults() -> dict[str, Any]:
    return {"data": [rule.to_dict() for rule in mock().faults.rules()]}


@operation("adminAddFault")
def add_fault(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
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


@operation("adminClearFaults")
def clear_faults() -> dict[str, Any]:
    mock().faults.clear()
    return {}


@operation("adminDeleteFault")
def delete_fault(id_: str) -> dict[str, Any]:
    if not mock().faults.remove(id_):
        raise errors.FaultNotFound(f"No fault rule with id {id_!r}")
    return {}


@operation("adminGetReport")
def get_report() -> dict[str, Any]:
    return mock().report.to_dict()


@operation("adminCreateWorld")
def create_world(body: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
    worlds = mock().worlds
    if worlds is None:
        raise errors.WorldNotFound(
            "This mock serves no other worlds: it is not served by a server of platform-mock"
        )
    return worlds.create((body or {}).get("seed")), 201


@operation("adminDeleteWorld")
def delete_world(id_: str) -> dict[str, Any]:
    worlds = mock().worlds
    if worlds is None or not worlds.remove(id_):
        raise errors.WorldNotFound(f"No world with id {id_!r} is served beside this mock")
    return {}
