"""Bearer authentication: the server's JWTs, minted and checked, and the caller they name.

Tokens are HS256 JWTs signed with the app's key. They carry the subject's id (`sub`), type and
slug, and for personal access tokens the token id (`jti`), so that deleting or revoking a
token takes effect at once. Expiry is checked against the store's clock, the same clock that
stamped the token.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import jwt
from connexion.security import BearerSecurityHandler

from mock_server import errors
from mock_server.state.entities import Caller, Subject

if TYPE_CHECKING:
    from mock_server.state.store import Store

ISSUER = "platform-mock"
ALGORITHM = "HS256"
DEV_TOKEN_LIFETIME = timedelta(days=3650)
VERIFIED_CACHE_SIZE = 4096
# The admin API's principal: not a subject of the world, so its token authenticates nowhere else.
ADMIN = Subject(
    type="admin", id="platform-mock-admin", name="admin", slug="admin", display_name="Mock admin"
)


def default_key(seed: int) -> str:
    """A signing key derived from the seed, so restarts with one seed accept the same tokens."""
    return hashlib.sha256(f"platform-mock-signing-key:{seed}".encode()).hexdigest()


class Signer:
    """Mints the server's JWTs."""

    def __init__(self, key: str):
        self.key = key

    def mint(
        self,
        subject: Subject,
        *,
        issued_at: datetime,
        expires_at: datetime,
        jwt_id: str | None = None,
        not_before: datetime | None = None,
    ) -> str:
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "sub": subject.id,
            "subjectType": subject.type,
            "subjectSlug": subject.slug,
            "iat": int(issued_at.timestamp()),
            "nbf": int((not_before or issued_at).timestamp()),
            "exp": int(expires_at.timestamp()),
        }
        if jwt_id is not None:
            claims["jti"] = jwt_id
        return jwt.encode(claims, self.key, algorithm=ALGORITHM)


class Authenticator:
    """Turns an `Authorization` header into a Caller, or raises the matching 401."""

    def __init__(self, store: Store):
        self.store = store
        # Signature checks by token: a client sends the same token again and again. Only the
        # signature is remembered; time, subject and revocation are checked on every request.
        self._verified: dict[str, dict[str, Any]] = {}

    def authenticate(self, authorization: str | None) -> Caller:
        """The platform subject a request's bearer token names."""
        return self._caller(self._claims(authorization))

    def authenticate_admin(self, authorization: str | None) -> dict[str, Any]:
        """The admin token's claims; any other valid token is refused with 403."""
        claims = self._claims(authorization)
        if claims.get("subjectType") != ADMIN.type or claims.get("sub") != ADMIN.id:
            raise errors.PermissionDenied(
                "The admin API needs the mock's admin token; this token names a platform subject"
            )
        return claims

    def _claims(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims of a bearer header, or the matching 401."""
        if not authorization:
            raise errors.MissingToken()
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise errors.MissingToken("Authorization header must be 'Bearer <token>'")
        claims = self._verified.get(token)
        if claims is None:
            claims = self._verify(token)
            if len(self._verified) >= VERIFIED_CACHE_SIZE:
                self._verified.clear()
            self._verified[token] = claims
        now = self.store.sources.clock.now().timestamp()
        if not isinstance(claims["exp"], int | float) or claims["exp"] <= now:
            raise errors.ExpiredToken("Bearer token has expired")
        if isinstance(claims.get("nbf"), int | float) and claims["nbf"] > now:
            raise errors.ExpiredToken("Bearer token is not valid yet (nbf is in the future)")
        return claims

    def _verify(self, token: str) -> dict[str, Any]:
        """The claims of a token whose form, algorithm, signature and issuer check out."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:  # unparsable, or a header PyJWT refuses (crit, kid)
            raise errors.MalformedToken(f"Bearer token is not a well-formed JWT: {exc}") from None
        if header.get("alg") != ALGORITHM:
            raise errors.BadTokenSignature(
                f"Token algorithm {header.get('alg')!r} is not accepted; tokens are {ALGORITHM}"
            )
        try:
            claims = jwt.decode(
                token,
                self.store.signer.key,
                algorithms=[ALGORITHM],
                issuer=ISSUER,
                # Time claims are checked below against the store's clock, not the wall clock.
                options={
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "require": ["exp", "iss"],
                },
            )
        except jwt.InvalidSignatureError:
            raise errors.BadTokenSignature("Bearer token signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise errors.MalformedToken(f"Bearer token is not valid: {exc}") from None
        return claims

    def _caller(self, claims: dict[str, Any]) -> Caller:
        subject_id, subject_type = claims.get("sub"), claims.get("subjectType")
        if not isinstance(subject_id, str) or not isinstance(subject_type, str):
            raise errors.UnknownTokenSubject("Bearer token names no subject")
        caller = self.store.identity.caller(subject_type, subject_id)
        if caller is None:
            raise errors.UnknownTokenSubject(f"Bearer token subject {subject_id!r} does not exist")
        jwt_id = claims.get("jti")
        if jwt_id is not None and not self.store.tokens.use(jwt_id):
            raise errors.UnknownTokenSubject("Bearer token has been revoked or deleted")
        return caller

    def security_map(self) -> dict[str, type]:
        """Connexion security handlers that check bearer tokens with this authenticator:
        platform tokens, or the admin token where the scheme is marked
        `x-platform-mock-admin`."""
        authenticator = self

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

    def dev_token(self, subject: Subject | None = None) -> str:
        """A long-lived token for a subject (default: the fixtures' default user)."""
        return self._long_lived(subject or self.store.identity.default_user())

    def admin_token(self) -> str:
        """The token of the admin API, which no platform subject's token can stand in for."""
        return self._long_lived(ADMIN)

    def _long_lived(self, subject: Subject) -> str:
        # Issued at the start of the world's clock, so the token stays valid across resets.
        start = self.store.sources.clock.start
        return self.store.signer.mint(
            subject, issued_at=start, expires_at=start + DEV_TOKEN_LIFETIME
        )
