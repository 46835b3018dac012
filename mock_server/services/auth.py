"""Bearer authentication: the server's JWTs, minted and checked, and the caller they name.

Tokens are HS256 JWTs signed with the server's key: one drawn at random when the server
starts (256 bits nobody can derive, whatever they know of its seed or fixtures), or one the
user gives (`--signing-key`, `PLATFORM_MOCK_SIGNING_KEY`) where CI needs tokens that outlive
a restart. The key is the server's for its whole life: a re-seed keeps it. Tokens carry the
subject's id (`sub`), type and slug, and for personal access tokens the token id (`jti`), so
that deleting or revoking a token takes effect at once. Expiry is checked against the
store's clock, the same clock that stamped the token. A platform subject's token also
carries what the platform's own CLI and library read from it without checking it
(`subject_claims`): the tenant's name, and the user's e-mail or the other subject's name.

Nothing may lock a user out: the development tokens the command line prints never expire
on any world clock (no `nbf`, an `exp` past the last representable instant). Every token's
time claims are checked: a platform subject's against the world's clock, the admin token's
against the wall clock, so neither a re-seed nor a world clock set to 2036 takes the admin
API away, and an admin token whose `exp` has passed or whose `nbf` is to come is refused
as any other token is (401, code 40103).
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime
from typing import TYPE_CHECKING

import jwt

from mock_server.core import errors
from mock_server.core.jsonvalue import JsonObject
from mock_server.state.entities import Caller, PersonalAccessToken, Subject

if TYPE_CHECKING:
    from mock_server.state.store import Store

ISSUER = "platform-mock"
ALGORITHM = "HS256"
# 10000-01-01T00:00:00Z: later than any instant a world clock (a Python datetime) can show.
NEVER_EXPIRES = 253402300800
TIME_CLAIMS = ("exp", "nbf", "iat")
VERIFIED_CACHE_SIZE = 4096
# The admin API's principal: not a subject of the world, so its token authenticates nowhere else.
ADMIN = Subject(
    type="admin", id="platform-mock-admin", name="admin", slug="admin", display_name="Mock admin"
)


# A key given by the user: at least as many bytes as HS256's hash (RFC 7518, section 3.2).
MIN_KEY_BYTES = 32
KEY_VARIABLE = "PLATFORM_MOCK_SIGNING_KEY"  # where the command line also reads a key


def new_key() -> str:
    """A signing key nobody can derive: 256 bits from the system's random source."""
    return secrets.token_urlsafe(32)


def key_problem(key: str) -> str | None:
    """Why a signing key given by the user cannot be used, if it cannot."""
    if len(key.encode("utf-8", "surrogateescape")) < MIN_KEY_BYTES:
        return (
            f"a signing key has at least {MIN_KEY_BYTES} bytes (such as the output of "
            "`openssl rand -hex 32`): a shorter one can be guessed from any token it signed"
        )
    return None


def subject_claims(subject: Subject, tenant_name: str) -> dict[str, str]:
    """The claims naming a platform subject, as the platform's library decodes them: it
    requires `tenantName` (and `exp`), and shows the user from `email` or `username`."""
    shown = {"email": subject.name} if subject.type == "user" else {"username": subject.name}
    return {
        "sub": subject.id,
        "subjectType": subject.type,
        "subjectSlug": subject.slug,
        "tenantName": tenant_name,
        **shown,
    }


class Signer:
    """Mints the server's JWTs."""

    def __init__(self, key: str):
        self.key = key

    def mint(
        self,
        subject: Subject,
        *,
        tenant_name: str,
        issued_at: datetime,
        expires_at: datetime,
        jwt_id: str | None = None,
        not_before: datetime | None = None,
    ) -> str:
        return self._encode(
            subject_claims(subject, tenant_name),
            issued_at,
            nbf=int((not_before or issued_at).timestamp()),
            exp=int(expires_at.timestamp()),
            **({"jti": jwt_id} if jwt_id is not None else {}),
        )

    def mint_long_lived(
        self, subject: Subject, *, issued_at: datetime, tenant_name: str | None
    ) -> str:
        """A token valid at every instant of any world clock: no `nbf`, and an `exp` no
        clock reaches. The admin token (no tenant) names only its subject."""
        named = (
            subject_claims(subject, tenant_name)
            if tenant_name is not None
            else {"sub": subject.id, "subjectType": subject.type, "subjectSlug": subject.slug}
        )
        return self._encode(named, issued_at, exp=NEVER_EXPIRES)

    def _encode(self, named: dict[str, str], issued_at: datetime, **claims: int | str) -> str:
        written = {
            "iss": ISSUER,
            **named,
            "iat": int(issued_at.timestamp()),
            **claims,
        }
        return jwt.encode(written, self.key, algorithm=ALGORITHM)


def _check_time(claims: JsonObject, now: float) -> None:
    """Refuse a token whose `exp` has passed, or whose `nbf` is to come, at `now` (of a
    verified token: `_verify` lets only whole numbers through as time claims, `exp` always)."""
    expires, not_before = claims["exp"], claims.get("nbf")
    if isinstance(expires, int) and expires <= now:
        raise errors.ExpiredToken("Bearer token has expired")
    if isinstance(not_before, int) and not_before > now:
        raise errors.ExpiredToken("Bearer token is not valid yet (nbf is in the future)")


# The 401s' messages are the mock's own: a library's text (PyJWT's "Invalid header string:
# 'utf-8' codec can't decode byte 0xb7") tells a client's author nothing they can act on.
NOT_A_JWT = (
    "Bearer token is not a well-formed JWT (three base64url parts joined by dots: "
    "header.payload.signature); get a token with `platform-mock token`"
)
NOT_SIGNED_HERE = (
    "Bearer token was not signed by this server: a server signs with a key of its own, new at "
    "each start unless one is given (--signing-key), so a token of an earlier start or of "
    "another server is refused; get a fresh one with `platform-mock token` (`--admin` for "
    "the admin API), or from the banner of `platform-mock serve`"
)


def _invalid(exc: jwt.InvalidTokenError) -> str:
    """Why a token whose signature verified (or could not be checked) is refused, in the
    mock's words."""
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"Bearer token has no {exc.claim!r} claim: it is not a token this mock minted"
    if isinstance(exc, jwt.InvalidIssuerError):
        return f"Bearer token was not issued by this mock (its 'iss' claim is not {ISSUER!r})"
    if isinstance(exc, jwt.DecodeError):
        return NOT_A_JWT
    return "Bearer token claims are not those of a token this mock minted"


class Authenticator:
    """Turns an `Authorization` header into a Caller, or raises the matching 401."""

    def __init__(self, store: Store):
        self.store = store
        # Signature checks by (key, token): a client sends the same token again and again.
        # Only the signature is remembered; time, subject and revocation are checked on every
        # request.
        self._verified: dict[tuple[str, str], JsonObject] = {}

    def authenticate(self, authorization: str | None) -> tuple[Caller, PersonalAccessToken | None]:
        """The platform subject a request's bearer token names, and the world's record of
        the token when it is a personal access token. Authenticating changes nothing: the
        token's `lastAccessedAt` moves only once the request is served (`Tokens.touch`), so
        a request refused later (by validation, a fault, its handler) leaves no trace."""
        claims = self._claims(authorization, self.store.signer.key)
        caller, token = self._caller(claims)  # a token the world no longer holds says so first
        _check_time(claims, self.store.sources.clock.now().timestamp())
        return caller, token

    def authenticate_admin(self, authorization: str | None) -> JsonObject:
        """The admin token's claims; any other valid token is refused with 403. Its time
        claims are checked against the wall clock, not the world's: the admin API stays open
        whatever time the world shows."""
        claims = self._claims(authorization, self.store.signer.key)
        if claims.get("subjectType") != ADMIN.type or claims.get("sub") != ADMIN.id:
            raise errors.PermissionDenied(
                "The admin API needs the mock's admin token; this token names a platform subject"
            )
        _check_time(claims, time.time())
        return claims

    def _claims(self, authorization: str | None, key: str) -> JsonObject:
        """The claims of a bearer header verified with `key`, or the matching 401."""
        if not authorization:
            raise errors.MissingToken()
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise errors.MissingToken("Authorization header must be 'Bearer <token>'")
        claims = self._verified.get((key, token))
        if claims is None:
            claims = self._verify(token, key)
            if len(self._verified) >= VERIFIED_CACHE_SIZE:
                self._verified.clear()
            self._verified[(key, token)] = claims
        return claims

    def _verify(self, token: str, key: str) -> JsonObject:
        """The claims of a token whose form, algorithm, signature and issuer check out."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError:
            raise errors.MalformedToken(NOT_A_JWT) from None
        except jwt.InvalidTokenError:  # a header PyJWT refuses (crit, kid)
            raise errors.MalformedToken(
                "Bearer token header is not one this mock writes (alg HS256, typ JWT)"
            ) from None
        if header.get("alg") != ALGORITHM:
            raise errors.BadTokenSignature(
                f"Token algorithm {header.get('alg')!r} is not accepted; tokens are {ALGORITHM}"
            )
        try:
            claims: JsonObject = jwt.decode(
                token,
                key,
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
            raise errors.BadTokenSignature(NOT_SIGNED_HERE) from None
        except jwt.InvalidTokenError as exc:
            raise errors.MalformedToken(_invalid(exc)) from None
        for name in TIME_CLAIMS:
            # JSON numbers PyJWT lets through: NaN, 1e400, true, a float of a second.
            if name in claims and type(claims[name]) is not int:
                raise errors.MalformedToken(
                    f"Bearer token claim {name!r} must be a whole number of seconds"
                )
        return claims

    def _caller(self, claims: JsonObject) -> tuple[Caller, PersonalAccessToken | None]:
        """The caller a token names and, for a personal access token, the world's record of
        it; 401 when the world holds neither."""
        subject_id, subject_type = claims.get("sub"), claims.get("subjectType")
        if not isinstance(subject_id, str) or not isinstance(subject_type, str):
            raise errors.UnknownTokenSubject("Bearer token names no subject")
        caller = self.store.identity.caller(subject_type, subject_id)
        if caller is None:
            raise errors.UnknownTokenSubject(f"Bearer token subject {subject_id!r} does not exist")
        jwt_id = claims.get("jti")
        if jwt_id is None:
            return caller, None
        # A `jti` that is not text names no token of the world (the server signed none such).
        token = self.store.tokens.live(jwt_id, subject_id) if isinstance(jwt_id, str) else None
        if token is None:
            raise errors.UnknownTokenSubject("Bearer token has been revoked or deleted")
        return caller, token

    def dev_token(self, subject: Subject | None = None) -> str:
        """A long-lived token for a subject (default: the fixtures' default user)."""
        return self._long_lived(subject or self.store.identity.default_user())

    def admin_token(self) -> str:
        """The token of the admin API, which no platform subject's token can stand in for."""
        return self.store.signer.mint_long_lived(
            ADMIN, issued_at=self.store.sources.clock.start, tenant_name=None
        )

    def _long_lived(self, subject: Subject) -> str:
        # Issued at the start of the world's clock, so the token is the same across resets.
        start = self.store.sources.clock.start
        tenant = self.store.identity.tenant.name
        return self.store.signer.mint_long_lived(subject, issued_at=start, tenant_name=tenant)
