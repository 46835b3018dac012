"""Handlers of the admin API (`spec/admin.yaml`): health, world, fixtures, tokens, journal,
the test running, faults, the gateway's scripted replies, report, the worlds served beside
this one, and what the live view reads (the journal a page at a time, a request opened, the
world's records)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, NoReturn, NotRequired, TypedDict

from mock_server.contract import documents as contract
from mock_server.core import errors, escape
from mock_server.core.jsonvalue import JsonObject
from mock_server.core.version import __version__
from mock_server.fixtures import loader as fixtures
from mock_server.handlers import render
from mock_server.handlers.context import ServedWorld, mock
from mock_server.handlers.operation import operation
from mock_server.reports.report import Report
from mock_server.services.faults import FaultRefused, FaultWire
from mock_server.services.journal import Entry, EntryWire, LatencyWire
from mock_server.state.fixture_format import FixtureDocument
from mock_server.state.gateway import GivenScript, ShownScript
from mock_server.view import browse, shown


class Empty(TypedDict):
    """An answer with nothing to say but its status."""


class Health(TypedDict):
    status: str
    version: str


class ResetBody(TypedDict, total=False):
    seed: int
    fixtures: list[Any]  # fixture documents, each checked by the fixture reader


class TokenBody(TypedDict, total=False):
    subject: str  # `type:name`, or a user's e-mail


class Minted(TypedDict):
    token: str
    subject: render.SubjectReferenceRecord  # the subject reference of the contract


class TestStart(TypedDict):
    test: str
    expectViolations: bool


class FaultBody(TypedDict):
    """A fault rule as the admin API takes it, with the spec's defaults filled in."""

    operationId: str
    status: NotRequired[int]
    delayMs: int
    drop: bool
    match: NotRequired[dict[str, str]]
    after: int
    times: int | None


class WorldBody(TypedDict, total=False):
    seed: int


class RequestPage(TypedDict):
    """A page of the journal, newest first, as the live view shows it."""

    data: list[shown.JournalRow]
    next: int | None  # the `before` of the next page; None: no older request is left
    held: int
    heldBytes: int
    dropped: int
    budgetBytes: int


class WorldSummary(TypedDict):
    seed: int
    tenant: str | None
    counts: dict[str, int]  # by kind, as `browse.KINDS` orders them
    reload: JsonObject | None  # the fixture watcher's last word


class RecordPage(TypedDict):
    kind: str
    data: list[shown.ShownRecord]
    total: int
    offset: int
    limit: int


class ScriptList(TypedDict):
    data: list[ShownScript]


@operation("adminHealth")
def health() -> Health:
    return {"status": "ok", "version": __version__}


@operation("adminReset")
def reset(body: ResetBody | None = None) -> Empty:
    body = body or ResetBody()
    with _fixture_errors():
        extra = [
            fixtures.check(document, f"request body fixtures[{index}]")
            for index, document in enumerate(body.get("fixtures") or [])
        ]
        mock().reset(seed=body.get("seed"), extra=extra)
    return Empty()


@operation("adminLoadFixtures")
def load_fixtures(body: Any) -> Empty:
    with _fixture_errors():
        if isinstance(body, bytes):
            # YAML (validation let only UTF-8 text through), read as a fixture file is: each
            # error gives the line of the field at fault.
            document = fixtures.parse(body.decode("utf-8"), "request body")
        else:
            document = fixtures.check(body, "request body")
        mock().store.load(document)
    mock().live.publish("world", {"change": "fixtures"})
    return Empty()


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
def mint_token(body: TokenBody | None = None) -> Minted:
    """A development token for a subject of the current world, named as `platform-mock token
    --subject` and the pytest plugin's `token_for` name one: after a re-seed or a fixture
    load, the tokens printed at start name subjects that may no longer exist."""
    store = mock().store
    named = (body or TokenBody()).get("subject")
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
def get_state() -> FixtureDocument:
    return fixtures.dump(mock().store)


class JournalPage(TypedDict):
    """The journal's entries the query asks for, and what its budget dropped."""

    data: list[EntryWire]
    dropped: int
    budgetBytes: int
    logDropped: int


class JournalReport(Report):
    """The report of the requests since the journal was cleared, with their latencies."""

    latency: dict[str, LatencyWire]
    held: int
    dropped: int


class EntryList(TypedDict):
    data: list[EntryWire]


class FaultList(TypedDict):
    data: list[FaultWire]


@operation("adminGetJournal")
def get_journal(
    operation_id: str | None = None,
    status: int | None = None,
    test: str | None = None,
    violation: bool | None = None,
) -> JournalPage:
    try:
        found = [
            entry
            for entry in mock().journal.calls(operation_id, status=status)
            if (test is None or entry.test == test)
            and (violation is None or entry.counted_violation == violation)
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


@operation("adminClearJournal")
def clear_journal() -> Empty:
    mock().journal.clear()
    mock().live.publish("journal", {"change": "cleared"})
    return Empty()


@operation("adminGetJournalReport")
def get_journal_report() -> JournalReport:
    """The contract report of the requests since the journal was last cleared (what the live
    view's coverage shows), and each operation's latency over the requests it holds."""
    journal = mock().journal
    return {
        **mock().journal_report.to_dict(),
        "latency": journal.latency(),
        "held": len(journal),
        "dropped": journal.dropped,
    }


@operation("adminListRequests")
def list_requests(
    operation_id: str | None = None,
    status: int | None = None,
    test: str | None = None,
    violation: bool | None = None,
    q: str | None = None,
    before: int | None = None,
    limit: int = 100,
) -> RequestPage:
    """The journal newest first, a page at a time, as the live view shows it."""
    journal = mock().journal
    words = (q or "").lower().split()

    def matches(entry: Entry) -> bool:
        return (
            (operation_id is None or entry.operation_id == operation_id)
            and (status is None or entry.status == status)
            and (test is None or entry.test == test)
            and (violation is None or entry.counted_violation == violation)
            and (not words or _has_words(entry, words))
        )

    found, next_page = journal.page(matches, before=before, limit=limit)
    return {
        "data": [shown.row(entry) for entry in found],
        "next": next_page,
        "held": len(journal),
        "heldBytes": journal.bytes,
        "dropped": journal.dropped,
        "budgetBytes": journal.budget,
    }


def _has_words(entry: Entry, words: list[str]) -> bool:
    """Whether a request holds every word, in what the journal's table shows of it or in
    its body (case aside)."""
    query = " ".join(f"{k}={v}" for k, values in entry.query.items() for v in values)
    text = " ".join(
        str(part)
        for part in (
            entry.method,
            entry.path,
            query,
            entry.operation_id,
            entry.status,
            entry.code,
            entry.caller,
            entry.test,
            entry.message,
            entry.fault,
        )
        if part is not None
    )
    sent = f"{text} {entry.raw_body.decode('utf-8', 'replace')}".lower()
    if not all(word in sent for word in words):
        return False
    # Then in what is shown of the body (read only now: a search must not find a request by
    # a credential its page hides).
    shown = f"{text} {entry.shown_body.decode('utf-8', 'replace')}".lower()
    return all(word in shown for word in words)


@operation("adminGetRequest")
def get_request(id_: int) -> shown.RequestDetail:
    """A request opened: what was sent and answered, every rule it broke, explained."""
    entry = mock().journal.find(id_)
    if entry is None:
        raise errors.JournalEntryNotFound(
            f"The journal holds no request #{id_}: not sent yet, or dropped or cleared since"
        )
    return shown.detail(entry, contract.operations(), mock().gateway_prefix)


@operation("adminGetWorld")
def get_world() -> WorldSummary:
    """What the world holds, by kind, and the fixture watcher's last word."""
    store = mock().store
    tenant = store.world.tenant
    return {
        "seed": store.seed,
        "tenant": escape.text(tenant.name) if tenant else None,
        "counts": browse.counts(store),
        "reload": mock().live.last_reload,
    }


@operation("adminListRecords")
def list_records(kind: str, q: str = "", offset: int = 0, limit: int = 50) -> RecordPage:
    """The world's records of one kind, a page at a time, searched."""
    found = browse.records(mock().store, kind, q, offset, limit)
    return {
        "kind": kind,
        "data": [shown.record(record) for record in found.records],
        "total": found.total,
        "offset": offset,
        "limit": limit,
    }


@operation("adminEvents")
def events() -> NoReturn:
    """Never called: `mock_server.http.events` answers this operation before the views."""
    raise errors.MockFailure("The live view's event stream is served by its own layer")


@operation("adminStartTest")
def start_test(body: TestStart) -> Empty:
    mock().journal.begin_test(body["test"], expecting=body["expectViolations"])
    return Empty()


@operation("adminEndTest")
def end_test() -> EntryList:
    journal = mock().journal
    ended = journal.label
    journal.end_test()
    mock().faults.clear()
    broken = [e for e in journal if ended and e.test == ended and e.counted_violation]
    return {"data": [entry.to_dict() for entry in broken]}


@operation("adminListFaults")
def list_faults() -> FaultList:
    return {"data": [rule.to_dict() for rule in mock().faults.rules()]}


@operation("adminAddFault")
def add_fault(body: FaultBody) -> tuple[FaultWire, int]:
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
def clear_faults() -> Empty:
    mock().faults.clear()
    return Empty()


@operation("adminDeleteFault")
def delete_fault(id_: str) -> Empty:
    if not mock().faults.remove(id_):
        raise errors.FaultNotFound(f"No fault rule with id {id_!r}")
    return Empty()


@operation("adminListReplies")
def list_replies() -> ScriptList:
    return {"data": [script.shown() for script in mock().store.gateway.scripts()]}


@operation("adminAddReply")
def add_reply(body: GivenScript) -> tuple[ShownScript, int]:
    """A script checked as a fixture's `scriptedReplies` entry, and added to the world."""
    store = mock().store
    with _fixture_errors():
        store.load(fixtures.check({"scriptedReplies": [body]}, "request body"))
    mock().live.publish("world", {"change": "replies"})
    return store.gateway.scripts()[-1].shown(), 201


@operation("adminClearReplies")
def clear_replies() -> Empty:
    mock().store.gateway.clear_scripts()
    mock().live.publish("world", {"change": "replies"})
    return Empty()


@operation("adminGetReport")
def get_report() -> Report:
    return mock().report.to_dict()


@operation("adminCreateWorld")
def create_world(body: WorldBody | None = None) -> tuple[ServedWorld, int]:
    worlds = mock().worlds
    if worlds is None:
        raise errors.WorldNotFound(
            "This mock serves no other worlds: it is not served by a server of platform-mock"
        )
    return worlds.create((body or WorldBody()).get("seed")), 201


@operation("adminDeleteWorld")
def delete_world(id_: str) -> Empty:
    worlds = mock().worlds
    if worlds is None or not worlds.remove(id_):
        raise errors.WorldNotFound(f"No world with id {id_!r} is served beside this mock")
    return Empty()
