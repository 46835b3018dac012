"""The start figures: each command a user waits for at start, beside its floors, in rotating rounds.

    python bench/start.py [--rounds 7] [--json FILE]

Each figure is a whole process timed from its start to its end (wall clock), or for `serve`
to its first HTTP answer:
- floors: the interpreter's start (`python -c pass`) and the import of the required stack
  (connexion, flask, uvicorn, jsonschema_rs, faker, yaml, jwt, orjson) in one process;
- the commands: `platform-mock --version`, a usage error (`serve --prot 9000`), `serve`'s
  first answer (a GET of job runs, polled every 2 ms from the start), `run --quiet -- true`;
- the pytest plugin, in sessions that load no other plugin (PYTEST_DISABLE_PLUGIN_AUTOLOAD,
  the plugin named with `-p`): one test using the `platform_mock` fixture against the same
  session with a plain test, and against a session without the plugin plus the stack's
  import (its floor); a plain test with the plugin loaded against the same without it (what
  the plugin costs a session that never asks for it).

Each figure is read as wall time and as CPU time (user + system, of the process and those it
waited for; for a server, its own until its first answer): on a machine shared with other
work the CPU ratios move far less than the wall ones. Every round runs each process once,
the order rotated from one round to the next, so that a busy spell of the machine falls on
each in turn; a ratio is the median of the per-round ratios (each taken between runs seconds
apart), a time the median of the rounds. Run with the project's environment installed
(`pip install -e '.[test]'`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STACK = "connexion, flask, uvicorn, jsonschema_rs, faker, yaml, jwt, orjson"
COMMAND = [sys.executable, "-m", "mock_server"]
PLAIN_TEST = "def test_plain():\n    assert 1 + 1 == 2\n"
JOB = "application-0123456789abcdef"  # not in the default world: a 404
MOCK_TEST = (
    "def test_in_process(platform_mock):\n"
    "    with platform_mock.client() as api:\n"
    f"        assert api.get('/api/svc/v1/jobs/{JOB}/runs').status_code == 404\n"
)
PLUGIN = ("-p", "mock_server.pytest_plugin")
# The environment of every process: the user's, less what would change what the mock loads,
# and less PYTHONDONTWRITEBYTECODE: a user's interpreter keeps the bytecode it compiles, and
# without it every start compiles the mock's modules again (a CI image may set it: the
# figures then measured the compiler, 3.74x the interpreter for a usage error, not 2.8x).
ENVIRONMENT = {
    key: value
    for key, value in os.environ.items()
    if not key.startswith(("PLATFORM_MOCK_", "PYTEST_")) and key != "PYTHONDONTWRITEBYTECODE"
}


Timing = tuple[float, float]  # wall seconds, CPU seconds (user + system)


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Timing:
    """Wall and CPU seconds of a process run to its end (its CPU with that of every process it
    waited for)."""
    cpu, started = children_cpu(), time.perf_counter()
    subprocess.run(
        argv,
        cwd=cwd,
        env=ENVIRONMENT if env is None else env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started, children_cpu() - cpu


def process_cpu(pid: int) -> float:
    """CPU seconds a running process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def first_answer(argv: list[str], limit: float = 60.0) -> Timing:
    """Seconds from the start of the server `argv` (with `{port}` for its port) to its first
    HTTP answer (any status) to a GET of job runs, and the CPU the server used until then."""
    port = free_port()
    request = (
        f"GET /api/svc/v1/jobs/{JOB}/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    server = subprocess.Popen(
        [part.format(port=port) for part in argv],
        env=ENVIRONMENT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.perf_counter() - started < limit:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=limit) as connection:
                    connection.sendall(request)
                    if connection.recv(12).startswith(b"HTTP/1."):
                        return time.perf_counter() - started, process_cpu(server.pid)
            except OSError:
                time.sleep(0.002)
        raise RuntimeError(f"serve gave no answer within {limit} s")
    finally:
        server.terminate()
        server.wait(timeout=limit)


def pytest_session(directory: Path, *options: str) -> Callable[[], Timing]:
    """A pytest session of `directory`'s tests, with no plugin but those `options` name (the
    other plugins installed beside the mock are not the mock's cost)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options]
    environment = {**ENVIRONMENT, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    return lambda: timed([*argv, "--rootdir", str(directory)], directory, environment)


def figures(work: Path, prism: Path | None) -> dict[str, Callable[[], Timing]]:
    plain, uses = work / "plain", work / "uses"
    for folder, text in ((plain, PLAIN_TEST), (uses, MOCK_TEST)):
        folder.mkdir()
        (folder / "test_one.py").write_text(text)
    serve = [*COMMAND, "serve", "--quiet", "--port", "{port}"]
    found = {
        "interpreter": lambda: timed([sys.executable, "-c", "pass"]),
        "stack import": lambda: timed([sys.executable, "-c", f"import {STACK}"]),
        "--version": lambda: timed([*COMMAND, "--version"]),
        "usage error": lambda: timed([*COMMAND, "serve", "--prot", "9000"]),
        "serve first answer": lambda: first_answer(serve),
        "run -- true": lambda: timed([*COMMAND, "run", "--quiet", "--", "true"]),
        "pytest, plain test": pytest_session(plain, *PLUGIN),
        "pytest, in-process test": pytest_session(uses, *PLUGIN),
        "pytest, no plugin": pytest_session(plain),
    }
    if prism is not None:  # Prism on the control plane's document, to its first answer
        document = str(ROOT / "spec" / "control-plane.yaml")
        found["prism first answer"] = lambda: first_answer(
            [str(prism), "mock", "-h", "127.0.0.1", "-p", "{port}", "-v", "error", document]
        )
    return found


# Each command beside its floor.
RATIOS: list[tuple[str, str]] = [
    ("--version", "interpreter"),
    ("usage error", "interpreter"),
    ("serve first answer", "stack import"),
    ("run -- true", "stack import"),
]


def derived(times: dict[str, float]) -> dict[str, float]:
    """One round's ratios: each command to its floor; the first in-process test's cost over
    the plain session to the stack's import; the unused plugin's cost to the interpreter's
    start."""
    out = {f"{a} / {b}": times[a] / times[b] for a, b in RATIOS}
    if "prism first answer" in times:
        out["serve first answer / prism first answer"] = (
            times["serve first answer"] / times["prism first answer"]
        )
    first_test = times["pytest, in-process test"] - times["pytest, plain test"]
    out["in-process test - plain test (s)"] = first_test
    in_process, plain = times["pytest, in-process test"], times["pytest, plain test"]
    out["in-process test / plain test"] = in_process / plain
    out["(in-process test - plain test) / stack import"] = first_test / times["stack import"]
    # The least such a session can cost: a plain one that also imports the stack.
    floor = times["pytest, no plugin"] + times["stack import"] - times["interpreter"]
    out["in-process test / (no plugin + stack import)"] = in_process / floor
    unused = times["pytest, plain test"] - times["pytest, no plugin"]
    out["unused plugin (s)"] = unused
    out["unused plugin / interpreter"] = unused / times["interpreter"]
    return out


def measure(rounds: int, prism: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as temporary:
        runs = figures(Path(temporary), prism)
        names = list(runs)
        for name in names:  # one warm-up of each: the page cache, .pyc files
            runs[name]()
        per_round: list[dict[str, float]] = []
        for number in range(rounds):
            shift = number % len(names)
            order = names[shift:] + names[:shift]
            timings = {name: runs[name]() for name in order}
            times = {name: wall for name, (wall, _) in timings.items()}
            cpus = {name: cpu for name, (_, cpu) in timings.items()}
            per_round.append(
                {
                    **times,
                    **derived(times),
                    **{f"CPU {name}": value for name, value in {**cpus, **derived(cpus)}.items()},
                }
            )
            print(f"round {number + 1}/{rounds} done", file=sys.stderr)
    medians = {key: statistics.median(r[key] for r in per_round) for key in per_round[0]}
    return {"rounds": per_round, "medians": medians}


def table(medians: dict[str, float]) -> str:
    lines = []
    for key, value in medians.items():
        if "/" in key:
            lines.append(f"{key:<48} {value:8.2f}x")
        else:
            lines.append(f"{key:<48} {value * 1000:8.0f} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="write every round's figures here")
    parser.add_argument("--prism", type=Path, help="Prism's command, to time its first answer")
    args = parser.parse_args()
    results = measure(args.rounds, args.prism)
    print(table(results["medians"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
