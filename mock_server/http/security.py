"""Connexion's bearer-token security, checked by the mock's authenticator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connexion.security import BearerSecurityHandler

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
                caller = authenticator.authenticate(request.headers.get("Authorization"))
                return {"sub": caller.subject_id, "caller": caller}

            return verify

    return {"bearer": PlatformBearer}
