"""The fault layer: the mock's fault rules (`mock_server.services.faults`) applied to each
request, and the pace a handler asks of its answer (a scripted reply's delays and drop).

It stands after security and request validation (a faulty answer is still one to a valid,
authorised request) and outside response validation, so that what a rule asks (a status
with its platform error body, a delay, a dropped connection) is delivered as armed: response
validation checks what the handler answers, and a fault is not the handler's answer.
"""

from __future__ import annotations

import asyncio

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.http.middleware import query_by_key
from mock_server.http.scope import operation_id
from mock_server.services.exchange import Exchange, exchange
from mock_server.services.faults import Faults
from mock_server.services.journal import request_params


class FaultInjection:
    """Applies the fault rules (and `Prefer` headers) to routed, valid requests."""

    def __init__(self, app: ASGIApp, faults: Faults):
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        routed = operation_id(scope)
        # Routing, earlier in the stack, has answered every request without an operation.
        assert routed is not None
        mine = exchange(scope)
        decision = self.faults.decide(
            routed,
            request_params(query_by_key(scope), mine.path_params),
            Headers(scope=scope).get("prefer"),
        )
        if decision.source:
            mine.fault = decision.source
        if decision.delay_ms:
            await asyncio.sleep(decision.delay_ms / 1000)
        if decision.drop:
            mine.drop = True
            return
        if decision.error is not None:
            raise decision.error
        await self.app(scope, receive, _paced(mine, send))


def _paced(mine: Exchange, send: Send) -> Send:
    """`send`, delivering an answer as its handler paced it (`Exchange.pace`): the events
    of a stream one at a time, each after its delay, on the event loop's clock (a delay
    never holds the loop), and the connection dropped after as many as asked. The answer
    reaches this layer whole: response validation, downstream, has checked all of it."""

    async def send_(message: Message) -> None:
        pace = mine.pace
        if pace is None:
            await send(message)
            return
        if pace.drop_after == 0 or mine.drop:  # nothing of the answer goes out
            mine.drop = True
            return
        if message["type"] != "http.response.body":
            await send(message)
            return
        body = message.get("body", b"")
        events = [event + b"\n\n" for event in body.split(b"\n\n") if event]
        for sent, event in enumerate(events):
            if pace.drop_after is not None and sent >= pace.drop_after:
                mine.drop = True
                return
            if pace.delay:
                await asyncio.sleep(pace.delay)
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return send_
