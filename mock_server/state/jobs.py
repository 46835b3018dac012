"""Job runs: recording them, generating realistic ones, and listing them (operation 7).

Times are epoch milliseconds; `duration` is `endTime - createdAt` once a run has ended.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from mock_server import errors
from mock_server.state.entities import Application, Caller, JobRun, Page, Subject
from mock_server.state.sources import epoch_ms, from_epoch_ms, iso, world_time
from mock_server.state.store import Area, locked

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
EXIT_CODES = {"FINISHED": 0, "FAILED": 1, "TERMINATED": 143}  # of a run that gives none
ERRORS = {"FAILED": "Process exited with code 1"}

# Sort keys of the contract. A key may be None (no duration yet): such runs come last.
SORT_KEYS: dict[str, Callable[[JobRun], Any]] = {
    "startTime": lambda run: run.created_at_ms,
    "duration": lambda run: run.duration_ms,
    "deploymentVersion": lambda run: run.deployment_version,
    "triggeredBy": lambda run: run.triggered_by.slug,
    "status": lambda run: run.status,
}


def ordered(runs: list[JobRun], sort_by: str, order: str) -> list[JobRun]:
    """Runs in the contract's order: by the key in `order`, runs without one last, and ties
    by id ascending (Python's sort is stable, also in reverse, so sorting by id first holds)."""
    key = SORT_KEYS[sort_by]
    by_id = sorted(runs, key=lambda run: run.id)
    present = [run for run in by_id if key(run) is not None]
    missing = [run for run in by_id if key(run) is None]
    return sorted(present, key=key, reverse=order == "desc") + missing


class Jobs(Area):
    """Runs of job applications."""

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
            tenant_name=self.store.identity.tenant.name,
        )
        world.job_runs[application.id].append(run)
        return run

    @locked
    def generate_runs(self, application: Application, count: int) -> None:
        """Add `count` realistic runs: statuses spread over all nine, times and subjects
        consistent (a run ends after it starts; triggering users exist)."""
        rng = self.sources.random
        identity = self.store.identity
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
        self.store.identity.require(caller, "read", workspace)
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

    def build_indexes(self) -> None:
        """Make every job's run index now: worlds restored from a snapshot taken after
        this share them, so the first page after a reset does not sort 100,000 runs."""
        for application_id in self.world.job_runs:
            self._index(application_id)

    def run_index(self, application_id: str) -> RunIndex:
        """The job's run index, to read the runs by (`mock_server.state.browse`)."""
        return self._index(application_id)

    def _index(self, application_id: str) -> RunIndex:
        """The job's run index, rebuilt when runs were added since it was made."""
        runs = self.world.job_runs[application_id]
        cached = self.world.run_indexes.get(application_id)
        if cached is None or len(cached.runs) != len(runs):
            cached = self.world.run_indexes[application_id] = RunIndex(runs)
        return cached

    # -- fixtures: a job's runs, read and written side by side (inside `applications`) ----
    def load_runs(self, application: Application, records: list[dict]) -> None:
        users: dict[str | None, Subject] = {}  # a job may have 100,000 runs by a few users
        for run in records:
            if "generate" in run:
                self.generate_runs(application, run["generate"])
                continue
            self.add_run(
                application,
                status=run["status"],
                created_at=world_time(run["createdAt"]),
                seconds=run.get("durationSeconds"),
                triggered_by=self._user(users, run.get("triggeredBy")),
                deployment_version=run.get("version"),
                name=run.get("name"),
                command=run.get("command"),
                total_retries=run.get("totalRetries", 0),
                exit_code=run.get("exitCode"),
                error=run.get("error"),
                run_id=run.get("id"),
            )

    def _user(self, found: dict[str | None, Subject], email: str | None) -> Subject:
        if email not in found:
            found[email] = self.store.identity.user_or_default(email)
        return found[email]

    def dump_runs(self, application: Application) -> list[dict[str, Any]]:
        records = []
        for run in self.world.job_runs[application.id]:
            record: dict[str, Any] = {
                "id": run.id,
                "name": run.name,
                "status": run.status,
                "createdAt": iso(from_epoch_ms(run.created_at_ms)),
                "triggeredBy": run.triggered_by.name,
                "version": run.deployment_version,
                "command": run.command,
                "totalRetries": run.total_retries,
            }
            if run.duration_ms is not None:
                record["durationSeconds"] = run.duration_ms / 1000
            if run.exit_code is not None:
                record["exitCode"] = run.exit_code
            if run.error is not None:
                record["error"] = run.error
            records.append(record)
        return records


class RunIndex:
    """Lookups over one job's runs, so that a page of 100,000 runs does not sort them all:
    run ids by filter value, names and ids in sorted order for prefixes, and each sort
    order, made on first use."""

    def __init__(self, runs: list[JobRun]):
        self.runs = list(runs)
        self.by_status: dict[Any, set[str]] = defaultdict(set)
        self.by_slug: dict[Any, set[str]] = defaultdict(set)
        self.by_version: dict[Any, set[str]] = defaultdict(set)
        for run in runs:
            self.by_status[run.status].add(run.id)
            self.by_slug[run.triggered_by.slug].add(run.id)
            self.by_version[run.deployment_version].add(run.id)
        self.names = sorted((run.name, run.id) for run in runs)
        self.ids = sorted(run.id for run in runs)
        self._orders: dict[tuple[str, str], list[JobRun]] = {}

    def order(self, sort_by: str, order: str) -> list[JobRun]:
        key = (sort_by, order)
        if key not in self._orders:
            self._orders[key] = ordered(self.runs, sort_by, order)
        return self._orders[key]

    def with_prefix(self, prefix: str) -> set[str]:
        """Ids of the runs whose name or id starts with `prefix` (found by bisection)."""
        found: set[str] = set()
        i = bisect.bisect_left(self.names, (prefix,))
        while i < len(self.names) and self.names[i][0].startswith(prefix):
            found.add(self.names[i][1])
            i += 1
        j = bisect.bisect_left(self.ids, prefix)
        while j < len(self.ids) and self.ids[j].startswith(prefix):
            found.add(self.ids[j])
            j += 1
        return found


def _union(index: dict[Any, set[str]], values: list) -> set[str]:
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


def _command(manifest: dict[str, Any], application_name: str) -> str:
    """The command a deployment runs: its build spec's, else a plausible default."""
    build_spec = (manifest.get("image") or {}).get("build_spec") or {}
    return build_spec.get("command") or f"python {application_name}.py"
