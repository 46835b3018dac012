"""Bounds under attack: what a hostile target, stalled event streams and a chain of worlds
cost the processes of platform-mock.

- drift: `platform-mock drift --timeout 30` against a target whose `min-cli-version`
  answers SIZE bytes (256 MiB by default) at loopback speed, every other path a small 404:
  the drift process's peak RSS (ru_maxrss), its wall time and the report's entry for that
  operation; the same against 16 MiB of JSON empty objects (`[{},{},...]`). Then against a
  target that answers the same operation one byte every 0.5 s, with `--timeout 2`: the wall
  time (capped at `--cap` seconds) and the entry.
- streams: `platform-mock serve --quiet`; eight clients open `GET /__admin/events`, read the
  `hello` and stop reading (a receive buffer of 4 KiB each); then 1,000 requests whose
  query holds 19,000 bytes each (about 19 MB of events shared by the streams); then each
  client reads 1 MiB of its backlog and stalls again. The server's RSS (VmRSS) grown over
  the same requests sent with no stream open.
- worlds: `platform-mock serve --quiet`; `POST /__admin/worlds` on the mock, then on each new
  world's own admin API, until one is refused or the chain is 70 long: the chain's length,
  the server's RSS and threads. Then 70 worlds asked of the mock itself: how many it serves.

- line: `platform-mock serve --quiet`; 1,000 requests, each on a connection of its own, whose
  request line is 60 KB (a job id of 60,000 characters): the server's CPU time per request
  (utime + stime from /proc), and the status answered.

- nested: `platform-mock serve --quiet`; 20 requests of each body of `HUGE_BODIES` (1 MB,
  wrong in a way costly to explain: the embeddings' `input` as 500 lists of 650 numbers,
  wrong under every branch of its `oneOf`; a manifest of 90,000 fields): the server's CPU
  time per request and the status answered.

Run as `python bench/bounds.py [--only drift|streams|worlds|line|nested] [--size-mib 256]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
SERVE_OUTPUT = re.compile(
    r"admin token:\s+(?P<admin>\S+)\s+\(admin API: (?P<admin_url>\S+)\)", re.MULTILINE
)
TOKEN = re.compile(r"^\s+token:\s+(?P<token>\S+)", re.MULTILINE)
CHUNK = b"0" * (1024 * 1024)
VALUES = b"[" + b"{}," * ((16 * 1024 * 1024 - 5) // 3) + b"{}]"  # just under 16 MiB


class Target:
    """A raw HTTP server on a thread: `min-cli-version` answered by `big` (size bytes at
    once), `values` (JSON of 16 MiB of empty objects) or `trickle` (a byte every 0.5 s), any
    other path a small JSON 404."""

    def __init__(self, mode: str, size: int):
        self.mode, self.size = mode, size
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(65536)
                    if not data:
                        return
                    head += data
                path = head.split(b" ", 2)[1]
                if b"/min-cli-version" not in path:
                    body = b'{"statusCode":404,"message":"no","code":40401,"details":[]}'
                    conn.sendall(
                        b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
                    )
                    return
                length = {"big": self.size, "values": len(VALUES)}.get(self.mode, 10_000)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n" % length
                )
                if self.mode == "values":
                    conn.sendall(VALUES)
                elif self.mode == "big":
                    sent = 0
                    while sent < length:
                        piece = CHUNK[: min(len(CHUNK), length - sent)]
                        conn.sendall(piece)
                        sent += len(piece)
                else:
                    for _ in range(length):
                        conn.sendall(b"0")
                        time.sleep(0.5)
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()


# Runs a command and prints its peak RSS (KiB) on the last line of stderr.
PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1]), capture_output=True)\n"
    "sys.stdout.buffer.write(done.stdout)\n"
    "sys.stderr.buffer.write(done.stderr)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
    "file=sys.stderr)\n"
)


def _drift(target: Target, timeout: float, cap: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "drift.json"
        command = [
            sys.executable,
            "-m",
            "mock_server",
            "drift",
            "--target",
            target.url,
            "--timeout",
            str(timeout),
            "--report",
            f"json={report}",
        ]
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-c", PEAK, str(cap), *command],
                capture_output=True,
                env={**os.environ, "TFY_API_KEY": "t"},
                timeout=cap + 30,
            )
        except subprocess.TimeoutExpired:
            return {"seconds": round(time.monotonic() - started, 1), "ended": False}
        seconds = time.monotonic() - started
        last = done.stderr.decode().strip().splitlines()[-1]
        if "TimeoutExpired" in done.stderr.decode():
            return {"seconds": round(seconds, 1), "ended": False}
        status, peak_kib = last.split()
        found: dict[str, Any] = {
            "seconds": round(seconds, 1),
            "ended": True,
            "status": int(status),
            "peak_rss_mb": round(int(peak_kib) / 1024, 1),
        }
        if report.exists():
            operation = json.loads(report.read_text())["operations"]["getMinCliVersion"]
            found["entry"] = {
                "statuses": operation["statuses"],
                "failures": [f["kind"] for f in operation["failures"]],
                "differences": len(operation["differences"]),
            }
        return found


def drift(size: int, cap: float) -> dict[str, Any]:
    results: dict[str, Any] = {}
    big = Target("big", size)
    try:
        results[f"answer of {size // (1024 * 1024)} MiB"] = _drift(big, 30, cap)
    finally:
        big.close()
    values = Target("values", size)
    try:
        results["16 MiB of `{},`"] = _drift(values, 30, cap)
    finally:
        values.close()
    slow = Target("trickle", size)
    try:
        results["a byte every 0.5 s, --timeout 2"] = _drift(slow, 2, cap)
    finally:
        slow.close()
    return results


def _serve() -> tuple[subprocess.Popen[bytes], str, str, str]:
    """A `serve --quiet` process, its admin token, admin API's URL and user token."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    banner = b""
    while b"Press Ctrl-C" not in banner:
        line = process.stdout.readline()
        assert line, banner
        banner += line
    found = SERVE_OUTPUT.search(banner.decode())
    assert found, banner
    user = TOKEN.search(banner.decode())
    assert user, banner
    return process, found["admin"], found["admin_url"], user["token"]


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _flood(base: str, requests: int, size: int) -> None:
    query = {"bogus": "x" * size}
    with httpx.Client(base_url=base, timeout=30) as client:
        for _ in range(requests):
            client.get("/api/svc/v1/min-cli-version", params=query)


def _stalled_stream(admin_url: str, admin: str) -> socket.socket:
    host, port = admin_url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(
        f"GET /__admin/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {admin}\r\n\r\n".encode()
    )
    seen = b""
    while b"event: hello" not in seen:
        seen += sock.recv(4096)
    return sock  # never read again


def _read_some(sock: socket.socket, size: int) -> None:
    sock.settimeout(1.0)
    read = 0
    try:
        while read < size:
            data = sock.recv(65536)
            if not data:
                return
            read += len(data)
    except TimeoutError:
        return


def streams(count: int = 8, requests: int = 1000, size: int = 19_000) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for streamed in (0, count):
        process, admin, admin_url, _ = _serve()
        base = admin_url.removesuffix("/__admin")
        held: list[socket.socket] = []
        try:
            _flood(base, 50, size)  # the server warmed up alike in both runs
            before = _status(process.pid, "VmRSS")
            held = [_stalled_stream(admin_url, admin) for _ in range(streamed)]
            _flood(base, requests, size)
            for sock in held:  # each reads a part of its backlog, and stalls again
                _read_some(sock, 1024 * 1024)
            time.sleep(2)  # the streams' writes have happened
            grown = _status(process.pid, "VmRSS") - before
            results[f"{streamed} stalled streams: RSS grown (MB)"] = round(grown / 1024, 1)
        finally:
            for sock in held:
                sock.close()
            process.terminate()
            process.wait(30)
    key = f"{count} stalled streams: RSS grown (MB)"
    results["streams' own cost (MB)"] = round(
        results[key] - results["0 stalled streams: RSS grown (MB)"], 1
    )
    return results


def worlds(chain: int = 70) -> dict[str, Any]:
    results: dict[str, Any] = {}
    process, admin, admin_url, _ = _serve()
    try:
        before = _status(process.pid, "VmRSS")
        url, token, made = admin_url, admin, 0
        refused = None
        with httpx.Client(timeout=60) as client:
            while made < chain:
                answer = client.post(
                    url + "/worlds", json={}, headers={"Authorization": f"Bearer {token}"}
                )
                if answer.status_code != 201:
                    refused = f"{answer.status_code} {answer.json().get('code')}"
                    break
                world = answer.json()
                made += 1
                url, token = world["adminUrl"], world["adminToken"]
        results["chain: worlds made"] = made
        results["chain: refused with"] = refused
        results["chain: RSS grown (MB)"] = round((_status(process.pid, "VmRSS") - before) / 1024)
        results["chain: threads"] = _status(process.pid, "Threads")
    finally:
        process.terminate()
        process.wait(60)
    process, admin, admin_url, _ = _serve()
    try:
        made, refused = 0, None
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {admin}"}) as client:
            for _ in range(chain):
                answer = client.post(admin_url + "/worlds", json={})
                if answer.status_code != 201:
                    refused = f"{answer.status_code} {answer.json().get('code')}"
                    continue
                made += 1
        results["flat: worlds made of 70 asked"] = made
        results["flat: refused with"] = refused
        results["flat: threads"] = _status(process.pid, "Threads")
    finally:
        process.terminate()
        process.wait(60)
    return results


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def line(requests: int = 1000, size: int = 60_000) -> dict[str, Any]:
    process, _, admin_url, _ = _serve()
    try:
        host, port = admin_url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)
        target = b"/api/svc/v1/jobs/" + b"x" * size + b"/runs"
        sent = b"GET " + target + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
        sent += b"Connection: close\r\n\r\n"
        statuses: set[str] = set()
        before = _cpu_seconds(process.pid)
        for _ in range(requests):
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(sent)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            statuses.add(answer.split(b" ", 2)[1].decode())
        spent = _cpu_seconds(process.pid) - before
    finally:
        process.terminate()
        process.wait(30)
    return {
        "server CPU per request (ms)": round(spent / requests * 1000, 2),
        "statuses": sorted(statuses),
    }


# Bodies of 1 MB wrong in a way that is costly to explain: by operation, the path and body.
HUGE_BODIES = {
    "500 lists of 650 numbers (embeddings)": (
        "POST",
        "/gateway/embeddings",
        {"model": "text-embedding-3-small", "input": [[-1] * 650] * 500},
    ),
    "a manifest of 90,000 fields (apply)": (
        "PUT",
        "/api/svc/v1/apply",
        {"manifest": {"type": "artifact-version", **{f"{n:x}": 0 for n in range(90_000)}}},
    ),
}


def nested(requests: int = 20) -> dict[str, Any]:
    process, _, admin_url, token = _serve()
    measured: dict[str, Any] = {}
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    try:
        base = admin_url.removesuffix("/__admin")
        with httpx.Client(base_url=base, timeout=120, headers=headers) as client:
            for name, (method, path, value) in HUGE_BODIES.items():
                body = json.dumps(value, separators=(",", ":"))
                statuses: set[int] = set()
                before = _cpu_seconds(process.pid)
                for _ in range(requests):
                    statuses.add(client.request(method, path, content=body).status_code)
                spent = _cpu_seconds(process.pid) - before
                measured[name] = {
                    "server CPU per request (ms)": round(spent / requests * 1000, 1),
                    "statuses": sorted(statuses),
                }
    finally:
        process.terminate()
        process.wait(30)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("drift", "streams", "worlds", "line", "nested"))
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--cap", type=float, default=60.0, help="seconds a drift may take")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
    measured: dict[str, Any] = {}
    if args.only in (None, "drift"):
        measured["drift"] = drift(args.size_mib * 1024 * 1024, args.cap)
    if args.only in (None, "streams"):
        measured["streams"] = streams()
    if args.only in (None, "worlds"):
        measured["worlds"] = worlds()
    if args.only in (None, "line"):
        measured["line"] = line()
    if args.only in (None, "nested"):
        measured["nested"] = nested()
    print(json.dumps(measured, indent=2))


if __name__ == "__main__":
    main()
