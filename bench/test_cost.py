"""What a test of a client's suite costs under the pytest plugin: in process, over TCP, and Prism.

A test, as the plugin's users write one: the world reset, a new client, then five calls (list a
job's runs, stage an artifact version, tag it, get or create a token, delete a secret group),
each its operation's example request of the default world. It runs with the plugin's
in-process client (`mock_server.http.transport`: every layer, no socket) and with an httpx client
over loopback TCP to the same mock served in a thread of this process (the plugin's `url`).
`bench/run.py` runs the same test, with this module's code, against Prism too (a new client
and the five calls: Prism has no reset), in its rotating rounds.

Alone, each round runs the test for a few seconds in process, then over TCP, in alternating
order (this machine is shared and noisy); the figure is the median of the per-round ratios.

    python bench/test_cost.py [--rounds 8] [--seconds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.handlers import catalog
from mock_server.http.server import BackgroundServer
from mock_server.http.transport import IN_PROCESS_URL, MockTransport
from mock_server.pytest_plugin import ssl_context

CALLS = (
    "listJobRuns",
    "stageArtifactVersion",
    "applyArtifactVersionTags",
    "getOrCreatePersonalAccessToken",
    "deleteSecretGroup",
)
IN_PROCESS, TCP = "in process", "tcp"


@dataclass
class Call:
    """One request of the test, as sent under a base URL (the mock's or Prism's)."""

    operation_id: str
    method: str
    path: str  # below the mock's root (the gateway's prefix included)
    spec_path: str  # as the operation's document writes it (Prism serves each document apart)
    query: Any
    body: Any
    headers: dict[str, str]


def calls(mock: PlatformMock) -> list[Call]:
    """The five calls on this mock's world, each with a token of its example's caller."""
    found = []
    for operation_id in CALLS:
        request = catalog.example(operation_id).request(mock.store)
        operation = contract.operations()[operation_id]
        prefix = mock.gateway_prefix if operation.document == contract.GATEWAY_SPEC else ""
        caller = mock.store.identity.subject_named("user", request.caller)
        found.append(
            Call(
                operation_id,
                request.method,
                prefix + request.path,
                request.path,
                request.query,
                request.body,
                {"Authorization": f"Bearer {mock.auth.dev_token(caller)}"},
            )
        )
    return found


@dataclass
class Kind:
    """How a test reaches its server: a client, the root of the calls' paths, and the reset
    before each test (None: the server has none)."""

    client: Callable[[], httpx.Client]
    root: str
    reset: Callable[[], None] | None
    spec_paths: bool = False  # the calls' paths as their document writes them (Prism)


def one_test(kind: Kind, test_calls: list[Call]) -> int:
    """The test once; how many of its answers were not 2xx."""
    if kind.reset is not None:
        kind.reset()
    failed = 0
    with kind.client() as api:
        for call in test_calls:
            path = call.spec_path if kind.spec_paths else call.path
            response = api.request(
                call.method, kind.root + path, params=call.query, json=call.body,
                headers=call.headers,
            )  # fmt: skip
            failed += not response.is_success
    return failed


def per_test(kind: Kind, test_calls: list[Call], seconds: float) -> dict[str, Any]:
    """The test, again and again for `seconds`: the median wall time of one, in ms."""
    times, failed = [], 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.perf_counter()
        failed += one_test(kind, test_calls)
        times.append((time.perf_counter() - started) * 1000)
    return {"tests": len(times), "per_test_ms": statistics.median(times), "not_2xx": failed}


def mock_kinds(mock: PlatformMock, server: BackgroundServer) -> dict[str, Kind]:
    """The plugin's two ways to the session's mock: in process, and over TCP to it served."""
    transport = MockTransport(mock)
    context = ssl_context()  # made once per session by the plugin, not once per test
    return {
        IN_PROCESS: Kind(lambda: httpx.Client(transport=transport), IN_PROCESS_URL, mock.reset),
        TCP: Kind(lambda: httpx.Client(verify=context), server.url, mock.reset),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    mock = PlatformMock()
    test_calls = calls(mock)
    with BackgroundServer(mock) as server:
        kinds = mock_kinds(mock, server)
        for kind in kinds.values():  # warm up both
            per_test(kind, test_calls, 1.0)
        ratios, figures = [], {name: [] for name in kinds}
        for round_number in range(args.rounds):
            order = list(kinds) if round_number % 2 == 0 else list(reversed(kinds))
            measured = {
                name: per_test(kinds[name], test_calls, args.seconds)["per_test_ms"]
                for name in order
            }
            for name, value in measured.items():
                figures[name].append(value)
            ratios.append(measured[IN_PROCESS] / measured[TCP])
            print(
                f"round {round_number + 1}: in process {measured[IN_PROCESS]:.2f} ms, "
                f"tcp {measured[TCP]:.2f} ms, ratio {ratios[-1]:.2f}"
            )
    print(
        f"a test (reset, new client, 5 calls): in process "
        f"{statistics.median(figures[IN_PROCESS]):.2f} ms, over TCP "
        f"{statistics.median(figures[TCP]):.2f} ms; in process / TCP, median of "
        f"{args.rounds} rounds: {statistics.median(ratios):.2f}"
    )


if __name__ == "__main__":
    main()
