"""Handlers of operations 3 and 4, stage an artifact version and apply tags to it, and of
marking a staged version failed."""

from __future__ import annotations

from typing import Any

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation


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
def stage_version(body: dict[str, Any]) -> dict[str, str]:
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
def apply_tags(body: dict[str, Any]) -> dict[str, Any]:
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
        body={"id": "<artifact-version:sentiment/1>"},
    ),
    {403: errors.PermissionDenied, 404: errors.ArtifactVersionNotFound},
    client_model="truefoundry_sdk.types:EmptyResponse",
)
def mark_stage_failure(body: dict[str, Any]) -> dict[str, Any]:
    store().artifacts.mark_stage_failure(caller(), body["id"])
    return {}
