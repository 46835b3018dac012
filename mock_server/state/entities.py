"""The platform's entities as held in state, and how each one is rendered on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mock_server.state.sources import iso

SUBJECT_TYPES = ("user", "team", "virtualaccount", "agent")


@dataclass(frozen=True)
class Caller:
    """Who is calling: the subject named by the bearer token."""

    subject_type: str
    subject_id: str
    slug: str


@dataclass
class Subject:
    """A principal: a user, team, virtual account or agent."""

    type: str
    id: str
    name: str  # e-mail for users; otherwise the team, virtual account or agent name
    slug: str  # the e-mail for users too: the platform's clients filter runs by it
    display_name: str
    members: list[str] = field(default_factory=list)  # user ids, for teams

    def caller(self) -> Caller:
        """This subject as the caller of a request."""
        return Caller(self.type, self.id, self.slug)

    def reference(self) -> dict[str, Any]:
        """The subject reference (`createdBySubject`) of the contract."""
        return {
            "subjectId": self.id,
            "subjectType": self.type,
            "subjectSlug": self.slug,
            "subjectDisplayName": self.display_name,
            "subjectPatName": None,
            "subjectControllerName": None,
            "subjectExternalIdentitySlug": None,
        }


@dataclass
class Resource:
    """Anything a grant can name: tenant, cluster, workspace, secret group, ML repo, ..."""

    type: str
    id: str
    name: str
    fqn: str


@dataclass(frozen=True)
class Grant:
    subject_type: str
    subject_id: str
    role: str
    resource_type: str
    resource_id: str


@dataclass
class SecretVersion:
    id: str
    version: int
    value: str
    created_at: datetime


@dataclass
class Secret:
    id: str
    key: str
    fqn: str
    group_id: str
    versions: list[SecretVersion] = field(default_factory=list)


@dataclass
class SecretGroup:
    resource: Resource
    integration_fqn: str
    integration_healthy: bool
    secrets: dict[str, Secret] = field(default_factory=dict)  # by secret id


@dataclass
class MlRepo:
    resource: Resource
    storage_root: str


@dataclass
class Artifact:
    id: str
    ml_repo_id: str
    name: str
    type: str  # manifest variant: artifact-version, model-version, agent-skill
    fqn: str
    versions: dict[int, str] = field(default_factory=dict)  # version number -> version id


@dataclass
class ArtifactVersion:
    id: str
    artifact_id: str
    version: int
    fqn: str
    storage_root: str
    manifest: dict[str, Any]
    created_at: datetime
    created_by: Subject
    tags: list[str] = field(default_factory=list)


@dataclass
class Application:
    id: str
    name: str
    type: str  # job, service, ...
    fqn: str
    workspace_id: str
    application_set_id: str
    created_by: Subject
    active_version: int = 0
    deployment_ids: dict[int, str] = field(default_factory=dict)  # version -> deployment id

    def to_api(self) -> dict[str, Any]:
        return {
            "lifecycleStage": "active",
            "id": self.id,
            "fqn": self.fqn,
            "name": self.name,
            "type": self.type,
            "metadata": {"paused": False},
            "workspaceId": self.workspace_id,
            "activeVersion": self.active_version,
            "applicationSetId": self.application_set_id,
        }


@dataclass
class Deployment:
    id: str
    application_id: str
    version: int
    fqn: str
    manifest: dict[str, Any]
    created_by: Subject
    created_at: datetime
    status_id: str
    secret_fqns: frozenset[str]  # secrets the manifest references, computed once

    def to_api(self, application: Application) -> dict[str, Any]:
        created = iso(self.created_at)
        status = {
            "id": self.status_id,
            "deploymentId": self.id,
            "status": "DEPLOY_SUCCESS",
            "state": {},
            "message": "Deployment is live",
            "retryCount": 0,
            "createdAt": created,
            "updatedAt": created,
        }
        return {
            "manifest": self.manifest,
            "createdBySubject": self.created_by.reference(),
            "id": self.id,
            "version": self.version,
            "fqn": self.fqn,
            "applicationId": self.application_id,
            "application": application.to_api(),
            "createdAt": created,
            "updatedAt": created,
            "deploymentBuilds": [
                {"name": f"{application.name}-build-{self.version}", "status": "SUCCEEDED"}
            ],
            "deploymentStatuses": [status],
            "currentStatusId": self.status_id,
            "currentStatus": status,
            "appliedRecommendations": [],
            "createdBy": self.created_by.slug,
        }


@dataclass
class JobRun:
    id: str
    name: str
    application: Application
    deployment_id: str
    deployment_version: int
    command: str
    status: str
    created_at_ms: int
    end_time_ms: int | None
    total_retries: int
    exit_code: int | None
    error: str | None
    triggered_by: Subject
    tenant_name: str

    @property
    def duration_ms(self) -> int | None:
        return None if self.end_time_ms is None else self.end_time_ms - self.created_at_ms

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "applicationName": self.application.name,
            "deploymentVersion": str(self.deployment_version),
            "command": self.command,
            "error": self.error,
            "triggeredBy": self.triggered_by.slug,
            "sparkUi": None,
            "applicationId": self.application.id,
            "deploymentId": self.deployment_id,
            "tenantName": self.tenant_name,
            "createdAt": self.created_at_ms,
            "endTime": self.end_time_ms,
            "duration": self.duration_ms,
            "totalRetries": self.total_retries,
            "exitCode": self.exit_code,
            "status": self.status,
            "triggeredBySubject": self.triggered_by.reference(),
        }


@dataclass
class PersonalAccessToken:
    owner_type: str
    owner_id: str
    name: str
    record: dict[str, Any]  # the wire record, built once at creation
    token: str  # the value first issued, returned again on every later get
    jwt_id: str
    revoked: bool = False
