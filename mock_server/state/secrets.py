"""Secret groups, their secrets and secret versions, and deleting a group (operation 6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mock_server.core import errors
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import Caller, Secret, SecretGroup, SecretVersion
from mock_server.state.identity import Identity

SECRET_REFERENCE_SCHEME = "platform-secret://"


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
    ) -> SecretGroup:
        resource = self.identity.add_resource("secret-group", name, resource_id=group_id)
        group = SecretGroup(resource, integration_fqn, integration_healthy)
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
        for secret_id in group.secrets:
            self.world.groups_by_secret.pop(secret_id, None)
        self.release_ids(
            *(s.id for s in group.secrets.values()),
            *(v.id for s in group.secrets.values() for v in s.versions),
        )
        self.identity.remove_resource(group.resource)
        self.store.tick()

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "secretGroups": self.load_group,
        }

    # -- fixtures: this area's section, read and written side by side -------------------
    def load_group(self, r: dict[str, Any]) -> None:
        integration = r["integration"]
        group = self.add_group(
            r["name"],
            integration_fqn=integration["fqn"],
            integration_healthy=integration.get("healthy", True),
            group_id=r.get("id"),
        )
        for secret in r.get("secrets", []):
            self.add_secret(
                group, secret["key"], secret.get("values", []), secret_id=secret.get("id")
            )

    def dump(self) -> dict[str, Any]:
        """This area's fixture section, `secretGroups`."""
        return {
            "secretGroups": [
                {
                    "name": group.resource.name,
                    "id": group.resource.id,
                    "integration": {
                        "fqn": group.integration_fqn,
                        "healthy": group.integration_healthy,
                    },
                    "secrets": [
                        {"key": s.key, "id": s.id, "values": [v.value for v in s.versions]}
                        for s in group.secrets.values()
                    ],
                }
                for group in self.world.secret_groups.values()
            ]
        }
