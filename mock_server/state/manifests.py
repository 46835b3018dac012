"""Manifests applied and deleted as the platform's CLI sends them (`tfy apply`, `tfy delete`):
each kind the world holds, by the area that owns it, and the dependency tree the CLI orders a
batch of manifests by.

Kinds: role bindings (`Identity`: what is applied, the generating operation returns), secret
groups with their secrets (`Secrets`: a delete cascades as operation 6's), and artifact,
model and agent-skill versions (`Artifacts`: applying one finalises it, as
`PUT /artifact-versions` does). A dry run checks and answers as the apply would, and changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NotRequired, TypeAlias, TypedDict

from mock_server.core.jsonvalue import JsonValue
from mock_server.state.area import Area, Ground, locked
from mock_server.state.artifacts import Artifacts
from mock_server.state.entities import (
    AppliedRoleBinding,
    ArtifactVersion,
    ArtifactVersionManifest,
    Caller,
    SecretGroup,
)
from mock_server.state.identity import Identity, RoleBindingManifest, binding_manifest
from mock_server.state.secrets import SecretGroupManifest, Secrets

ARTIFACT_KINDS = ("artifact-version", "model-version", "agent-skill")

# A manifest of a kind the world holds (`PUT /apply`), told apart by `type`; and of a kind
# a delete names (`POST /delete`).
Manifest: TypeAlias = RoleBindingManifest | SecretGroupManifest | ArtifactVersionManifest
DeletedManifest: TypeAlias = RoleBindingManifest | SecretGroupManifest


class BatchManifest(TypedDict):
    """A manifest of a batch whose dependency tree is asked, of any kind: only its `type`,
    `name`, `permissions` and `ml_repo` are read, and the last two only when they are what
    a role binding's and a version's are."""

    type: str
    name: NotRequired[str]
    permissions: NotRequired[JsonValue]
    ml_repo: NotRequired[JsonValue]


@dataclass(frozen=True)
class Applied:
    """What an apply did: `CREATE` or `UPDATE`, the record, and the manifest it replaced."""

    action: str
    record: AppliedRoleBinding | SecretGroup | ArtifactVersion
    existing: Manifest | None


@dataclass(frozen=True)
class Dependencies:
    """One manifest of a batch, and the manifests of the batch it needs applied first."""

    type: str
    name: str
    needs: list[tuple[str, str]]  # (type, name)


class Manifests(Area):
    """Applying and deleting manifests of the kinds the world holds."""

    def __init__(
        self,
        store: Ground,
        identity: Identity,
        secrets: Secrets,
        artifacts: Artifacts,
        trial: Callable[[], AbstractContextManager[None]],
    ):
        """`trial()`: a context in which the world's changes are undone at its end."""
        super().__init__(store)
        self.identity = identity
        self.secrets = secrets
        self.artifacts = artifacts
        self.trial = trial

    @locked
    def apply(self, caller: Caller, manifest: Manifest, *, dry_run: bool) -> Applied:
        """Create or update the record of a manifest (its kind checked by the contract)."""
        if dry_run:
            with self.trial():
                return self._apply(caller, manifest)
        return self._apply(caller, manifest)

    def _apply(self, caller: Caller, manifest: Manifest) -> Applied:
        if manifest["type"] == "role-binding":
            binding, before = self.identity.apply_binding(caller, manifest)
            existing = None if before is None else role_binding_manifest(before)
            return Applied("UPDATE" if before else "CREATE", binding, existing)
        if manifest["type"] == "secret-group":
            group, was = self.secrets.apply_group(caller, manifest)
            return Applied("UPDATE" if was else "CREATE", group, was)
        version, replaced = self.artifacts.finalize(caller, manifest)
        return Applied("UPDATE" if replaced else "CREATE", version, replaced)

    @locked
    def delete(self, caller: Caller, manifest: DeletedManifest) -> None:
        """Delete the record a manifest names (by kind and name)."""
        if manifest["type"] == "role-binding":
            self.identity.delete_role_binding(caller, manifest["name"])
        else:
            self.secrets.delete_group_named(caller, manifest["name"])

    @staticmethod
    def dependency_tree(manifests: list[BatchManifest]) -> list[Dependencies]:
        """Each manifest of a batch, with the others of the batch it refers to: a role
        binding needs the resources it grants on, a version its ML repo. A manifest without
        a name is named by its type, as the CLI names it."""
        named = [(m["type"], m.get("name") or m["type"]) for m in manifests]
        found = []
        for manifest, (type_, name) in zip(manifests, named, strict=True):
            wanted: set[tuple[str, str]] = set()
            permissions = manifest.get("permissions")
            for permission in permissions if isinstance(permissions, list) else []:
                if isinstance(permission, dict):
                    fqn = str(permission.get("resourceFqn", ""))
                    wanted.add((str(permission.get("resourceType")), fqn.rpartition(":")[2]))
            ml_repo = manifest.get("ml_repo")
            if isinstance(ml_repo, str):
                wanted.add(("ml-repo", ml_repo))
            needs = [other for other in named if other != (type_, name) and _matches(other, wanted)]
            found.append(Dependencies(type_, name, needs))
        return found


def _matches(other: tuple[str, str], wanted: set[tuple[str, str]]) -> bool:
    type_, name = other
    kind = type_.split("/")[0]  # `provider-account/aws` is a `provider-account`
    return (kind, name) in wanted or (kind == "ml-repo" and ("mlf-project", name) in wanted)


def role_binding_manifest(binding: AppliedRoleBinding) -> RoleBindingManifest:
    """An applied role binding's manifest, as it was applied."""
    return binding_manifest(binding)
