"""Handler of operation 8: retrieve a stored model response from the gateway, as JSON or as
the server-sent events of its stream."""

from __future__ import annotations

from typing import Any

import orjson

from mock_server.contract.validation import read_json
from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import Answer, current, store
from mock_server.handlers.operation import Example, operation


@operation(
    "getModelResponse",
    Example("GET", "/responses/{id}", params={"id": "resp_0000000000000000000000000000demo"}),
    {400: errors.InvalidMetadataHeader, 404: errors.ModelResponseNotFound},
)
def get_response(
    id_: str,
    *,
    stream: bool,  # Connexion fills in the spec's default
    starting_after: int | None = None,
    include: list[str] | None = None,  # nothing stored is includable: read, and left alone
    include_obfuscation: bool | None = None,  # the stream never pads its events
) -> dict[str, Any] | Answer:
    """The mock checks `x-platform-metadata` is a JSON object and otherwise ignores it."""
    metadata = current().headers.get("x-platform-metadata")
    if metadata is not None:
        try:  # read as strictly as a request body
            parsed = read_json(metadata)
            reason = None if isinstance(parsed, dict) else "is JSON but not an object"
        except ValueError as exc:
            reason = f"is not valid JSON: {exc}"
        if reason is not None:
            raise errors.InvalidMetadataHeader(
                f"x-platform-metadata must be a JSON object encoded as a string; it {reason}",
                details=[{"location": "header", "field": "x-platform-metadata", "message": reason}],
            )
    response = store().gateway.response(id_)
    if not stream:
        return response
    after = -1 if starting_after is None else starting_after
    events = [e for e in render.response_events(response) if e["sequence_number"] > after]
    return Answer(
        b"".join(
            b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"
            for event in events
        ),
        "text/event-stream",
        {"Cache-Control": "no-cache"},
    )
