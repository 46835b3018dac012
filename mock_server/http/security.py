"""Connexion's bearer-token security, checked by the mock's authenticator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from connexion.security import BearerSecurityHandler

from mock_server.core.jsonvalue import JsonObject
from mock_server.http.wsgi import when_free
from mock_server.services.exchange import exchange

if TYPE_CHECKING:
    from mock_server.services.auth import Authenticator


class TokenInfo(TypedDict):
    """What Connexion is told of a request's token once checked (its `token_info`)."""

    sub: str  # the caller's subject id


def security_map(authenticator: Authenticator) -> dict[str, type]:
    """Connexion security handlers that check bearer tokens with this authenticator:
    platform tokens, or the admin token where the scheme is marked `x-platform-mock-admin`."""

    class PlatformBearer(BearerSecurityHandler):
        def get_fn(self, security_scheme: JsonObject, required_scopes: Any) -> Any:
            if security_scheme.get("x-platform-mock-admin"):
                return lambda request: authenticator.authenticate_admin(
                    request.headers.get("Authorization")
                )

            async def verify(request: Any) -> TokenInfo:
                header = request.headers.get("Authorization")
                # Who the token names is the world's to say: read under its lock, never
                # waiting for it on the event loop.
                caller, token = await when_free(
                    authenticator.store.lock, lambda: authenticator.authenticate(header)
                )
                # `token`: the personal access token to mark used once the request succeeds.
                mine = exchange(request.scope)
                mine.caller, mine.token = caller, token
                return {"sub": caller.subject_id}  # Connexion's `token_info`

            return verify

    return {"bearer": PlatformBearer}
