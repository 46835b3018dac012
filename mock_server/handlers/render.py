"""Rendering the state's entities to the wire format of the contract, and the page envelope.

The state layer returns entities (and pages of them); every shape a client sees is built
here, once, so a field's wire form has one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, NotRequired, TypedDict, TypeVar

from mock_server.core.jsonvalue import JsonObject
from mock_server.state.entities import (
    Application,
    ArtifactVersion,
    Deployment,
    IssuedToken,
    JobRun,
    RoleBinding,
    Subject,
)
from mock_server.state.identity import RoleBindingManifest, Session, binding_manifest
from mock_server.state.sources import iso

T = TypeVar("T")
R = TypeVar("R")


class EmptyRecord(TypedDict):
    """The empty object an operation answers when it has nothing to show (`EmptyObject`)."""


class DataRecord(TypedDict, Generic[R]):
    """The envelope of one record, or of a list, under `data`."""

    data: R


class PaginationRecord(TypedDict):
    total: int
    offset: int
    limit: int


class PageRecord(TypedDict, Generic[R]):
    """The contract's paginated envelope."""

    data: list[R]
    pagination: PaginationRecord


class SubjectReferenceRecord(TypedDict):
    """The contract's `SubjectReference` (`createdBySubject`)."""

    subjectId: str
    subjectType: str
    subjectSlug: str
    subjectDisplayName: str
    subjectPatName: str | None
    subjectControllerName: str | None
    subjectExternalIdentitySlug: str | None


class IdNameRecord(TypedDict):
    id: str
    name: str


class _Email(TypedDict, total=False):
    email: str


class SessionUserRecord(TypedDict):
    """The contract's `Session`, as the platform SDK's `Session` model reads it."""

    id: str
    subjectSlug: str
    subjectType: str
    email: NotRequired[str]  # a user's only
    tenantName: str
    roles: list[str]
    teams: list[IdNameRecord]
    accounts: list[IdNameRecord]
    effectiveUserId: str


class SessionRecord(TypedDict):
    user: SessionUserRecord


class ApplicationMetadataRecord(TypedDict):
    paused: bool


class DeploymentApplicationRecord(TypedDict):
    """The contract's `DeploymentApplication`: an application as a deployment shows it."""

    lifecycleStage: str
    id: str
    fqn: str
    name: str
    type: str
    metadata: ApplicationMetadataRecord
    workspaceId: str
    activeVersion: int
    applicationSetId: str


class DeploymentStateRecord(TypedDict):
    isTerminalState: bool


class DeploymentStatusRecord(TypedDict):
    id: str
    deploymentId: str
    status: str
    state: DeploymentStateRecord
    message: str
    retryCount: int
    createdAt: str
    updatedAt: str


class DeploymentBuildRecord(TypedDict):
    name: str
    status: str


class WireDeployment(TypedDict):
    """The contract's `Deployment`, its manifest as applied."""

    manifest: JsonObject
    createdBySubject: SubjectReferenceRecord
    id: str
    version: int
    fqn: str
    applicationId: str
    application: DeploymentApplicationRecord
    createdAt: str
    updatedAt: str
    deploymentBuilds: list[DeploymentBuildRecord]
    deploymentStatuses: list[DeploymentStatusRecord]
    currentStatusId: str
    currentStatus: DeploymentStatusRecord
    appliedRecommendations: list[JsonObject]
    createdBy: str


class JobRunRecord(TypedDict):
    """The contract's `JobRun`: times in epoch milliseconds."""

    id: str
    name: str
    applicationName: str
    deploymentVersion: str
    command: str
    error: str | None
    triggeredBy: str
    sparkUi: str | None
    applicationId: str
    deploymentId: str
    tenantName: str
    createdAt: int
    endTime: int | None
    duration: int | None
    totalRetries: int
    exitCode: int | None
    status: str
    triggeredBySubject: SubjectReferenceRecord


class StagedVersionRecord(TypedDict):
    """The contract's `StagedArtifactVersion`."""

    id: str
    storage_root: str
    artifact_id: str


class TokenPermissionRecord(TypedDict):
    resource_fqn: str
    resource_type: str
    role_id: str


class OwnedByRecord(TypedDict):
    team: str
    account: str


class _OwnedBy(TypedDict, total=False):
    ownedBy: OwnedByRecord


class TokenManifestRecord(TypedDict):
    """The contract's `PersonalAccessTokenManifest`."""

    name: str
    type: str
    permissions: list[TokenPermissionRecord]
    expiration_date: str
    ownedBy: NotRequired[OwnedByRecord]  # only with a team: the SDK then requires `team`
    tags: dict[str, str]
    token_type: str


class TokenJwtRecord(TypedDict):
    id: str
    subjectType: str
    subjectId: str
    expiry: str
    tokenType: str
    createdAt: str
    updatedAt: str
    metadata: JsonObject


class RoleWithResourceRecord(TypedDict):
    roleId: str
    resourceType: str
    resourceId: str
    roleName: str


class WireToken(TypedDict):
    """The contract's `PersonalAccessToken`."""

    id: str
    type: str
    tenantName: str
    accountId: str
    jwtId: str
    createdBy: str
    nextScheduledRotation: str | None
    createdBySubject: SubjectReferenceRecord
    createdAt: str
    updatedAt: str
    lastAccessedAt: str | None
    isExpired: bool
    manifest: TokenManifestRecord
    jwts: list[TokenJwtRecord]
    metadata: JsonObject
    roleIds: list[str]
    rolesWithResource: list[RoleWithResourceRecord]


class IssuedTokenRecord(TypedDict):
    """The contract's `PersonalAccessTokenResponse`."""

    data: WireToken
    token: str
    created: bool


def page(
    items: Iterable[T], total: int, offset: int, limit: int, render: Callable[[T], R]
) -> PageRecord[R]:
    """The contract's paginated envelope: `data` and `pagination`."""
    return {
        "data": [render(item) for item in items],
        "pagination": {"total": total, "offset": offset, "limit": limit},
    }


def subject_reference(subject: Subject) -> SubjectReferenceRecord:
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


def session(found: Session) -> SessionRecord:
    """The caller's session, as the platform SDK's `Session` model reads it."""
    subject, tenant = found.subject, found.tenant
    email: _Email = {"email": subject.name} if subject.type == "user" else {}
    return {
        "user": {
            "id": subject.id,
            "subjectSlug": subject.slug,
            "subjectType": subject.type,
            **email,
            "tenantName": tenant.name,
            "roles": found.roles,
            "teams": [{"id": team.id, "name": team.name} for team in found.teams],
            "accounts": [{"id": tenant.id, "name": tenant.name}],
            "effectiveUserId": subject.id,
        }
    }


def application(app: Application) -> DeploymentApplicationRecord:
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


def deployment(item: Deployment) -> WireDeployment:
    created = iso(item.created_at)
    status: DeploymentStatusRecord = {
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


def job_run(run: JobRun) -> JobRunRecord:
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


def staged_version(version: ArtifactVersion) -> StagedVersionRecord:
    return {
        "id": version.id,
        "storage_root": version.storage_root,
        "artifact_id": version.artifact_id,
    }


def role_binding(binding: RoleBinding) -> RoleBindingManifest:
    return binding_manifest(binding)


def token_record(issued: IssuedToken) -> WireToken:
    """The token as the API shows it. A token acts with its owner's grants, so the
    permissions and roles are those the owner holds now, not at creation."""
    token, grants = issued.token, issued.grants
    owner, tenant = token.owner, token.tenant
    created, expiry = iso(token.created_at), iso(token.expires_at)
    # The platform's SDK requires `team` whenever `ownedBy` is present: a token made
    # without teamName has no owner object at all.
    owned_by: _OwnedBy = (
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


def issued_token(issued: IssuedToken) -> IssuedTokenRecord:
    return {"data": token_record(issued), "token": issued.token.token, "created": issued.created}
