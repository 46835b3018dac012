"""Instructions per request, the mock beside its floors over loopback TCP: free of the noise.

    python bench/instructions.py [--requests 100] [--warmup 30] [--only NAME] [--servers ...]

Throughput on a shared machine moves with its neighbours: in one run of bench/run.py a
server's CPU time per request moved by up to 2x from one round to the next, so its ratios
cannot settle a line a few percent wide. The number of instructions a server executes to
answer a request does not move with the machine. The mock, the FlaskApp floor and the bare
ASGI app of bench/run.py are each started under valgrind's callgrind with its
instrumentation off (a start at a tenth of its speed, not a hundredth); each scenario of
bench/run.py is sent `--warmup` times over one keep-alive connection, then the
instrumentation is turned on (`callgrind_control -i on`), the counts zeroed, the scenario
sent `--requests` times, and the counts dumped: instructions of every thread of the server's
process, the kernel's work left out. The client is another process and is not counted. Two
counts of one server agree within 0.2%, two processes within about 1%.

The ratio reported, a reference's instructions over the mock's, is the mock's throughput
beside that reference were an instruction of either as fast: the FlaskApp floor is Connexion
and Flask as the mock runs them. Prism is left out: Node's compiled code under valgrind
counts 6.1 million instructions for a GET of job runs that it answers as fast as the mock
answers its 1.6 million. Copied into an older checkout, the script measures the mock of
then, on the same machine. Valgrind comes from Debian's packages (`apt-get install
valgrind`); not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import run  # bench/run.py: the scenarios, the servers' commands, a request

ROOT = run.ROOT
WAIT_S = 600  # a server under valgrind starts in tens of seconds on a slow machine


def valgrind(argv: list[str], out: Path) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",  # off until the scenario is warm: the start runs faster
        f"--callgrind-out-file={out}/callgrind.%p",
        "-q",
        *argv,
    ]


def commands(bodies_file: str) -> dict[str, list[str]]:
    """Each server's command, before its port."""
    # The mock as bench/run.py serves it (its request log on the null device: not written).
    found = {run.MOCK: [sys.executable, "-m", "mock_server", "serve", "--port"]}
    for name, (script, *options) in run.REFERENCES.items():
        if name == "asyncapp-floor":  # another stack than the mock's; bench/run.py has it
            continue
        found[name] = [sys.executable, str(ROOT / "bench" / script), *options, bodies_file]
    return found


def port_last(argv: list[str], port: int) -> list[str]:
    """The command with its port: floor.py and bare.py take it first, the mock last."""
    if argv[0] == sys.executable and argv[1].startswith(str(ROOT / "bench")):
        return [argv[0], argv[1], str(port), *argv[2:]]
    return [*argv, str(port)]


def control(pid: int, *options: str) -> None:
    subprocess.run(
        ["callgrind_control", *options, str(pid)], capture_output=True, check=True, timeout=120
    )


def counted(out: Path, pid: int, before: set[Path]) -> int:
    """The instructions of the dump `callgrind_control -d` just wrote."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for path in set(out.glob(f"callgrind.{pid}.*")) - before:
            found = re.search(r"^summary: (\d+)$", path.read_text(), re.MULTILINE)
            if found:
                return int(found.group(1))
        time.sleep(0.2)
    raise RuntimeError(f"no dump of process {pid}")


def measure(
    argv: list[str], case: run.Scenario, path: str, token: str, warmup: int, requests: int
) -> float:
    """Instructions per request of one server answering one scenario."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        port = run.free_port()
        process = subprocess.Popen(
            valgrind(port_last(argv, port), out),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        try:
            started = time.monotonic()
            while True:
                try:
                    status = run.request(port, case.method, path, token, case.body)[0]
                    break
                except OSError:
                    if time.monotonic() - started > WAIT_S or process.poll() is not None:
                        raise RuntimeError(f"{argv[:3]} did not start") from None
                    time.sleep(0.5)
            if status != 200:
                raise RuntimeError(f"{case.name}: {status} from {argv[:3]}")
            send = sender(port, case, path, token)
            for _ in range(warmup):
                send()
            control(process.pid, "-i", "on")
            control(process.pid, "-z")
            for _ in range(requests):
                send()
            before = set(out.glob(f"callgrind.{process.pid}.*"))
            control(process.pid, "-d")
            return counted(out, process.pid, before) / requests
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


def sender(port: int, case: run.Scenario, path: str, token: str) -> Callable[[], None]:
    """Sends the scenario once over one keep-alive connection; fails on any but a 200."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    headers = {"Authorization": f"Bearer {token}"}
    body = None
    if case.body is not None:
        body = json.dumps(case.body).encode()
        headers["Content-Type"] = "application/json"

    def send() -> None:
        connection.request(case.method, path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{case.name}: {response.status}")

    return send


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--only", action="append", default=[], help="a scenario's name start")
    names = [run.MOCK, *(n for n in run.REFERENCES if n != "asyncapp-floor")]
    parser.add_argument(
        "--servers", nargs="+", choices=names, default=names, help="those measured (all)"
    )
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: apt-get install valgrind")
    cases = [c for c in run.scenarios() if not args.only or c.name.startswith(tuple(args.only))]
    token = run.command_output("token")
    # The references answer the mock's own bodies, read from the mock as bench/run.py does.
    bodies = bodies_of(cases, token)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(bodies, handle)
    try:
        servers = {n: a for n, a in commands(handle.name).items() if n in args.servers}
        figures: dict[str, dict[str, float]] = {}
        for case in cases:
            figures[case.name] = {}
            for name, argv in servers.items():
                figures[case.name][name] = measure(
                    argv, case, case.path, token, args.warmup, args.requests
                )
                print(f"{case.name:30} {name:15} {figures[case.name][name]:>12,.0f}", flush=True)
    finally:
        os.unlink(handle.name)
    others = [name for name in servers if name != run.MOCK]
    if run.MOCK in servers and others:
        # A reference's instructions over the mock's: the mock's throughput beside it, were
        # an instruction of either as fast (see the module).
        print()
        print(f"{'scenario':30} {'mock instr/req':>15} " + "".join(f"{n:>16}" for n in others))
        for case in cases:
            mine = figures[case.name][run.MOCK]
            ratios = "".join(f"{figures[case.name][n] / mine:>15.3f}x" for n in others)
            print(f"{case.name:30} {mine:>15,.0f} {ratios}")
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


def bodies_of(cases: list[run.Scenario], token: str) -> dict[str, str]:
    port = run.free_port()
    process = run.Process([sys.executable, "-m", "mock_server", "serve", "--port", str(port)], port)
    try:
        run.wait_ready(port, cases[0].path, token)
        return {
            f"{c.method} {c.path}": run.request(port, c.method, c.path, token, c.body)[1].decode()
            for c in cases
        }
    finally:
        process.stop()


if __name__ == "__main__":
    main()
