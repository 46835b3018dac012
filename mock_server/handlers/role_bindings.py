"""Handler of operation 1: generate role-binding manifests."""

from __future__ import annotations

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import store
from mock_server.handlers.operation import Example, operation
from mock_server.state.identity import RoleBindingManifest


@operation(
    "generateRoleBindingManifests",
    Example(
        "GET",
        "/api/svc/v1/role-bindings/generate-manifest",
        query={"subjectType": "user", "subjectId": "<user:alice@acme.example>"},
    ),
    {400: errors.InvalidRoleBindingQuery, 404: errors.RoleBindingTargetNotFound},
)
def generate_manifests(
    *,
    include_only_tenant_roles: bool,  # Connexion fills in the spec's default
    resource_type: str | None = None,
    resource_id: str | None = None,
    subject_type: str | None = None,
    subject_id: str | None = None,
) -> render.DataRecord[list[RoleBindingManifest]]:
    bindings = store().identity.role_binding_manifests(
        resource_type=resource_type,
        resource_id=resource_id,
        subject_type=subject_type,
        subject_id=subject_id,
        include_only_tenant_roles=include_only_tenant_roles,
    )
    return {"data": [render.role_binding(b) for b in bindings]}
