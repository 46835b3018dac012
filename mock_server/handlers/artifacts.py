"""Handlers of operations 3 and 4, stage an artifact version and apply tags to it, and of
marking a staged version failed."""

from __future__ import annotations

from typing import Any

from mock_server.handlers import render
from mock_server.handlers.context import caller, store


def stage_version(body: dict[str, Any]) -> dict[str, str]:
    return render.staged_version(store().artifacts.stage(caller(), body["manifest"]))


def apply_tags(body: dict[str, Any]) -> dict[str, Any]:
    store().artifacts.apply_tags(
        caller(),
        body["artifact_version_id"],
        body["tags"],
        force=body["force"],  # the spec's default, filled by validation
    )
    return {}


def mark_stage_failure(body: dict[str, Any]) -> dict[str, Any]:
    store().artifacts.mark_stage_failure(caller(), body["id"])
    return {}
