"""Connexion's bearer-token security, checked by the mock's authenticator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connexion.security import BearerSecurityHandler

# The key of `token_info` naming the personal access token a request authenticated with.
TOKEN_USED = "token"

if TYPE_CHECKING:
    from mock_server.auth import Authenticator


def security_map(authenticator: Authenticator) -> dict[str, type]:
    """Connexion security handlers that check bearer tokens with this authenticator:
    platform tokens, or the admin token where the scheme is marked `x-platform-mock-admin`."""

    class PlatformBearer(BearerSecurityHandler):
        def get_fn(self, security_scheme: dict, required_scopes: Any) -> Any:
            if security_scheme.get("x-platform-mock-admin"):
                return lambda request: authenticator.authenticate_admin(
                    request.headers.get("Authorization")
                )

            def verify(request: Any) -> dict[str, Any]:
                caller, token = authenticator.authenticate(request.headers.get("Authorization"))
                # `token`: the personal access token to mark used once the request succeeds.
                return {"sub": caller.subject_id, "caller": caller, TOKEN_USED: token}

            return verify

    return {"bearer": PlatformBearer}
