"""The reference server of the benchmark: a bare ASGI app answering pre-serialised bytes.

It answers every request with the body the mock gives for the same request, captured once
at start, so it measures the ceiling of Python + uvicorn on this machine and nothing else.
Run: python bench/bare.py PORT BODIES.json  (BODIES maps "METHOD path?query" to a body).
"""

from __future__ import annotations

import json
import sys

import uvicorn


def make_app(bodies: dict[str, bytes]):
    default = next(iter(bodies.values()))

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        more = True
        while more:  # read the request body, as a real server must
            more = (await receive()).get("more_body", False)
        query = scope["query_string"].decode()
        key = f"{scope['method']} {scope['path']}" + (f"?{query}" if query else "")
        body = bodies.get(key, default)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


if __name__ == "__main__":
    port, bodies_file = int(sys.argv[1]), sys.argv[2]
    with open(bodies_file) as handle:
        bodies = {key: value.encode() for key, value in json.load(handle).items()}
    uvicorn.run(
        make_app(bodies), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )
