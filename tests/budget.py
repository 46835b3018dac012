"""The tests' one time budget: every wait of a test (a subprocess, a request, a server to
start or stop, an event to arrive) is `budget(seconds)`, the seconds it takes on a quiet
2-core machine with room to spare, scaled to this machine.

A wait is a bound on a hang, never a measure of speed (speed is the benchmarks'): on a machine
with fewer cores, or busier at the session's start, each bound grows in proportion, so that
no test fails only because the machine is busy. `TESTS_TIME_SCALE` sets the factor itself
(a slow CI runner: 4).
"""

from __future__ import annotations

import os

REFERENCE_CORES = 2  # the machine the bounds were written for


def _scale() -> float:
    configured = os.environ.get("TESTS_TIME_SCALE")
    if configured:
        return max(float(configured), 0.1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = max(cores or 1, 1)
    busy = os.getloadavg()[0] / cores if hasattr(os, "getloadavg") else 0.0
    return max(1.0, REFERENCE_CORES / cores) * max(1.0, busy)


SCALE = _scale()  # read once per process: a session's workers each read it as they start


def budget(seconds: float) -> float:
    """`seconds` of waiting on the reference machine, on this one."""
    return seconds * SCALE
