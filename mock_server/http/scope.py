"""What Connexion leaves in a request's ASGI scope: the operation its routing chose. Read here
only, so the key lives in one place (the mock's own notes are the `Exchange`)."""

from __future__ import annotations

from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.types import Scope


def operation_id(scope: Scope) -> str | None:
    """The operationId Connexion's routing chose for the request; None before routing, or
    when no operation of the specs matched."""
    found: str | None = scope.get("extensions", {}).get(ROUTING_CONTEXT, {}).get("operation_id")
    return found
