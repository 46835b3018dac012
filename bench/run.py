"""The benchmark: the mock beside Prism and three references, all running at once, in rounds.

    python bench/run.py [--duration 10] [--rounds 3] [--warmup 1] [--out bench/results]
                        [--no-prism] [--scale]

Every server is started at once and left running: the mock, Prism 5 in static mode
(`prism mock -v error`, one process per `spec/` document) and three references answering
the mock's own pre-serialised bodies: a bare ASGI app (bench/bare.py) and a Connexion
FlaskApp and AsyncApp doing nothing else (bench/floor.py). They are then driven in rounds
(`--rounds`, at least 3): in each round every scenario runs against every server with wrk
(-t2 -c16 for throughput, -c1 for latency) over loopback, the servers' order rotated from
one round to the next. A busy spell of the machine thus falls on every server in turn, and
each ratio (mock/Prism, mock/bare, ...) is taken within a round, between runs seconds apart;
the figure reported is the median of the per-round ratios, not the ratio of the medians.

Besides requests/s and latency, it measures:
- each server's CPU time per request (user + system, read from /proc before and after each
  wrk run, divided by the requests served), in microseconds;
- what a pytest plugin user pays per test: a new client (sharing the plugin's SSL
  context, as `platform_mock.client()` builds it), `POST /__admin/reset` and five calls of
  the platform API on it, beside the same five calls to Prism on one client (Prism has no
  reset), in wall time per test (median) and server CPU time per test;
- with `--scale`, the 100,000-run world (`bench/scale.py`'s `measure`, in a process of its
  own), when that module is present; otherwise its targets read "not measured".

Before the first round each server gets `--warmup` seconds of unrecorded load per scenario.
It prints a table and every target with met or not (each scenario at least 1.0x Prism,
single-connection p50 at most 4x bare, a test at most Prism's five calls, the 100k-run
world's bounds), and writes JSON (with every round's raw figures), text and a PNG chart to
`--out` with the date and the machine (cores, CPU model, Python version). Setup is the
benchmark's own: wrk comes from Debian's packages (installed with apt-get when missing and
run as root), Prism from the npm registry into bench/.prism. Not part of the test suite.
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# The servers and `platform-mock token` started here sign with one key, so that the tokens
# printed work on the servers (each server would otherwise draw its own).
os.environ.setdefault("PLATFORM_MOCK_SIGNING_KEY", secrets.token_hex(32))

ROOT = Path(__file__).resolve().parent.parent
PRISM_DIR = ROOT / "bench" / ".prism"
PRISM = PRISM_DIR / "node_modules" / ".bin" / "prism"
SCALE = ROOT / "bench" / "scale.py"
DEMO_RESPONSE = "resp_0000000000000000000000000000demo"
MOCK, PRISM_NAME, BARE = "platform-mock", "prism", "bare"
SERVERS = (MOCK, PRISM_NAME, "flaskapp-floor", "asyncapp-floor", BARE)
# All answer the mock's own bodies: bare is the ceiling of Python and uvicorn here, the
# floors the least an operation costs on Connexion's FlaskApp (the mock's stack) and on its
# AsyncApp (see each script's docstring).
REFERENCES = {
    BARE: ["bare.py"],
    "flaskapp-floor": ["floor.py"],
    "asyncapp-floor": ["floor.py", "--async"],
}
THROUGHPUT = {"connections": 16, "threads": 2}
SINGLE = {"connections": 1, "threads": 1}
# The five calls of a typical test, by index into scenarios(): it reads the runs, lists
# the deployments, reads a model response, gets its token and reads the runs again.
TEST_CALLS = (0, 1, 2, 3, 0)
SCALE_RUNS = 100_000
SCALE_TARGETS = (  # key of scale.measure()'s result, target, bound, shown as
    ("load_s", "100k runs: world loads < 3 s", 3.0, "{:.2f} s"),
    ("load_rss_mb", "100k runs: resident memory once loaded < 300 MB", 300.0, "{:.0f} MB"),
    ("reset_p50_ms", "100k runs: reset < 50 ms p50", 50.0, "{:.1f} ms"),
    ("page_p50_ms", "100k runs: filtered sorted page < 20 ms p50", 20.0, "{:.1f} ms"),
)


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
def mock_tests(
    process: Process, cases: list[Scenario], token: str, admin_token: str, duration: float
) -> dict:
    """Tests as the pytest plugin's user runs them, for `duration` seconds: each builds
    its client as `platform_mock.client()` does, resets the world and makes five calls."""
    import httpx

    from mock_server.pytest_plugin import ssl_context

    base = f"http://127.0.0.1:{process.port}"
    user = {"Authorization": f"Bearer {token}"}
    admin = {"Authorization": f"Bearer {admin_token}"}
    ssl_context()  # made once per session by the plugin, not once per test
    tests, clients, failures = [], [], 0
    cpu_before = process.cpu_seconds()
    end = time.perf_counter() + duration
    while time.perf_counter() < end:
        started = time.perf_counter()
        client = httpx.Client(base_url=base, headers=user, verify=ssl_context())
        built = time.perf_counter()
        with client:
            statuses = [client.post("/__admin/reset", headers=admin).status_code]
            for index in TEST_CALLS:
                case = cases[index]
                statuses.append(client.request(case.method, case.path, json=case.body).status_code)
        tests.append((time.perf_counter() - started) * 1000)
        clients.append((built - started) * 1000)
        failures += sum(status != 200 for status in statuses)
    return {
        "tests": len(tests),
        "per_test_ms": statistics.median(tests),
        "client_ms": statistics.median(clients),
        "server_cpu_ms_per_test": (process.cpu_seconds() - cpu_before) * 1000 / len(tests),
        "non_200": failures,
    }


def prism_tests(server: Server, cases: list[Scenario], token: str, duration: float) -> dict:
    """The same five calls to Prism, for `duration` seconds, all on one client."""
    import httpx

    from mock_server.pytest_plugin import ssl_context

    times, failures = [], 0
    headers = {"Authorization": f"Bearer {token}"}
    processes = list(server.processes.values())
    cpu_before = sum(process.cpu_seconds() for process in processes)
    with httpx.Client(headers=headers, verify=ssl_context()) as client:
        end = time.perf_counter() + duration
        while time.perf_counter() < end:
            started = time.perf_counter()
            for index in TEST_CALLS:
                process, path = server.target(cases[index])
                url = f"http://127.0.0.1:{process.port}{path}"
                response = client.request(cases[index].method, url, json=cases[index].body)
                failures += response.status_code != 200
            times.append((time.perf_counter() - started) * 1000)
    cpu = sum(process.cpu_seconds() for process in processes) - cpu_before
    return {
        "tests": len(times),
        "per_test_ms": statistics.median(times),
        "server_cpu_ms_per_test": cpu * 1000 / len(times),
        "non_200": failures,
    }


# -- the 100k-run world -----------------------------------------------------------------------
SCALE_CALL = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("scale", sys.argv[1])
scale = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scale)
print(json.dumps(scale.measure(int(sys.argv[2]))))
"""


def scale(enabled: bool) -> dict:
    """`bench/scale.py`'s figures, measured in a process of their own so that the
    benchmark's memory does not count, or why there are none."""
    if not enabled:
        return {"not_measured": "--scale not given"}
    if not SCALE.exists():
        return {"not_measured": "bench/scale.py is absent"}
    result = subprocess.run(
        [sys.executable, "-c", SCALE_CALL, str(SCALE), str(SCALE_RUNS)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return {"not_measured": f"bench/scale.py failed: {reason}"}
    return json.loads(result.stdout.strip().splitlines()[-1])


# -- summary ----------------------------------------------------------------------------------
def median_of(values: list) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


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
            for reference in (BARE, PRISM_NAME):
                if reference in names:
                    entry[f"x_{reference}"] = median_of(
                        [
                            r["throughput"][case.name][name]["rps"]
                            / r["throughput"][case.name][reference]["rps"]
                            for r in rounds
                        ]
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
            "x_bare": median_of(
                [
                    r["single_connection"][name]["p50_ms"] / r["single_connection"][BARE]["p50_ms"]
                    for r in rounds
                ]
            ),
        }
    results["single_connection"] = single
    per_test: dict = {}
    for name in (MOCK, PRISM_NAME):
        runs = [r["per_test"][name] for r in rounds if name in r["per_test"]]
        if runs:
            per_test[name] = {
                key: median_of([run.get(key) for run in runs])
                for key in ("per_test_ms", "client_ms", "server_cpu_ms_per_test")
            }
            per_test[name]["non_200"] = sum(run["non_200"] for run in runs)
    if PRISM_NAME in per_test:
        per_test["x_prism"] = median_of(
            [
                r["per_test"][MOCK]["per_test_ms"] / r["per_test"][PRISM_NAME]["per_test_ms"]
                for r in rounds
            ]
        )
    results["per_test"] = per_test


def ratio_text(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "no Prism"


def targets(results: dict, cases: list[Scenario]) -> list[dict]:
    rows = []
    for index, (case, row) in enumerate(zip(cases, results["throughput"], strict=True)):
        vs_prism = row[MOCK].get(f"x_{PRISM_NAME}")
        what = "Prism static" if index == 0 else "Prism"
        rows.append(
            (
                f"{case.name} >= 1.0x {what}",
                ratio_text(vs_prism),
                vs_prism is not None and vs_prism >= 1,
            )
        )
    p50 = results["single_connection"][MOCK]["x_bare"]
    rows.append(("single-connection p50 <= 4x bare", f"{p50:.1f}x", p50 <= 4))
    per_test = results["per_test"]
    vs_prism = per_test.get("x_prism")
    rows.append(
        (
            "per test (client + reset + 5 calls) <= Prism's 5 calls",
            ratio_text(vs_prism),
            vs_prism is not None and vs_prism <= 1,
        )
    )
    figures = results["scale"]
    for key, target, bound, shown in SCALE_TARGETS:
        value = figures.get(key)
        if value is None:
            rows.append((target, "not measured", None))
        else:
            rows.append((target, shown.format(value), value < bound))
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
        f"{'scenario':30} {'server':15} {'req/s':>8} {'x bare':>7} {'x prism':>8} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}",
    ]
    for row in results["throughput"]:
        for server in names:
            m = row[server]
            lines.append(
                f"{row['scenario']:30} {server:15} {fmt(m['rps'], '8.0f')} "
                f"{fmt(m.get('x_bare'), '7.3f')} {fmt(m.get('x_prism'), '8.2f')} "
                f"{fmt(m['p50_ms'], '7.2f')} {fmt(m['p99_ms'], '7.2f')} "
                f"{fmt(m['cpu_us_per_request'], '10.0f')}"
                + (f"  ({m['non_2xx']} non-2xx)" if m["non_2xx"] else "")
                + (f"  ({m['socket_errors']} socket errors)" if m["socket_errors"] else "")
            )
    single = results["single_connection"]
    lines += [
        "",
        f"{'single connection (wrk -c1)':30} {'p50 ms':>8} {'x bare':>7} {'CPU us/req':>10}",
    ]
    lines += [
        f"{server:30} {fmt(single[server]['p50_ms'], '8.3f')} "
        f"{fmt(single[server]['x_bare'], '7.1f')} "
        f"{fmt(single[server]['cpu_us_per_request'], '10.0f')}"
        for server in names
    ]
    per_test = results["per_test"]
    mock = per_test[MOCK]
    lines += [
        "",
        "per test, one client (median ms; server CPU ms per test)",
        f"  platform-mock: new client + reset + 5 calls {mock['per_test_ms']:.2f} "
        f"(the client {mock['client_ms']:.3f}); CPU {mock['server_cpu_ms_per_test']:.2f}",
    ]
    if PRISM_NAME in per_test:
        prism = per_test[PRISM_NAME]
        lines.append(
            f"  prism:         5 calls {prism['per_test_ms']:.2f}; "
            f"CPU {prism['server_cpu_ms_per_test']:.2f}"
        )
    failures = sum(per_test[name]["non_200"] for name in (MOCK, PRISM_NAME) if name in per_test)
    if failures:
        lines.append(f"  ({failures} responses were not 200)")
    lines += [f"cold start of the mock to its first 200: {results['cold_start_s']:.2f} s"]
    figures = results["scale"]
    if "not_measured" in figures:
        lines.append(f"100k-run world not measured: {figures['not_measured']}")
    else:
        lines.append(f"100k-run world (bench/scale.py): {json.dumps(figures)}")
    lines += ["", f"{'target':56} {'measured':>12}  met"]
    for target in results["targets"]:
        met = {True: "yes", False: "NO", None: "-"}[target["met"]]
        lines.append(f"{target['target']:56} {target['measured']:>12}  {met}")
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
    order: list[str],
    cases: list[Scenario],
    token: str,
    admin_token: str,
    duration: int,
) -> dict:
    """Every scenario against every server, in this round's order: throughput scenario by
    scenario (so the runs compared are seconds apart), then single-connection latency, then
    the per-test scenario."""
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
    for name in (name for name in order if name in (MOCK, PRISM_NAME)):
        if name == MOCK:
            process = servers[MOCK].processes[""]
            result = mock_tests(process, cases, token, admin_token, duration)
        else:
            result = prism_tests(servers[PRISM_NAME], cases, token, duration)
        measured["per_test"][name] = result
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
        "--scale", action="store_true", help="also measure the 100k-run world (bench/scale.py)"
    )
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds: at least 3, so that one busy round cannot decide a median")
    wrk_bin = ensure_wrk()
    prism = None if args.no_prism else ensure_prism()
    token, admin_token = command_output("token"), command_output("token", "--admin")
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
            "test_calls": [cases[index].name for index in TEST_CALLS],
        },
        "rounds": [],
    }
    servers = start_servers(cases, prism, token, results)
    names = list(servers)
    try:
        if args.warmup:
            for server in servers.values():
                for case in cases:
                    process, path = server.target(case)
                    wrk(wrk_bin, process, case, path, token, args.warmup, **THROUGHPUT)
        for round_number in range(args.rounds):
            order = rotated(names, round_number)
            print(
                f"bench: round {round_number + 1}/{args.rounds}, order {', '.join(order)}",
                file=sys.stderr,
            )
            results["rounds"].append(
                one_round(wrk_bin, servers, order, cases, token, admin_token, args.duration)
            )
    finally:
        for server in servers.values():
            server.stop()
    results["scale"] = scale(args.scale)
    summarise(results, cases, names)
    results["targets"] = targets(results, cases)
    report(results, names, Path(args.out))


if __name__ == "__main__":
    main()
