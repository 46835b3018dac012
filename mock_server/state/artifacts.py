"""ML repos, artifacts and their versions: staging a version (op. 3), tagging it (op. 4),
marking its staging failed, finalising it, and reading finalised versions back.

A version's life cycle: staged (its files are being uploaded: `mock_server.state.storage`),
then finalised (ready: listed and read, by id and by FQN) or failed (it takes no tags, and
its files are dropped). Tags apply to any version but a failed one, and stay when a staged
version is finalised.

Version ids are UUIDs drawn from the seed: the platform's library reads them with `uuid.UUID`.
FQNs read `<kind>:<tenant>/<ml repo>/<name>:<version>` (`artifact:acme/demo-repo/x:1`, and
`model:` or `agent-skill:`), as the platform's library documents them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from mock_server.contract import documents as contract
from mock_server.contract.validation import compiled, violations
from mock_server.core import errors
from mock_server.core.jsonvalue import JsonObject
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import (
    READY,
    Artifact,
    ArtifactVersion,
    ArtifactVersionManifest,
    Caller,
    MlRepo,
    Page,
)
from mock_server.state.identity import Identity, InvalidManifest, reference
from mock_server.state.sources import iso, world_time

# Each kind of artifact has its own folder under the repo, so that an artifact and a model of
# the same name never share a storage root.
KIND_FOLDERS = {
    "artifact-version": "artifacts",
    "model-version": "models",
    "agent-skill": "agent-skills",
}
# The kind an FQN names each variant by.
KIND_NAMES = {
    "artifact-version": "artifact",
    "model-version": "model",
    "agent-skill": "agent-skill",
}
# Sources that name where the platform stored the files a client uploaded to a staged version
# (the platform's own, under either name, and an agent skill's blob storage): finalising with
# one finalises the version staged at its `uri`.
STAGED_SOURCES = frozenset({"truefoundry", "platform", "blob-storage"})


class ArtifactVersionFailed(errors.PlatformError):
    status, code = 409, 40903
    condition = "artifact version failed staging and takes no tags"
    default_message = "This artifact version failed staging and takes no tags"


class ArtifactVersionNotStaged(errors.PlatformError):
    status, code = 409, 40904
    condition = (
        "artifact version is not staged (finalised or failed): it takes no uploads, and its "
        "staging cannot fail"
    )
    default_message = "This artifact version is not staged"


class ArtifactNotFound(errors.PlatformError):
    status, code = 404, 40422
    condition = "artifact or model not found"
    default_message = "No artifact or model with this id"


class Artifacts(Area):
    """Artifacts live in ML repos; a tag names at most one version of an artifact."""

    def __init__(self, store: Ground, identity: Identity):
        super().__init__(store)
        self.identity = identity

    @locked
    def add_ml_repo(
        self, name: str, *, storage_root: str | None = None, repo_id: str | None = None
    ) -> MlRepo:
        resource = self.identity.add_resource("mlf-project", name, resource_id=repo_id)
        tenant = self.identity.tenant.name
        repo = MlRepo(resource, storage_root or f"s3://platform-{tenant}-artifacts/{name}")
        self.world.ml_repos[name] = repo
        return repo

    def version(self, version_id: str) -> ArtifactVersion | None:
        return self.world.artifact_versions.get(version_id)

    def repo_of(self, version: ArtifactVersion) -> MlRepo:
        artifact = self.world.artifacts[version.artifact_id]
        return self.world.ml_repos[self.world.resources[("mlf-project", artifact.ml_repo_id)].name]

    def _repo(self, caller: Caller, name: str, action: str) -> MlRepo:
        repo = self.world.ml_repos.get(name)
        if repo is None:
            raise errors.MlRepoNotFound(f"No ML repo named {name!r}")
        self.identity.require(caller, action, repo.resource)
        return repo

    def _find_artifact(self, repo: MlRepo, type_: str, name: str) -> Artifact | None:
        for artifact in self.world.artifacts.values():
            if (artifact.ml_repo_id, artifact.type, artifact.name) == (
                repo.resource.id,
                type_,
                name,
            ):
                return artifact
        return None

    @locked
    def stage(
        self,
        caller: Caller,
        manifest: ArtifactVersionManifest,
        *,
        version_id: str | None = None,
        artifact_id: str | None = None,
        created_at: datetime | None = None,
    ) -> ArtifactVersion:
        """Stage a new version for upload, creating the artifact on first use.

        The keyword arguments keep ids and time given by a fixture (e.g. a state dump)."""
        repo = self._repo(caller, manifest["ml_repo"], "write")
        type_, name = manifest["type"], manifest["name"]
        artifact = self._find_artifact(repo, type_, name)
        taken = artifact.versions if artifact else {}
        number = manifest.get("version") or max(taken, default=0) + 1
        if number in taken:
            raise errors.ArtifactVersionExists(f"{type_} {name} already has version {number}")
        # Every check has passed: from here on the change is applied whole. (A given id that
        # is taken, refused below, comes only from a fixture, which loads whole or not at all.)
        self.store.tick()
        created_at = created_at or self.sources.clock.now()
        subject = self.identity.caller_subject(caller)
        if artifact is None:
            fqn = f"{KIND_NAMES[type_]}:{self.identity.tenant.name}/{repo.resource.name}/{name}"
            artifact = Artifact(
                id=self.new_id(f"artifact {fqn!r}", artifact_id, "artifact"),
                ml_repo_id=repo.resource.id,
                name=name,
                type=type_,
                fqn=fqn,
                created_by=subject,
                created_at=created_at,
            )
            self.world.artifacts[artifact.id] = artifact
        fqn = f"{artifact.fqn}:{number}"
        version = ArtifactVersion(
            id=self.claim_id(f"artifact version {fqn!r}", version_id, self.sources.new_uuid),
            artifact_id=artifact.id,
            version=number,
            fqn=fqn,
            storage_root=f"{repo.storage_root}/{KIND_FOLDERS[type_]}/{name}/{number}/",
            manifest={**copy.deepcopy(manifest), "version": number},
            created_at=created_at,
            created_by=subject,
        )
        artifact.versions[number] = version.id
        self.world.artifact_versions[version.id] = version
        return version

    @locked
    def apply_tags(self, caller: Caller, version_id: str, tags: list[str], *, force: bool) -> None:
        """Add tags to a version; a tag held by a sibling version moves only with `force`."""
        version = self.world.artifact_versions.get(version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(f"No artifact version with id {version_id!r}")
        artifact = self.world.artifacts[version.artifact_id]
        self.identity.require(caller, "write", self.repo_of(version).resource)
        if version.failed:
            raise ArtifactVersionFailed(
                f"Artifact version {version.fqn} ({version.id}) failed staging; it takes no tags"
            )
        wanted = list(dict.fromkeys(tags))
        holders: dict[str, ArtifactVersion] = {}
        for sibling_id in artifact.versions.values():
            sibling = self.world.artifact_versions[sibling_id]
            if sibling.id != version.id:
                holders.update({tag: sibling for tag in sibling.tags if tag in wanted})
        if holders and not force:
            raise errors.TagInUse(
                f"{len(holders)} tag(s) already on another version of {artifact.name}; "
                "use force to move them",
                details=[
                    {
                        "location": "body",
                        "field": "tags",
                        "tag": tag,
                        "message": f"tag {tag!r} is on version {holder.version} ({holder.id})",
                    }
                    for tag, holder in holders.items()
                ],
            )
        self.store.tick()
        for tag, holder in holders.items():
            holder.tags.remove(tag)
        version.tags.extend(tag for tag in wanted if tag not in version.tags)

    @locked
    def mark_stage_failure(self, caller: Caller, version_id: str) -> None:
        """Mark a staged version failed: it loses its tags and takes no more, and its files
        are dropped (its number and storage root stay its own). Marking it again changes
        nothing; a finalised version's staging cannot fail (409)."""
        version = self.world.artifact_versions.get(version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(f"No artifact version with id {version_id!r}")
        self.identity.require(caller, "write", self.repo_of(version).resource)
        if version.ready:
            raise ArtifactVersionNotStaged(
                f"Artifact version {version.fqn} ({version.id}) is finalised: its staging "
                "cannot fail"
            )
        if not version.failed:
            self.store.tick()
            version.status = "failed"
            version.tags.clear()
            self._forget_files(version)

    def _forget_files(self, version: ArtifactVersion) -> None:
        for stored in version.files.values():
            self.world.blobs.let_go(stored.blob)
        version.files.clear()
        self._forget_uploads(version)

    def _forget_uploads(self, version: ArtifactVersion) -> None:
        """Drop a version's unfinished uploads in parts and their parts' contents: once it
        is finalised or failed, none can be completed."""
        world = self.world
        for upload_id, upload in list(world.uploads.items()):
            if upload.version_id == version.id:
                del world.uploads[upload_id]
                for part in upload.parts.values():
                    world.blobs.let_go(part.blob)

    # -- finalising -----------------------------------------------------------------------
    @locked
    def finalize(
        self, caller: Caller, manifest: ArtifactVersionManifest
    ) -> tuple[ArtifactVersion, ArtifactVersionManifest | None]:
        """A version made ready from a manifest (`PUT /artifact-versions`, `/model-versions`,
        `/apply`), and the manifest it had when it was ready already (and is now updated).

        A source naming where the platform stored a staged version's files (the platform's
        own, or an agent skill's blob storage) finalises the version of that artifact staged
        at its `uri`, or updates it when it is ready already; any other source (external
        storage, an inline skill) makes a new version, ready at once."""
        repo = self._repo(caller, manifest["ml_repo"], "write")
        type_, name = manifest["type"], manifest["name"]
        source = manifest["source"]
        if source["type"] not in STAGED_SOURCES:
            new = self.stage(caller, manifest)
            self._ready(new, manifest)
            return new, None
        uri = source.get("uri")
        artifact = self._find_artifact(repo, type_, name)
        version = next(
            (
                self.world.artifact_versions[v]
                for v in (artifact.versions.values() if artifact else ())
                if _same_root(self.world.artifact_versions[v].storage_root, uri)
            ),
            None,
        )
        if version is None:
            raise errors.ArtifactVersionNotFound(
                f"No version of {type_} {name!r} in ML repo {repo.resource.name!r} is staged at "
                f"{uri!r}: stage one (its storage_root is the uri to finalise it with)"
            )
        if version.failed:
            raise ArtifactVersionFailed(
                f"Artifact version {version.fqn} ({version.id}) failed staging; it cannot be "
                "finalised"
            )
        given = manifest.get("version")
        if given is not None and given != version.version:
            raise InvalidManifest(
                f"The manifest names version {given}; the version staged at {uri!r} is "
                f"{version.version}"
            )
        before = copy.deepcopy(version.manifest) if version.ready else None
        self._ready(version, manifest)
        return version, before

    def _ready(self, version: ArtifactVersion, manifest: ArtifactVersionManifest) -> None:
        """Make a version ready with this manifest (the caller holds the lock)."""
        self.store.tick()
        kept = copy.deepcopy(manifest)
        if kept["source"]["type"] in ("truefoundry", "platform"):
            # Shown as the platform's own source, where the files are: the SDK reads no other name.
            kept["source"] = {"type": "truefoundry", "uri": version.storage_root}
        version.manifest = {**kept, "version": version.version}
        version.status = READY
        version.updated_at = self.sources.clock.now()
        self._forget_uploads(version)  # their parts would hold the world's budget for good

    # -- reading finalised versions ---------------------------------------------------------
    @locked
    def list_versions(
        self,
        caller: Caller,
        type_: str,
        *,
        limit: int,
        offset: int,
        fqn: str | None = None,
        tag: str | None = None,
        artifact_id: str | None = None,
        ml_repo_id: str | None = None,
        name: str | None = None,
        version: int | None = None,
        run_ids: list[str] | None = None,
        run_steps: list[float] | None = None,
    ) -> Page[ArtifactVersion]:
        """One page of the finalised versions of one kind that the caller may read, newest
        first; filters combine with AND, the values of a list with OR."""
        world = self.world
        readable: dict[str, bool] = {}
        found = []
        for candidate in world.artifact_versions.values():
            artifact = world.artifacts[candidate.artifact_id]
            if not candidate.ready or artifact.type != type_:
                continue
            manifest = candidate.manifest
            if (
                (fqn is not None and candidate.fqn != fqn)
                or (tag is not None and tag not in candidate.tags)
                or (artifact_id is not None and artifact.id != artifact_id)
                or (ml_repo_id is not None and artifact.ml_repo_id != ml_repo_id)
                or (name is not None and artifact.name != name)
                or (version is not None and candidate.version != version)
                or (run_ids and manifest.get("run_id") not in run_ids)
                or (run_steps and manifest.get("step", 0) not in run_steps)
            ):
                continue
            if artifact.ml_repo_id not in readable:
                repo = world.resources[("mlf-project", artifact.ml_repo_id)]
                readable[artifact.ml_repo_id] = self.identity.allowed(caller, "read", repo)
            if readable[artifact.ml_repo_id]:
                found.append(candidate)
        found.sort(key=lambda v: (v.updated_at or v.created_at, v.version), reverse=True)
        return Page(found[offset : offset + limit], len(found), offset, limit)

    @locked
    def get_version(self, caller: Caller, version_id: str, type_: str) -> ArtifactVersion:
        """A finalised version of one kind (404 for a staged or failed one: it is not ready)."""
        found = self.world.artifact_versions.get(version_id)
        if found is None or self.world.artifacts[found.artifact_id].type != type_:
            raise errors.ArtifactVersionNotFound(
                f"No {KIND_NAMES[type_]} version with id {version_id!r}"
            )
        self.identity.require(caller, "read", self.repo_of(found).resource)
        if not found.ready:
            raise errors.ArtifactVersionNotFound(
                f"{KIND_NAMES[type_].capitalize()} version {found.fqn} ({found.id}) is "
                f"{found.status}, not finalised"
            )
        return found

    @locked
    def get_artifact(
        self, caller: Caller, artifact_id: str, type_: str
    ) -> tuple[Artifact, ArtifactVersion | None]:
        """An artifact (or model) of one kind, with its latest finalised version."""
        artifact = self.world.artifacts.get(artifact_id)
        if artifact is None or artifact.type != type_:
            raise ArtifactNotFound(f"No {KIND_NAMES[type_]} with id {artifact_id!r}")
        repo = self.world.resources[("mlf-project", artifact.ml_repo_id)]
        self.identity.require(caller, "read", repo)
        ready = [
            self.world.artifact_versions[v]
            for _, v in sorted(artifact.versions.items())
            if self.world.artifact_versions[v].ready
        ]
        return artifact, (ready[-1] if ready else None)

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "mlRepos": self.load_ml_repo,
        }

    # -- fixtures: this area's sections, read and written side by side ------------------
    def load_ml_repo(self, r: written.MlRepoRecord) -> None:
        self.add_ml_repo(r["name"], storage_root=r.get("storageRoot"), repo_id=r.get("id"))

    def load_version(
        self,
        r: written.ArtifactVersionRecord,
        put_files: Callable[[ArtifactVersion, list[written.FileRecord]], None],
    ) -> None:
        """A version of a fixture, through the front door: its manifest checked as the API
        checks a staging request, staged, its files uploaded (`put_files`), finalised unless
        it is `staged` or `failed`, then tagged."""
        schema = contract.component(contract.CONTROL_PLANE_SPEC, "ArtifactVersionManifest")
        problems = violations(compiled(schema), r["manifest"], "manifest", ("manifest",))
        if problems:
            raise ValueError("; ".join(f"{p['field']}: {p['message']}" for p in problems))
        if r.get("tags") and r.get("failed"):
            raise ValueError("a version whose staging failed takes no tags")
        if r.get("staged") and r.get("failed"):
            raise ValueError("a version is staged or failed, not both")
        if r.get("files") and r.get("failed"):
            raise ValueError("a version whose staging failed keeps no files")
        caller = self.identity.subject_by_reference(r.get("as")).caller()
        created_at = r.get("createdAt")
        staged = self.stage(
            caller,
            cast(ArtifactVersionManifest, r["manifest"]),  # the contract's schema, checked above
            version_id=r.get("id"),
            artifact_id=r.get("artifactId"),
            created_at=None if created_at is None else world_time(created_at),
        )
        put_files(staged, r.get("files", []))
        if not (r.get("staged") or r.get("failed")):
            self._ready(staged, staged.manifest)
            if r.get("updatedAt"):
                staged.updated_at = world_time(r["updatedAt"])
        if r.get("tags"):
            self.apply_tags(caller, staged.id, r["tags"], force=False)
        if r.get("failed"):
            self.mark_stage_failure(caller, staged.id)

    def dump_version(
        self, v: ArtifactVersion, files: Callable[[ArtifactVersion], list[written.FileRecord]]
    ) -> written.ArtifactVersionRecord:
        """A version as its fixture records it (`artifactVersions[]`)."""
        return written.artifact_version(
            v.id,
            cast(JsonObject, copy.deepcopy(v.manifest)),  # a manifest's fields are JSON's
            created_by=reference(v.created_by),
            artifact_id=v.artifact_id,
            created_at=iso(v.created_at),
            tags=list(v.tags),
            staged=v.status == "staged",
            failed=v.failed,
            updated_at=iso(v.updated_at) if v.updated_at else None,
            files=files(v) if v.files else None,
        )

    def dump(self) -> written.FixtureDocument:
        """This area's fixture section `mlRepos` (its versions are the storage's to write,
        with their files)."""
        return {
            "mlRepos": [
                written.ml_repo(name, repo.resource.id, repo.storage_root)
                for name, repo in self.world.ml_repos.items()
            ],
        }


def _same_root(storage_root: str, uri: str | None) -> bool:
    return uri is not None and storage_root.rstrip("/") == uri.rstrip("/")
