"""ML repos, artifacts and their versions: staging a version (op. 3), tagging it (op. 4), and
marking its staging failed.

Version ids are UUIDs drawn from the seed: the platform's library reads them with `uuid.UUID`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

from mock_server.contract import documents as contract
from mock_server.contract.validation import compiled, violations
from mock_server.core import errors
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import Artifact, ArtifactVersion, Caller, MlRepo
from mock_server.state.identity import Identity, reference
from mock_server.state.sources import iso, world_time

# Each kind of artifact has its own folder under the repo, so that an artifact and a model of
# the same name never share a storage root.
KIND_FOLDERS = {
    "artifact-version": "artifacts",
    "model-version": "models",
    "agent-skill": "agent-skills",
}


class ArtifactVersionFailed(errors.PlatformError):
    status, code = 409, 40903
    condition = "artifact version failed staging and takes no tags"
    default_message = "This artifact version failed staging and takes no tags"


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
        manifest: dict[str, Any],
        *,
        version_id: str | None = None,
        artifact_id: str | None = None,
        created_at: datetime | None = None,
    ) -> ArtifactVersion:
        """Stage a new version for upload, creating the artifact on first use.

        The keyword arguments keep ids and time given by a fixture (e.g. a state dump)."""
        repo = self.world.ml_repos.get(manifest["ml_repo"])
        if repo is None:
            raise errors.MlRepoNotFound(f"No ML repo named {manifest['ml_repo']!r}")
        self.identity.require(caller, "write", repo.resource)
        type_, name = manifest["type"], manifest["name"]
        artifact = self._find_artifact(repo, type_, name)
        taken = artifact.versions if artifact else {}
        number = manifest.get("version") or max(taken, default=0) + 1
        if number in taken:
            raise errors.ArtifactVersionExists(f"{type_} {name} already has version {number}")
        # Every check has passed: from here on the change is applied whole. (A given id that
        # is taken, refused below, comes only from a fixture, which loads whole or not at all.)
        self.store.tick()
        if artifact is None:
            fqn = f"{type_.removesuffix('-version')}:{repo.resource.fqn}/{name}"
            artifact = Artifact(
                id=self.new_id(f"artifact {fqn!r}", artifact_id, "artifact"),
                ml_repo_id=repo.resource.id,
                name=name,
                type=type_,
                fqn=fqn,
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
            created_at=created_at or self.sources.clock.now(),
            created_by=self.identity.caller_subject(caller),
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
        repo_resource = self.world.resources[("mlf-project", artifact.ml_repo_id)]
        self.identity.require(caller, "write", repo_resource)
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
        """Mark a staged version failed: it loses its tags and takes no more (its number and
        storage root stay its own). Marking it again changes nothing."""
        version = self.world.artifact_versions.get(version_id)
        if version is None:
            raise errors.ArtifactVersionNotFound(f"No artifact version with id {version_id!r}")
        artifact = self.world.artifacts[version.artifact_id]
        self.identity.require(
            caller, "write", self.world.resources[("mlf-project", artifact.ml_repo_id)]
        )
        if not version.failed:
            self.store.tick()
            version.failed = True
            version.tags.clear()

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "mlRepos": self.load_ml_repo,
            "artifactVersions": self.load_version,
        }

    # -- fixtures: this area's sections, read and written side by side ------------------
    def load_ml_repo(self, r: dict[str, Any]) -> None:
        self.add_ml_repo(r["name"], storage_root=r.get("storageRoot"), repo_id=r.get("id"))

    def load_version(self, r: dict[str, Any]) -> None:
        # Through the front door: the manifest is checked as the API checks a staging request.
        schema = contract.component(contract.CONTROL_PLANE_SPEC, "ArtifactVersionManifest")
        problems = violations(compiled(schema), r["manifest"], "manifest", ("manifest",))
        if problems:
            raise ValueError("; ".join(f"{p['field']}: {p['message']}" for p in problems))
        caller = self.identity.subject_by_reference(r.get("as")).caller()
        created_at = r.get("createdAt")
        staged = self.stage(
            caller,
            r["manifest"],
            version_id=r.get("id"),
            artifact_id=r.get("artifactId"),
            created_at=None if created_at is None else world_time(created_at),
        )
        if r.get("tags") and r.get("failed"):
            raise ValueError("a version whose staging failed takes no tags")
        if r.get("tags"):
            self.apply_tags(caller, staged.id, r["tags"], force=False)
        if r.get("failed"):
            self.mark_stage_failure(caller, staged.id)

    def dump(self) -> dict[str, Any]:
        """This area's fixture sections, `mlRepos` and `artifactVersions`."""
        return {
            "mlRepos": [
                {"name": name, "id": repo.resource.id, "storageRoot": repo.storage_root}
                for name, repo in self.world.ml_repos.items()
            ],
            "artifactVersions": [
                {
                    "as": reference(v.created_by),
                    "id": v.id,
                    "artifactId": v.artifact_id,
                    "createdAt": iso(v.created_at),
                    "manifest": copy.deepcopy(v.manifest),
                    "tags": list(v.tags),
                    **({"failed": True} if v.failed else {}),
                }
                for v in self.world.artifact_versions.values()
            ],
        }
