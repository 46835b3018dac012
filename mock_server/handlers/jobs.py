"""Handler of operation 7: list the runs of a job."""

from __future__ import annotations

from typing import Any

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation


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
) -> dict[str, Any]:
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
