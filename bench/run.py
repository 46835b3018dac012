"""The benchmark: the mock beside Prism and two references, each server alone in turn.

    python bench/run.py [--duration 10] [--out bench/results] [--no-prism]

Every server runs alone on this machine and is driven by wrk (-t2 -c16, and -c1 for
latency) over loopback. The references answer the mock's own bodies: a bare ASGI app
(bench/bare.py) and a Connexion FlaskApp doing nothing else (bench/floor.py). Figures are
printed as a table with ratios to the bare reference and to Prism measured in the same run,
and written as JSON and a PNG chart. Setup is the benchmark's
own: wrk comes from Debian's packages (installed with apt-get when missing and run as
root), Prism from the npm registry into bench/.prism. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRISM_DIR = ROOT / "bench" / ".prism"
PRISM = PRISM_DIR / "node_modules" / ".bin" / "prism"
DEMO_RESPONSE = "resp_0000000000000000000000000000demo"
SERVERS = ("platform-mock", "prism", "flaskapp-floor", "asyncapp-floor", "bare")
# All answer the mock's own bodies: bare is the ceiling of Python and uvicorn here, the
# floors the least an operation costs on Connexion's FlaskApp (the mock's stack) and on its
# AsyncApp (see each script's docstring).
REFERENCES = {
    "bare": ["bare.py"],
    "flaskapp-floor": ["floor.py"],
    "asyncapp-floor": ["floor.py", "--async"],
}


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


def wait_ready(port: int, path: str, token: str, timeout: float = 60) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        try:
            if request(port, "GET", path, token)[0] == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.005)
    raise RuntimeError(f"server on port {port} did not answer {path}")


class Server:
    def __init__(self, argv: list[str], port: int):
        self.port = port
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()


def mock_token() -> str:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "token"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.strip()


# -- load -------------------------------------------------------------------------------------
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def wrk(
    wrk_bin: str,
    port: int,
    scenario_method: str,
    path: str,
    token: str,
    body: dict | None,
    duration: int,
    connections: int,
    threads: int,
) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "{scenario_method}"\n')
        script.write(f'wrk.headers["Authorization"] = "Bearer {token}"\n')
        if body is not None:
            script.write('wrk.headers["Content-Type"] = "application/json"\n')
            script.write(f"wrk.body = {json.dumps(json.dumps(body))}\n")
    out = subprocess.run(
        [
            wrk_bin,
            f"-t{threads}",
            f"-c{connections}",
            f"-d{duration}s",
            "--latency",
            "-s",
            script.name,
            f"http://127.0.0.1:{port}{path}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    os.unlink(script.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    latency = {
        pct: float(value) * UNITS[unit]
        for pct, value, unit in re.findall(r"\s(50|99)%\s+([\d.]+)(us|ms|s)\b", out)
    }
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": rps,
        "p50_ms": latency.get("50"),
        "p99_ms": latency.get("99"),
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


# -- in-process figures -----------------------------------------------------------------------
def reset_ms(samples: int = 200) -> float:
    sys.path.insert(0, str(ROOT))
    from mock_server import PlatformMock

    mock = PlatformMock()
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        mock.reset()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


LARGE_WORLD = """
import resource, statistics, time, json
from mock_server import PlatformMock
mock = PlatformMock()
store = mock.store
trainer = store.deployments.application_named("trainer")
store.jobs.generate_runs(trainer, 100_000 - len(store.world.job_runs[trainer.id]))
alice = store.identity.default_user()
caller = store.identity.caller("user", alice.id)
times = []
for i in range(60):
    started = time.perf_counter()
    store.jobs.list_runs(caller, trainer.id, limit=20, offset=20 * (i % 5), search_prefix=None,
        sort_by="duration", order="desc", triggered_by=None, status=["FAILED", "FINISHED"],
        version_numbers=None)
    times.append((time.perf_counter() - started) * 1000)
print(json.dumps({"runs": len(store.world.job_runs[trainer.id]),
    "page_p50_ms": statistics.median(times[10:]),
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def large_world() -> dict:
    out = subprocess.run(
        [sys.executable, "-c", LARGE_WORLD], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(out)


# -- report -----------------------------------------------------------------------------------
def chart(results: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "bench: matplotlib not installed, no chart (pip install -e '.[bench]')", file=sys.stderr
        )
        return False
    names = [s["scenario"] for s in results["throughput"]]
    servers = [k for k in SERVERS if any(k in s for s in results["throughput"])]
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.8 / len(servers)
    for i, server in enumerate(servers):
        values = [s.get(server, {}).get("rps", 0) for s in results["throughput"]]
        ax.bar([x + i * width for x in range(len(names))], values, width, label=server)
    ax.set_xticks(
        [x + width * (len(servers) - 1) / 2 for x in range(len(names))], names, fontsize=8
    )
    ax.set_yscale("log")
    ax.set_ylabel("requests/s (wrk -t2 -c16, log scale)")
    ax.set_title(f"platform-mock benchmark, {results['date']}, {results['machine']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--no-prism", action="store_true")
    args = parser.parse_args()
    wrk_bin = ensure_wrk()
    prism = None if args.no_prism else ensure_prism()
    token = mock_token()
    cases = scenarios()
    results: dict = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "throughput": [{"scenario": c.name} for c in cases],
    }

    # The mock first: it also gives the bodies the bare reference will answer with.
    port = free_port()
    mock = Server([sys.executable, "-m", "mock_server", "serve", "--port", str(port)], port)
    results["cold_start_s"] = wait_ready(port, cases[0].path, token)
    bodies = {
        f"{c.method} {c.path}": request(port, c.method, c.path, token, c.body)[1].decode()
        for c in cases
    }
    for case, row in zip(cases, results["throughput"], strict=True):
        row["platform-mock"] = wrk(
            wrk_bin, port, case.method, case.path, token, case.body, args.duration, 16, 2
        )
    results["single_connection"] = {
        "platform-mock": wrk(wrk_bin, port, "GET", cases[0].path, token, None, args.duration, 1, 1)
    }
    mock.stop()

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(bodies, handle)
    for name, (script, *options) in REFERENCES.items():
        port = free_port()
        argv = [sys.executable, str(ROOT / "bench" / script), str(port), handle.name, *options]
        server = Server(argv, port)
        wait_ready(port, cases[0].path, token)
        for case, row in zip(cases, results["throughput"], strict=True):
            row[name] = wrk(
                wrk_bin, port, case.method, case.path, token, case.body, args.duration, 16, 2
            )
        results["single_connection"][name] = wrk(
            wrk_bin, port, "GET", cases[0].path, token, None, args.duration, 1, 1
        )
        server.stop()

    if prism is not None:
        for spec in sorted({c.prism_spec for c in cases}):
            port = free_port()
            server = Server(
                [
                    str(prism),
                    "mock",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-v",
                    "error",
                    f"spec/{spec}",
                ],
                port,
            )
            ready = [c for c in cases if c.prism_spec == spec]
            wait_ready(port, ready[0].prism_path, token)
            for case, row in zip(cases, results["throughput"], strict=True):
                if case.prism_spec == spec:
                    row["prism"] = wrk(
                        wrk_bin,
                        port,
                        case.method,
                        case.prism_path,
                        token,
                        case.body,
                        args.duration,
                        16,
                        2,
                    )
            server.stop()

    results["reset_ms"] = reset_ms()
    results["large_world"] = large_world()
    report(results, Path(args.out))


def report(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"platform-mock benchmark, {results['date']}, {results['machine']}",
        "",
        f"{'scenario':32} {'server':15} {'req/s':>9} {'x bare':>7} {'x prism':>8} "
        f"{'p50 ms':>8} {'p99 ms':>8}",
    ]
    for row in results["throughput"]:
        bare, prism = row.get("bare", {}).get("rps"), row.get("prism", {}).get("rps")
        for server in SERVERS:
            if server not in row:
                continue
            m = row[server]
            ratio_bare = f"{m['rps'] / bare:.2f}" if bare else "-"
            ratio_prism = f"{m['rps'] / prism:.2f}" if prism else "-"
            lines.append(
                f"{row['scenario']:32} {server:15} {m['rps']:9.0f} {ratio_bare:>7} "
                f"{ratio_prism:>8} {m['p50_ms']:8.2f} {m['p99_ms']:8.2f}"
            )
    single = results["single_connection"]
    p50_ratios = {k: v["p50_ms"] / single["bare"]["p50_ms"] for k, v in single.items()}
    p50_ratio = p50_ratios["platform-mock"]
    jobs = results["throughput"][0]
    vs_prism = jobs["platform-mock"]["rps"] / jobs["prism"]["rps"] if "prism" in jobs else None
    large = results["large_world"]
    cold, reset, page, rss = (
        results["cold_start_s"],
        results["reset_ms"],
        large["page_p50_ms"],
        large["rss_mb"],
    )
    targets = [
        (
            "GET job runs >= 2x Prism static",
            f"{vs_prism:.2f}x" if vs_prism else "no Prism",
            bool(vs_prism and vs_prism >= 2),
        ),
        ("single-connection p50 <= 5x bare", f"{p50_ratio:.1f}x", p50_ratio <= 5),
        ("cold start to first 200 < 1 s", f"{cold:.2f} s", cold < 1),
        ("fixture reset < 2 ms", f"{reset:.2f} ms", reset < 2),
        ("100k runs: filtered sorted page < 20 ms p50", f"{page:.1f} ms", page < 20),
        ("100k runs: resident memory < 300 MB", f"{rss:.0f} MB", rss < 300),
    ]
    results["targets"] = [{"target": t, "measured": m, "met": ok} for t, m, ok in targets]
    lines += ["", f"{'target':46} {'measured':>12}  met"]
    lines += [f"{t:46} {m:>12}  {'yes' if ok else 'NO'}" for t, m, ok in targets]
    lines += ["", f"{'single connection (wrk -c1)':32} {'p50 ms':>8} {'x bare':>7}"]
    lines += [
        f"{server:32} {single[server]['p50_ms']:8.3f} {p50_ratios[server]:7.1f}"
        for server in SERVERS
        if server in single
    ]
    if "prism" in jobs:
        prism_rps = jobs["prism"]["rps"]
        flask_floor, async_floor = jobs["flaskapp-floor"]["rps"], jobs["asyncapp-floor"]["rps"]
        lines += [
            "",
            f"GET job runs: the FlaskApp floor answers {flask_floor:.0f} req/s "
            f"({flask_floor / prism_rps:.2f}x Prism), the AsyncApp floor {async_floor:.0f} "
            f"({async_floor / prism_rps:.2f}x Prism); the mock reaches "
            f"{jobs['platform-mock']['rps'] / flask_floor:.0%} of its stack's floor.",
        ]
    text = "\n".join(lines)
    print(text)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "results.txt").write_text(text + "\n")
    if chart(results, out / "results.png"):
        print(f"\nwritten: {out / 'results.json'}, {out / 'results.txt'}, {out / 'results.png'}")


if __name__ == "__main__":
    main()
