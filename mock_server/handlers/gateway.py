"""Handler of operation 8: retrieve a stored model response from the gateway."""

from __future__ import annotations

from typing import Any

from flask import request

from mock_server import errors
from mock_server.handlers.context import store
from mock_server.validation import read_json


def get_response(id_: str) -> dict[str, Any]:
    """The mock checks `x-platform-metadata` is a JSON object and otherwise ignores it."""
    metadata = request.headers.get("x-platform-metadata")
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
    return store().gateway.response(id_)
