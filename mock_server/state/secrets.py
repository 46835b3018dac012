"""Secret groups, their secrets and secret versions: deleting a group (operation 6), and
applying or deleting one from its manifest (`PUT /apply`, `POST /delete`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from mock_server.core import errors
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import Caller, Secret, SecretGroup, SecretVersion, Subject
from mock_server.state.identity import Identity, InvalidManifest, reference
from mock_server.state.sources import iso, world_time

SECRET_REFERENCE_SCHEME = "platform-secret://"


class SecretGroupManifestSecret(TypedDict):
    """A secret of a secret-group manifest: its key and its value."""

    key: str
    value: str


class SecretGroupManifest(TypedDict):
    """A secret-group manifest (the contract's `SecretGroupManifest`): as `tfy apply` sends
    it, with its secrets; as the platform shows it, without."""

    type: Literal["secret-group"]
    name: str
    integration_fqn: str
    secrets: NotRequired[list[SecretGroupManifestSecret]]


class Secrets(Area):
    """Secret groups of the tenant, each backed by a secret integration that may be faulty."""

    def __init__(self, store: Ground, identity: Identity):
        super().__init__(store)
        self.identity = identity

    @locked
    def add_group(
        self,
        name: str,
        *,
        integration_fqn: str,
        integration_healthy: bool = True,
        group_id: str | None = None,
        created_by: Subject | None = None,
        created_at: datetime | None = None,
    ) -> SecretGroup:
        resource = self.identity.add_resource("secret-group", name, resource_id=group_id)
        now = created_at or self.sources.clock.now()
        group = SecretGroup(
            resource,
            integration_fqn,
            integration_healthy,
            created_by=created_by or self.identity.default_user(),
            created_at=now,
            updated_at=now,
        )
        self.world.secret_groups[resource.id] = group
        return group

    @locked
    def add_secret(
        self, group: SecretGroup, key: str, values: list[str], *, secret_id: str | None = None
    ) -> Secret:
        if any(s.key == key for s in group.secrets.values()):
            raise ValueError(f"secret {key!r} already exists in group {group.resource.name!r}")
        fqn = f"{group.resource.fqn}:{key}"
        secret = Secret(
            id=self.new_id(f"secret {fqn!r}", secret_id, "secret"),
            key=key,
            fqn=fqn,
            group_id=group.resource.id,
        )
        for number, value in enumerate(values, start=1):
            version_id = self.new_id(f"version {number} of secret {fqn!r}", None, "secret-version")
            secret.versions.append(
                SecretVersion(version_id, number, value, self.sources.clock.now())
            )
        group.secrets[secret.id] = secret
        self.world.groups_by_secret[secret.id] = group
        return secret

    def group_named(self, name: str) -> SecretGroup:
        resource = self.identity.resource_named("secret-group", name)
        return self.world.secret_groups[resource.id]

    def readable_secret_fqns(self, caller: Caller, secret_ids: list[str]) -> set[str]:
        """Fqns of the given secrets that exist and that the caller may read."""
        fqns: set[str] = set()
        readable: dict[str, bool] = {}  # by group id: one access check per group
        for secret_id in set(secret_ids):
            group = self.world.groups_by_secret.get(secret_id)
            if group is None:
                continue
            group_id = group.resource.id
            if group_id not in readable:
                readable[group_id] = self.identity.allowed(caller, "read", group.resource)
            if readable[group_id]:
                fqns.add(group.secrets[secret_id].fqn)
        return fqns

    @locked
    def delete_group(self, caller: Caller, group_id: str, *, force_delete: bool) -> None:
        """Delete a group with all its secrets and versions, at once or not at all."""
        group = self.world.secret_groups.get(group_id)
        if group is None:
            raise errors.SecretGroupNotFound(f"No secret group with id {group_id!r}")
        self.identity.require(caller, "delete", group.resource)
        if not group.integration_healthy and not force_delete:
            raise errors.SecretIntegrationUnavailable(
                f"Secret integration {group.integration_fqn} of group {group.resource.name} "
                "is faulty or unavailable; retry with forceDelete=true to delete anyway"
            )
        del self.world.secret_groups[group_id]
        for secret in list(group.secrets.values()):
            self._remove_secret(group, secret)
        self.identity.remove_resource(group.resource)
        self.store.tick()

    def _remove_secret(self, group: SecretGroup, secret: Secret) -> None:
        del group.secrets[secret.id]
        self.world.groups_by_secret.pop(secret.id, None)
        self.release_ids(secret.id, *(v.id for v in secret.versions))

    @locked
    def delete_group_named(self, caller: Caller, name: str) -> None:
        """Delete a group by name (`POST /delete` of its manifest): exactly as operation 6
        deletes it, without forceDelete."""
        resource = self.identity.find_resource("secret-group", name)
        if resource is None:
            raise errors.SecretGroupNotFound(f"No secret group named {name!r}")
        self.delete_group(caller, resource.id, force_delete=False)

    @locked
    def apply_group(
        self, caller: Caller, manifest: SecretGroupManifest
    ) -> tuple[SecretGroup, SecretGroupManifest | None]:
        """Create the group of the manifest's name, or bring it to the manifest: its
        integration, and its secrets by key (a new value is a new version of its secret, a
        key no longer given removes its secret). Creating needs write on the tenant, changing
        a group write on it. Returns the group and the manifest it had before, if any."""
        keys = [secret["key"] for secret in manifest.get("secrets", [])]
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        if repeated:
            raise InvalidManifest(f"Secret key(s) given twice: {', '.join(repeated)}")
        resource = self.identity.find_resource("secret-group", manifest["name"])
        group = None if resource is None else self.world.secret_groups[resource.id]
        self.identity.require(
            caller, "write", group.resource if group is not None else self.identity.tenant
        )
        before = None if group is None else group_manifest(group)
        self.store.tick()
        now = self.sources.clock.now()
        if group is None:
            group = self.add_group(
                manifest["name"],
                integration_fqn=manifest["integration_fqn"],
                created_by=self.identity.caller_subject(caller),
            )
        group.integration_fqn = manifest["integration_fqn"]
        group.updated_at = now
        wanted = {secret["key"]: secret["value"] for secret in manifest.get("secrets", [])}
        for secret in list(group.secrets.values()):
            if secret.key not in wanted:
                self._remove_secret(group, secret)
        held = {secret.key: secret for secret in group.secrets.values()}
        for key, value in wanted.items():
            found = held.get(key)
            if found is None:
                self.add_secret(group, key, [value])
            elif not found.versions or found.versions[-1].value != value:
                number = len(found.versions) + 1
                version_id = self.new_id(
                    f"version {number} of secret {found.fqn!r}", None, "secret-version"
                )
                found.versions.append(SecretVersion(version_id, number, value, now))
        return group, before

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "secretGroups": self.load_group,
        }

    # -- fixtures: this area's section, read and written side by side -------------------
    def load_group(self, r: written.SecretGroupRecord) -> None:
        integration = r["integration"]
        created_at = r.get("createdAt")
        group = self.add_group(
            r["name"],
            integration_fqn=integration["fqn"],
            integration_healthy=integration.get("healthy", True),
            group_id=r.get("id"),
            created_by=self.identity.subject_by_reference(r["as"]) if r.get("as") else None,
            created_at=None if created_at is None else world_time(created_at),
        )
        if r.get("updatedAt"):
            group.updated_at = world_time(r["updatedAt"])
        for secret in r.get("secrets", []):
            self.add_secret(
                group, secret["key"], secret.get("values", []), secret_id=secret.get("id")
            )

    def dump(self) -> written.FixtureDocument:
        """This area's fixture section, `secretGroups`."""
        return {
            "secretGroups": [
                written.secret_group(
                    group.resource.name,
                    group_id=group.resource.id,
                    created_by=reference(group.created_by),
                    created_at=iso(group.created_at),
                    updated_at=iso(group.updated_at),
                    integration_fqn=group.integration_fqn,
                    healthy=group.integration_healthy,
                    secrets=[
                        written.secret(s.key, [v.value for v in s.versions], s.id)
                        for s in group.secrets.values()
                    ],
                )
                for group in self.world.secret_groups.values()
            ]
        }


def group_manifest(group: SecretGroup) -> SecretGroupManifest:
    """A group's manifest as the platform shows it: without its secrets' values."""
    return {
        "type": "secret-group",
        "name": group.resource.name,
        "integration_fqn": group.integration_fqn,
    }
