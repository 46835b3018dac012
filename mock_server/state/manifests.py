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

import copy
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from mock_server.state.area import Area, Ground, locked
from mock_server.state.artifacts import Artifacts
from mock_server.state.entities import (
    AppliedRoleBinding,
    ArtifactVersion,
    Caller,
    SecretGroup,
)
from mock_server.state.identity import Identity
from mock_server.state.secrets import Secrets

ARTIFACT_KINDS = ("artifact-version", "model-version", "agent-skill")


@dataclass(frozen=True)
class Applied:
    """What an apply did: `CREATE` or `UPDATE`, the record, and the manifest it replaced."""

    action: str
    record: AppliedRoleBinding | SecretGroup | ArtifactVersion
    existing: dict[str, Any] | None


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
    def apply(self, caller: Caller, manifest: dict[str, Any], *, dry_run: bool) -> Applied:
        """Create or update the record of a manifest (its kind checked by the contract)."""
        if dry_run:
            with self.trial():
                return self._apply(caller, manifest)
        return self._apply(caller, manifest)

    def _apply(self, caller: Caller, manifest: dict[str, Any]) -> Applied:
        kind = manifest["type"]
        if kind == "role-binding":
            binding, before = self.identity.apply_role_binding(caller, manifest)
            existing = None if before is None else role_binding_manifest(before)
            return Applied("UPDATE" if before else "CREATE", binding, existing)
        if kind == "secret-group":
            group, was = self.secrets.apply_group(caller, manifest)
            return Applied("UPDATE" if was else "CREATE", group, was)
        version, replaced = self.artifacts.finalize(caller, manifest)
        return Applied("UPDATE" if replaced else "CREATE", version, replaced)

    @locked
    def delete(self, caller: Caller, manifest: dict[str, Any]) -> None:
        """Delete the record a manifest names (by kind and name)."""
        if manifest["type"] == "role-binding":
            self.identity.delete_role_binding(caller, manifest["name"])
        else:
            self.secrets.delete_group_named(caller, manifest["name"])

    @staticmethod
    def dependency_tree(manifests: list[dict[str, Any]]) -> list[Dependencies]:
        """Each manifest of a batch, with the others of the batch it refers to: a role
        binding needs the resources it grants on, a version its ML repo. A manifest without
        a name is named by its type, as the CLI names it."""
        named = [(m["type"], m.get("name") or m["type"]) for m in manifests]
        found = []
        for manifest, (type_, name) in zip(manifests, named, strict=True):
            wanted: set[tuple[str, str]] = set()
            for permission in manifest.get("permissions") or []:
                if isinstance(permission, dict):
                    fqn = str(permission.get("resourceFqn", ""))
                    wanted.add((str(permission.get("resourceType")), fqn.rpartition(":")[2]))
            if isinstance(manifest.get("ml_repo"), str):
                wanted.add(("ml-repo", manifest["ml_repo"]))
            needs = [other for other in named if other != (type_, name) and _matches(other, wanted)]
            found.append(Dependencies(type_, name, needs))
        return found


def _matches(other: tuple[str, str], wanted: set[tuple[str, str]]) -> bool:
    type_, name = other
    kind = type_.split("/")[0]  # `provider-account/aws` is a `provider-account`
    return (kind, name) in wanted or (kind == "ml-repo" and ("mlf-project", name) in wanted)


def role_binding_manifest(binding: AppliedRoleBinding) -> dict[str, Any]:
    """An applied role binding's manifest, as it was applied."""
    return copy.deepcopy(
        {
            "type": "role-binding",
            "name": binding.name,
            "subjects": [{"type": s.type, "name": s.name} for s in binding.subjects],
            "permissions": [
                {"resourceType": r.type, "resourceFqn": r.fqn, "role": role}
                for r, role in binding.permissions
            ],
        }
    )
