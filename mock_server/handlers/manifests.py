"""Handlers of what `tfy apply` and `tfy delete` send: a manifest applied or deleted, and the
dependency tree of a batch; with the wire form of an applied role binding and of a secret
group, as the platform SDK's `RoleBinding` and `SecretGroup` read them."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.artifacts import ArtifactVersionRecord, version_record
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation
from mock_server.state.artifacts import ArtifactVersionFailed
from mock_server.state.entities import AppliedRoleBinding, ArtifactVersion, Secret, SecretGroup
from mock_server.state.identity import (
    InvalidManifest,
    ManifestTargetNotFound,
    RoleBindingManifest,
    RoleBindingNotFound,
)
from mock_server.state.manifests import (
    BatchManifest,
    DeletedManifest,
    Manifest,
    role_binding_manifest,
)
from mock_server.state.secrets import SecretGroupManifest, group_manifest
from mock_server.state.sources import iso


class ApplyRequest(TypedDict):
    """The contract's `ApplyRequest`, `dryRun` filled by validation."""

    manifest: Manifest
    dryRun: bool
    force: NotRequired[bool]


class DeleteRequest(TypedDict):
    """The contract's `DeleteRequest`."""

    manifest: DeletedManifest


class DependencyTreeRequest(TypedDict):
    """The contract's `DependencyTreeRequest`."""

    manifests: list[BatchManifest]


class RoleBindingRecord(TypedDict):
    """The contract's `RoleBinding`: an applied role binding."""

    id: str
    name: str
    accountId: str
    manifest: RoleBindingManifest
    createdBySubject: render.SubjectReferenceRecord
    createdAt: str
    updatedAt: str


class _SecretTimes(TypedDict, total=False):
    createdAt: str
    updatedAt: str


class WireSecret(TypedDict):
    """The contract's `Secret`, without its value; its times only when it has a version."""

    id: str
    fqn: str
    name: str
    secretGroupId: str
    createdAt: NotRequired[str]
    updatedAt: NotRequired[str]


class SecretGroupRecord(TypedDict):
    """The contract's `SecretGroup`, without its secrets' values."""

    id: str
    fqn: str
    tenantName: str
    createdBySubject: render.SubjectReferenceRecord
    associatedSecrets: list[WireSecret]
    manifest: SecretGroupManifest
    accountId: str
    createdAt: str
    updatedAt: str
    createdBy: str


# The record an apply made or changed, by its kind.
AppliedRecord = RoleBindingRecord | SecretGroupRecord | ArtifactVersionRecord


class ApplyRecord(TypedDict):
    """The contract's `ApplyResponse`."""

    action: str
    data: AppliedRecord
    existingManifest: NotRequired[Manifest]


class ResourceIdentifierRecord(TypedDict):
    resourceType: str
    resourceName: str


class ResourceWithDependenciesRecord(TypedDict):
    resourceType: str
    resourceName: str
    dependencies: list[ResourceIdentifierRecord]


@operation(
    "applyManifest",
    Example(
        "PUT",
        "/api/svc/v1/apply",
        body={
            "manifest": {
                "type": "role-binding",
                "name": "ml-team-editors",
                "subjects": [{"type": "user", "name": "bob@acme.example"}],
                "permissions": [
                    {
                        "resourceType": "workspace",
                        "resourceFqn": "prod-cluster:ml-team",
                        "role": "workspace-editor",
                    }
                ],
            }
        },
    ),
    {
        400: InvalidManifest,
        403: errors.PermissionDenied,
        404: ManifestTargetNotFound,
        409: ArtifactVersionFailed,
    },
    client_model="truefoundry_sdk.types:TrueFoundryApplyResponse",
)
def apply(body: ApplyRequest) -> ApplyRecord:
    applied = store().manifests.apply(caller(), body["manifest"], dry_run=body["dryRun"])
    answer: ApplyRecord = {"action": applied.action, "data": record(applied.record)}
    # The SDK reads an existing manifest of every kind the mock applies but an agent skill's
    # (its model of `existingManifest` has none): a skill's update shows none.
    existing = applied.existing
    if existing is not None and existing["type"] != "agent-skill":
        # An artifact's or a model's, with the metadata the SDK requires (its kind is the
        # record's: `isinstance(applied.record, ArtifactVersion)`).
        if existing["type"] == "artifact-version" or existing["type"] == "model-version":
            existing = {"metadata": {}, **existing}
        answer["existingManifest"] = existing
    return answer


@operation(
    "deleteManifest",
    Example(
        "POST",
        "/api/svc/v1/delete",
        body={
            "manifest": {
                "type": "secret-group",
                "name": "llm-keys",
                "integration_fqn": "acme:aws:secrets-manager",
            }
        },
    ),
    {
        403: errors.PermissionDenied,
        404: RoleBindingNotFound,
        424: errors.SecretIntegrationUnavailable,
    },
    client_model="truefoundry_sdk.types:TrueFoundryDeleteResponse",
)
def delete(body: DeleteRequest) -> render.EmptyRecord:
    store().manifests.delete(caller(), body["manifest"])
    return {}


@operation(
    "resolveDependencyTree",
    Example(
        "POST",
        "/api/svc/v1/dependency-tree",
        body={
            "manifests": [
                {"type": "secret-group", "name": "keys", "integration_fqn": "acme:aws:sm"},
                {
                    "type": "role-binding",
                    "name": "keys-readers",
                    "subjects": [{"type": "user", "name": "someone@example.com"}],
                    "permissions": [
                        {
                            "resourceType": "secret-group",
                            "resourceFqn": "acme:keys",
                            "role": "secret-group-viewer",
                        }
                    ],
                },
            ]
        },
    ),
    client_model="truefoundry.deploy.lib.model.entity:DependencyTreeResponse",
    read_only=True,  # a POST only for its body: it orders manifests, changing nothing
    recorded=False,  # the order of the client's own manifests: nothing of the world
)
def dependency_tree(
    body: DependencyTreeRequest,
) -> render.DataRecord[list[ResourceWithDependenciesRecord]]:
    found = store().manifests.dependency_tree(body["manifests"])
    return {
        "data": [
            {
                "resourceType": item.type,
                "resourceName": item.name,
                "dependencies": [
                    {"resourceType": type_, "resourceName": name} for type_, name in item.needs
                ],
            }
            for item in found
        ]
    }


def record(applied: AppliedRoleBinding | SecretGroup | ArtifactVersion) -> AppliedRecord:
    """The record an apply made or changed, as the SDK's model of its kind reads it."""
    if isinstance(applied, AppliedRoleBinding):
        return role_binding_record(applied)
    if isinstance(applied, SecretGroup):
        return secret_group_record(applied)
    return version_record(applied)


def role_binding_record(binding: AppliedRoleBinding) -> RoleBindingRecord:
    return {
        "id": binding.id,
        "name": binding.name,
        "accountId": store().identity.tenant.id,
        "manifest": role_binding_manifest(binding),
        "createdBySubject": render.subject_reference(binding.created_by),
        "createdAt": iso(binding.created_at),
        "updatedAt": iso(binding.updated_at),
    }


def secret_group_record(group: SecretGroup) -> SecretGroupRecord:
    """A group without its secrets' values, which the platform never shows."""
    tenant = store().identity.tenant
    return {
        "id": group.resource.id,
        "fqn": group.resource.fqn,
        "tenantName": tenant.name,
        "createdBySubject": render.subject_reference(group.created_by),
        "associatedSecrets": [
            {
                "id": secret.id,
                "fqn": secret.fqn,
                "name": secret.key,
                "secretGroupId": group.resource.id,
                **_times(secret),
            }
            for secret in group.secrets.values()
        ],
        "manifest": group_manifest(group),
        "accountId": tenant.id,
        "createdAt": iso(group.created_at),
        "updatedAt": iso(group.updated_at),
        "createdBy": group.created_by.slug,
    }


def _times(secret: Secret) -> _SecretTimes:
    """When a secret was made and last changed: those of its first and last versions."""
    if not secret.versions:
        return {}
    return {
        "createdAt": iso(secret.versions[0].created_at),
        "updatedAt": iso(secret.versions[-1].created_at),
    }
