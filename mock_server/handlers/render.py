"""Rendering the state's entities to the wire format of the contract, and the page envelope.

The state layer returns entities (and pages of them); every shape a client sees is built
here, once, so a field's wire form has one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from mock_server.state.entities import (
    Application,
    ArtifactVersion,
    Deployment,
    IssuedToken,
    JobRun,
    RoleBinding,
    Subject,
)
from mock_server.state.identity import Session
from mock_server.state.sources import iso

T = TypeVar("T")


def page(
    items: Iterable[T], total: int, offset: int, limit: int, render: Callable[[T], Any]
) -> dict[str, Any]:
    """The contract's paginated envelope: `data` and `pagination`."""
    return {
        "data": [render(item) for item in items],
        "pagination": {"total": total, "offset": offset, "limit": limit},
    }


def subject_reference(subject: Subject) -> dict[str, Any]:
    """The subject reference (`createdBySubject`) of the contract."""
    return {
        "subjectId": subject.id,
        "subjectType": subject.type,
        "subjectSlug": subject.slug,
        "subjectDisplayName": subject.display_name,
        "subjectPatName": None,
        "subjectControllerName": None,
        "subjectExternalIdentitySlug": None,
    }


def session(found: Session) -> dict[str, Any]:
    """The caller's session, as the platform SDK's `Session` model reads it."""
    subject, tenant = found.subject, found.tenant
    return {
        "user": {
            "id": subject.id,
            "subjectSlug": subject.slug,
            "subjectType": subject.type,
            **({"email": subject.name} if subject.type == "user" else {}),
            "tenantName": tenant.name,
            "roles": found.roles,
            "teams": [{"id": team.id, "name": team.name} for team in found.teams],
            "accounts": [{"id": tenant.id, "name": tenant.name}],
            "effectiveUserId": subject.id,
        }
    }


def application(app: Application) -> dict[str, Any]:
    return {
        "lifecycleStage": "active",
        "id": app.id,
        "fqn": app.fqn,
        "name": app.name,
        "type": app.type,
        "metadata": {"paused": False},
        "workspaceId": app.workspace_id,
        "activeVersion": app.active_version,
        "applicationSetId": app.application_set_id,
    }


def deployment(item: Deployment) -> dict[str, Any]:
    created = iso(item.created_at)
    status = {
        "id": item.status_id,
        "deploymentId": item.id,
        "status": "DEPLOY_SUCCESS",
        "state": {"isTerminalState": True},  # the platform's CLI reads it
        "message": "Deployment is live",
        "retryCount": 0,
        "createdAt": created,
        "updatedAt": created,
    }
    return {
        "manifest": item.manifest,
        "createdBySubject": subject_reference(item.created_by),
        "id": item.id,
        "version": item.version,
        "fqn": item.fqn,
        "applicationId": item.application.id,
        "application": application(item.application),
        "createdAt": created,
        "updatedAt": created,
        "deploymentBuilds": [
            {"name": f"{item.application.name}-build-{item.version}", "status": "SUCCEEDED"}
        ],
        "deploymentStatuses": [status],
        "currentStatusId": item.status_id,
        "currentStatus": status,
        "appliedRecommendations": [],
        "createdBy": item.created_by.slug,
    }


def job_run(run: JobRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "applicationName": run.application.name,
        "deploymentVersion": str(run.deployment_version),
        "command": run.command,
        "error": run.error,
        "triggeredBy": run.triggered_by.slug,
        "sparkUi": None,
        "applicationId": run.application.id,
        "deploymentId": run.deployment_id,
        "tenantName": run.tenant_name,
        "createdAt": run.created_at_ms,
        "endTime": run.end_time_ms,
        "duration": run.duration_ms,
        "totalRetries": run.total_retries,
        "exitCode": run.exit_code,
        "status": run.status,
        "triggeredBySubject": subject_reference(run.triggered_by),
    }


def staged_version(version: ArtifactVersion) -> dict[str, str]:
    return {
        "id": version.id,
        "storage_root": version.storage_root,
        "artifact_id": version.artifact_id,
    }


def role_binding(binding: RoleBinding) -> dict[str, Any]:
    return {
        "type": "role-binding",
        "name": binding.name,
        "subjects": [{"type": s.type, "name": s.name} for s in binding.subjects],
        "permissions": [
            {"resourceType": r.type, "resourceFqn": r.fqn, "role": role}
            for r, role in binding.permissions
        ],
    }


def token_record(issued: IssuedToken) -> dict[str, Any]:
    """The token as the API shows it. A token acts with its owner's grants, so the
    permissions and roles are those the owner holds now, not at creation."""
    token, grants = issued.token, issued.grants
    owner, tenant = token.owner, token.tenant
    created, expiry = iso(token.created_at), iso(token.expires_at)
    # The platform's SDK requires `team` whenever `ownedBy` is present: a token made
    # without teamName has no owner object at all.
    owned_by = (
        {"ownedBy": {"team": token.team_name, "account": tenant.name}} if token.team_name else {}
    )
    return {
        "id": token.id,
        "type": "personal-access-token",
        "tenantName": tenant.name,
        "accountId": tenant.id,
        "jwtId": token.jwt_id,
        "createdBy": owner.slug,
        "nextScheduledRotation": None,
        "createdBySubject": subject_reference(owner),
        "createdAt": created,
        "updatedAt": created,
        "lastAccessedAt": None if token.last_accessed_at is None else iso(token.last_accessed_at),
        "isExpired": token.expires_at <= issued.now,
        "manifest": {
            "name": token.name,
            "type": "virtual-account",
            "permissions": [
                {"resource_fqn": r.fqn, "resource_type": r.type, "role_id": g.role}
                for g, r in grants
            ],
            "expiration_date": expiry,
            **owned_by,
            "tags": {},
            "token_type": "jwt",
        },
        "jwts": [
            {
                "id": token.jwt_id,
                "subjectType": owner.type,
                "subjectId": owner.id,
                "expiry": expiry,
                "tokenType": "jwt",
                "createdAt": created,
                "updatedAt": created,
                "metadata": {},
            }
        ],
        "metadata": {},
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


def issued_token(issued: IssuedToken) -> dict[str, Any]:
    return {"data": token_record(issued), "token": issued.token.token, "created": issued.created}
