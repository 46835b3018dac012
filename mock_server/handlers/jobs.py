"""Handlers of operation 7, list the runs of a job, and of triggering and terminating runs."""

from __future__ import annotations

import shlex
from typing import NotRequired, TypedDict

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation
from mock_server.state.jobs import ApplicationNotFound, JobRunEnded


class TriggerInput(TypedDict, total=False):
    command: str | list[str]  # a string or its words
    params: dict[str, str]


class TriggerMetadata(TypedDict, total=False):
    job_run_name_alias: str


class TriggerJobRequest(TypedDict):
    """The contract's `TriggerJobRequest`."""

    deploymentId: str
    input: NotRequired[TriggerInput]
    metadata: NotRequired[TriggerMetadata]


class TriggerJobRecord(TypedDict):
    """The contract's `TriggerJobResponse`."""

    message: str
    jobRunName: str
    data: render.JobRunRecord


class TerminateJobRecord(TypedDict):
    """The contract's `TerminateJobResponse`."""

    message: str
    jobRunStatus: str


@operation(
    "listJobRuns",
    Example("GET", "/api/svc/v1/jobs/{jobId}/runs", params={"jobId": "<application:trainer>"}),
    {403: errors.PermissionDenied, 404: errors.JobNotFound, 422: errors.NotAJob},
)
def list_runs(
    job_id: str,
    *,
    limit: int,  # limit, offset, sortBy and order: Connexion fills in the spec's defaults
    offset: int,
    sort_by: str,
    order: str,
    search_prefix: str | None = None,
    triggered_by: list[str] | None = None,
    status: list[str] | None = None,
    version_numbers: list[float] | None = None,
) -> render.PageRecord[render.JobRunRecord]:
    page = store().jobs.list_runs(
        caller(),
        job_id,
        limit=limit,
        offset=offset,
        search_prefix=search_prefix,
        sort_by=sort_by,
        order=order,
        triggered_by=triggered_by,
        status=status,
        version_numbers=version_numbers,
    )
    return render.page(page.items, page.total, page.offset, page.limit, render.job_run)


@operation(
    "triggerJob",
    Example(
        "POST",
        "/api/svc/v1/jobs/trigger",
        body={"deploymentId": "<deployment:trainer/2>"},
    ),
    {
        403: errors.PermissionDenied,
        404: ApplicationNotFound,
        422: errors.NotAJob,
    },
    client_model="truefoundry_sdk.types:TriggerJobRunResponse",
)
def trigger(body: TriggerJobRequest) -> TriggerJobRecord:
    jobs = store().jobs
    deployment = jobs.deployment(body["deploymentId"])
    given = (body.get("input") or {}).get("command")
    command = shlex.join(given) if isinstance(given, list) else given
    run = jobs.trigger(
        caller(),
        deployment,
        command=command.strip() if command else None,
        params=(body.get("input") or {}).get("params"),
        alias=(body.get("metadata") or {}).get("job_run_name_alias"),
    )
    return {
        "message": f"Job {run.application.name} triggered",
        "jobRunName": run.name,
        "data": render.job_run(run),
    }


@operation(
    "terminateJob",
    Example(
        "POST",
        "/api/svc/v1/jobs/terminate",
        query={
            "deploymentId": "<deployment:trainer/2>",
            "jobRunName": "<job-run:trainer/trainer-nightly>",
        },
    ),
    {
        403: errors.PermissionDenied,
        404: ApplicationNotFound,
        409: JobRunEnded,
        422: errors.NotAJob,
    },
    client_model="truefoundry_sdk.types:TerminateJobResponse",
)
def terminate(*, deployment_id: str, job_run_name: str) -> TerminateJobRecord:
    # The platform's CLI sends both again in a body, which the query makes needless to read.
    jobs = store().jobs
    run = jobs.terminate(caller(), jobs.deployment(deployment_id), job_run_name)
    return {
        "message": f"Termination of run {run.name} requested",
        "jobRunStatus": run.status,
    }
