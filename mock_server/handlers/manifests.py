"""Handlers of what `tfy apply` and `tfy delete` send: a manifest applied or deleted, and the
dependency tree of a batch; with the wire form of an applied role binding and of a secret
group, as the platform SDK's `RoleBinding` and `SecretGroup` read them."""

from __future__ import annotations

from typing import Any

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.artifacts import version_record
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation
from mock_server.state.artifacts import ArtifactVersionFailed
from mock_server.state.entities import AppliedRoleBinding, ArtifactVersion, SecretGroup
from mock_server.state.identity import InvalidManifest, ManifestTargetNotFound, RoleBindingNotFound
from mock_server.state.manifests import role_binding_manifest
from mock_server.state.secrets import group_manifest
from mock_server.state.sources import iso


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
def apply(body: dict[str, Any]) -> dict[str, Any]:
    applied = store().manifests.apply(caller(), body["manifest"], dry_run=body["dryRun"])
    answer: dict[str, Any] = {"action": applied.action, "data": record(applied.record)}
    # The SDK reads an existing manifest of every kind the mock applies but an agent skill's
    # (its model of `existingManifest` has none): a skill's update shows none.
    existing = applied.existing
    if existing is not None and existing["type"] != "agent-skill":
        if isinstance(applied.record, ArtifactVersion):  # with the metadata the SDK requires
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
def delete(body: dict[str, Any]) -> dict[str, Any]:
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
def dependency_tree(body: dict[str, Any]) -> dict[str, Any]:
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


def record(applied: AppliedRoleBinding | SecretGroup | ArtifactVersion) -> dict[str, Any]:
    """The record an apply made or changed, as the SDK's model of its kind reads it."""
    if isinstance(applied, AppliedRoleBinding):
        return role_binding_record(applied)
    if isinstance(applied, SecretGroup):
        return secret_group_record(applied)
    return version_record(applied)


def role_binding_record(binding: AppliedRoleBinding) -> dict[str, Any]:
    return {
        "id": binding.id,
        "name": binding.name,
        "accountId": store().identity.tenant.id,
        "manifest": role_binding_manifest(binding),
        "createdBySubject": render.subject_reference(binding.created_by),
        "createdAt": iso(binding.created_at),
        "updatedAt": iso(binding.updated_at),
    }


def secret_group_record(group: SecretGroup) -> dict[str, Any]:
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
                **(
                    {
                        "createdAt": iso(secret.versions[0].created_at),
                        "updatedAt": iso(secret.versions[-1].created_at),
                    }
                    if secret.versions
                    else {}
                ),
            }
            for secret in group.secrets.values()
        ],
        "manifest": group_manifest(group),
        "accountId": tenant.id,
        "createdAt": iso(group.created_at),
        "updatedAt": iso(group.updated_at),
        "createdBy": group.created_by.slug,
    }
