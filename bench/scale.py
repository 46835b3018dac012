"""Worlds at scale: how the mock serves a fixture file of 100,000 written-out job runs.

Writes a fixture file with one job of `--runs` runs (YAML flow mappings, as people write
them) to a temporary folder, starts `platform-mock serve` on it in a fresh process and
measures, over loopback HTTP:

- load: from the start of the process to the first 200 of the job's runs, in wall time and
  in the server's CPU time (on a busy machine the two part);
- peak RSS of the server process (VmHWM) once loaded, and once everything below has run;
- reset p50 (`POST /__admin/reset`, 20 times);
- a filtered, sorted page p50 (`?limit=20&status=FAILED&status=RUNNING&sortBy=duration`);
- dump: `GET /__admin/state`, and its size;
- load back: that dump posted to `POST /__admin/fixtures` of a second server started
  without default fixtures, and whether it then dumps the same state;
- what the live view asks, p50: the first page of job runs (`GET /__admin/records`), a page
  100,000 runs deep, a search of the runs by status; and once requests have filled the
  journal to its byte budget (32 MiB), the newest page of it (`GET /__admin/requests`), a
  search for a word no request holds (the page looks at its bound, 4 MiB of entries), and
  a request opened (`GET /__admin/requests/{seq}`).

Run as `python bench/scale.py [--runs 100000]`; `measure(runs)` returns the numbers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mock_server.state.jobs import ENDED, RUN_STATUSES

# The servers and `platform-mock token` started here sign with one key, so that the tokens
# printed work on the servers (each server would otherwise draw its own).
os.environ.setdefault("PLATFORM_MOCK_SIGNING_KEY", secrets.token_hex(32))

ROOT = Path(__file__).resolve().parent.parent
JOB_ID = "app-scale-big-job"
RUNS_PATH = f"/api/svc/v1/jobs/{JOB_ID}/runs"
PAGE_PATH = RUNS_PATH + "?limit=20&status=FAILED&status=RUNNING&sortBy=duration"
# (key, what is measured, target (lower is better; None: no target), unit)
TARGETS = (
    ("load_s", "load to first 200", 2.0, "s"),
    ("load_cpu_s", "its CPU time", None, "s"),
    ("load_again_s", "load again (the text kept, parsed once)", 2.0, "s"),
    ("load_again_cpu_s", "its CPU time", None, "s"),
    ("load_rss_mb", "peak RSS of the load", 250.0, "MB"),
    ("reset_p50_ms", "reset p50", 50.0, "ms"),
    ("page_p50_ms", "filtered sorted page p50", 20.0, "ms"),
    ("dump_s", "dump (GET /__admin/state)", None, "s"),
    ("load_back_s", "dump loaded back (POST /__admin/fixtures)", None, "s"),
    ("records_p50_ms", "view: first page of runs p50", 50.0, "ms"),
    ("records_deep_p50_ms", "view: a page of runs 100,000 deep p50", 50.0, "ms"),
    ("records_search_p50_ms", "view: runs searched by status p50", 50.0, "ms"),
    ("requests_p50_ms", "view: newest page of a full journal p50", 50.0, "ms"),
    ("requests_search_p50_ms", "view: a full journal searched p50", 100.0, "ms"),
    ("request_p50_ms", "view: a request opened p50", 20.0, "ms"),
)


def write_fixture(path: Path, runs: int) -> None:
    """A job of the default world's workspace with `runs` runs, written out one a line."""
    rng = random.Random(1)
    lines = [
        "applications:",
        "  - name: big-job",
        f"    id: {JOB_ID}",
        "    type: job",
        "    workspace: ml-team",
        "    deployments:",
        "      - manifest:",
        '          image: {type: image, image_uri: "registry.acme.example/big:1"}',
        "          trigger: {type: manual}",
        "          resources: {cpu_request: 1, cpu_limit: 2, memory_request: 2000,"
        " memory_limit: 4000}",
        "    runs:",
    ]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    users = ("alice@acme.example", "bob@acme.example")
    for _ in range(runs):
        status = rng.choice(RUN_STATUSES)
        start += timedelta(seconds=rng.randint(30, 300))
        duration = f", durationSeconds: {rng.randint(5, 7200)}" if status in ENDED else ""
        lines.append(
            f'      - {{status: {status}, createdAt: "{start:%Y-%m-%dT%H:%M:%SZ}"{duration},'
            f" triggeredBy: {rng.choice(users)}}}"
        )
    path.write_text("\n".join(lines) + "\n")


def _token(*options: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "token", *options],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.strip()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The server keeps the bytecode it compiles, as a user's does, where the environment says
# not to (a CI image's PYTHONDONTWRITEBYTECODE): else its load would count the compiler. Its
# start cache is a folder of the bench's own (`measure`), so the first load reads the
# fixture's text afresh and the second finds it kept.
ENVIRONMENT = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class _Server:
    def __init__(self, *options: str):
        self.port = _free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mock_server", "serve", "--port", str(self.port), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=ENVIRONMENT,
        )

    def request(
        self, method: str, path: str, token: str, body: bytes | None = None, timeout: float = 120
    ) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def wait(self, path: str, token: str, timeout: float = 300) -> None:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            try:
                if self.request("GET", path, token, timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError("the server exited before it answered")
            time.sleep(0.01)
        raise RuntimeError(f"no 200 from {path} within {timeout} s")

    def cpu_s(self) -> float:
        """User + system CPU time of the server process so far: its own work, whatever else
        the machine was doing meanwhile."""
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def _p50_ms(call: Any, times: int) -> float:
    return statistics.median(_timed(call)[0] * 1000 for _ in range(times))


def measure(runs: int = 100_000) -> dict[str, Any]:
    """The numbers of one world of `runs` written-out runs, each server in a fresh process."""
    user, admin = _token(), _token("--admin")
    empty_admin = _token("--admin", "--no-default-fixtures")
    with tempfile.TemporaryDirectory() as folder:
        fixture = Path(folder) / "runs.yaml"
        write_fixture(fixture, runs)
        results: dict[str, Any] = {"runs": runs, "fixture_mb": fixture.stat().st_size / 1e6}
        ENVIRONMENT["PLATFORM_MOCK_CACHE_DIR"] = str(Path(folder) / "cache")
        warm = _Server()  # the contract's documents kept, as after any first start
        try:
            warm.wait("/__admin/journal", admin)
        finally:
            warm.stop()
        started = time.perf_counter()
        server = _Server("--fixtures", str(fixture))
        try:
            server.wait(RUNS_PATH + "?limit=1", user)
            results["load_s"] = time.perf_counter() - started
            results["load_cpu_s"] = server.cpu_s()
            results["load_rss_mb"] = server.peak_rss_mb()

            def reset() -> None:
                assert server.request("POST", "/__admin/reset", admin)[0] == 200

            results["reset_p50_ms"] = _p50_ms(reset, 20)

            def page() -> None:
                assert server.request("GET", PAGE_PATH, user)[0] == 200

            page()  # the first page of a sort order builds it
            results["page_p50_ms"] = _p50_ms(page, 50)
            results["dump_s"], (status, dump) = _timed(
                lambda: server.request("GET", "/__admin/state", admin)
            )
            assert status == 200
            results["dump_mb"] = len(dump) / 1e6
            results.update(_view(server, admin, user, runs))
            results["peak_rss_mb"] = server.peak_rss_mb()
        finally:
            server.stop()
        started = time.perf_counter()
        again = _Server("--fixtures", str(fixture))
        try:
            again.wait(RUNS_PATH + "?limit=1", user)
            results["load_again_s"] = time.perf_counter() - started
            results["load_again_cpu_s"] = again.cpu_s()
        finally:
            again.stop()
    other = _Server("--no-default-fixtures")
    try:
        other.wait("/__admin/journal", empty_admin)
        results["load_back_s"], (status, body) = _timed(
            lambda: other.request("POST", "/__admin/fixtures", empty_admin, dump)
        )
        assert status == 200, body[:500]
        reloaded = other.request("GET", "/__admin/state", empty_admin)[1]
        results["load_back_equal"] = json.loads(reloaded) == json.loads(dump)
    finally:
        other.stop()
    return results


def _view(server: _Server, admin: str, user: str, runs: int) -> dict[str, Any]:
    """What the live view's requests cost in this world, and with a journal at its budget."""

    def asked(path: str) -> Any:
        def call() -> None:
            status, body = server.request("GET", path, admin)
            assert status == 200, body[:300]

        call()  # the first page of an order builds it
        return _p50_ms(call, 20)

    found: dict[str, Any] = {
        "records_p50_ms": asked("/__admin/records?kind=runs&limit=50"),
        "records_deep_p50_ms": asked(f"/__admin/records?kind=runs&limit=50&offset={runs - 50}"),
        "records_search_p50_ms": asked("/__admin/records?kind=runs&limit=50&q=failed"),
    }
    # Requests until the journal drops its oldest: it holds its 32 MiB budget.
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Authorization": f"Bearer {user}"}
    sent = 0
    while True:
        for _ in range(500):
            connection.request("GET", RUNS_PATH + "?limit=10", headers=headers)
            connection.getresponse().read()
        sent += 500
        page = json.loads(server.request("GET", "/__admin/requests?limit=1", admin)[1])
        if page["dropped"]:
            break
    connection.close()
    newest = page["data"][0]["seq"]
    found.update(
        journal_requests=sent,
        journal_held=page["held"],
        requests_p50_ms=asked("/__admin/requests?limit=100"),
        requests_search_p50_ms=asked("/__admin/requests?limit=100&q=nowhere-at-all"),
        request_p50_ms=asked(f"/__admin/requests/{newest}"),
    )
    return found


def table(results: dict[str, Any]) -> str:
    rows = [f"{results['runs']:,} runs ({results['fixture_mb']:.1f} MB of YAML)"]
    for key, what, target, unit in TARGETS:
        value = results[key]
        verdict = "" if target is None else ("met" if value < target else "NOT MET")
        aim = "" if target is None else f"< {target:g} {unit}"
        rows.append(f"  {what:<42} {value:>9.2f} {unit:<3} {aim:<11} {verdict}")
    rows.append(
        f"  peak RSS after the dump too: {results['peak_rss_mb']:.0f} MB; dump size "
        f"{results['dump_mb']:.1f} MB; loaded back equal: {results['load_back_equal']}"
    )
    rows.append(
        f"  the journal at its budget held {results['journal_held']:,} requests "
        f"(after {results['journal_requests']:,})"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    args = parser.parse_args()
    print(table(measure(args.runs)))


if __name__ == "__main__":
    main()
