"""What the `platform_mock` fixture's reset costs each test: on the default world and on 100k runs.

Writes a test module of `--tests` tests to a temporary directory, each asking for
`platform_mock` and making one change to the world through its in-process client (a
personal access token created), so that every reset has something to undo. It runs pytest
on it (the installed plugin, in process, as a user's session runs it) twice: on the default
world, and with `--platform-mock-fixtures` of `bench/scale.py`'s 100,000-run world. A
conftest wraps the fixture's setup (pytest's `pytest_fixture_setup` hook) and records how
long it took: the plugin's whole reset path (the marker read, the world restored, the
journal and the faults cleared, the test named), not pytest's own work around it. The
first test's figure is reported apart; the others give the median, p90 and max.

    python bench/plugin_reset.py [--tests 200] [--runs 100000]

`measure(tests, runs)` returns the numbers.
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
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        if fixturedef.argname == "platform_mock":
            TIMES.append(time.perf_counter() - started)


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
    times = [value * 1000 for value in json.loads(out.read_text())]
    if len(times) != tests:
        raise RuntimeError(f"{len(times)} resets recorded of {tests} tests")
    rest = sorted(times[1:])
    return {
        "tests": tests,
        "first_ms": times[0],
        "p50_ms": statistics.median(rest),
        "p90_ms": rest[int(len(rest) * 0.9)],
        "max_ms": rest[-1],
    }


def measure(tests: int = 200, runs: int = 100_000) -> dict[str, Any]:
    """The fixture's setup time per test, on the default world and on `runs` runs."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "test_resets.py").write_text(TESTS.format(tests=tests))
        fixture = folder / "runs.yaml"
        scale.write_fixture(fixture, runs)
        big = _session(folder, tests, "--platform-mock-fixtures", str(fixture), "test_resets.py")
        return {"default": _session(folder, tests, "test_resets.py"), "big": {"runs": runs, **big}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=100_000)
    args = parser.parse_args()
    found = measure(args.tests, args.runs)
    for name, label in (("default", "default world"), ("big", f"{args.runs:,} runs")):
        m = found[name]
        print(
            f"{label:>14}: reset p50 {m['p50_ms']:.3f} ms, p90 {m['p90_ms']:.3f}, "
            f"max {m['max_ms']:.3f}; the first test's {m['first_ms']:.3f} ms ({m['tests']} tests)"
        )


if __name__ == "__main__":
    main()
