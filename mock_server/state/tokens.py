"""Personal access tokens: get-or-create per caller (operation 5), and revocation for auth."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from mock_server import errors
from mock_server.state.entities import Caller, PersonalAccessToken
from mock_server.state.sources import iso
from mock_server.state.store import Area, locked

# Ten years: long enough that a client checking expiry against the wall clock never sees
# an expired token from a default-epoch mock.
TOKEN_LIFETIME = timedelta(days=3650)


class Tokens(Area):
    """Tokens are owned by the caller that created them; names are unique per owner."""

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
    ) -> dict[str, Any]:
        """The caller's token named `name`, created with a fresh value when absent.

        The keyword arguments keep ids and time given by a fixture (e.g. a state dump)."""
        existing = self.world.tokens.get((caller.subject_id, name))
        if existing is not None:
            return self._response(existing, created=False)
        identity = self.store.identity
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
        expiry = now + TOKEN_LIFETIME
        holder = f"personal access token {name!r} of {owner.type} {owner.name!r}"
        token_id = self.new_id(holder, token_id, "pat")
        jwt_id = self.claim_id(
            f"the JWT of {holder}", jwt_id, lambda: self.sources.new_token_id("jti")
        )
        tenant = identity.tenant
        # The platform's SDK requires `team` whenever `ownedBy` is present: a token made
        # without teamName has no owner object at all.
        owned_by = {"ownedBy": {"team": team_name, "account": tenant.name}} if team_name else {}
        record = {
            "id": token_id,
            "type": "personal-access-token",
            "tenantName": tenant.name,
            "accountId": tenant.id,
            "jwtId": jwt_id,
            "createdBy": owner.slug,
            "nextScheduledRotation": None,
            "createdBySubject": owner.reference(),
            "createdAt": iso(now),
            "updatedAt": iso(now),
            "lastAccessedAt": None,
            "isExpired": False,
            "manifest": {
                "name": name,
                "type": "virtual-account",
                "permissions": [],
                "expiration_date": iso(expiry),
                **owned_by,
                "tags": {},
                "token_type": "jwt",
            },
            "jwts": [
                {
                    "id": jwt_id,
                    "subjectType": owner.type,
                    "subjectId": owner.id,
                    "expiry": iso(expiry),
                    "tokenType": "jwt",
                    "createdAt": iso(now),
                    "updatedAt": iso(now),
                    "metadata": {},
                }
            ],
            "metadata": {},
            "roleIds": [],
            "rolesWithResource": [],
        }
        value = self.store.signer.mint(owner, issued_at=now, expires_at=expiry, jwt_id=jwt_id)
        token = PersonalAccessToken(owner.type, owner.id, name, record, value, jwt_id)
        self.world.tokens[(owner.id, name)] = token
        return self._response(token, created=True)

    def _response(self, token: PersonalAccessToken, *, created: bool) -> dict[str, Any]:
        """The token as the API shows it. A token acts with its owner's grants, so the
        permissions and roles are those the owner holds now, not at creation."""
        world = self.world
        grants = [
            (grant, world.resources[(grant.resource_type, grant.resource_id)])
            for grant in world.grants
            if (grant.subject_type, grant.subject_id) == (token.owner_type, token.owner_id)
        ]
        expiry = token.record["jwts"][0]["expiry"]
        record = {
            **token.record,
            "isExpired": expiry <= iso(self.sources.clock.now()),
            "manifest": {
                **token.record["manifest"],
                "permissions": [
                    {"resource_fqn": r.fqn, "resource_type": r.type, "role_id": g.role}
                    for g, r in grants
                ],
            },
            "roleIds": sorted({g.role for g, _ in grants}),
            "rolesWithResource": [
                {
                    "roleId": g.role,
                    "resourceType": g.resource_type,
                    "resourceId": g.resource_id,
                    "roleName": g.role,
                }
                for g, _ in grants
            ],
        }
        return {"data": record, "token": token.token, "created": created}

    @locked
    def live(self, jwt_id: str, owner_id: str) -> PersonalAccessToken | None:
        """The world's live token with that id owned by that subject; None when it is
        unknown, revoked, of an earlier world, or another's id."""
        for token in self.world.tokens.values():
            if token.jwt_id == jwt_id and token.owner_id == owner_id and not token.revoked:
                return token
        return None

    @locked
    def touch(self, token: PersonalAccessToken) -> None:
        """Record that a token authenticated a request."""
        token.record["lastAccessedAt"] = iso(self.sources.clock.now())

    @locked
    def revoke(self, owner_id: str, name: str) -> None:
        self.world.tokens[(owner_id, name)].revoked = True
