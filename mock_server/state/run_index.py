"""A job's runs indexed for listing (operation 7): by filter value, by name and id prefix, and
in each sort order of the contract, so that a page of 100,000 runs does not sort them all."""

from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from mock_server.state.entities import JobRun

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


class RunIndex:
    """Lookups over one job's runs, so that a page of 100,000 runs does not sort them all:
    run ids by filter value, and made on first use (worlds restored from one snapshot share
    the index, so once for them all): names and ids in sorted order for prefixes, and each
    sort order. Sorting 100,000 names would be a tenth of a second of every load."""

    def __init__(self, runs: list[JobRun]):
        self.runs = list(runs)
        self.by_status: dict[Any, set[str]] = defaultdict(set)
        self.by_slug: dict[Any, set[str]] = defaultdict(set)
        self.by_version: dict[Any, set[str]] = defaultdict(set)
        for run in runs:
            self.by_status[run.status].add(run.id)
            self.by_slug[run.triggered_by.slug].add(run.id)
            self.by_version[run.deployment_version].add(run.id)
        self._orders: dict[tuple[str, str], list[JobRun]] = {}

    def order(self, sort_by: str, order: str) -> list[JobRun]:
        key = (sort_by, order)
        if key not in self._orders:
            self._orders[key] = ordered(self.runs, sort_by, order)
        return self._orders[key]

    @functools.cached_property
    def names(self) -> list[tuple[str, str]]:
        return sorted((run.name, run.id) for run in self.runs)

    @functools.cached_property
    def ids(self) -> list[str]:
        return sorted(run.id for run in self.runs)

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
