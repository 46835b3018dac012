"""Handler of operation 7: list the runs of a job."""

from __future__ import annotations

from typing import Any

from mock_server.handlers.context import caller, store


def list_runs(
    job_id: str,
    token_info: dict[str, Any],
    limit: int | None = 100,
    offset: int | None = 0,
    search_prefix: str | None = None,
    sort_by: str = "startTime",
    order: str = "desc",
    triggered_by: list[str] | None = None,
    status: list[str] | None = None,
    version_numbers: list[float] | None = None,
) -> dict[str, Any]:
    return store().jobs.list_runs(
        caller(token_info),
        job_id,
        limit=100 if limit is None else limit,
        offset=0 if offset is None else offset,
        search_prefix=search_prefix,
        sort_by=sort_by,
        order=order,
        triggered_by=triggered_by,
        status=status,
        version_numbers=version_numbers,
    )
