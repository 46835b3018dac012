"""Job runs: recording them, generating realistic ones, listing them (operation 7), and
triggering and terminating them.

Times are epoch milliseconds; `duration` is `endTime - createdAt` once a run has ended.

A run triggered through the API, or asked to terminate, moves through the platform's statuses
one step at each listing of its job's runs, as time passes on the platform between a
client's polls (moto's way of moving a resource through its states): CREATED, SCHEDULED,
then RUNNING, where it stays until terminated; TERMINATION_REQUESTED, TERMINATING, then
TERMINATED. A listing shows, and filters by, the statuses after the step. Runs of the
fixtures stay as they are until terminated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from mock_server.core import errors
from mock_server.core.jsonvalue import JsonObject
from mock_server.state import fixture_format as written
from mock_server.state.area import Area, Ground, locked
from mock_server.state.entities import Application, Caller, Deployment, JobRun, Page, Subject
from mock_server.state.identity import Identity
from mock_server.state.run_index import RunIndex
from mock_server.state.sources import epoch_ms, from_epoch_ms, iso, world_time

RUN_STATUSES = (
    "CREATED",
    "SCHEDULED",
    "RUNNING",
    "FINISHED",
    "FAILED",
    "TERMINATION_REQUESTED",
    "TERMINATING",
    "TERMINATED",
    "UNKNOWN",
)
ENDED = frozenset({"FINISHED", "FAILED", "TERMINATED"})
# The step a moving run takes at each listing of its job's runs; it stops moving at the end.
NEXT_STATUS = {
    "CREATED": "SCHEDULED",
    "SCHEDULED": "RUNNING",
    "TERMINATION_REQUESTED": "TERMINATING",
    "TERMINATING": "TERMINATED",
}
RESTING = frozenset({"RUNNING", "TERMINATED"})


class ApplicationNotFound(errors.PlatformError):
    status, code = 404, 40425
    condition = "application or deployment not found"
    default_message = "No application or deployment with this id or FQN"


class JobRunNotFound(errors.PlatformError):
    status, code = 404, 40426
    condition = "job run not found in the deployment's job"
    default_message = "No run of this name in the job"


class JobRunEnded(errors.PlatformError):
    status, code = 409, 40906
    condition = "job run has ended: there is nothing to terminate"
    default_message = "This job run has ended"


EXIT_CODES = {"FINISHED": 0, "FAILED": 1, "TERMINATED": 143}  # of a run that gives none
ERRORS = {"FAILED": "Process exited with code 1"}


class Jobs(Area):
    """Runs of job applications."""

    def __init__(self, store: Ground, identity: Identity):
        super().__init__(store)
        self.identity = identity

    @locked
    def add_run(
        self,
        application: Application,
        *,
        status: str,
        created_at: datetime,
        seconds: float | None = None,
        triggered_by: Subject,
        deployment_version: int | None = None,
        name: str | None = None,
        command: str | None = None,
        total_retries: int = 0,
        exit_code: int | None = None,
        error: str | None = None,
        run_id: str | None = None,
    ) -> JobRun:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        if (seconds is None) == (status in ENDED):
            raise ValueError(f"a {status} run {'needs' if status in ENDED else 'has no'} duration")
        version = deployment_version or application.active_version
        if version not in application.deployment_ids:
            raise ValueError(f"{application.name} has no deployment version {version}")
        world = self.world
        deployment = world.deployments[application.deployment_ids[version]]
        start = epoch_ms(created_at)
        # Faker draws from its own generator: naming the run first leaves the ids as they were.
        name = name or f"{application.name}-{self.sources.word()}"
        run = JobRun(
            id=self.new_id(f"job run {name!r} of {application.fqn!r}", run_id, "run"),
            name=name,
            application=application,
            deployment_id=deployment.id,
            deployment_version=version,
            command=command or _command(deployment.manifest, application.name),
            status=status,
            created_at_ms=start,
            end_time_ms=None if seconds is None else start + round(seconds * 1000),
            total_retries=total_retries,
            exit_code=exit_code if exit_code is not None else EXIT_CODES.get(status),
            error=error if error is not None else ERRORS.get(status),
            triggered_by=triggered_by,
            tenant_name=self.identity.tenant.name,
        )
        world.job_runs[application.id].append(run)
        return run

    @locked
    def generate_runs(self, application: Application, count: int) -> None:
        """Add `count` realistic runs: statuses spread over all nine, times and subjects
        consistent (a run ends after it starts; triggering users exist)."""
        rng = self.sources.random
        identity = self.identity
        workspace = self.world.resources[("workspace", application.workspace_id)]
        users = [s for s in self.world.subjects.values() if s.type == "user"]
        # Runs are triggered by people who can see the job, when there are any.
        users = [u for u in users if identity.allowed(u.caller(), "read", workspace)] or users
        versions = sorted(application.deployment_ids)
        start = self.sources.clock.now() - timedelta(days=30)
        for _ in range(count):
            status = rng.choice(RUN_STATUSES)
            start += timedelta(seconds=rng.randint(30, 3600))
            self.add_run(
                application,
                status=status,
                created_at=start,
                seconds=rng.randint(5, 7200) if status in ENDED else None,
                triggered_by=rng.choice(users),
                deployment_version=rng.choice(versions),
                total_retries=rng.randint(0, 3),
            )

    @locked
    def list_runs(
        self,
        caller: Caller,
        job_id: str,
        *,
        limit: int,
        offset: int,
        search_prefix: str | None,
        sort_by: str,
        order: str,
        triggered_by: list[str] | None,
        status: list[str] | None,
        version_numbers: list[float] | None,
    ) -> Page[JobRun]:
        """One page of a job's runs: filters combine with AND, values of one filter with OR."""
        application = self.world.applications.get(job_id)
        if application is None:
            raise errors.JobNotFound(f"No job with id {job_id!r}")
        if application.type != "job":
            raise errors.NotAJob(
                f"Application {application.name} is a {application.type}, not a job"
            )
        workspace = self.world.resources[("workspace", application.workspace_id)]
        self.identity.require(caller, "read", workspace)
        self._move(application)
        index = self._index(application.id)
        filters = []
        if search_prefix:
            filters.append(index.with_prefix(search_prefix))
        if triggered_by:
            filters.append(_union(index.by_slug, triggered_by))
        if status:
            filters.append(_union(index.by_status, status))
        if version_numbers:
            versions = [int(v) for v in version_numbers if float(v).is_integer()]
            filters.append(_union(index.by_version, versions))
        runs = index.order(sort_by, order)
        if not filters:
            total, page = len(runs), runs[offset : offset + limit]
        else:
            selected = set.intersection(*filters)
            total, page = len(selected), _page(runs, selected, offset, limit)
        return Page(page, total, offset, limit)

    # -- triggering and terminating (POST /jobs/trigger, /jobs/terminate) -----------------
    def _job_of(self, caller: Caller, deployment: Deployment) -> Application:
        application = deployment.application
        if application.type != "job":
            raise errors.NotAJob(
                f"Application {application.name} is a {application.type}, not a job"
            )
        workspace = self.world.resources[("workspace", application.workspace_id)]
        self.identity.require(caller, "write", workspace)
        return application

    def deployment(self, deployment_id: str) -> Deployment:
        """A deployment by id."""
        found = self.world.deployments.get(deployment_id)
        if found is None:
            raise ApplicationNotFound(f"No deployment with id {deployment_id!r}")
        return found

    @locked
    def trigger(
        self,
        caller: Caller,
        deployment: Deployment,
        *,
        command: str | None = None,
        params: dict[str, str] | None = None,
        alias: str | None = None,
    ) -> JobRun:
        """A new run of a deployment of a job, CREATED now by the caller, moving to RUNNING
        at the next listings; its name is the alias (made unique) or generated; its command
        the one given, else the deployment's (with the params, as `--name value`)."""
        application = self._job_of(caller, deployment)
        self.store.tick()
        taken = {run.name for run in self.world.job_runs[application.id]}
        name = alias or f"{application.name}-{self.sources.word()}"
        base, number = name, 1
        while name in taken:
            number += 1
            name = f"{base}-{number}"
        if command is None:
            command = _command(deployment.manifest, application.name)
            for key, value in (params or {}).items():
                command += f" --{key} {value}"
        run = self.add_run(
            application,
            status="CREATED",
            created_at=self.sources.clock.now(),
            triggered_by=self.identity.caller_subject(caller),
            deployment_version=deployment.version,
            name=name,
            command=command,
        )
        self.world.moving_runs[run.id] = application.id
        return run

    @locked
    def terminate(self, caller: Caller, deployment: Deployment, run_name: str) -> JobRun:
        """Ask a run of the deployment's job to terminate: it is TERMINATION_REQUESTED, and
        TERMINATED two listings later. A run asked already is left as it is; one that has
        ended is 409."""
        application = self._job_of(caller, deployment)
        runs = self.world.job_runs[application.id]
        run = next((r for r in runs if r.name == run_name), None)
        if run is None:
            raise JobRunNotFound(f"No run named {run_name!r} in job {application.name}")
        if run.status in ENDED:
            raise JobRunEnded(f"Run {run_name} of job {application.name} is {run.status}")
        if run.status in ("TERMINATION_REQUESTED", "TERMINATING"):
            return run
        self.store.tick()
        moved = self._replace(run, "TERMINATION_REQUESTED")
        self.world.moving_runs[moved.id] = application.id
        return moved

    def _move(self, application: Application) -> None:
        """Each moving run of the job one step further (the caller holds the lock)."""
        moving = [r for r, a in self.world.moving_runs.items() if a == application.id]
        if not moving:
            return
        self.store.tick()
        by_id = {run.id: run for run in self.world.job_runs[application.id]}
        for run_id in moving:
            moved = self._replace(by_id[run_id], NEXT_STATUS[by_id[run_id].status])
            if moved.status in RESTING:
                del self.world.moving_runs[run_id]

    def _replace(self, run: JobRun, status: str) -> JobRun:
        """The run in another status, put in its place in the world (runs are shared by the
        copies of a world, and never changed in place); the job's run index is made again."""
        ended = status in ENDED
        end = epoch_ms(self.sources.clock.now()) if ended else None
        moved = dataclasses.replace(
            run,
            status=status,
            end_time_ms=end,
            exit_code=EXIT_CODES.get(status) if ended else None,
        )
        runs = self.world.job_runs[run.application.id]
        runs[next(i for i, r in enumerate(runs) if r.id == run.id)] = moved
        self.world.run_indexes.pop(run.application.id, None)
        return moved

    def build_indexes(self) -> None:
        """Make every job's run index now: worlds restored from a snapshot taken after
        this share them, so the first page after a reset does not sort 100,000 runs."""
        for application_id in self.world.job_runs:
            self._index(application_id)

    def run_index(self, application_id: str) -> RunIndex:
        """The job's run index, to read the runs by (`mock_server.view.browse`)."""
        return self._index(application_id)

    def _index(self, application_id: str) -> RunIndex:
        """The job's run index, rebuilt when runs were added since it was made."""
        runs = self.world.job_runs[application_id]
        cached = self.world.run_indexes.get(application_id)
        if cached is None or len(cached.runs) != len(runs):
            cached = self.world.run_indexes[application_id] = RunIndex(runs)
        return cached

    # -- fixtures: a job's runs, read and written side by side (inside `applications`) ----
    @locked
    def load_runs(
        self,
        application: Application,
        records: Sequence[written.RunRecord | written.GeneratedRecord],
    ) -> None:
        # A job may have 100,000 runs by a few users, of a few deployment versions: what
        # each run would look up again is looked up once.
        users: dict[str | None, Subject] = {}
        commands: dict[int | None, str | None] = {}
        for run in records:
            if "generate" in run:
                self.generate_runs(application, run["generate"])
                continue
            version = run.get("version")
            command = run.get("command")
            if command is None:
                if version not in commands:
                    commands[version] = self._default_command(application, version)
                command = commands[version]
            added = self.add_run(
                application,
                status=run["status"],
                created_at=world_time(run["createdAt"]),
                seconds=run.get("durationSeconds"),
                triggered_by=self._user(users, run.get("triggeredBy")),
                deployment_version=version,
                name=run.get("name"),
                command=command,
                total_retries=run.get("totalRetries", 0),
                exit_code=run.get("exitCode"),
                error=run.get("error"),
                run_id=run.get("id"),
            )
            if run.get("moving"):
                if run["status"] not in NEXT_STATUS:
                    raise ValueError(f"a {run['status']} run does not move")
                self.world.moving_runs[added.id] = application.id

    def _default_command(self, application: Application, version: int | None) -> str | None:
        """The command of a run of this deployment version (the active one if None) that
        names none; None for a version the job does not have (`add_run` says so)."""
        deployment_id = application.deployment_ids.get(version or application.active_version)
        if deployment_id is None:
            return None
        return _command(self.world.deployments[deployment_id].manifest, application.name)

    def _user(self, found: dict[str | None, Subject], email: str | None) -> Subject:
        if email not in found:
            found[email] = self.identity.user_or_default(email)
        return found[email]

    def dump_runs(self, application: Application) -> list[written.RunRecord]:
        moving = self.world.moving_runs
        return [run_record(run, run.id in moving) for run in self.world.job_runs[application.id]]


def run_record(run: JobRun, moving: bool = False) -> written.RunRecord:
    """A run as a fixture document records it (`applications[].runs[]`)."""
    return written.run(
        run.id,
        run.name,
        run.status,
        iso(from_epoch_ms(run.created_at_ms)),
        triggered_by=run.triggered_by.name,
        version=run.deployment_version,
        command=run.command,
        total_retries=run.total_retries,
        duration_seconds=None if run.duration_ms is None else run.duration_ms / 1000,
        exit_code=run.exit_code,
        error=run.error,
        moving=moving,
    )


def _union(index: dict[Any, set[str]], values: list[Any]) -> set[str]:
    return set().union(*(index.get(value, set()) for value in values))


def _page(runs: list[JobRun], selected: set[str], offset: int, limit: int) -> list[JobRun]:
    """The `limit` selected runs after the first `offset` ones, in the order of `runs`."""
    page: list[JobRun] = []
    for run in runs:
        if run.id in selected:
            if offset:
                offset -= 1
                continue
            page.append(run)
            if len(page) == limit:
                break
    return page


def _command(manifest: JsonObject, application_name: str) -> str:
    """The command a deployment runs: its build spec's, else a plausible default."""
    image = manifest.get("image")
    build_spec = image.get("build_spec") if isinstance(image, dict) else None
    command = build_spec.get("command") if isinstance(build_spec, dict) else None
    return command if isinstance(command, str) and command else f"python {application_name}.py"
