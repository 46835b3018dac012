"""Handlers of operations 3 and 4, stage an artifact version and apply tags to it, of
marking a staged version failed, and of finalising versions and reading them back; with the
wire form of a finalised version and of an artifact (or model), as the platform SDK's
`ArtifactVersion`, `ModelVersion`, `AgentSkillVersion`, `Artifact` and `Model` read them."""

from __future__ import annotations

import copy
from typing import NotRequired, TypedDict, Unpack

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation
from mock_server.state.artifacts import (
    KIND_NAMES,
    ArtifactNotFound,
    ArtifactVersionFailed,
    ArtifactVersionNotStaged,
)
from mock_server.state.entities import Artifact, ArtifactVersion, ArtifactVersionManifest
from mock_server.state.identity import InvalidManifest
from mock_server.state.sources import iso


class StageArtifactVersionRequest(TypedDict):
    """The contract's `StageArtifactVersionRequest` (and the finalising requests')."""

    manifest: ArtifactVersionManifest


class ApplyTagsRequest(TypedDict):
    """The contract's `ApplyTagsRequest`, `force` filled by validation."""

    artifact_version_id: str
    tags: list[str]
    force: bool


class MarkStageFailureRequest(TypedDict):
    """The contract's `MarkStageFailureRequest`."""

    id: str


class _Owner(TypedDict, total=False):
    """The field of a version that names its artifact: one of these, by the artifact's kind."""

    artifact_id: str
    model_id: str
    agent_skill_id: str


class _Tags(TypedDict, total=False):
    tags: list[str]


class ArtifactVersionRecord(TypedDict):
    """A finalised version: the contract's `ArtifactVersion`, `ModelVersion` and
    `AgentSkillVersion`."""

    id: str
    fqn: str
    manifest: ArtifactVersionManifest
    created_by_subject: render.SubjectReferenceRecord
    ml_repo_id: str
    artifact_id: NotRequired[str]
    model_id: NotRequired[str]
    agent_skill_id: NotRequired[str]
    created_at: str
    updated_at: str
    tags: NotRequired[list[str]]  # not a skill version's


class ArtifactRecord(TypedDict):
    """The contract's `Artifact` and `Model`."""

    id: str
    ml_repo_id: str
    type: str
    name: str
    fqn: str
    created_by_subject: render.SubjectReferenceRecord
    created_at: str
    latest_version: NotRequired[ArtifactVersionRecord]


class VersionQuery(TypedDict):
    """What a listing of versions asks (`Artifacts.list_versions`)."""

    limit: int
    offset: int
    tag: str | None
    fqn: str | None
    artifact_id: str | None
    ml_repo_id: str | None
    name: str | None
    version: int | None
    run_ids: list[str] | None
    run_steps: list[float] | None


def _owner(artifact: Artifact) -> _Owner:
    """The field of a version that names its artifact, by the artifact's kind."""
    if artifact.type == "model-version":
        return {"model_id": artifact.id}
    if artifact.type == "agent-skill":
        return {"agent_skill_id": artifact.id}
    return {"artifact_id": artifact.id}


@operation(
    "stageArtifactVersion",
    Example(
        "POST",
        "/api/svc/v1/artifact-versions/stage",
        body={
            "manifest": {
                "type": "artifact-version",
                "name": "tokenizer",
                "ml_repo": "demo-repo",
                "source": {"type": "platform", "uri": "s3://bucket/tokenizer/"},
            }
        },
    ),
    {403: errors.PermissionDenied, 404: errors.MlRepoNotFound, 409: errors.ArtifactVersionExists},
)
def stage_version(body: StageArtifactVersionRequest) -> render.StagedVersionRecord:
    return render.staged_version(store().artifacts.stage(caller(), body["manifest"]))


@operation(
    "applyArtifactVersionTags",
    Example(
        "PUT",
        "/api/svc/v1/artifact-versions/tags",
        body={"artifact_version_id": "<artifact-version:sentiment/1>", "tags": ["candidate"]},
    ),
    {403: errors.PermissionDenied, 404: errors.ArtifactVersionNotFound, 409: errors.TagInUse},
)
def apply_tags(body: ApplyTagsRequest) -> render.EmptyRecord:
    store().artifacts.apply_tags(
        caller(),
        body["artifact_version_id"],
        body["tags"],
        force=body["force"],  # the spec's default, filled by validation
    )
    return {}


@operation(
    "markArtifactVersionStageFailure",
    Example(
        "POST",
        "/api/svc/v1/artifact-versions/mark-stage-failure",
        body={"id": "<artifact-version:labels/1>"},
    ),
    {
        403: errors.PermissionDenied,
        404: errors.ArtifactVersionNotFound,
        409: ArtifactVersionNotStaged,
    },
    client_model="truefoundry_sdk.types:EmptyResponse",
)
def mark_stage_failure(body: MarkStageFailureRequest) -> render.EmptyRecord:
    store().artifacts.mark_stage_failure(caller(), body["id"])
    return {}


# -- finalising, and reading finalised versions back ------------------------------------------

FINALIZE_ERRORS = {
    400: InvalidManifest,
    403: errors.PermissionDenied,
    404: errors.ArtifactVersionNotFound,
    409: ArtifactVersionFailed,
}


@operation(
    "createOrUpdateArtifactVersion",
    Example(
        "PUT",
        "/api/svc/v1/artifact-versions",
        body={
            "manifest": {
                "type": "artifact-version",
                "name": "embeddings",
                "ml_repo": "demo-repo",
                "metadata": {"rows": 1000},
                "source": {"type": "truefoundry", "uri": "<storage-root:embeddings/3>"},
            }
        },
    ),
    FINALIZE_ERRORS,
    client_model="truefoundry_sdk.types:GetArtifactVersionResponse",
)
def finalize_artifact_version(
    body: StageArtifactVersionRequest,
) -> render.DataRecord[ArtifactVersionRecord]:
    version, _ = store().artifacts.finalize(caller(), body["manifest"])
    return {"data": version_record(version)}


@operation(
    "createOrUpdateModelVersion",
    Example(
        "PUT",
        "/api/svc/v1/model-versions",
        body={
            "manifest": {
                "type": "model-version",
                "name": "sentiment",
                "ml_repo": "demo-repo",
                "metadata": {"accuracy": 0.93},
                "framework": {"type": "transformers"},
                "source": {"type": "truefoundry", "uri": "<storage-root:sentiment/3>"},
            }
        },
    ),
    FINALIZE_ERRORS,
    client_model="truefoundry_sdk.types:GetModelVersionResponse",
)
def finalize_model_version(
    body: StageArtifactVersionRequest,
) -> render.DataRecord[ArtifactVersionRecord]:
    version, _ = store().artifacts.finalize(caller(), body["manifest"])
    return {"data": version_record(version)}


def _list(kind: str, **query: Unpack[VersionQuery]) -> render.PageRecord[ArtifactVersionRecord]:
    page = store().artifacts.list_versions(caller(), kind, **query)
    return render.page(page.items, page.total, page.offset, page.limit, version_record)


@operation(
    "listArtifactVersions",
    Example("GET", "/api/svc/v1/artifact-versions"),
    client_model="truefoundry_sdk.types:ListArtifactVersionsResponse",
)
def list_artifact_versions(
    *,
    limit: int,  # limit and offset: Connexion fills in the spec's defaults
    offset: int,
    tag: str | None = None,
    fqn: str | None = None,
    artifact_id: str | None = None,
    ml_repo_id: str | None = None,
    name: str | None = None,
    version: int | None = None,
    run_ids: list[str] | None = None,
    run_steps: list[float] | None = None,
    include_internal_metadata: bool | None = None,  # the mock keeps no internal metadata
) -> render.PageRecord[ArtifactVersionRecord]:
    return _list(
        "artifact-version",
        limit=limit,
        offset=offset,
        tag=tag,
        fqn=fqn,
        artifact_id=artifact_id,
        ml_repo_id=ml_repo_id,
        name=name,
        version=version,
        run_ids=run_ids,
        run_steps=run_steps,
    )


@operation(
    "listModelVersions",
    Example("GET", "/api/svc/v1/model-versions"),
    client_model="truefoundry_sdk.types:ListModelVersionsResponse",
)
def list_model_versions(
    *,
    limit: int,
    offset: int,
    tag: str | None = None,
    fqn: str | None = None,
    model_id: str | None = None,
    ml_repo_id: str | None = None,
    name: str | None = None,
    version: int | None = None,
    run_ids: list[str] | None = None,
    run_steps: list[float] | None = None,
    include_internal_metadata: bool | None = None,
) -> render.PageRecord[ArtifactVersionRecord]:
    return _list(
        "model-version",
        limit=limit,
        offset=offset,
        tag=tag,
        fqn=fqn,
        artifact_id=model_id,
        ml_repo_id=ml_repo_id,
        name=name,
        version=version,
        run_ids=run_ids,
        run_steps=run_steps,
    )


@operation(
    "getArtifactVersion",
    Example(
        "GET",
        "/api/svc/v1/artifact-versions/{id}",
        params={"id": "<artifact-version:embeddings/1>"},
    ),
    {403: errors.PermissionDenied, 404: errors.ArtifactVersionNotFound},
    client_model="truefoundry_sdk.types:GetArtifactVersionResponse",
)
def get_artifact_version(id_: str) -> render.DataRecord[ArtifactVersionRecord]:
    return {
        "data": version_record(store().artifacts.get_version(caller(), id_, "artifact-version"))
    }


@operation(
    "getModelVersion",
    Example(
        "GET", "/api/svc/v1/model-versions/{id}", params={"id": "<artifact-version:sentiment/1>"}
    ),
    {403: errors.PermissionDenied, 404: errors.ArtifactVersionNotFound},
    client_model="truefoundry_sdk.types:GetModelVersionResponse",
)
def get_model_version(id_: str) -> render.DataRecord[ArtifactVersionRecord]:
    return {"data": version_record(store().artifacts.get_version(caller(), id_, "model-version"))}


@operation(
    "getArtifact",
    Example("GET", "/api/svc/v1/artifacts/{id}", params={"id": "<artifact:embeddings>"}),
    {403: errors.PermissionDenied, 404: ArtifactNotFound},
    client_model="truefoundry_sdk.types:GetArtifactResponse",
)
def get_artifact(id_: str) -> render.DataRecord[ArtifactRecord]:
    artifact, latest = store().artifacts.get_artifact(caller(), id_, "artifact-version")
    return {"data": artifact_record(artifact, latest)}


@operation(
    "getModel",
    Example("GET", "/api/svc/v1/models/{id}", params={"id": "<artifact:sentiment>"}),
    {403: errors.PermissionDenied, 404: ArtifactNotFound},
    client_model="truefoundry_sdk.types:GetModelResponse",
)
def get_model(id_: str) -> render.DataRecord[ArtifactRecord]:
    artifact, latest = store().artifacts.get_artifact(caller(), id_, "model-version")
    return {"data": artifact_record(artifact, latest)}


def version_record(version: ArtifactVersion) -> ArtifactVersionRecord:
    """A finalised version, as the SDK's model of its kind reads it: its manifest with the
    `metadata` the SDK requires (empty when none was given)."""
    artifact = store().world.artifacts[version.artifact_id]
    # The SDK's skill versions have no tags.
    tags: _Tags = {} if artifact.type == "agent-skill" else {"tags": list(version.tags)}
    return {
        "id": version.id,
        "fqn": version.fqn,
        "manifest": {"metadata": {}, **copy.deepcopy(version.manifest)},
        "created_by_subject": render.subject_reference(version.created_by),
        "ml_repo_id": artifact.ml_repo_id,
        **_owner(artifact),
        "created_at": iso(version.created_at),
        "updated_at": iso(version.updated_at or version.created_at),
        **tags,
    }


def artifact_record(artifact: Artifact, latest: ArtifactVersion | None) -> ArtifactRecord:
    """An artifact or a model, as the SDK's `Artifact` or `Model` reads it (`type` too,
    which the platform's library reads), with its latest finalised version."""
    record: ArtifactRecord = {
        "id": artifact.id,
        "ml_repo_id": artifact.ml_repo_id,
        "type": KIND_NAMES[artifact.type],
        "name": artifact.name,
        "fqn": artifact.fqn,
        "created_by_subject": render.subject_reference(artifact.created_by),
        "created_at": iso(artifact.created_at),
    }
    if latest is not None:
        record["latest_version"] = version_record(latest)
    return record
