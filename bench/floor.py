"""The benchmark's second reference: the least a Connexion FlaskApp costs per request.

One Connexion FlaskApp, Flask called inline as the mock does (mock_server.http.wsgi), one
operation per benchmarked request answering its pre-serialised body: no security, no
parameters, no validation, no state. Whatever the mock does, it cannot be faster than this
on the same stack, so it shows how much of the mock's time is the stack's and how much its own.
Run: python bench/floor.py PORT BODIES.json [--async]  (BODIES maps "METHOD path?query" to
a body; --async: the same on Connexion's AsyncApp, for comparison).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import connexion
import flask
import uvicorn
from connexion.lifecycle import ConnexionResponse
from connexion.resolver import Resolver

from mock_server.http import wsgi


def make_app(bodies: dict[str, bytes], asynchronous: bool = False) -> connexion.AbstractApp:
    paths: dict[str, dict] = {}
    handlers = {}
    for number, (key, body) in enumerate(bodies.items()):
        method, target = key.split(" ", 1)
        operation_id = f"op{number}"
        paths.setdefault(target.split("?", 1)[0], {})[method.lower()] = {
            "operationId": operation_id,
            "responses": {"200": {"description": "the captured body"}},
        }
        handlers[operation_id] = _answer(body, asynchronous)
    spec = {"openapi": "3.0.3", "info": {"title": "floor", "version": "1"}, "paths": paths}
    resolver = Resolver(function_resolver=handlers.__getitem__)
    if asynchronous:
        app = connexion.AsyncApp(__name__, resolver=resolver)
        app.add_api(spec)
        return app
    flask_app = connexion.FlaskApp(__name__, resolver=resolver)
    flask_app.add_api(spec)
    wsgi.install(flask_app)
    return flask_app


def _answer(body: bytes, asynchronous: bool) -> Callable[[], Any]:
    if asynchronous:

        async def answer() -> ConnexionResponse:
            return ConnexionResponse(body=body, content_type="application/json")

        return answer
    return lambda: flask.Response(body, mimetype="application/json")


if __name__ == "__main__":
    port, bodies_file = int(sys.argv[1]), sys.argv[2]
    with open(bodies_file) as handle:
        bodies = {key: value.encode() for key, value in json.load(handle).items()}
    app = make_app(bodies, asynchronous="--async" in sys.argv[3:])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
