"""The world: every entity of the platform in one set of containers with their indexes, and a
frozen copy of it, kept to be restored in milliseconds at any size."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field, fields
from typing import Any

from mock_server.core.jsonvalue import JsonObject
from mock_server.state.entities import (
    Application,
    AppliedRoleBinding,
    Artifact,
    ArtifactVersion,
    Deployment,
    Grant,
    JobRun,
    MlRepo,
    MultipartUpload,
    PersonalAccessToken,
    Resource,
    SecretGroup,
    Subject,
)
from mock_server.state.run_index import RunIndex


class Blobs:
    """File contents by SHA-256, each stored once, and the bytes the world's files and
    upload parts hold (`size`): a content is counted once for every file or part that holds
    it, as the byte budget and every reader of those files (a dump writes each in full) see
    it. A file or part takes its content with `hold` and gives it back with `let_go`, each
    at the cost of that one content, whatever the world holds; the last one to let go
    frees it."""

    def __init__(self) -> None:
        self._contents: dict[str, bytes] = {}
        self._holders: dict[str, int] = {}
        self.size = 0

    def __getitem__(self, digest: str) -> bytes:
        return self._contents[digest]

    def hold(self, digest: str, data: bytes) -> None:
        """One more file or part holds this content (stored with its first holder)."""
        held = self._contents.setdefault(digest, data)
        self._holders[digest] = self._holders.get(digest, 0) + 1
        self.size += len(held)

    def let_go(self, digest: str) -> None:
        """One file or part that held this content no longer does."""
        self.size -= len(self._contents[digest])
        holders = self._holders[digest] - 1
        if holders:
            self._holders[digest] = holders
        else:
            del self._holders[digest], self._contents[digest]

    def copy(self) -> Blobs:
        """A container of its own holding the same contents (the bytes themselves shared:
        they never change once stored)."""
        copied = Blobs()
        copied._contents = dict(self._contents)
        copied._holders = dict(self._holders)
        copied.size = self.size
        return copied


@dataclass
class World:
    """Every entity of the platform, in insertion order (which is also creation order)."""

    tenant: Resource | None = None
    subjects: dict[tuple[str, str], Subject] = field(default_factory=dict)  # (type, id)
    subject_names: dict[tuple[str, str], Subject] = field(default_factory=dict)  # (type, name)
    resources: dict[tuple[str, str], Resource] = field(default_factory=dict)  # (type, id)
    grants: list[Grant] = field(default_factory=list)
    secret_groups: dict[str, SecretGroup] = field(default_factory=dict)
    ml_repos: dict[str, MlRepo] = field(default_factory=dict)  # by name
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    artifact_versions: dict[str, ArtifactVersion] = field(default_factory=dict)
    applications: dict[str, Application] = field(default_factory=dict)
    deployments: dict[str, Deployment] = field(default_factory=dict)
    job_runs: dict[str, list[JobRun]] = field(default_factory=dict)  # by application id
    tokens: dict[tuple[str, str], PersonalAccessToken] = field(default_factory=dict)
    model_responses: dict[str, JsonObject] = field(default_factory=dict)
    # The gateway's (`state.gateway`): the input items of model responses, by response id;
    # the models it serves, by id; the replies scripted for them, in order.
    response_inputs: dict[str, list[JsonObject]] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    scripts: dict[str, Any] = field(default_factory=dict)
    role_bindings: dict[str, AppliedRoleBinding] = field(default_factory=dict)  # by name
    # The contents of the files uploaded to artifact versions, by SHA-256: bytes, never
    # changed once stored, so that worlds share them (a copy copies the container only).
    blobs: Blobs = field(default_factory=Blobs)
    uploads: dict[str, MultipartUpload] = field(default_factory=dict)  # multipart, by id
    # Runs that move one status further at each listing of their job (triggered, or asked to
    # terminate, through the API): run id -> application id.
    moving_runs: dict[str, str] = field(default_factory=dict)
    run_indexes: dict[str, RunIndex] = field(default_factory=dict)  # derived, by application
    # Indexes, so that a request costs what it asks and not what the world holds: each is
    # kept beside the container it indexes, by the area that changes that container.
    tokens_by_jwt: dict[str, PersonalAccessToken] = field(default_factory=dict)  # by JWT id
    grants_by_holder: dict[tuple[str, str], list[Grant]] = field(default_factory=dict)
    grants_by_resource: dict[tuple[str, str], list[Grant]] = field(default_factory=dict)
    teams_by_member: dict[str, list[Subject]] = field(default_factory=dict)  # by user id
    resource_names: dict[tuple[str, str], Resource] = field(default_factory=dict)  # (type, name)
    groups_by_secret: dict[str, SecretGroup] = field(default_factory=dict)  # by secret id
    deployments_by_secret: dict[str, list[Deployment]] = field(default_factory=dict)  # by fqn
    # Every id an entity of the world holds, whatever its kind, and what holds it.
    ids: dict[str, str] = field(default_factory=dict)

    def copy(self) -> World:
        """A world that changes apart from this one, made in milliseconds at any size.

        Job runs never change once recorded, a run index is derived from them and rebuilt
        rather than changed (`Jobs._index`), and an uploaded file's content never changes
        once stored: the copy shares all three, in containers of its own. Everything else,
        a few entities however big the world, is copied deeply in one go (`FrozenWorld`),
        so the copies refer to each other as the originals do.
        (A shared run refers to the original application and subject; what it reads of
        them, ids, names and slugs, never changes.)"""
        return FrozenWorld(self).thaw()


# Containers a copy of a world copies shallowly: what they hold is never changed in place.
_SHARED = frozenset({"job_runs", "run_indexes", "ids", "blobs"})


class FrozenWorld:
    """A world kept to be restored, many times for the snapshot `reset()` restores: its
    entities pickled once (unpickling them is several times faster than a deep copy), its
    runs, run indexes and file contents shared."""

    def __init__(self, world: World):
        rest = {f.name: getattr(world, f.name) for f in fields(world) if f.name not in _SHARED}
        self._rest = pickle.dumps(rest, protocol=pickle.HIGHEST_PROTOCOL)
        self._job_runs = {app: list(runs) for app, runs in world.job_runs.items()}
        self._run_indexes = dict(world.run_indexes)
        self._ids = dict(world.ids)
        self._blobs = world.blobs.copy()

    def thaw(self) -> World:
        """A world of its own, as this one was."""
        return World(
            **pickle.loads(self._rest),
            job_runs={app: list(runs) for app, runs in self._job_runs.items()},
            run_indexes=dict(self._run_indexes),
            ids=dict(self._ids),
            blobs=self._blobs.copy(),
        )
