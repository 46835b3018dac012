"""Personal access tokens: get-or-create per caller (operation 5), and revocation for auth."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol

from mock_server.core import errors
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import Caller, IssuedToken, PersonalAccessToken, Subject
from mock_server.state.identity import Identity, reference
from mock_server.state.sources import iso, world_time

# Ten years: long enough that a client checking expiry against the wall clock never sees
# an expired token from a default-epoch mock.
TOKEN_LIFETIME = timedelta(days=3650)


class Minter(Protocol):
    """The server's signer, as the app gives it to the store: the key its tokens are checked
    with, and the minting of a token's value. The state layer only calls it."""

    @property
    def key(self) -> str: ...

    def mint(
        self,
        subject: Subject,
        *,
        tenant_name: str,
        issued_at: datetime,
        expires_at: datetime,
        jwt_id: str | None = None,
        not_before: datetime | None = None,
    ) -> str: ...

    def mint_long_lived(
        self, subject: Subject, *, issued_at: datetime, tenant_name: str | None
    ) -> str: ...


class TokenGround(Ground, Protocol):
    """A store that also holds the server's signer (read at each minting: the signer may be
    replaced, as a test does to sign with a key of its own)."""

    @property
    def signer(self) -> Minter: ...


class Tokens(Area):
    """Tokens are owned by the caller that created them; names are unique per owner."""

    def __init__(self, store: TokenGround, identity: Identity):
        super().__init__(store)
        self.signing = store
        self.identity = identity

    @locked
    def get_or_create(
        self,
        caller: Caller,
        name: str,
        team_name: str | None,
        *,
        token_id: str | None = None,
        jwt_id: str | None = None,
        created_at: datetime | None = None,
    ) -> IssuedToken:
        """The caller's token named `name`, created with a fresh value when absent, or when
        the one it holds no longer authenticates (revoked or expired): that one is replaced,
        and its value stays refused (its JWT id is never drawn again in this world).

        The keyword arguments keep ids and time given by a fixture (e.g. a state dump)."""
        existing = self.world.tokens.get((caller.subject_id, name))
        if existing is not None and self._working(existing):
            return self._issued(existing, created=False)
        identity = self.identity
        owner = identity.caller_subject(caller)
        if team_name is not None and team_name not in {
            team.name for team in identity.teams_of(owner.id)
        }:
            raise errors.InvalidTeam(
                f"teamName {team_name!r} names no team that {owner.slug} belongs to",
                details=[
                    {
                        "location": "query",
                        "field": "teamName",
                        "message": "not a team of the caller",
                    }
                ],
            )
        self.store.tick()
        now = created_at or self.sources.clock.now()
        holder = f"personal access token {name!r} of {owner.type} {owner.name!r}"
        token_id = self.new_id(holder, token_id, "pat")
        jwt_id = self.claim_id(
            f"the JWT of {holder}", jwt_id, lambda: self.sources.new_token_id("jti")
        )
        expiry = now + TOKEN_LIFETIME
        value = self.signing.signer.mint(
            owner,
            tenant_name=identity.tenant.name,
            issued_at=now,
            expires_at=expiry,
            jwt_id=jwt_id,
        )
        token = PersonalAccessToken(
            id=token_id,
            owner=owner,
            name=name,
            team_name=team_name,
            tenant=identity.tenant,
            created_at=now,
            expires_at=expiry,
            token=value,
            jwt_id=jwt_id,
        )
        if existing is not None:  # replaced: the world no longer holds it (nor its JWT id)
            self.world.tokens_by_jwt.pop(existing.jwt_id, None)
        self.world.tokens[(owner.id, name)] = token
        self.world.tokens_by_jwt[jwt_id] = token
        return self._issued(token, created=True)

    def _working(self, token: PersonalAccessToken) -> bool:
        """Whether the token still authenticates: neither revoked nor expired."""
        return not token.revoked and token.expires_at > self.sources.clock.now()

    def _issued(self, token: PersonalAccessToken, *, created: bool) -> IssuedToken:
        world = self.world
        grants = [
            (grant, world.resources[(grant.resource_type, grant.resource_id)])
            for grant in self.identity.grants_of(token.owner.type, token.owner.id)
        ]
        return IssuedToken(token, grants, self.sources.clock.now(), created)

    @locked
    def live(self, jwt_id: str, owner_id: str) -> PersonalAccessToken | None:
        """The world's live token with that id owned by that subject; None when it is
        unknown, revoked, of an earlier world, or another's id. By index: a request costs
        the same with ten tokens as with two hundred thousand."""
        token = self.world.tokens_by_jwt.get(jwt_id)
        if token is None or token.owner_id != owner_id or token.revoked:
            return None
        return token

    @locked
    def touch(self, token: PersonalAccessToken) -> None:
        """Record that a token authenticated a request."""
        token.last_accessed_at = self.sources.clock.now()

    @contextmanager
    def in_use(self, token: PersonalAccessToken) -> Iterator[None]:
        """A request authenticated by `token` being served: the token's last use is now,
        and stays as it was if the request is refused (its handler raises)."""
        with self.store.lock:
            before = token.last_accessed_at
            self.touch(token)
        try:
            yield
        except BaseException:
            with self.store.lock:
                token.last_accessed_at = before
            raise

    @locked
    def revoke(self, owner_id: str, name: str) -> None:
        self.world.tokens[(owner_id, name)].revoked = True

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "personalAccessTokens": self.load_token,
        }

    # -- fixtures: this area's section, read and written side by side -------------------
    def load_token(self, r: written.TokenRecord) -> None:
        caller = self.identity.subject_by_reference(r["owner"]).caller()
        created_at, last_accessed_at = r.get("createdAt"), r.get("lastAccessedAt")
        issued = self.get_or_create(
            caller,
            r["name"],
            r.get("teamName"),
            token_id=r.get("id"),
            jwt_id=r.get("jwtId"),
            created_at=None if created_at is None else world_time(created_at),
        )
        token = issued.token
        token.last_accessed_at = None if last_accessed_at is None else world_time(last_accessed_at)
        token.revoked = r.get("revoked", False)

    def dump(self) -> written.FixtureDocument:
        """This area's fixture section, `personalAccessTokens`."""
        return {
            "personalAccessTokens": [
                written.token(
                    reference(t.owner),
                    t.name,
                    team_name=t.team_name,
                    token_id=t.id,
                    jwt_id=t.jwt_id,
                    created_at=iso(t.created_at),
                    last_accessed_at=iso(t.last_accessed_at) if t.last_accessed_at else None,
                    revoked=t.revoked,
                )
                for t in self.world.tokens.values()
            ]
        }
