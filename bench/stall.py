"""Stalls while the admin API works on a 100,000-run world: a latency probe beside each operation.

Serves the world of `bench/scale.py` (`platform-mock serve --fixtures` of its
`write_fixture`) and, on a second server started with `--no-default-fixtures`, a small world
of its own. While each admin operation runs, a probe thread sends a request every
`--interval-ms` (5 ms) on a kept-alive connection to the server doing it, and records how
long each answer took. The operations:

- dump: `GET /__admin/state` of the 100k-run world;
- load: that dump posted to `POST /__admin/fixtures` of the second server (which applies it:
  its records are disjoint from the small world's);
- reset: `POST /__admin/reset` of the 100k-run world (a snapshot restored);
- reseed: `POST /__admin/reset` with a seed the server has not built yet (the world rebuilt).

Two probes, each beside every operation apart: `GET /__admin/health` (answered by the event
loop alone: a stall there is the loop held) and a small platform read, one run of a job
(`GET /api/svc/v1/jobs/{id}/runs?limit=1`, which waits for the world's lock). For each
probe and operation it reports the operation's time (median of `--repeat`) and the latency
of the probes in flight while it ran: max and p99 over all repeats, against the target of
no probe stalled more than 100 ms. The probe runs in this process and the servers in their
own, so the probe's own latency is the servers'.

Run as `python bench/stall.py [--runs 100000] [--repeat 3] [--interval-ms 5]`;
`measure(runs)` returns the numbers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# bench/ is not a package: its scripts import each other from its folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale

TARGET_MS = 100.0
OPERATIONS = ("dump", "load", "reset", "reseed")
PROBES = ("health", "read")
# The second server's own world: every record with an id of its own, so that the dump of the
# 100k-run world (default fixtures included) loads beside it.
PROBE_USER = "probe@stall.example"
PROBE_JOB = "app-stall-probe"
SMALL_WORLD = {
    "tenant": "acme",
    "users": [{"email": PROBE_USER, "id": "user-stall-probe"}],
    "clusters": [{"name": "stall-cluster", "id": "cluster-stall-probe"}],
    "workspaces": [{"name": "stall-ws", "cluster": "stall-cluster", "id": "workspace-stall-probe"}],
    "grants": [
        {
            "subject": f"user:{PROBE_USER}",
            "role": "workspace-viewer",
            "resource": "workspace:stall-ws",
        }
    ],
    "applications": [
        {
            "name": "stall-probe",
            "id": PROBE_JOB,
            "type": "job",
            "workspace": "stall-ws",
            "deployments": [
                {
                    "id": "deployment-stall-probe",
                    "manifest": {
                        "image": {"type": "image", "image_uri": "registry.acme.example/p:1"},
                        "trigger": {"type": "manual"},
                    },
                }
            ],
            "runs": [
                {
                    "id": "run-stall-probe",
                    "status": "FINISHED",
                    "createdAt": "2025-01-01T00:00:00Z",
                    "durationSeconds": 5,
                }
            ],
        }
    ],
}


class Probe(threading.Thread):
    """One request every `interval` seconds on one kept-alive connection (at once after a
    late answer), each recorded as (sent, answered, status)."""

    def __init__(self, port: int, path: str, token: str | None, interval: float):
        super().__init__(daemon=True)
        self.port, self.path, self.interval = port, path, interval
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.samples: list[tuple[float, float, int]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            while not self.halt.is_set():
                sent = time.perf_counter()
                try:
                    connection.request("GET", self.path, headers=self.headers)
                    response = connection.getresponse()
                    response.read()
                    status = response.status
                except (OSError, http.client.HTTPException):
                    connection.close()  # reconnects on the next request
                    status = 0
                self.samples.append((sent, time.perf_counter(), status))
                self.halt.wait(max(0.0, sent + self.interval - time.perf_counter()))
        finally:
            connection.close()

    def stop(self) -> None:
        self.halt.set()
        self.join()

    def during(self, start: float, end: float) -> list[tuple[float, int]]:
        """(latency ms, status) of each probe in flight at some moment of [start, end]; if
        none was (the probe waited for its next turn all along), the first one sent after."""
        seen = [
            ((answered - sent) * 1000, status)
            for sent, answered, status in self.samples
            if sent <= end and answered >= start
        ]
        later = [(s, a, status) for s, a, status in self.samples if s >= start]
        if not seen and later:
            sent, answered, status = later[0]
            seen.append(((answered - sent) * 1000, status))
        return seen


def _check(answer: tuple[int, bytes], what: str) -> bytes:
    status, body = answer
    if status != 200:
        raise RuntimeError(f"{what}: {status} {body[:300]!r}")
    return body


class _Worlds:
    """The two servers and the admin operations run on them."""

    def __init__(self, fixture: Path):
        self.user = scale._token()
        self.admin = scale._token("--admin")
        self.empty_admin = scale._token("--admin", "--no-default-fixtures")
        self.big = scale._Server("--fixtures", str(fixture))
        self.small: scale._Server | None = None
        self.dump = b""
        self.seeds = iter(range(1000, 10**6))
        try:
            self.big.wait(scale.RUNS_PATH + "?limit=1", self.user)
            self.small = scale._Server("--no-default-fixtures")
            self.small.wait("/__admin/journal", self.empty_admin)
            self.dump = _check(self.big.request("GET", "/__admin/state", self.admin), "dump")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for server in (self.big, self.small):
            if server is not None:
                server.stop()

    def prepare(self, operation: str) -> tuple[scale._Server, str]:
        """Ready the server of `operation` (unmeasured); it and the read probe's path and
        token there."""
        if operation != "load":
            return self.big, self.user
        assert self.small is not None
        small, admin = self.small, self.empty_admin
        _check(small.request("POST", "/__admin/reset", admin), "reset of the small world")
        body = json.dumps(SMALL_WORLD).encode()
        _check(small.request("POST", "/__admin/fixtures", admin, body), "the small world")
        subject = json.dumps({"subject": PROBE_USER}).encode()
        issued = _check(small.request("POST", "/__admin/tokens", admin, subject), "a token")
        return small, json.loads(issued)["token"]

    def run(self, operation: str) -> None:
        if operation == "dump":
            _check(self.big.request("GET", "/__admin/state", self.admin), "dump")
        elif operation == "load":
            assert self.small is not None
            answer = self.small.request("POST", "/__admin/fixtures", self.empty_admin, self.dump)
            _check(answer, "load")
        elif operation == "reset":
            _check(self.big.request("POST", "/__admin/reset", self.admin), "reset")
        else:
            seed = json.dumps({"seed": next(self.seeds)}).encode()
            _check(self.big.request("POST", "/__admin/reset", self.admin, seed), "reseed")

    def settle(self, operation: str) -> None:
        """Back to the world the next operation expects (unmeasured)."""
        if operation == "reseed":
            seed = json.dumps({"seed": 0}).encode()
            _check(self.big.request("POST", "/__admin/reset", self.admin, seed), "seed 0")


def probe_path(probe: str, server: scale._Server, big: scale._Server) -> str:
    if probe == "health":
        return "/__admin/health"
    job = scale.JOB_ID if server is big else PROBE_JOB
    return f"/api/svc/v1/jobs/{job}/runs?limit=1"


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure(runs: int = 100_000, repeat: int = 3, interval_ms: float = 5.0) -> dict[str, Any]:
    """Per probe and operation: the operation's time, and the latency of the probes that
    were in flight while it ran."""
    results: dict[str, Any] = {
        "runs": runs,
        "repeat": repeat,
        "interval_ms": interval_ms,
        "target_ms": TARGET_MS,
    }
    with tempfile.TemporaryDirectory() as folder:
        fixture = Path(folder) / "runs.yaml"
        scale.write_fixture(fixture, runs)
        worlds = _Worlds(fixture)
        try:
            results["dump_mb"] = len(worlds.dump) / 1e6
            results.update(_probed(worlds, repeat, interval_ms))
        finally:
            worlds.stop()
    results["worst_ms"] = max(
        results[probe][operation]["probe_max_ms"] for probe in PROBES for operation in OPERATIONS
    )
    results["met"] = results["worst_ms"] <= TARGET_MS
    return results


def _probed(worlds: _Worlds, repeat: int, interval_ms: float) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for probe_name in PROBES:
        found: dict[str, Any] = {}
        for operation in OPERATIONS:
            times, latencies, idle, failed = [], [], [], 0
            for _ in range(repeat):
                server, token = worlds.prepare(operation)
                path = probe_path(probe_name, server, worlds.big)
                probe = Probe(server.port, path, token, interval_ms / 1000)
                probe.start()
                time.sleep(0.1)  # the probe's latency at rest, before the operation
                started = time.perf_counter()
                try:
                    worlds.run(operation)
                finally:
                    ended = time.perf_counter()
                    time.sleep(0.02)
                    probe.stop()
                worlds.settle(operation)
                times.append(ended - started)
                seen = probe.during(started, ended)
                latencies += [latency for latency, _ in seen]
                failed += sum(status != 200 for _, status in seen)
                idle += [latency for latency, _ in probe.during(0, started - 0.01)]
            found[operation] = {
                "operation_s": statistics.median(times),
                "probe_max_ms": max(latencies),
                "probe_p99_ms": p99(latencies),
                "probes": len(latencies),
                "probes_not_200": failed,
                "idle_p99_ms": p99(idle),
                "met": max(latencies) <= TARGET_MS,
            }
        results[probe_name] = found
    return results


def table(results: dict[str, Any]) -> str:
    rows = [
        f"{results['runs']:,} runs (dump {results['dump_mb']:.1f} MB); a probe every "
        f"{results['interval_ms']:g} ms, {results['repeat']} times each; target: no probe "
        f"over {results['target_ms']:g} ms",
        f"  {'probe':8} {'operation':10} {'op s':>7} {'max ms':>8} {'p99 ms':>8} "
        f"{'idle p99':>8} {'probes':>6}  met",
    ]
    for probe in PROBES:
        for operation in OPERATIONS:
            m = results[probe][operation]
            rows.append(
                f"  {probe:8} {operation:10} {m['operation_s']:7.3f} {m['probe_max_ms']:8.1f} "
                f"{m['probe_p99_ms']:8.1f} {m['idle_p99_ms']:8.1f} {m['probes']:6}  "
                + ("yes" if m["met"] else "NO")
                + (f"  ({m['probes_not_200']} not 200)" if m["probes_not_200"] else "")
            )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    args = parser.parse_args()
    print(table(measure(args.runs, args.repeat, args.interval_ms)))


if __name__ == "__main__":
    main()
