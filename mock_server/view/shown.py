"""Requests and records as the live view shows them: every text a client chose escaped by
the one rule (`mock_server.core.escape`).

The page inserts these texts as they come (as text nodes, never as markup), so what a client
sent reaches the screen only through here: a control character or a bidi override shows as
its escape (`\\x1b`, `\\u202e`), and JSON keeps JSON's own escapes. What is shown holds no
credential: requests come from the journal, which hides them before it keeps an entry, and
records from `mock_server.view.browse`, which hides them before it lists one (both by
`mock_server.core.masking`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TypedDict

from mock_server.contract import documents as contract
from mock_server.contract.documents import Operation
from mock_server.core import escape
from mock_server.core.curl import curl_command
from mock_server.reports import explain
from mock_server.services.journal import BODY_LIMIT, Entry, read_body
from mock_server.view.browse import Record


class JournalRow(TypedDict):
    """One line of the journal's table, as the live view shows it."""

    seq: int
    order: int
    time: str
    method: str
    path: str
    query: str
    operationId: str | None
    status: int | None
    code: int | None
    durationMs: float
    caller: str | None
    test: str | None
    violation: bool
    expected: bool
    fault: str | None
    dropped: bool
    rules: list[str]


class SentRequest(TypedDict):
    headers: list[list[str]]
    headersDropped: int
    body: str


class SentResponse(TypedDict):
    headers: list[list[str]]
    body: str


class BrokenRule(TypedDict):
    """A rule a request broke, and each of its violations (location, field, message and
    hint), as text."""

    rule: str
    violations: list[dict[str, str]]


class RequestDetail(JournalRow):
    """A request opened."""

    docs: str | None
    curl: str
    pathParams: dict[str, str]
    message: str | None
    request: SentRequest
    response: SentResponse
    broken: list[BrokenRule]


class ShownRecord(TypedDict):
    """A record of the world: its id, title and the record as indented JSON."""

    id: str
    title: str
    record: str


def _text(value: str | None) -> str | None:
    return None if value is None else escape.text(value)


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def row(entry: Entry) -> JournalRow:
    """One line of the journal's table."""
    query = "&".join(f"{k}={v}" for k, values in entry.query.items() for v in values)
    return {
        "seq": entry.seq,
        "order": entry.order,
        "time": _time(entry.started),
        "method": escape.text(entry.method),
        "path": escape.text(entry.path),
        "query": escape.text(query),
        "operationId": entry.operation_id,
        "status": entry.status,
        "code": entry.code,
        "durationMs": entry.duration_ms,
        "caller": _text(entry.caller),
        "test": _text(entry.test),
        "violation": entry.violation,
        "expected": entry.expected,
        "fault": entry.fault,
        "dropped": entry.dropped,
        "rules": (
            [escape.text(rule) for rule in explain.rules_broken(entry)] if entry.violation else []
        ),
    }


def body(raw: bytes, size: int) -> str:
    """A body as the view shows it: JSON indented, other text line by line, each line
    escaped; past BODY_LIMIT, cut, saying so."""
    if not raw:
        return ""
    parsed = read_body(raw)
    shown = escape.lines(parsed) if isinstance(parsed, str) else escape.json_text(parsed, indent=2)
    if size > BODY_LIMIT:  # what is kept may be shorter still: its credentials hidden
        shown += f"\n… (the first {BODY_LIMIT} of {size} bytes)"
    return shown


def _sent_size(entry: Entry) -> int:
    """The size of the body a request sent: its Content-Length, when it is a number."""
    declared = entry.headers.get("content-length", "")
    return int(declared) if declared.isdigit() and len(declared) < 20 else len(entry.raw_body)


def _headers(found: dict[str, str]) -> list[list[str]]:
    return [[escape.text(k), escape.text(v)] for k, v in found.items()]


DOCS_PATH = "/docs/"  # where each document's Swagger UI is served, under its base path


@cache
def _tag(document: str, path: str, method: str) -> str:
    found = contract.spec(document)["paths"][path][method.lower()].get("tags") or ["default"]
    return str(found[0])


def docs_link(operation: Operation, gateway_prefix: str) -> str:
    """Where the docs page shows an operation, opened: Swagger UI's deep link
    (`#/{tag}/{operationId}`, a space of the tag as `%20`, as Swagger UI writes it)."""
    base = gateway_prefix if operation.document == contract.GATEWAY_SPEC else ""
    tag = "%20".join(_tag(operation.document, operation.path, operation.method).split())
    return f"{base}{DOCS_PATH}#/{tag}/{operation.operation_id}"


def detail(entry: Entry, operations: dict[str, Operation], gateway_prefix: str) -> RequestDetail:
    """A request opened: what was sent and answered, every rule it broke, explained, where
    the docs show its operation, and the `curl` line that sends it again (escaped as every
    text of a client: a copied line holds no control character)."""
    operation = operations.get(entry.operation_id or "")
    command = curl_command(entry.method, entry.path, entry.query, entry.headers, entry.shown_body)
    return {
        **row(entry),
        "docs": docs_link(operation, gateway_prefix) if operation else None,
        "curl": escape.text(command),
        "pathParams": {escape.text(k): escape.text(v) for k, v in entry.path_params.items()},
        "message": _text(entry.message),
        "request": {
            "headers": _headers(entry.headers),
            "headersDropped": entry.headers_dropped,
            "body": body(entry.shown_body, _sent_size(entry)),
        },
        "response": {
            "headers": _headers(entry.response_headers),
            "body": body(entry.shown_response, entry.response_bytes),
        },
        "broken": [
            {
                "rule": escape.text(rule["rule"]),
                "violations": [
                    {key: escape.text(value) for key, value in violation.items()}
                    for violation in rule["violations"]
                ],
            }
            for rule in explain.rules(entry, operations, gateway_prefix)
        ],
    }


def record(found: Record) -> ShownRecord:
    """A record of the world: its id, title and the record as indented JSON."""
    return {
        "id": escape.text(found.id),
        "title": escape.text(found.title),
        "record": escape.json_text(found.record, indent=2),
    }
