"""What a test of a client's suite costs under the pytest plugin: in process against over TCP.

A test, as the plugin's users write one: the world reset, a new client, then five calls (list a
job's runs, stage an artifact version, tag it, get or create a token, delete a secret group),
each its operation's example request of the default world. Each round runs the test for a
few seconds with the plugin's in-process client (`mock_server.transport`), then with an
httpx client over loopback TCP to the same mock, in alternating order (this machine is shared
and noisy); the figure is the median of the per-round ratios.

    python bench/test_cost.py [--rounds 8] [--seconds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import httpx

from mock_server import PlatformMock, catalog, contract
from mock_server.pytest_plugin import ssl_context
from mock_server.server import BackgroundServer
from mock_server.transport import IN_PROCESS_URL, MockTransport

CALLS = (
    "listJobRuns",
    "stageArtifactVersion",
    "applyArtifactVersionTags",
    "getOrCreatePersonalAccessToken",
    "deleteSecretGroup",
)


def one_test(mock: PlatformMock, client: Callable[[], httpx.Client], root: str) -> None:
    mock.reset()
    with client() as api:
        for operation_id in CALLS:
            request = catalog.example(operation_id).request(mock.store)
            operation = contract.operations()[operation_id]
            base = root + (
                mock.gateway_prefix if operation.document == contract.GATEWAY_SPEC else ""
            )
            caller = mock.store.identity.subject_named("user", request.caller)
            response = api.request(
                request.method,
                base + request.path,
                params=request.query,
                json=request.body,
                headers={"Authorization": f"Bearer {mock.auth.dev_token(caller)}"},
            )
            assert response.status_code == 200, (operation_id, response.text)


def per_test_ms(
    mock: PlatformMock, client: Callable[[], httpx.Client], root: str, seconds: float
) -> float:
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.perf_counter()
        one_test(mock, client, root)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    mock = PlatformMock()
    transport = MockTransport(mock)
    context = ssl_context()
    with BackgroundServer(mock) as server:
        kinds = {
            "in process": (lambda: httpx.Client(transport=transport), IN_PROCESS_URL),
            "tcp": (lambda: httpx.Client(verify=context), server.url),
        }
        for client, root in kinds.values():  # warm up both
            per_test_ms(mock, client, root, 1.0)
        ratios, figures = [], {name: [] for name in kinds}
        for round_number in range(args.rounds):
            order = list(kinds) if round_number % 2 == 0 else list(reversed(kinds))
            measured = {name: per_test_ms(mock, *kinds[name], args.seconds) for name in order}
            for name, value in measured.items():
                figures[name].append(value)
            ratios.append(measured["in process"] / measured["tcp"])
            print(
                f"round {round_number + 1}: in process {measured['in process']:.2f} ms, "
                f"tcp {measured['tcp']:.2f} ms, ratio {ratios[-1]:.2f}"
            )
    print(
        f"a test (reset, new client, 5 calls): in process "
        f"{statistics.median(figures['in process']):.2f} ms, over TCP "
        f"{statistics.median(figures['tcp']):.2f} ms; in process / TCP, median of "
        f"{args.rounds} rounds: {statistics.median(ratios):.2f}"
    )


if __name__ == "__main__":
    main()
