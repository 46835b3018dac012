"""The benchmark: the mock beside its floors, Prism and bare ASGI in rotating rounds; every target.

    python bench/run.py [--duration 10] [--rounds 3] [--warmup 1] [--out bench/results]
                        [--no-prism] [--skip start|resets|tokens|scale|stall ...]
    python bench/run.py --from-json bench/results/results.json  (the report again, no run)

Every server is started at once and left running: the mock, Prism 5 in static mode
(`prism mock -v error`, one process per `spec/` document) and three references answering
the mock's own pre-serialised bodies: a bare ASGI app (bench/bare.py) and a Connexion
FlaskApp and AsyncApp doing nothing else (bench/floor.py). The FlaskApp floor is the least an
operation costs on the mock's own stack: the throughput targets are ratios to it. The
servers are then driven in rounds (`--rounds`, at least 3): in each round every scenario runs
against every server with wrk (-t2 -c16 for throughput, -c1 for latency) over loopback, the
servers' order rotated from one round to the next, and each server's CPU time per request is
read from /proc (user + system, of its whole process tree) before and after each wrk run.
A busy spell of the machine thus falls on every server in turn; each ratio (mock/floor,
mock/Prism, ...) is taken within a round, between runs seconds apart, and the figure
reported is the median of the per-round ratios, not the ratio of the medians.

Each round also runs, in rotated order, what a pytest plugin user pays per test
(bench/test_cost.py's test: the world reset, a new client, five calls): with the plugin's
in-process client, over loopback TCP to the same mock served in a thread (the plugin's `url`),
and the five calls to Prism on a new client (Prism has no reset). After the rounds, each
unless `--skip` names it:
- start: the start figures beside their floors, with the servers stopped (bench/start.py):
  `--version`, a usage error, `serve`'s first answer (and Prism's), `run -- true`, a pytest
  session's first in-process test and the plugin unused, against the interpreter's start and
  the required stack's import, in rotating rounds (at least 5);
- resets: the `platform_mock` fixture's reset per test, in a pytest session, on the default
  world and on 100,000 runs (bench/plugin_reset.py);
- tokens: a PAT-authenticated GET of job runs at 200,000 tokens against 10, each world in a
  process of its own, in alternating rounds (bench/flat.py's `token_cost`);
- scale: 100,000 written-out runs served: load time, RSS, dump and load back (bench/scale.py);
- stall: a latency probe beside the admin API's dump, load, reset and re-seed of that world
  (bench/stall.py).

It prints a table and every target with met or not, and writes JSON (with every round's raw
figures), text and a PNG chart to `--out` with the date and the machine (cores, CPU model,
Python version). Setup is the benchmark's own: wrk comes from Debian's packages (installed
with apt-get when missing and run as root), Prism from the npm registry into bench/.prism.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# The servers and `platform-mock token` started here sign with one key, so that the tokens
# printed work on the servers (each server would otherwise draw its own).
os.environ.setdefault("PLATFORM_MOCK_SIGNING_KEY", secrets.token_hex(32))

ROOT = Path(__file__).resolve().parent.parent
# bench/ is not a package: its scripts import each other from its folder.
sys.path.insert(0, str(ROOT / "bench"))
PRISM_DIR = ROOT / "bench" / ".prism"
PRISM = PRISM_DIR / "node_modules" / ".bin" / "prism"
DEMO_RESPONSE = "resp_0000000000000000000000000000demo"
MOCK, PRISM_NAME, BARE, FLOOR = "platform-mock", "prism", "bare", "flaskapp-floor"
SERVERS = (MOCK, PRISM_NAME, FLOOR, "asyncapp-floor", BARE)
# All answer the mock's own bodies: bare is the ceiling of Python and uvicorn here, the
# floors the least an operation costs on Connexion's FlaskApp (the mock's stack) and on its
# AsyncApp (see each script's docstring).
REFERENCES = {
    BARE: ["bare.py"],
    FLOOR: ["floor.py"],
    "asyncapp-floor": ["floor.py", "--async"],
}
THROUGHPUT = {"connections": 16, "threads": 2}
SINGLE = {"connections": 1, "threads": 1}
IN_PROCESS, TCP = "in process", "tcp"  # the per-test kinds, with PRISM_NAME
HEAVY = ("start", "resets", "tokens", "scale", "stall")
BIG_RUNS = 100_000
MANY_TOKENS, FEW_TOKENS = 200_000, 10
# The targets, each a bound on a figure.
FLOOR_RPS, FLOOR_CPU = 0.9, 1.15  # x the FlaskApp floor's throughput, CPU per request
IN_PROCESS_X_TCP, IN_PROCESS_X_PRISM = 0.6, 0.7  # a test in process, x over TCP, x Prism
RESET_BIG_MS, RESET_DEFAULT_MS = 10.0, 0.3  # the plugin's reset, p50
TOKENS_X = 1.2  # a PAT request at MANY_TOKENS, x at FEW_TOKENS
LOAD_S, LOAD_MB = 2.0, 250.0  # 100k written-out runs: load time, peak RSS
# The start figures (bench/start.py), each a ratio to its floor measured in the same rounds.
START_TARGETS = (
    ("--version / interpreter", 4.0),
    ("usage error / interpreter", 4.0),
    ("serve first answer / stack import", 1.5),
    ("run -- true / stack import", 2.0),
    ("in-process test / (no plugin + stack import)", 1.2),
    ("unused plugin / interpreter", 1.0),
)
STALL_MS = 100.0  # no probe beside an admin operation on 100k runs slower than this


@dataclass
class Scenario:
    name: str
    method: str
    path: str  # on the mock
    prism_spec: str
    prism_path: str
    body: dict | None = None


def scenarios() -> list[Scenario]:
    sys.path.insert(0, str(ROOT))
    from mock_server import PlatformMock

    store = PlatformMock().store  # the same seed and fixtures as the served mock
    job = store.deployments.application_named("trainer").id
    secrets = list(store.secrets.group_named("llm-keys").secrets)
    runs = f"/api/svc/v1/jobs/{job}/runs?limit=20&status=FAILED&status=FINISHED"
    return [
        Scenario("GET job runs (20, 2 filters)", "GET", runs, "control-plane.yaml", runs),
        Scenario(
            "POST secrets/deployments",
            "POST",
            "/api/svc/v1/secrets/deployments",
            "control-plane.yaml",
            "/api/svc/v1/secrets/deployments",
            {"secretIds": secrets},
        ),
        Scenario(
            "GET model response",
            "GET",
            f"/gateway/responses/{DEMO_RESPONSE}",
            "gateway.yaml",
            f"/responses/{DEMO_RESPONSE}",
        ),
        Scenario(
            "GET-or-create token",
            "GET",
            "/api/svc/v1/personal-access-tokens/ci",
            "control-plane.yaml",
            "/api/svc/v1/personal-access-tokens/ci",
        ),
    ]


# -- setup ------------------------------------------------------------------------------------
def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, capture_output=True)
    found = shutil.which("wrk")
    if not found:
        sys.exit("bench: wrk is needed (apt-get install wrk)")
    return found


def ensure_prism() -> Path | None:
    if PRISM.exists():
        return PRISM
    if not shutil.which("npm"):
        print("bench: npm not found, Prism is left out", file=sys.stderr)
        return None
    result = subprocess.run(
        ["npm", "install", "--silent", "--prefix", str(PRISM_DIR), "@stoplight/prism-cli@5"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not PRISM.exists():
        print(f"bench: Prism could not be installed: {result.stderr[-500:]}", file=sys.stderr)
        return None
    return PRISM


def machine() -> dict:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        model = platform.processor() or model
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "arch": platform.machine(),
        "python": platform.python_version(),
    }


# -- servers ----------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(
    port: int, method: str, path: str, token: str, body: dict | None = None
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Authorization": f"Bearer {token}"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=payload, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


def wait_ready(
    port: int, path: str, token: str, method: str = "GET", body: dict | None = None
) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < 60:
        try:
            if request(port, method, path, token, body)[0] == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.005)
    raise RuntimeError(f"server on port {port} did not answer {path}")


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and of every process below it, from /proc: a
    server may answer from a child (an `env` or shell wrapper exec-ing node, a worker)."""
    stats: dict[int, tuple[int, float]] = {}  # pid: (parent, seconds)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                text = handle.read()
        except OSError:  # gone since the listing
            continue
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        fields = text[text.rindex(")") + 2 :].split()
        stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    total, tree = 0.0, {pid}
    grown = True
    while grown:
        below = {p for p, (parent, _) in stats.items() if parent in tree} - tree
        grown = bool(below)
        tree |= below
    for member in tree:
        total += stats.get(member, (0, 0.0))[1]
    return total


class Process:
    def __init__(self, argv: list[str], port: int):
        self.port = port
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
        )

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Server:
    """One benchmarked server: one process, or Prism's one per spec document."""

    def __init__(self, name: str, processes: dict[str, Process]):
        self.name = name
        self.processes = processes  # by spec document, or "" for a server of every path

    def target(self, case: Scenario) -> tuple[Process, str]:
        if "" in self.processes:
            return self.processes[""], case.path
        return self.processes[case.prism_spec], case.prism_path

    def stop(self) -> None:
        for process in self.processes.values():
            process.stop()


def command_output(*argv: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.strip()


def start_servers(
    cases: list[Scenario], prism: Path | None, token: str, results: dict
) -> dict[str, Server]:
    """Every server, started at once and kept running for the whole benchmark. The mock
    comes first: its cold start is measured alone, and it gives the references their
    bodies."""
    servers: dict[str, Server] = {}
    port = free_port()
    started = time.perf_counter()
    mock = Process([sys.executable, "-m", "mock_server", "serve", "--port", str(port)], port)
    servers[MOCK] = Server(MOCK, {"": mock})
    handle = None
    try:
        wait_ready(port, cases[0].path, token)
        results["cold_start_s"] = time.perf_counter() - started
        bodies = {
            f"{c.method} {c.path}": request(port, c.method, c.path, token, c.body)[1].decode()
            for c in cases
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(bodies, handle)
        for name, (script, *options) in REFERENCES.items():
            port = free_port()
            argv = [sys.executable, str(ROOT / "bench" / script), str(port), handle.name]
            servers[name] = Server(name, {"": Process([*argv, *options], port)})
        if prism is not None:
            processes = {}
            for spec in sorted({c.prism_spec for c in cases}):
                port = free_port()
                argv = [str(prism), "mock", "-h", "127.0.0.1", "-p", str(port), "-v", "error"]
                processes[spec] = Process([*argv, f"spec/{spec}"], port)
            servers[PRISM_NAME] = Server(PRISM_NAME, processes)
        for server in servers.values():
            for case in cases:
                process, path = server.target(case)
                wait_ready(process.port, path, token, case.method, case.body)
    except BaseException:
        for server in servers.values():
            server.stop()
        raise
    finally:
        if handle is not None:  # each reference has read its bodies once it answers
            os.unlink(handle.name)
    return {name: servers[name] for name in SERVERS if name in servers}


# -- load -------------------------------------------------------------------------------------
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def wrk(
    wrk_bin: str,
    process: Process,
    case: Scenario,
    path: str,
    token: str,
    duration: float,
    connections: int,
    threads: int,
) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "{case.method}"\n')
        script.write(f'wrk.headers["Authorization"] = "Bearer {token}"\n')
        if case.body is not None:
            script.write('wrk.headers["Content-Type"] = "application/json"\n')
            script.write(f"wrk.body = {json.dumps(json.dumps(case.body))}\n")
    cpu_before = process.cpu_seconds()
    try:
        out = subprocess.run(
            [
                wrk_bin,
                f"-t{threads}",
                f"-c{connections}",
                f"-d{duration}s",
                "--latency",
                "-s",
                script.name,
                f"http://127.0.0.1:{process.port}{path}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script.name)
    cpu = process.cpu_seconds() - cpu_before
    served = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    latency = {
        pct: float(value) * UNITS[unit]
        for pct, value, unit in re.findall(r"\s(50|99)%\s+([\d.]+)(us|ms|s)\b", out)
    }
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "rps": rps,
        "p50_ms": latency.get("50"),
        "p99_ms": latency.get("99"),
        "requests": served,
        "cpu_us_per_request": cpu / served * 1e6 if served else None,
        "non_2xx": int(errors.group(1)) if errors else 0,
        "socket_errors": sum(map(int, socket.groups())) if socket else 0,
    }


def rotated(names: list[str], round_number: int) -> list[str]:
    shift = round_number % len(names)
    return names[shift:] + names[:shift]


# -- per test ---------------------------------------------------------------------------------
class PerTest:
    """bench/test_cost.py's test three ways: in process and over TCP to a mock of this
    process (the plugin's two clients), and its five calls to Prism's control plane."""

    def __init__(self, prism: Server | None):
        import httpx
        import test_cost

        from mock_server import PlatformMock
        from mock_server.contract import documents as contract
        from mock_server.http.server import BackgroundServer
        from mock_server.pytest_plugin import ssl_context

        self.mock = PlatformMock()
        self.calls = test_cost.calls(self.mock)
        self.server = BackgroundServer(self.mock).start()
        self.kinds = test_cost.mock_kinds(self.mock, self.server)
        if prism is not None:
            spec = {contract.operations()[call.operation_id].document for call in self.calls}
            if len(spec) != 1:
                raise RuntimeError(f"the test's calls span {spec}: Prism serves each apart")
            process = prism.processes[Path(spec.pop()).name]
            context = ssl_context()
            self.kinds[PRISM_NAME] = test_cost.Kind(
                lambda: httpx.Client(verify=context),
                f"http://127.0.0.1:{process.port}",
                None,
                spec_paths=True,
            )
        self.per_test = test_cost.per_test

    def run(self, name: str, seconds: float) -> dict:
        return self.per_test(self.kinds[name], self.calls, seconds)

    def stop(self) -> None:
        self.server.stop()


# -- after the rounds -------------------------------------------------------------------------
def heavy(name: str, measure: Callable[[], dict]) -> dict:
    """One of the measures after the rounds, or why there is none."""
    print(f"bench: {name}", file=sys.stderr)
    try:
        return measure()
    except Exception as exc:  # the others still run; the report says why this one did not
        return {"not_measured": f"{type(exc).__name__}: {exc}"[:500]}


def measures(skip: set[str], rounds: int, duration: float, prism: Path | None) -> dict:
    import flat
    import plugin_reset
    import scale
    import stall
    import start

    found: dict[str, dict] = {}
    runs: dict[str, Callable[[], dict]] = {
        "start": lambda: start.measure(max(rounds, 5), prism)["medians"],
        "resets": lambda: plugin_reset.measure(200, BIG_RUNS),
        "tokens": lambda: flat.token_cost(
            MANY_TOKENS, FEW_TOKENS, rounds=max(rounds, 5), seconds=min(duration, 3)
        ),
        "scale": lambda: scale.measure(BIG_RUNS),
        "stall": lambda: stall.measure(BIG_RUNS),
    }
    for name in HEAVY:
        if name in skip:
            found[name] = {"not_measured": f"--skip {name}"}
        else:
            found[name] = heavy(name, runs[name])
    return found


# -- summary ----------------------------------------------------------------------------------
def median_of(values: list) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def per_round_ratio(rounds: list[dict], figure: Callable[[dict, str], Any], a: str, b: str):
    """The median over rounds of figure(round, a) / figure(round, b)."""
    ratios = []
    for measured in rounds:
        top, bottom = figure(measured, a), figure(measured, b)
        if top is not None and bottom:
            ratios.append(top / bottom)
    return statistics.median(ratios) if ratios else None


def summarise(results: dict, cases: list[Scenario], names: list[str]) -> None:
    """Medians over the rounds; each ratio is the median of the per-round ratios."""
    rounds = results["rounds"]
    throughput = []
    for case in cases:
        row: dict = {"scenario": case.name}
        for name in names:
            runs = [r["throughput"][case.name][name] for r in rounds]
            entry = {
                key: median_of([run[key] for run in runs])
                for key in ("rps", "p50_ms", "p99_ms", "cpu_us_per_request")
            }
            entry["non_2xx"] = sum(run["non_2xx"] for run in runs)
            entry["socket_errors"] = sum(run["socket_errors"] for run in runs)
            for reference in (FLOOR, BARE, PRISM_NAME):
                if reference in names:
                    for key, label in (("rps", "x"), ("cpu_us_per_request", "cpu_x")):
                        entry[f"{label}_{reference}"] = per_round_ratio(
                            rounds,
                            lambda r, s, key=key, case=case: r["throughput"][case.name][s][key],
                            name,
                            reference,
                        )
            row[name] = entry
        throughput.append(row)
    results["throughput"] = throughput
    single = {}
    for name in names:
        runs = [r["single_connection"][name] for r in rounds]
        single[name] = {
            "p50_ms": median_of([run["p50_ms"] for run in runs]),
            "cpu_us_per_request": median_of([run["cpu_us_per_request"] for run in runs]),
        }
        for reference in (BARE, FLOOR):
            single[name][f"x_{reference}"] = per_round_ratio(
                rounds, lambda r, s: r["single_connection"][s]["p50_ms"], name, reference
            )
    results["single_connection"] = single
    kinds = list(rounds[0]["per_test"])
    per_test: dict = {
        kind: {
            "per_test_ms": median_of([r["per_test"][kind]["per_test_ms"] for r in rounds]),
            "tests": sum(r["per_test"][kind]["tests"] for r in rounds),
            "not_2xx": sum(r["per_test"][kind]["not_2xx"] for r in rounds),
        }
        for kind in kinds
    }

    def test_ms(measured: dict, kind: str) -> float:
        return measured["per_test"][kind]["per_test_ms"]

    per_test["in_process_x_tcp"] = per_round_ratio(rounds, test_ms, IN_PROCESS, TCP)
    if PRISM_NAME in kinds:
        per_test["in_process_x_prism"] = per_round_ratio(rounds, test_ms, IN_PROCESS, PRISM_NAME)
        per_test["tcp_x_prism"] = per_round_ratio(rounds, test_ms, TCP, PRISM_NAME)
    results["per_test"] = per_test


def targets(results: dict) -> list[dict]:
    """Each target: what is measured, the bound, and met (None: not measured)."""
    rows: list[tuple[str, str, bool | None]] = []

    def add(
        target: str, value: float | None, bound: float, shown: str, why: str = "", *,
        at_least: bool = False,
    ) -> None:  # fmt: skip
        if value is None:
            rows.append((target, why or "not measured", None))
        else:
            met = value >= bound if at_least else value <= bound
            rows.append((target, shown.format(value), met))

    for row in results["throughput"]:
        mock = row[MOCK]
        add(f"{row['scenario']}: req/s >= {FLOOR_RPS}x FlaskApp floor", mock.get(f"x_{FLOOR}"),
            FLOOR_RPS, "{:.3f}x", at_least=True)  # fmt: skip
        add(f"{row['scenario']}: CPU/req <= {FLOOR_CPU}x FlaskApp floor",
            mock.get(f"cpu_x_{FLOOR}"), FLOOR_CPU, "{:.3f}x")  # fmt: skip
    per_test = results["per_test"]
    add(f"a test in process <= {IN_PROCESS_X_TCP}x over TCP", per_test["in_process_x_tcp"],
        IN_PROCESS_X_TCP, "{:.3f}x")  # fmt: skip
    add(f"a test in process <= {IN_PROCESS_X_PRISM}x Prism's 5 calls",
        per_test.get("in_process_x_prism"), IN_PROCESS_X_PRISM, "{:.3f}x", "no Prism")  # fmt: skip
    heavy = results["heavy"]
    started = heavy.get("start", {"not_measured": "an older run"})
    for figure, bound in START_TARGETS:
        add(f"start: {figure} <= {bound:g}x", started.get(figure), bound, "{:.2f}x")
    ahead = started.get("serve first answer / prism first answer")
    add("start: serve's first answer ahead of Prism's", ahead, 1.0, "{:.2f}x", "no Prism")
    resets = heavy["resets"]
    add(f"plugin reset, {BIG_RUNS // 1000}k runs, p50 <= {RESET_BIG_MS:g} ms",
        resets.get("big", {}).get("p50_ms"), RESET_BIG_MS, "{:.2f} ms")  # fmt: skip
    add(f"plugin reset, default world, p50 <= {RESET_DEFAULT_MS} ms",
        resets.get("default", {}).get("p50_ms"), RESET_DEFAULT_MS, "{:.3f} ms")  # fmt: skip
    add(f"PAT request, {MANY_TOKENS // 1000}k tokens <= {TOKENS_X}x {FEW_TOKENS} tokens",
        heavy["tokens"].get("ratio"), TOKENS_X, "{:.3f}x")  # fmt: skip
    scaled = heavy["scale"]
    add(f"{BIG_RUNS // 1000}k written-out runs: load < {LOAD_S:g} s", scaled.get("load_s"),
        LOAD_S, "{:.2f} s" + (f" (CPU {scaled['load_cpu_s']:.2f} s)" if "load_cpu_s" in scaled
        else ""))  # fmt: skip
    add(f"{BIG_RUNS // 1000}k written-out runs: peak RSS < {LOAD_MB:g} MB",
        scaled.get("load_rss_mb"), LOAD_MB, "{:.0f} MB")  # fmt: skip
    stalls = heavy["stall"]
    # The target is the event loop's (the health probe): a read of the world also waits while
    # a change of the world holds it (a load applied, a world rebuilt), which is shown beside.
    for operation in ("dump", "load", "reset", "reseed"):
        loop, shown = None, ""
        if "not_measured" not in stalls:
            loop, lock = (stalls[probe][operation]["probe_max_ms"] for probe in ("health", "read"))
            shown = f"{loop:.0f} ms (a world read: {lock:.0f} ms)"
        add(f"event loop beside {BIG_RUNS // 1000}k {operation}: no stall > {STALL_MS:g} ms", loop,
            STALL_MS, shown)  # fmt: skip
    return [{"target": t, "measured": m, "met": ok} for t, m, ok in rows]


def fmt(value: float | None, form: str) -> str:
    return format(value, form) if value is not None else "-"


def report(results: dict, names: list[str], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    about = results["machine"]
    lines = [
        f"platform-mock benchmark, {results['date']}, {about['cores']} cores {about['cpu']} "
        f"({about['arch']}), Python {about['python']}",
        f"{results['settings']['rounds']} rounds of {results['settings']['duration_s']} s "
        "per wrk run, servers running at once, order rotated each round; ratios are medians "
        "of per-round ratios",
        "",
        f"{'scenario':30} {'server':15} {'req/s':>8} {'x floor':>7} {'x bare':>7} "
        f"{'x prism':>8} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10} {'x floor':>7}",
    ]
    for row in results["throughput"]:
        for server in names:
            m = row[server]
            lines.append(
                f"{row['scenario']:30} {server:15} {fmt(m['rps'], '8.0f')} "
                f"{fmt(m.get(f'x_{FLOOR}'), '7.2f')} {fmt(m.get('x_bare'), '7.3f')} "
                f"{fmt(m.get('x_prism'), '8.2f')} "
                f"{fmt(m['p50_ms'], '7.2f')} {fmt(m['p99_ms'], '7.2f')} "
                f"{fmt(m['cpu_us_per_request'], '10.0f')} "
                f"{fmt(m.get(f'cpu_x_{FLOOR}'), '7.2f')}"
                + (f"  ({m['non_2xx']} non-2xx)" if m["non_2xx"] else "")
                + (f"  ({m['socket_errors']} socket errors)" if m["socket_errors"] else "")
            )
    single = results["single_connection"]
    lines += [
        "",
        f"{'single connection (wrk -c1)':30} {'p50 ms':>8} {'x bare':>7} {'x floor':>7} "
        f"{'CPU us/req':>10}",
    ]
    lines += [
        f"{server:30} {fmt(single[server]['p50_ms'], '8.3f')} "
        f"{fmt(single[server]['x_bare'], '7.1f')} {fmt(single[server][f'x_{FLOOR}'], '7.2f')} "
        f"{fmt(single[server]['cpu_us_per_request'], '10.0f')}"
        for server in names
    ]
    per_test = results["per_test"]
    lines += ["", "a test (reset, new client, 5 calls; Prism: new client, 5 calls), median ms"]
    for kind in (IN_PROCESS, TCP, PRISM_NAME):
        if kind in per_test:
            m = per_test[kind]
            lines.append(
                f"  {kind:11} {m['per_test_ms']:6.2f}  ({m['tests']} tests"
                + (f", {m['not_2xx']} answers not 2xx)" if m["not_2xx"] else ")")
            )
    lines.append(f"cold start of the mock to its first 200: {results['cold_start_s']:.2f} s")
    heavy = results["heavy"]
    if "not_measured" not in heavy["resets"]:
        lines.append("the platform_mock fixture's reset, p50 ms (its CPU), p90, max:")
        for name in ("default", "big"):
            m = heavy["resets"][name]
            lines.append(
                f"  {name:8} {m['p50_ms']:7.3f} ({m['cpu_p50_ms']:.3f}) {m['p90_ms']:7.3f} "
                f"{m['max_ms']:7.3f}  ({m['sessions']} sessions of {m['tests']} tests)"
            )
    tokens = heavy["tokens"]
    if "not_measured" not in tokens:
        lines.append(
            f"{tokens['operation']} with a PAT, CPU us per request: {tokens['few_us']:.0f} at "
            f"{tokens['few']:,} tokens, {tokens['many_us']:.0f} at {tokens['many']:,}"
        )
    if "not_measured" not in heavy.get("start", {"not_measured": ""}):
        import start

        lines += ["", "the start, beside its floors (bench/start.py), medians of rotating rounds"]
        lines += start.table(heavy["start"]).splitlines()
    for name in HEAVY:
        figures = heavy.get(name, {"not_measured": "an older run"})
        if "not_measured" in figures:
            lines.append(f"{name}: not measured ({figures['not_measured']})")
    if "not_measured" not in heavy["stall"]:
        import stall

        lines += ["", "latency probe beside the admin API (bench/stall.py)"]
        lines += stall.table(heavy["stall"]).splitlines()
    if "not_measured" not in heavy["scale"]:
        lines += ["", f"{BIG_RUNS:,}-run world (bench/scale.py): {json.dumps(heavy['scale'])}"]
    lines += ["", f"{'target':60} {'measured':>20}  met"]
    for target in results["targets"]:
        met = {True: "yes", False: "NO", None: "-"}[target["met"]]
        lines.append(f"{target['target']:60} {target['measured']:>20}  {met}")
    text = "\n".join(lines)
    print(text)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "results.txt").write_text(text + "\n")
    if chart(results, names, out / "results.png"):
        print(f"\nwritten: {out / 'results.json'}, {out / 'results.txt'}, {out / 'results.png'}")


def chart(results: dict, names: list[str], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "bench: matplotlib not installed, no chart (pip install -e '.[bench]')", file=sys.stderr
        )
        return False
    scenarios_shown = [row["scenario"] for row in results["throughput"]]
    fig, axes = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    width = 0.8 / len(names)
    for panel, key, label in (
        (axes[0], "rps", "requests/s (wrk -t2 -c16, median, log scale)"),
        (axes[1], "cpu_us_per_request", "server CPU us per request (median, log scale)"),
    ):
        for i, server in enumerate(names):
            values = [row[server][key] or 0 for row in results["throughput"]]
            panel.bar(
                [x + i * width for x in range(len(scenarios_shown))], values, width, label=server
            )
        panel.set_yscale("log")
        panel.set_ylabel(label, fontsize=8)
    axes[1].set_xticks(
        [x + width * (len(names) - 1) / 2 for x in range(len(scenarios_shown))],
        scenarios_shown,
        fontsize=8,
    )
    about = results["machine"]
    axes[0].set_title(
        f"platform-mock benchmark, {results['date']}, {about['cores']} cores {about['cpu']}, "
        f"Python {about['python']}, {results['settings']['rounds']} rounds",
        fontsize=9,
    )
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# -- main -------------------------------------------------------------------------------------
def one_round(
    wrk_bin: str,
    servers: dict[str, Server],
    tests: PerTest,
    order: list[str],
    cases: list[Scenario],
    token: str,
    duration: int,
) -> dict:
    """Every scenario against every server, in this round's order: throughput scenario by
    scenario (so the runs compared are seconds apart), then single-connection latency, then
    the per-test kinds."""
    measured: dict = {"order": order, "throughput": {}, "single_connection": {}, "per_test": {}}
    for case in cases:
        measured["throughput"][case.name] = {}
        for name in order:
            process, path = servers[name].target(case)
            measured["throughput"][case.name][name] = wrk(
                wrk_bin, process, case, path, token, duration, **THROUGHPUT
            )
    for name in order:
        process, path = servers[name].target(cases[0])
        measured["single_connection"][name] = wrk(
            wrk_bin, process, cases[0], path, token, duration, **SINGLE
        )
    kinds = list(tests.kinds)
    for kind in rotated(kinds, order.index(MOCK)):
        measured["per_test"][kind] = tests.run(kind, duration)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, at least 3")
    parser.add_argument(
        "--warmup", type=int, default=1, help="seconds of unrecorded load per server and scenario"
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--no-prism", action="store_true")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=HEAVY,
        help="leave out one of the measures after the rounds (repeatable); its targets then "
        "read 'not measured'",
    )
    parser.add_argument(
        "--from-json",
        metavar="FILE",
        help="measure nothing: write the report of an earlier run's results.json again",
    )
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
        first = results["rounds"][0]["throughput"]
        names = [name for name in SERVERS if name in next(iter(first.values()))]
        summarise(results, scenarios(), names)
        results["targets"] = targets(results)
        report(results, names, Path(args.out))
        return
    if args.rounds < 3:
        parser.error("--rounds: at least 3, so that one busy round cannot decide a median")
    wrk_bin = ensure_wrk()
    prism = None if args.no_prism else ensure_prism()
    token = command_output("token")
    cases = scenarios()
    now = datetime.now(UTC)
    results: dict = {
        "date": now.strftime("%Y-%m-%d"),
        "started": now.isoformat(timespec="seconds"),
        "machine": machine(),
        "settings": {
            "rounds": args.rounds,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "throughput": THROUGHPUT,
            "single_connection": SINGLE,
            "skipped": sorted(set(args.skip)),
        },
        "rounds": [],
    }
    servers = start_servers(cases, prism, token, results)
    names = list(servers)
    tests = None
    try:
        tests = PerTest(servers.get(PRISM_NAME))
        results["settings"]["test_calls"] = [call.operation_id for call in tests.calls]
        if args.warmup:
            for server in servers.values():
                for case in cases:
                    process, path = server.target(case)
                    wrk(wrk_bin, process, case, path, token, args.warmup, **THROUGHPUT)
            for kind in tests.kinds:
                tests.run(kind, args.warmup)
        for round_number in range(args.rounds):
            order = rotated(names, round_number)
            print(
                f"bench: round {round_number + 1}/{args.rounds}, order {', '.join(order)}",
                file=sys.stderr,
            )
            results["rounds"].append(
                one_round(wrk_bin, servers, tests, order, cases, token, args.duration)
            )
    finally:
        if tests is not None:
            tests.stop()
        for server in servers.values():
            server.stop()
    results["heavy"] = measures(set(args.skip), args.rounds, args.duration, prism)
    summarise(results, cases, names)
    results["targets"] = targets(results)
    report(results, names, Path(args.out))


if __name__ == "__main__":
    main()
