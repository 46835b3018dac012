"""What a request's ASGI scope says of it: the operation routing chose (read here
only, so the key lives in one place; the mock's own notes are the `Exchange`), and whether it
is to the gateway, whose errors speak OpenAI's dialect too."""

from __future__ import annotations

from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.types import Scope


def operation_id(scope: Scope) -> str | None:
    """The operationId routing chose for the request; None before routing, or
    when no operation of the specs matched."""
    found: str | None = scope.get("extensions", {}).get(ROUTING_CONTEXT, {}).get("operation_id")
    return found


def on_gateway(scope: Scope, gateway_prefix: str) -> bool:
    """Whether a request is to the gateway: its path is under the gateway's prefix."""
    path: str = scope.get("path", "")
    return bool(gateway_prefix) and (
        path == gateway_prefix or path.startswith(gateway_prefix + "/")
    )
