"""The fixture format as written: a document's sections in order, and each kind of record,
its shape (a `TypedDict`, keys as in the fixture schema) and the one function that writes it.

Every writer of fixture documents writes through here: the state areas' dumps (`Store.dump`,
each area's `dump`) and the recording of a world seen through the proxy
(`mock_server.proxy.recording`), so a record of a kind has one order of keys and one rule
for what it leaves out, whoever writes it (`tests/test_fixture_format.py` fails on a second
writer). The same records are what each area's `load_*` reads, once the fixture schema
(`mock_server/fixtures/schema.yaml`) has checked them; the forms only a fixture gives
(`generate N`, a response described by its fields) are records here too.

A writer leaves out an optional field given as None: a dump gives every field it has, a
recording only what an answer showed.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NotRequired, TypedDict, cast, final

from mock_server.core.jsonvalue import JsonObject


class TenantRecord(TypedDict):
    name: str
    id: NotRequired[str]


def tenant(name: str, tenant_id: str | None = None) -> TenantRecord:
    record = TenantRecord(name=name)
    if tenant_id:
        record["id"] = tenant_id
    return record


class UserRecord(TypedDict):
    email: str
    displayName: NotRequired[str]
    id: NotRequired[str]


class NamedRecord(TypedDict):
    """A record named and identified only: a virtual account, an agent, a cluster."""

    name: str
    id: NotRequired[str]


class TeamRecord(NamedRecord):
    members: NotRequired[list[str]]


class WorkspaceRecord(TypedDict):
    name: str
    cluster: str
    id: NotRequired[str]


class ResourceRecord(TypedDict):
    type: str
    name: str
    fqn: NotRequired[str]
    id: NotRequired[str]


class GrantRecord(TypedDict):
    """A grant of `role` on a resource (`type:name`) to a subject (`type:name`)."""

    subject: str
    role: str
    resource: str


def user(email: str, display_name: str | None = None, user_id: str | None = None) -> UserRecord:
    record = UserRecord(email=email)
    if display_name:
        record["displayName"] = display_name
    if user_id:
        record["id"] = user_id
    return record


def named(name: str, record_id: str | None = None) -> NamedRecord:
    record = NamedRecord(name=name)
    if record_id:
        record["id"] = record_id
    return record


def team(name: str, record_id: str | None, members: Iterable[str]) -> TeamRecord:
    if record_id:  # the id before the members, as a team is read
        return TeamRecord(name=name, id=record_id, members=list(members))
    return TeamRecord(name=name, members=list(members))


def workspace(name: str, cluster: str, record_id: str | None = None) -> WorkspaceRecord:
    record = WorkspaceRecord(name=name, cluster=cluster)
    if record_id:
        record["id"] = record_id
    return record


def resource(type_: str, name: str, fqn: str, record_id: str | None = None) -> ResourceRecord:
    record = ResourceRecord(type=type_, name=name, fqn=fqn)
    if record_id:
        record["id"] = record_id
    return record


def grant(subject: str, role: str, on: str) -> GrantRecord:
    """A grant of `role` on a resource (`type:name`) to a subject (`type:name`)."""
    return GrantRecord(subject=subject, role=role, resource=on)


# -- the sections of the other areas: secret groups to the gateway's responses ------------------

# Keys that are Python keywords (`as`) need the functional form of a TypedDict. The optional
# keys a record has before required ones come as partial records unpacked in place, so that
# every writer writes the keys in one order.


class _Identified(TypedDict, total=False):
    id: str


def _identified(record_id: str | None) -> _Identified:
    return _Identified(id=record_id) if record_id else _Identified()


_Stamped = TypedDict(
    "_Stamped", {"id": str, "as": str, "createdAt": str, "updatedAt": str}, total=False
)


def _stamped(
    record_id: str | None, created_by: str | None, created_at: str | None, updated_at: str | None
) -> _Stamped:
    """The id, creator (`as`) and times of a record created through the API."""
    stamped = _Stamped()
    if record_id:
        stamped["id"] = record_id
    if created_by is not None:
        stamped["as"] = created_by
    if created_at is not None:
        stamped["createdAt"] = created_at
    if updated_at is not None:
        stamped["updatedAt"] = updated_at
    return stamped


class IntegrationRecord(TypedDict):
    fqn: str
    healthy: NotRequired[bool]


class SecretRecord(TypedDict):
    key: str
    id: NotRequired[str]
    values: NotRequired[list[str]]


SecretGroupRecord = TypedDict(
    "SecretGroupRecord",
    {
        "name": str,
        "id": NotRequired[str],
        "as": NotRequired[str],
        "createdAt": NotRequired[str],
        "updatedAt": NotRequired[str],
        "integration": IntegrationRecord,
        "secrets": NotRequired[list[SecretRecord]],
    },
)


class _Secrets(TypedDict, total=False):
    secrets: list[SecretRecord]


def secret(key: str, values: Iterable[str], secret_id: str | None = None) -> SecretRecord:
    return {"key": key, **_identified(secret_id), "values": list(values)}


def secret_group(
    name: str,
    *,
    integration_fqn: str,
    healthy: bool,
    secrets: list[SecretRecord] | None,
    group_id: str | None = None,
    created_by: str | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> SecretGroupRecord:
    """A secret group; `secrets` None leaves them out (a group of no secrets says `[]`)."""
    listed = _Secrets() if secrets is None else _Secrets(secrets=secrets)
    return {
        "name": name,
        **_stamped(group_id, created_by, created_at, updated_at),
        "integration": {"fqn": integration_fqn, "healthy": healthy},
        **listed,
    }


class MlRepoRecord(TypedDict):
    name: str
    id: NotRequired[str]
    storageRoot: NotRequired[str]


def ml_repo(name: str, repo_id: str | None = None, storage_root: str | None = None) -> MlRepoRecord:
    record: MlRepoRecord = {"name": name}
    if repo_id:
        record["id"] = repo_id
    if storage_root:
        record["storageRoot"] = storage_root
    return record


class BoundSubjectRecord(TypedDict):
    """A subject a role binding names."""

    type: str
    name: str


class PermissionRecord(TypedDict):
    resourceType: str
    resourceFqn: str
    role: str


RoleBindingRecord = TypedDict(
    "RoleBindingRecord",
    {
        "name": str,
        "id": NotRequired[str],
        "as": NotRequired[str],
        "createdAt": NotRequired[str],
        "updatedAt": NotRequired[str],
        "subjects": list[BoundSubjectRecord],
        "permissions": list[PermissionRecord],
    },
)


def bound_subject(type_: str, name: str) -> BoundSubjectRecord:
    return {"type": type_, "name": name}


def permission(resource_type: str, resource_fqn: str, role: str) -> PermissionRecord:
    return {"resourceType": resource_type, "resourceFqn": resource_fqn, "role": role}


def role_binding(
    name: str,
    *,
    subjects: list[BoundSubjectRecord],
    permissions: list[PermissionRecord],
    binding_id: str | None = None,
    created_by: str | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> RoleBindingRecord:
    """A role binding applied through the API, applied again as its creator (`as`)."""
    return {
        "name": name,
        **_stamped(binding_id, created_by, created_at, updated_at),
        "subjects": subjects,
        "permissions": permissions,
    }


class DeploymentRecord(TypedDict):
    manifest: JsonObject
    id: NotRequired[str]
    statusId: NotRequired[str]
    createdAt: NotRequired[str]


def deployment(
    manifest: JsonObject,
    deployment_id: str | None = None,
    status_id: str | None = None,
    created_at: str | None = None,
) -> DeploymentRecord:
    record: DeploymentRecord = {"manifest": manifest}
    if deployment_id:
        record["id"] = deployment_id
    if status_id:
        record["statusId"] = status_id
    if created_at:
        record["createdAt"] = created_at
    return record


@final  # told apart from the other forms of its place by its keys
class GeneratedRecord(TypedDict):
    """`generate N` realistic records in place of records given one by one (of runs, of
    model responses)."""

    generate: int


@final  # told apart from the other forms of its place by its keys
class GeneratedApplications(TypedDict):
    """`generate N` realistic applications in a workspace, created by a user."""

    generate: int
    workspace: str
    createdBy: NotRequired[str]


@final  # told apart from the other forms of its place by its keys
class RunRecord(TypedDict):
    id: NotRequired[str]
    name: NotRequired[str]
    status: str
    createdAt: str
    triggeredBy: NotRequired[str]
    version: NotRequired[int]
    command: NotRequired[str]
    totalRetries: NotRequired[int]
    durationSeconds: NotRequired[float]
    exitCode: NotRequired[int]
    error: NotRequired[str]
    moving: NotRequired[bool]


class _Triggered(TypedDict, total=False):
    triggeredBy: str


class _RunEnd(TypedDict, total=False):
    command: str
    totalRetries: int
    durationSeconds: float
    exitCode: int
    error: str
    moving: bool


def run(
    run_id: str,
    name: str,
    status: str,
    created_at: str,
    *,
    version: int,
    triggered_by: str | None = None,
    command: str | None = None,
    total_retries: int | None = None,
    duration_seconds: float | None = None,
    exit_code: int | None = None,
    error: str | None = None,
    moving: bool = False,
) -> RunRecord:
    """A job's run; `moving` only for one that moves on at each listing of its job."""
    triggered = _Triggered(triggeredBy=triggered_by) if triggered_by is not None else _Triggered()
    end = _RunEnd()
    if command is not None:
        end["command"] = command
    if total_retries is not None:
        end["totalRetries"] = total_retries
    if duration_seconds is not None:
        end["durationSeconds"] = duration_seconds
    if exit_code is not None:
        end["exitCode"] = exit_code
    if error is not None:
        end["error"] = error
    if moving:
        end["moving"] = True
    return {
        "id": run_id,
        "name": name,
        "status": status,
        "createdAt": created_at,
        **triggered,
        "version": version,
        **end,
    }


@final  # told apart from the other forms of its place by its keys
class ApplicationRecord(TypedDict):
    """An application as written (a fixture may also give `generate` entries among its
    runs, which `Jobs.load_runs` reads)."""

    name: str
    id: NotRequired[str]
    type: str
    workspace: str
    applicationSetId: NotRequired[str]
    createdBy: NotRequired[str]
    deployments: list[DeploymentRecord]
    activeVersion: NotRequired[int]
    runs: NotRequired[list[RunRecord]]


class _Made(TypedDict, total=False):
    applicationSetId: str
    createdBy: str


class _Runs(TypedDict, total=False):
    runs: list[RunRecord]


def application(
    name: str,
    type_: str,
    workspace: str,
    *,
    deployments: list[DeploymentRecord],
    active_version: int,
    runs: Sequence[RunRecord],
    application_id: str | None = None,
    application_set_id: str | None = None,
    created_by: str | None = None,
) -> ApplicationRecord:
    """An application with its deployments, versions 1, 2, ... in order, and its runs (left
    out when it has none)."""
    made = _Made()
    if application_set_id:
        made["applicationSetId"] = application_set_id
    if created_by:
        made["createdBy"] = created_by
    return {
        "name": name,
        **_identified(application_id),
        "type": type_,
        "workspace": workspace,
        **made,
        "deployments": deployments,
        "activeVersion": active_version,
        **(_Runs(runs=list(runs)) if runs else _Runs()),
    }


@final  # told apart from the other forms of its place by its keys
class TextFileRecord(TypedDict):
    path: str
    text: str


@final  # told apart from the other forms of its place by its keys
class Base64FileRecord(TypedDict):
    path: str
    base64: str


FileRecord = TextFileRecord | Base64FileRecord

# What a file written as text may not hold: controls other than line breaks and tabs, and
# lone surrogates.
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def file_content(record: FileRecord) -> bytes:
    """The bytes a file record holds (the reader beside the writer, `file`)."""
    if "text" in record:
        return record["text"].encode()
    return base64.b64decode(record["base64"], validate=True)


def file(path: str, data: bytes) -> FileRecord:
    """A version's file: as text when it is UTF-8 without control characters (line breaks
    and tabs aside), else in base64."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text = None
    if text is not None and not _BINARY.search(text):
        return {"path": path, "text": text}
    return {"path": path, "base64": base64.b64encode(data).decode()}


ArtifactVersionRecord = TypedDict(
    "ArtifactVersionRecord",
    {
        "as": NotRequired[str],
        "id": NotRequired[str],
        "artifactId": NotRequired[str],
        "createdAt": NotRequired[str],
        "manifest": JsonObject,
        "tags": NotRequired[list[str]],
        "staged": NotRequired[bool],
        "failed": NotRequired[bool],
        "updatedAt": NotRequired[str],
        "files": NotRequired[list[FileRecord]],
    },
)
_Staged = TypedDict("_Staged", {"as": str}, total=False)


class _Born(TypedDict, total=False):
    artifactId: str
    createdAt: str


class _Kept(TypedDict, total=False):
    tags: list[str]
    staged: bool
    failed: bool
    updatedAt: str
    files: list[FileRecord]


def artifact_version(
    version_id: str,
    manifest: JsonObject,
    *,
    created_by: str | None = None,
    artifact_id: str | None = None,
    created_at: str | None = None,
    tags: list[str] | None = None,
    staged: bool = False,
    failed: bool = False,
    updated_at: str | None = None,
    files: list[FileRecord] | None = None,
) -> ArtifactVersionRecord:
    """An artifact, model or agent-skill version; `tags` None leaves them out (a version of
    no tags says `[]`), as do `files` None or none."""
    by = _Staged()
    if created_by is not None:
        by["as"] = created_by
    born = _Born()
    if artifact_id:
        born["artifactId"] = artifact_id
    if created_at:
        born["createdAt"] = created_at
    kept = _Kept()
    if tags is not None:
        kept["tags"] = tags
    if staged:
        kept["staged"] = True
    if failed:
        kept["failed"] = True
    if updated_at:
        kept["updatedAt"] = updated_at
    if files:
        kept["files"] = files
    return {**by, "id": version_id, **born, "manifest": manifest, **kept}


class TokenRecord(TypedDict):
    owner: str
    name: str
    teamName: NotRequired[str]
    id: NotRequired[str]
    jwtId: NotRequired[str]
    createdAt: NotRequired[str]
    lastAccessedAt: NotRequired[str]
    revoked: NotRequired[bool]


def token(
    owner: str,
    name: str,
    *,
    team_name: str | None = None,
    token_id: str | None = None,
    jwt_id: str | None = None,
    created_at: str | None = None,
    last_accessed_at: str | None = None,
    revoked: bool = False,
) -> TokenRecord:
    """A personal access token's record (never its value)."""
    record: TokenRecord = {"owner": owner, "name": name}
    if team_name:
        record["teamName"] = team_name
    if token_id:
        record["id"] = token_id
    if jwt_id:
        record["jwtId"] = jwt_id
    if created_at:
        record["createdAt"] = created_at
    if last_accessed_at:
        record["lastAccessedAt"] = last_accessed_at
    if revoked:
        record["revoked"] = True
    return record


class ModelRecord(TypedDict):
    id: str
    type: NotRequired[str]
    ownedBy: NotRequired[str]
    dimensions: NotRequired[int]
    created: NotRequired[int]


def model(
    model_id: str,
    kind: str,
    *,
    owned_by: str | None = None,
    dimensions: int | None = None,
    created: int | None = None,
) -> ModelRecord:
    """A model the gateway serves, `chat` or `embedding` (of its dimension)."""
    record: ModelRecord = {"id": model_id, "type": kind}
    if owned_by is not None:
        record["ownedBy"] = owned_by
    if dimensions is not None:
        record["dimensions"] = dimensions
    if created is not None:
        record["created"] = created
    return record


@final  # told apart from the other forms of its place by its keys
class ModelResponseRecord(TypedDict):
    response: JsonObject
    input: NotRequired[list[JsonObject]]


@final  # told apart from the other forms of its place by its keys
class DescribedResponseRecord(TypedDict):
    """A response described by its fields, made complete by the mock."""

    id: str
    model: NotRequired[str]
    provider: NotRequired[str]
    status: NotRequired[str]
    text: NotRequired[str]
    instructions: NotRequired[str]
    user: NotRequired[str]
    metadata: NotRequired[dict[str, str]]
    maxOutputTokens: NotRequired[int]
    temperature: NotRequired[float]
    previousResponseId: NotRequired[str]
    input: NotRequired[str]  # the user's message it answered


def model_response(response: JsonObject, inputs: list[JsonObject]) -> ModelResponseRecord:
    """A stored response whole, with its input items when it has any."""
    record: ModelResponseRecord = {"response": response}
    if inputs:
        record["input"] = inputs
    return record


# -- the document -------------------------------------------------------------------------------


class FixtureDocument(TypedDict, total=False):
    """A fixture document as written, its sections in the order they are applied: a record
    may name only records of an earlier section (a grant names a secret group, an
    application a workspace). Each is read (`loaders`) and written (`dump`) by the area that
    owns it; `clock` is the store's own."""

    tenant: TenantRecord
    users: list[UserRecord]
    teams: list[TeamRecord]
    virtualAccounts: list[NamedRecord]
    agents: list[NamedRecord]
    clusters: list[NamedRecord]
    workspaces: list[WorkspaceRecord]
    resources: list[ResourceRecord]
    secretGroups: list[SecretGroupRecord]
    mlRepos: list[MlRepoRecord]
    grants: list[GrantRecord]
    roleBindings: list[RoleBindingRecord]
    applications: list[ApplicationRecord]
    artifactVersions: list[ArtifactVersionRecord]
    personalAccessTokens: list[TokenRecord]
    models: list[ModelRecord]
    modelResponses: list[ModelResponseRecord]
    scriptedReplies: list[JsonObject]
    clock: str


SECTIONS: tuple[str, ...] = tuple(FixtureDocument.__annotations__)


def document(sections: Mapping[str, object]) -> FixtureDocument:
    """A fixture document of these sections, in the order they load, the empty ones left
    out; a section the format does not have is a bug of its writer."""
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"not sections of a fixture document: {sorted(unknown)}")
    kept = {name: sections[name] for name in SECTIONS if sections.get(name) not in ([], None)}
    # The sections of a FixtureDocument (its writers' partial ones), put in order.
    return cast(FixtureDocument, kept)
