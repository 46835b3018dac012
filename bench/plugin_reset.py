"""What the `platform_mock` fixture's reset costs each test: on the default world and on 100k runs.

Writes a test module of `--tests` tests to a temporary directory, each asking for
`platform_mock` and making one change to the world through its in-process client (a
personal access token created), so that every reset has something to undo. It runs pytest
on it (the installed plugin, in process, as a user's session runs it) twice: on the default
world, and with `--platform-mock-fixtures` of `bench/scale.py`'s 100,000-run world. A
conftest wraps the fixture's setup (pytest's `pytest_fixture_setup` hook) and records how
long it took, in wall time and in the CPU time of its thread: the plugin's whole reset path
(the marker read, the world restored, the journal and the faults cleared, the test named),
not pytest's own work around it. The first test's figure is reported apart; the others give
the median, p90 and max. Sessions on the two worlds alternate, `--sessions` of each (this
machine is shared: a busy spell falls on both); the figures are the medians of the
sessions' figures, the max the largest.

    python bench/plugin_reset.py [--tests 200] [--runs 100000] [--sessions 3]

`measure(tests, runs, sessions)` returns the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# bench/ is not a package: its scripts import each other from its folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale

CONFTEST = """
import json
import os
import time

import pytest

TIMES = []


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started, cpu = time.perf_counter(), time.thread_time()
    try:
        return (yield)
    finally:
        if fixturedef.argname == "platform_mock":
            TIMES.append((time.perf_counter() - started, time.thread_time() - cpu))


def pytest_sessionfinish(session):
    with open(os.environ["BENCH_RESET_OUT"], "w") as handle:
        json.dump(TIMES, handle)
"""

TESTS = """
import pytest


@pytest.mark.parametrize("n", range({tests}))
def test_one_change(platform_mock, n):
    with platform_mock.client() as api:
        assert api.get(f"/personal-access-tokens/bench-{{n}}").status_code == 200
"""


def _session(folder: Path, tests: int, *options: str) -> dict[str, Any]:
    out = folder / "times.json"
    # A session of its own: not one of `platform-mock run`'s, whose mock is another process.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_MOCK_")}
    env["BENCH_RESET_OUT"] = str(out)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the pytest session failed: {result.stdout[-1000:]}")
    recorded = json.loads(out.read_text())
    if len(recorded) != tests:
        raise RuntimeError(f"{len(recorded)} resets recorded of {tests} tests")
    wall = sorted(seconds * 1000 for seconds, _ in recorded[1:])
    return {
        "first_ms": recorded[0][0] * 1000,
        "p50_ms": statistics.median(wall),
        "p90_ms": wall[int(len(wall) * 0.9)],
        "max_ms": wall[-1],
        "cpu_p50_ms": statistics.median(cpu * 1000 for _, cpu in recorded[1:]),
    }


def measure(tests: int = 200, runs: int = 100_000, sessions: int = 3) -> dict[str, Any]:
    """The fixture's setup time per test, on the default world and on `runs` runs."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "test_resets.py").write_text(TESTS.format(tests=tests))
        fixture = folder / "runs.yaml"
        scale.write_fixture(fixture, runs)
        options = {
            "default": ("test_resets.py",),
            "big": ("--platform-mock-fixtures", str(fixture), "test_resets.py"),
        }
        found: dict[str, list[dict[str, Any]]] = {name: [] for name in options}
        for session in range(sessions):
            for name in list(options)[:: 1 if session % 2 == 0 else -1]:
                found[name].append(_session(folder, tests, *options[name]))
    results: dict[str, Any] = {}
    for name, measured in found.items():
        results[name] = {
            key: (max if key == "max_ms" else statistics.median)(m[key] for m in measured)
            for key in measured[0]
        }
        results[name].update(tests=tests, sessions=sessions)
    results["big"]["runs"] = runs
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=3)
    args = parser.parse_args()
    found = measure(args.tests, args.runs, args.sessions)
    for name, label in (("default", "default world"), ("big", f"{args.runs:,} runs")):
        m = found[name]
        print(
            f"{label:>14}: reset p50 {m['p50_ms']:.3f} ms (CPU {m['cpu_p50_ms']:.3f}), "
            f"p90 {m['p90_ms']:.3f}, max {m['max_ms']:.3f}; the first test's "
            f"{m['first_ms']:.3f} ms ({m['sessions']} sessions of {m['tests']} tests)"
        )


if __name__ == "__main__":
    main()
