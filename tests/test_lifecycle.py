"""The `serve` process's lifecycle: a graceful stop under load, a stop bounded when a request
outlasts it, a second stop signal, Ctrl-C, and where it listens.

Each test starts `python -m mock_server serve --port 0` as a real process, reads what it
prints until it is ready, and stops it with a signal. Every wait is bounded; the process is
killed if a test fails half-way. Where the server listens, and whether it has read a
request, are read from the kernel's tables of TCP sockets (`/proc/net/tcp`,
`/proc/net/tcp6`) rather than guessed from a sleep, so these tests need Linux.
"""

from __future__ import annotations

import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mock_server.http.server import GRACEFUL_SHUTDOWN_SECONDS
from tests.budget import budget

START_TIMEOUT = 30.0  # seconds for the process to say it is ready
EXIT_TIMEOUT = 10.0  # seconds for the process to exit after a stop signal
URL = re.compile(r"control plane: (?P<base>http://(?P<host>[^/]+):(?P<port>\d+))/api/svc/v1")
ADMIN_TOKEN = re.compile(r"admin token:\s+(\S+)")
TOKEN = re.compile(r"^  token:\s+(\S+)", re.MULTILINE)
DELAY_MS = 500
LONG_DELAY_MS = 20_000  # far longer than a stop waits for a request


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
    with httpx.Client(headers=headers, timeout=budget(15), limits=no_keep_alive) as client:
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
        timeout=budget(10),
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
        thread.join(timeout=budget(20))
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


# -- a stop that a request outlasts ------------------------------------------------------------


@dataclass
class HeldStop:
    status: int
    stderr: str
    seconds: float  # from the last signal to the process's exit
    client: str  # what the held request's client got: a status line, or what became of it


def unread_bytes(port: int, client_port: int) -> int | None:
    """Bytes the client on `client_port` sent that the server on `port` has not read yet
    (in flight, or waiting in the server's receive queue), from the kernel's TCP tables;
    None while the server's side of the connection is not there."""
    sent = received = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            fields = row.split()
            local, remote = (int(a.rpartition(":")[2], 16) for a in fields[1:3])
            tx_queue, rx_queue = (int(q, 16) for q in fields[4].split(":"))
            if (local, remote) == (client_port, port):
                sent = tx_queue
            elif (local, remote) == (port, client_port):
                received = rx_queue
    return None if sent is None or received is None else sent + received


def stop_holding_a_request(served: Served, *signals: signal.Signals) -> HeldStop:
    """Send a request that a delay holds far longer than a stop waits, wait until the
    server has read it, then send the signals, each once the previous one has stopped the
    server listening (two signals pending at once would be merged into one)."""
    held = socket.create_connection(("127.0.0.1", served.port), timeout=EXIT_TIMEOUT)
    with held:
        held.sendall(
            b"GET /api/svc/v1/personal-access-tokens/ci HTTP/1.1\r\nHost: mock\r\n"
            b"Authorization: Bearer %s\r\nPrefer: delay=%d\r\n\r\n"
            % (served.token.encode(), LONG_DELAY_MS)
        )
        deadline = time.monotonic() + START_TIMEOUT
        while unread_bytes(served.port, held.getsockname()[1]) != 0:
            assert time.monotonic() < deadline, "the server did not read the request"
            time.sleep(0.01)
        for n, sig in enumerate(signals):
            if n:
                while listening_addresses(served.port):
                    assert time.monotonic() < deadline, "the server kept listening"
                    time.sleep(0.01)
            signalled = time.monotonic()
            served.process.send_signal(sig)
        _, stderr = served.process.communicate(timeout=EXIT_TIMEOUT)
        exited = time.monotonic()
        try:
            answer = held.recv(65536)
            client = answer.split(b"\r\n")[0].decode() if answer else "closed, unanswered"
        except ConnectionResetError:
            client = "reset"
    return HeldStop(served.process.returncode, stderr, exited - signalled, client)


def test_sigterm_during_a_long_delay_exits_0_after_the_grace_period(launched, tmp_path: Path):
    report = tmp_path / "report.json"
    served = start("--report", str(report))
    launched.append(served)
    stop = stop_holding_a_request(served, signal.SIGTERM)
    assert stop.status == 0, stop.stderr
    # It waited for the held request, but not for its delay.
    assert GRACEFUL_SHUTDOWN_SECONDS - 0.5 < stop.seconds < GRACEFUL_SHUTDOWN_SECONDS + 1.5
    assert report.exists()  # a stop cut short still writes the report
    assert "Traceback" not in stop.stderr


def test_request_outlasting_the_grace_period_gets_its_connection_closed(launched):
    served = start()
    launched.append(served)
    stop = stop_holding_a_request(served, signal.SIGTERM)
    assert stop.client == "closed, unanswered"  # not a 500 in the mock's name
    assert "Traceback" not in stop.stderr


@pytest.mark.parametrize(
    ("first", "second", "status"),
    [
        pytest.param(signal.SIGINT, signal.SIGINT, 130, id="ctrl-c-twice"),
        pytest.param(signal.SIGTERM, signal.SIGTERM, 143, id="sigterm-twice"),
        pytest.param(signal.SIGTERM, signal.SIGINT, 130, id="sigterm-then-ctrl-c"),
    ],
)
def test_second_stop_signal_exits_at_once_with_one_line(
    launched, tmp_path: Path, first: signal.Signals, second: signal.Signals, status: int
):
    report = tmp_path / "report.json"
    served = start("--report", str(report))
    launched.append(served)
    stop = stop_holding_a_request(served, first, second)
    assert stop.status == status, stop.stderr
    assert stop.seconds < 1.0  # not waiting out the grace period
    assert stop.stderr == (
        f"platform-mock: second {second.name}, stopped at once without a report\n"
    )
    assert not report.exists()


def test_second_ctrl_c_closes_the_held_requests_connection(launched):
    served = start()
    launched.append(served)
    stop = stop_holding_a_request(served, signal.SIGINT, signal.SIGINT)
    assert stop.client == "closed, unanswered"  # not uvicorn's 500 for a cancelled request


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
    answered = httpx.get(f"{served.base}/api/svc/v1/personal-access-tokens/ci", timeout=budget(10))
    status, stderr = served.stop(signal.SIGTERM)
    assert listening == {"127.0.0.1"}
    assert answered.status_code == 401  # reachable on loopback (without a token: 401)
    assert status == 0, stderr
    assert "reachable from other machines" not in stderr
