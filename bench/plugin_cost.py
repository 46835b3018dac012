"""What the installed pytest plugin costs a project that never uses it, in rotating rounds.

    python bench/plugin_cost.py [--tests 300] [--rounds 10]

Writes a test module of `--tests` trivial tests to a temporary directory, then in each
round runs `pytest -q` on it twice, with the plugin loaded (as installing the package makes
every pytest run do) and with `-p no:platform_mock`, the order swapped from one round to
the next so that a busy spell of the machine falls on both. Prints each round's wall times
and the median of the per-round ratios (with / without): 1.0 is no cost.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(directory: Path, *options: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=directory,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        (directory / "test_plain.py").write_text(
            "".join(f"def test_{i}():\n    assert {i} == {i}\n" for i in range(args.tests))
        )
        ratios = []
        for round_ in range(args.rounds):
            order = [(), ("-p", "no:platform_mock")]
            if round_ % 2:
                order.reverse()
            times = {options: timed(directory, *options) for options in order}
            loaded, unloaded = times[()], times[("-p", "no:platform_mock")]
            ratios.append(loaded / unloaded)
            print(f"round {round_ + 1}: with {loaded:.2f} s, without {unloaded:.2f} s")
        print(f"median ratio with/without: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
