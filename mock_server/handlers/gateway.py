"""Handler of operation 8: retrieve a stored model response from the gateway."""

from __future__ import annotations

import json
from typing import Any

from flask import request

from mock_server import errors
from mock_server.handlers.context import store


def get_response(id_: str) -> dict[str, Any]:
    """The mock checks `x-platform-metadata` is a JSON object and otherwise ignores it."""
    metadata = request.headers.get("x-platform-metadata")
    if metadata is not None:
        try:
            parsed = json.loads(metadata)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise errors.InvalidMetadataHeader(
                details=[
                    {
                        "location": "header",
                        "field": "x-platform-metadata",
                        "message": "must be a JSON object encoded as a string",
                    }
                ]
            )
    return store().gateway.response(id_)
