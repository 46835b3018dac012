"""The `serve` process's lifecycle: a graceful stop under load, Ctrl-C, and where it listens.

Each test starts `python -m mock_server serve --port 0` as a real process, reads what it
prints until it is ready, and stops it with a signal. Every wait is bounded; the process is
killed if a test fails half-way. Where the server listens is read from the kernel's table of
TCP sockets (`/proc/net/tcp`, `/proc/net/tcp6`), so these tests need Linux.
"""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

START_TIMEOUT = 30.0  # seconds for the process to say it is ready
EXIT_TIMEOUT = 10.0  # seconds for the process to exit after a stop signal
URL = re.compile(r"control plane: (?P<base>http://(?P<host>[^/]+):(?P<port>\d+))/api/svc/v1")
ADMIN_TOKEN = re.compile(r"admin token:\s+(\S+)")
TOKEN = re.compile(r"^  token:\s+(\S+)", re.MULTILINE)
DELAY_MS = 500


@dataclass
class Served:
    process: subprocess.Popen
    output: str  # stdout up to "Press Ctrl-C to stop."
    base: str  # http://host:port
    port: int
    token: str
    admin_token: str

    def stop(self, sig: signal.Signals) -> tuple[int, str]:
        """Send the signal; the exit status and everything printed on stderr."""
        self.process.send_signal(sig)
        _, stderr = self.process.communicate(timeout=EXIT_TIMEOUT)
        return self.process.returncode, stderr


def start(*args: str) -> Served:
    """Start the server and wait (bounded) until it prints that it is ready."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
            if line.startswith("Press Ctrl-C"):
                break
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    output = ""
    deadline = time.monotonic() + START_TIMEOUT
    while not output.endswith("Press Ctrl-C to stop.\n"):
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            process.kill()
            _, stderr = process.communicate(timeout=EXIT_TIMEOUT)
            pytest.fail(f"the server did not start: {output!r} {stderr!r}")
        output += line
    url, token, admin = URL.search(output), TOKEN.search(output), ADMIN_TOKEN.search(output)
    assert url and token and admin, output
    return Served(process, output, url["base"], int(url["port"]), token[1], admin[1])


@pytest.fixture
def launched() -> Iterator[list[Served]]:
    """Servers a test starts; any still running at the end is killed."""
    servers: list[Served] = []
    yield servers
    for served in servers:
        if served.process.poll() is None:
            served.process.kill()
            served.process.communicate(timeout=EXIT_TIMEOUT)


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on `port`, from the kernel's TCP tables."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        path = Path(table)
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.partition(":")
            if state != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            if width == 8:
                found.add(".".join(str(b) for b in reversed(raw)))
            else:  # four little-endian 32-bit words
                words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
                found.add(b"".join(words).hex())
    return found


# -- graceful stop under load -----------------------------------------------------------------


@dataclass
class Outcome:
    started: float
    ended: float
    status: int | None = None
    complete: bool = False  # the whole body arrived and is the expected JSON
    error: str | None = None


def load(url: str, headers: dict[str, str], until: float, outcomes: list[Outcome]) -> None:
    """Send requests one after another until `until` (at most ten), each on a new connection
    (no keep-alive, so that no request rides a connection the server is closing), recording
    what happened to each. The client is made once: making one takes milliseconds, which
    would blur when a request really started."""
    no_keep_alive = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(headers=headers, timeout=15, limits=no_keep_alive) as client:
        for _ in range(10):
            if time.monotonic() >= until:
                return
            outcome = Outcome(started=time.monotonic(), ended=0.0)
            try:
                response = client.get(url)
                outcome.status = response.status_code
                body = response.json()
                data, pagination = body["data"], body["pagination"]
                outcome.complete = len(data) == min(pagination["limit"], pagination["total"])
            except httpx.TransportError as exc:
                outcome.error = type(exc).__name__
            except ValueError as exc:  # a body that is not whole JSON
                outcome.error = f"incomplete body: {exc}"
            outcome.ended = time.monotonic()
            outcomes.append(outcome)


def test_sigterm_under_load_answers_every_accepted_request_and_exits_0(launched):
    served = start()
    launched.append(served)
    state = httpx.get(
        f"{served.base}/__admin/state",
        headers={"Authorization": f"Bearer {served.admin_token}"},
        timeout=10,
    ).json()
    trainer = next(a["id"] for a in state["applications"] if a["name"] == "trainer")
    url = f"{served.base}/api/svc/v1/jobs/{trainer}/runs"
    headers = {"Authorization": f"Bearer {served.token}", "Prefer": f"delay={DELAY_MS}"}

    outcomes: list[Outcome] = []
    until = time.monotonic() + 1.5  # the load goes on for 0.5 s after the signal
    threads = [
        threading.Thread(target=load, args=(url, headers, until, outcomes), daemon=True)
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    signalled = time.monotonic()
    served.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(timeout=20)
    assert not any(thread.is_alive() for thread in threads)
    _, stderr = served.process.communicate(timeout=EXIT_TIMEOUT)
    exited = time.monotonic()

    assert served.process.returncode == 0, stderr
    assert exited - signalled < EXIT_TIMEOUT
    # Requests sent well before the signal were accepted by the server: each one, in flight
    # at the signal or not, gets its whole response.
    accepted = [o for o in outcomes if o.started < signalled - 0.1]
    in_flight = [o for o in accepted if o.ended > signalled]
    assert in_flight, "no request was in flight when the signal arrived"
    assert [(o.status, o.complete, o.error) for o in accepted] == [(200, True, None)] * len(
        accepted
    )
    # Whatever was answered, at any time, is whole and never a 5xx; the others could not
    # connect because the server had stopped listening.
    answered = [o for o in outcomes if o.status is not None]
    assert all(o.status == 200 and o.complete for o in answered), answered
    refused = [o for o in outcomes if o.status is None]
    assert all(o.started >= signalled - 0.1 for o in refused), refused
    assert "Traceback" not in stderr


def test_ctrl_c_stops_the_server_with_status_0(launched):
    served = start()
    launched.append(served)
    status, stderr = served.stop(signal.SIGINT)
    assert status == 0, stderr
    assert "Traceback" not in stderr


# -- where it listens ---------------------------------------------------------------------------


def test_host_0_0_0_0_warns_that_the_server_is_reachable_from_other_machines(launched):
    served = start("--host", "0.0.0.0")
    launched.append(served)
    listening = listening_addresses(served.port)
    status, stderr = served.stop(signal.SIGTERM)
    assert listening == {"0.0.0.0"}
    assert status == 0, stderr
    warnings = [line for line in stderr.splitlines() if "warning" in line.lower()]
    assert any(
        "0.0.0.0" in line and "reachable from other machines" in line for line in warnings
    ), stderr


def test_default_host_listens_on_127_0_0_1_only_and_does_not_warn(launched):
    served = start()
    launched.append(served)
    assert served.base == f"http://127.0.0.1:{served.port}"
    listening = listening_addresses(served.port)
    answered = httpx.get(f"{served.base}/api/svc/v1/personal-access-tokens/ci", timeout=10)
    status, stderr = served.stop(signal.SIGTERM)
    assert listening == {"127.0.0.1"}
    assert answered.status_code == 401  # reachable on loopback (without a token: 401)
    assert status == 0, stderr
    assert "reachable from other machines" not in stderr
