"""What Connexion leaves in a request's ASGI scope: the operation its routing chose, and the
context its security fills (`token_info`). Read here only, so the keys live in one place."""

from __future__ import annotations

from typing import Any

from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.types import Scope

# Where Connexion's security leaves `token_info` (its `ConnexionRequest.context`).
CONNEXION_CONTEXT = "connexion_context"


def operation_id(scope: Scope) -> str | None:
    """The operationId Connexion's routing chose for the request; None before routing, or
    when no operation of the specs matched."""
    return scope.get("extensions", {}).get(ROUTING_CONTEXT, {}).get("operation_id")


def security_context(scope: Scope) -> dict[str, Any]:
    """What Connexion's security left for the handler (`token_info`), or {}."""
    return scope.get("extensions", {}).get(CONNEXION_CONTEXT) or {}
