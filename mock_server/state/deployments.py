"""Applications and their deployments, and the active deployments behind a set of secrets (op. 2).

A deployment is associated with a secret when its manifest references the secret's fqn: a
mount's `secret_fqn`, a build secret's value, or an `env` value (plain fqn or
`platform-secret://<fqn>`). It is active when it is its application's active version.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from mock_server.contract import documents as contract
from mock_server.contract.validation import ResponseValidator, compiled, violations
from mock_server.core.errors import Violation
from mock_server.core.jsonvalue import JsonObject, JsonValue
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import Application, Caller, Deployment, Page, Subject
from mock_server.state.identity import Identity
from mock_server.state.jobs import ApplicationNotFound, Jobs
from mock_server.state.secrets import SECRET_REFERENCE_SCHEME, Secrets
from mock_server.state.sources import iso, world_time

# What the platform's Python SDK gives a manifest's `resources` when they are left out (MB),
# and its TypeScript SDK requires to be there: a manifest with `resources` always has them.
EPHEMERAL_STORAGE_DEFAULTS = {"ephemeral_storage_request": 1000, "ephemeral_storage_limit": 2000}


def with_storage_defaults(manifest: JsonObject) -> JsonObject:
    """The manifest with the ephemeral storage fields its `resources` leave out, at the
    SDK's defaults (a manifest without `resources` is left as it is)."""
    resources = manifest.get("resources")
    if isinstance(resources, dict):
        missing = {k: v for k, v in EPHEMERAL_STORAGE_DEFAULTS.items() if k not in resources}
        manifest["resources"] = {**resources, **missing}
    return manifest


class IncompleteManifest(ValueError):
    """A deployment manifest that is not complete for its kind, as the contract (and the
    platform's clients, which read it) require; says every problem, each under `prefix`."""

    def __init__(self, problems: list[Violation], prefix: str = "manifest"):
        self.problems = problems
        super().__init__(self.under(prefix))

    def under(self, prefix: str) -> str:
        return "; ".join(
            f"{prefix}{'.' if p['field'] else ''}{p['field']}: {p['message']}"
            for p in self.problems
        )


def check_manifest(manifest: JsonObject) -> None:
    """Raises IncompleteManifest unless the manifest meets the contract's DeploymentManifest:
    no deployment the platform's clients cannot read enters the world, whoever adds it."""
    schema = contract.component(contract.CONTROL_PLANE_SPEC, "DeploymentManifest")
    problems = violations(compiled(schema, ResponseValidator), manifest, "manifest")
    if problems:
        raise IncompleteManifest(problems)


def _fields(value: JsonValue) -> JsonObject:
    """An object of a checked manifest, or an empty one where the manifest has none."""
    return value if isinstance(value, dict) else {}


def _items(value: JsonValue) -> list[JsonObject]:
    """The objects of a list of a checked manifest ([] where it has none)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def referenced_secrets(manifest: JsonObject) -> frozenset[str]:
    """The secret fqns a deployment manifest (checked: `check_manifest`) refers to."""

    def candidates() -> Iterator[JsonValue]:
        for mount in _items(manifest.get("mounts")):
            yield mount.get("secret_fqn")
        build_spec = _fields(_fields(manifest.get("image")).get("build_spec"))
        for build_secret in _items(build_spec.get("build_secrets")):
            yield build_secret.get("value")
        env = manifest.get("env")
        if isinstance(env, dict):
            yield from env.values()
        elif isinstance(env, list):
            yield from (item.get("value") for item in env if isinstance(item, dict))

    return frozenset(
        value.removeprefix(SECRET_REFERENCE_SCHEME)
        for value in candidates()
        if isinstance(value, str) and value
    )


class Deployments(Area):
    """Job and service applications with their versioned deployments."""

    def __init__(self, store: Ground, identity: Identity, secrets: Secrets, jobs: Jobs):
        super().__init__(store)
        self.identity = identity
        self.secrets = secrets
        self.jobs = jobs

    @locked
    def add_application(
        self,
        name: str,
        *,
        type_: str,
        workspace_name: str,
        created_by: Subject,
        application_id: str | None = None,
        application_set_id: str | None = None,
    ) -> Application:
        workspace = self.identity.resource_named("workspace", workspace_name)
        if any(
            a.name == name and a.workspace_id == workspace.id
            for a in self.world.applications.values()
        ):
            raise ValueError(f"application {name!r} already exists in workspace {workspace_name!r}")
        fqn = f"{workspace.fqn}:{name}"
        application = Application(
            id=self.new_id(f"application {fqn!r}", application_id, "app"),
            name=name,
            type=type_,
            fqn=fqn,
            workspace_id=workspace.id,
            application_set_id=application_set_id or self.sources.new_id("appset"),
            created_by=created_by,
        )
        self.world.applications[application.id] = application
        self.world.job_runs[application.id] = []
        return application

    @locked
    def add_deployment(
        self,
        application: Application,
        manifest: JsonObject,
        *,
        activate: bool = True,
        deployment_id: str | None = None,
        created_at: datetime | None = None,
        status_id: str | None = None,
    ) -> Deployment:
        version = max(application.deployment_ids, default=0) + 1
        # Name and kind default to the application's; the rest must be complete for the kind.
        manifest = with_storage_defaults(
            {"name": application.name, "type": application.type, **copy.deepcopy(manifest)}
        )
        if manifest["type"] != application.type:
            message = f"{manifest['type']!r} is not the application's type {application.type!r}"
            raise IncompleteManifest(
                [{"location": "manifest", "field": "type", "message": message}]
            )
        check_manifest(manifest)
        fqn = f"{application.fqn}:{version}"
        deployment = Deployment(
            id=self.new_id(f"deployment {fqn!r}", deployment_id, "deployment"),
            application=application,
            version=version,
            fqn=fqn,
            manifest=manifest,
            created_by=application.created_by,
            created_at=created_at or self.sources.clock.now(),
            status_id=self.new_id(
                f"the status of deployment {fqn!r}", status_id, "deployment-status"
            ),
            secret_fqns=referenced_secrets(manifest),
        )
        self.world.deployments[deployment.id] = deployment
        for fqn in deployment.secret_fqns:
            self.world.deployments_by_secret.setdefault(fqn, []).append(deployment)
        application.deployment_ids[version] = deployment.id
        if activate:
            application.active_version = version
        self.store.tick()
        return deployment

    @locked
    def get_application(self, caller: Caller, application_id: str) -> Application:
        """An application the caller may read (`GET /apps/{id}`)."""
        application = self.world.applications.get(application_id)
        if application is None:
            raise ApplicationNotFound(f"No application with id {application_id!r}")
        return self._readable(caller, application)

    @locked
    def application_by_fqn(self, caller: Caller, fqn: str) -> Application:
        """An application by its FQN (`<cluster>:<workspace>:<name>`), or by the FQN of one
        of its deployments (with `:<version>`), as the platform's CLI may pass either."""
        for application in self.world.applications.values():
            if application.fqn == fqn:
                return self._readable(caller, application)
        head, _, version = fqn.rpartition(":")
        if version.isdigit():
            for application in self.world.applications.values():
                if application.fqn == head and int(version) in application.deployment_ids:
                    return self._readable(caller, application)
        raise ApplicationNotFound(f"No application with FQN {fqn!r}")

    def _readable(self, caller: Caller, application: Application) -> Application:
        workspace = self.world.resources[("workspace", application.workspace_id)]
        self.identity.require(caller, "read", workspace)
        return application

    def application_named(self, name: str) -> Application:
        for application in self.world.applications.values():
            if application.name == name:
                return application
        raise ValueError(f"no application named {name!r}")

    @locked
    def active_for_secrets(
        self, caller: Caller, secret_ids: list[str], *, limit: int, offset: int
    ) -> Page[Deployment]:
        """One page of the active deployments that reference any readable given secret."""
        fqns = self.secrets.readable_secret_fqns(caller, secret_ids)
        referring = {
            deployment.id: deployment
            for fqn in fqns
            for deployment in self.world.deployments_by_secret.get(fqn, ())
        }
        matches = [
            deployment
            for _, deployment in sorted(referring.items())
            if deployment.application.active_version == deployment.version
        ]
        # Newest first, ties by id (the sort is stable, also in reverse).
        matches.sort(key=lambda d: d.created_at, reverse=True)
        return Page(matches[offset : offset + limit], len(matches), offset, limit)

    @locked
    def generate_applications(
        self, count: int, *, workspace_name: str, created_by: Subject
    ) -> None:
        """Add `count` realistic applications to a workspace: services and jobs of one to
        three versions, each manifest complete for its kind (an image with a registry and a
        tag, or built from a remote source; ports and replicas for a service; a manual or
        scheduled trigger for a job), some referring to the world's secrets; jobs get runs."""
        rng, faker = self.sources.random, self.sources.faker
        workspace = self.identity.resource_named("workspace", workspace_name)
        tenant = self.identity.tenant.name
        secret_fqns = sorted(
            secret.fqn
            for group in self.world.secret_groups.values()
            for secret in group.secrets.values()
        )
        taken = {a.name for a in self.world.applications.values()}
        for _ in range(count):
            kind = rng.choice(("service", "job"))
            word = self.sources.unique("domain word", faker.domain_word)
            name = f"{word}-{'api' if kind == 'service' else 'batch'}"
            if name in taken:
                continue  # Faker's words ran into an existing name: one application fewer
            taken.add(name)
            application = self.add_application(
                name, type_=kind, workspace_name=workspace.name, created_by=created_by
            )
            for version in range(1, rng.randint(1, 3) + 1):
                manifest = _generated_manifest(kind, name, version, tenant, secret_fqns, rng)
                self.add_deployment(application, manifest)
            if kind == "job":
                self.jobs.generate_runs(application, rng.randint(3, 30))

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "applications": self.load_application,
        }

    # -- fixtures: this area's section, read and written side by side -------------------
    def load_application(
        self, r: written.ApplicationRecord | written.GeneratedApplications
    ) -> None:
        identity = self.identity
        if "generate" in r:
            self.generate_applications(
                r["generate"],
                workspace_name=r["workspace"],
                created_by=identity.user_or_default(r.get("createdBy")),
            )
            return
        application = self.add_application(
            r["name"],
            type_=r["type"],
            workspace_name=r["workspace"],
            created_by=identity.user_or_default(r.get("createdBy")),
            application_id=r.get("id"),
            application_set_id=r.get("applicationSetId"),
        )
        for index, deployment in enumerate(r["deployments"]):
            created_at = deployment.get("createdAt")
            try:
                self.add_deployment(
                    application,
                    deployment["manifest"],
                    deployment_id=deployment.get("id"),
                    status_id=deployment.get("statusId"),
                    created_at=None if created_at is None else world_time(created_at),
                )
            except IncompleteManifest as exc:
                raise ValueError(exc.under(f"deployments[{index}].manifest")) from None
        if "activeVersion" in r:
            if r["activeVersion"] not in application.deployment_ids:
                raise ValueError(
                    f"activeVersion {r['activeVersion']} is not one of the deployments"
                )
            application.active_version = r["activeVersion"]
        self.jobs.load_runs(application, r.get("runs", []))

    def dump(self) -> written.FixtureDocument:
        """This area's fixture section, `applications` (with each job's runs)."""
        world = self.world
        applications = []
        for application in world.applications.values():
            workspace = world.resources[("workspace", application.workspace_id)]
            deployments = [
                world.deployments[d] for _, d in sorted(application.deployment_ids.items())
            ]
            applications.append(
                written.application(
                    application.name,
                    application.type,
                    workspace.name,
                    application_id=application.id,
                    application_set_id=application.application_set_id,
                    created_by=application.created_by.name,
                    deployments=[
                        written.deployment(
                            copy.deepcopy(d.manifest), d.id, d.status_id, iso(d.created_at)
                        )
                        for d in deployments
                    ],
                    active_version=application.active_version,
                    runs=self.jobs.dump_runs(application),
                )
            )
        return {"applications": applications}


def _generated_manifest(
    kind: str, name: str, version: int, tenant: str, secret_fqns: list[str], rng: random.Random
) -> JsonObject:
    """A realistic manifest of one version of a generated application."""
    image: JsonObject
    if rng.random() < 0.5:
        image = {
            "type": "image",
            "image_uri": f"registry.{tenant}.example/{name}:1.{version}.{rng.randint(0, 9)}",
            "docker_registry": f"{tenant}:registry",
        }
    else:
        image = {
            "type": "build",
            "build_source": {
                "type": "remote",
                "remote_uri": f"s3://{tenant}-builds/{name}-v{version}.tar.gz",
            },
            "build_spec": {
                "type": "dockerfile",
                "dockerfile_path": "Dockerfile",
                "build_context_path": "./",
                "command": f"python -m {name.replace('-', '_')}",
            },
        }
    env: JsonObject = {"LOG_LEVEL": rng.choice(("debug", "info", "warning"))}
    manifest: JsonObject = {"image": image, "env": env}
    if secret_fqns and rng.random() < 0.5:
        secret = rng.choice(secret_fqns)
        env[secret.rsplit(":", 1)[-1]] = f"{SECRET_REFERENCE_SCHEME}{secret}"
    if secret_fqns and rng.random() < 0.3:
        secret = rng.choice(secret_fqns)
        manifest["mounts"] = [
            {"type": "secret", "mount_path": f"/secrets/{secret.rsplit(':', 1)[-1].lower()}",
             "secret_fqn": secret}
        ]  # fmt: skip
    manifest["resources"] = {
        "cpu_request": rng.choice((0.25, 0.5, 1, 2)),
        "cpu_limit": rng.choice((1, 2, 4)),
        "memory_request": rng.choice((256, 512, 1000, 2000)),
        "memory_limit": rng.choice((2000, 4000, 8000)),
    }
    if kind == "service":
        port = rng.choice((3000, 5000, 8000, 8080))
        exposed = rng.random() < 0.6
        port_record: JsonObject = {
            "port": port,
            "protocol": "TCP",
            "expose": exposed,
            "app_protocol": "http",
        }
        if exposed:
            port_record["host"] = f"{name}.{tenant}.example"
        manifest["ports"] = [port_record]
        manifest["replicas"] = rng.randint(1, 4)
        manifest["readiness_probe"] = {
            "config": {"type": "http", "path": "/health", "port": port},
            "period_seconds": 10,
        }
    elif rng.random() < 0.5:
        manifest["trigger"] = {"type": "manual"}
    else:
        manifest["trigger"] = {
            "type": "scheduled",
            "schedule": f"{rng.randint(0, 59)} {rng.randint(0, 23)} * * *",
            "concurrency_policy": rng.choice(("Forbid", "Allow", "Replace")),
            "timezone": "UTC",
        }
    return manifest
