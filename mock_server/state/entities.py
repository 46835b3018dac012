"""The platform's entities as held in state, and the pages of them that the areas return.

Entities hold domain values; how each is shown on the wire is `mock_server.handlers.render`'s.
The manifest an artifact version keeps is a typed record here, beside the entity that keeps
it (`ArtifactVersionManifest`); a deployment's is JSON the mock carries as it was applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Literal, NotRequired, TypedDict, TypeVar

from mock_server.core.jsonvalue import JsonObject

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
    # The role binding an apply made it with (`Identity.apply_role_binding`), None for a
    # grant of the fixtures or of a collaborator: a binding's grants go with the binding.
    binding: str | None = None


@dataclass
class AppliedRoleBinding:
    """A role-binding manifest applied through the API (`PUT /apply`), kept whole: the
    generating operation returns it as it was applied, and its grants go with it."""

    id: str
    name: str
    subjects: list[Subject]
    permissions: list[tuple[Resource, str]]  # (resource, role)
    created_by: Subject
    created_at: datetime
    updated_at: datetime


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
    created_by: Subject
    created_at: datetime
    updated_at: datetime
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
    fqn: str  # `<kind>:<tenant>/<ml repo>/<name>`, as the platform's library documents it
    created_by: Subject
    created_at: datetime
    versions: dict[int, str] = field(default_factory=dict)  # version number -> version id


# The life cycle of an artifact version: staged (its files being uploaded), then ready
# (finalised: listed and read) or failed (its staging failed: it takes no tags).
STAGED, READY, FAILED = "staged", "ready", "failed"


@dataclass(frozen=True)
class StoredFile:
    """A file of an artifact version: its size, its content's MD5 (the ETag its upload
    answered) and the key of its content in the world's blobs (its SHA-256)."""

    size: int
    md5: str
    blob: str


@dataclass
class MultipartUpload:
    """A file of a staged version being uploaded in parts: the parts received, by number."""

    id: str
    version_id: str
    path: str
    parts: dict[int, StoredFile] = field(default_factory=dict)


ArtifactKind = Literal["artifact-version", "model-version", "agent-skill"]


class ArtifactSource(TypedDict):
    """Where a version's files are (the contract's `ManagedSource`, `ExternalSource`,
    `InlineSkillSource` and `BlobStorageSkillSource`, told apart by `type`)."""

    type: str
    uri: NotRequired[str]
    skill_md: NotRequired[str]
    description: NotRequired[str]


class ArtifactVersionManifest(TypedDict):
    """The manifest of an artifact, model or agent-skill version (the contract's
    `ArtifactVersionManifest`): the fields the mock reads, and those it carries as given."""

    type: ArtifactKind
    name: str
    ml_repo: str
    source: ArtifactSource
    version: NotRequired[int]
    metadata: NotRequired[JsonObject]
    step: NotRequired[int]
    run_id: NotRequired[str]
    description: NotRequired[str]
    version_alias: NotRequired[str]
    framework: NotRequired[JsonObject]
    environment: NotRequired[JsonObject]


@dataclass
class ArtifactVersion:
    id: str
    artifact_id: str
    version: int
    fqn: str
    storage_root: str
    manifest: ArtifactVersionManifest
    created_at: datetime
    created_by: Subject
    tags: list[str] = field(default_factory=list)
    status: str = STAGED
    updated_at: datetime | None = None  # when it was last finalised
    files: dict[str, StoredFile] = field(default_factory=dict)  # by path under the root

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    @property
    def ready(self) -> bool:
        return self.status == READY


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


@dataclass
class Deployment:
    id: str
    application: Application
    version: int
    fqn: str
    manifest: JsonObject  # as applied, with the storage defaults (`Deployments.add_deployment`)
    created_by: Subject
    created_at: datetime
    status_id: str
    secret_fqns: frozenset[str]  # secrets the manifest references, computed once

    @property
    def application_id(self) -> str:
        return self.application.id


@dataclass(slots=True)
class JobRun:
    """A run never changes once recorded, so worlds may share it (see `Store.reset`): one
    that moves to another status is replaced in its world's list by a new run. What it reads
    of its application and subject (ids, names, slugs) never changes either."""

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


@dataclass
class PersonalAccessToken:
    id: str
    owner: Subject
    name: str
    team_name: str | None  # the team that owns it, when one was named at creation
    tenant: Resource
    created_at: datetime
    expires_at: datetime
    token: str  # the value first issued, returned again on every later get
    jwt_id: str
    last_accessed_at: datetime | None = None
    revoked: bool = False

    @property
    def owner_id(self) -> str:
        return self.owner.id


@dataclass(frozen=True)
class IssuedToken:
    """A personal access token as a get-or-create finds it: with the grants its owner holds
    now (a token acts with them), the time of the world, and whether it was just made."""

    token: PersonalAccessToken
    grants: list[tuple[Grant, Resource]]
    now: datetime
    created: bool


@dataclass(frozen=True)
class RoleBinding:
    """One role-binding manifest: who holds which role on what."""

    name: str
    subjects: list[Subject]
    permissions: list[tuple[Resource, str]]  # (resource, role)


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: its items, how many there are in all, and where it starts."""

    items: list[T]
    total: int
    offset: int
    limit: int
