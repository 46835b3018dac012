"""What the one masking rule costs a request: the journal's writer (`Entry.mask`), and the rule
applied to a body as it is read (`Entry.shown_response`), each per entry; and CPU time per
request in process with the writer's masking and without it, in alternating rounds (this
machine is shared: the figure is the median of the rounds).

    python bench/masking_cost.py [--rounds 10] [--requests 100]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import httpx

from mock_server import PlatformMock
from mock_server.core import masking
from mock_server.http.transport import IN_PROCESS_URL, MockTransport
from mock_server.services import journal


def best(call: Callable[[], Any], number: int) -> float:
    """Microseconds a call takes, at best of 7 repeats."""
    return min(timeit.repeat(call, number=number, repeat=7)) / number * 1e6


def per_entry(mock: PlatformMock, token: str) -> None:
    print("per entry (best of 7 repeats):")
    credentials = masking.credentials_of({"authorization": f"Bearer {token}"})
    for entry in mock.journal:
        kept = dataclasses.replace(entry, credentials=credentials)
        copied = best(lambda kept=kept: dataclasses.replace(kept), 2000)
        written = best(lambda kept=kept: dataclasses.replace(kept).mask(), 2000) - copied
        read = best(lambda entry=entry: entry.shown_response, 200)
        print(
            f"  {entry.operation_id:24} answer {len(entry.raw_response):6} B: "
            f"writer {written:6.1f} us, answer read {read:7.1f} us"
        )


def per_request(requests: dict[str, Callable[[], Any]], rounds: int, count: int) -> None:
    print(f"per request, CPU time (median of {rounds} rounds of {count}):")
    masked = journal.Entry.mask

    def unmasked(self: journal.Entry) -> tuple[str, ...]:
        self.credentials = ()
        return ()

    for name, send in requests.items():
        found: dict[str, list[float]] = {"with": [], "without": []}
        for round_ in range(rounds):
            for mode in ("with", "without") if round_ % 2 else ("without", "with"):
                journal.Entry.mask = masked if mode == "with" else unmasked  # type: ignore[method-assign]
                started = time.process_time()
                for _ in range(count):
                    send()
                found[mode].append((time.process_time() - started) / count * 1e6)
        journal.Entry.mask = masked  # type: ignore[method-assign]
        on, off = statistics.median(found["with"]), statistics.median(found["without"])
        print(f"  {name:24} {on:6.0f} us with the writer's masking, {off:6.0f} us without")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    mock = PlatformMock()
    token = mock.auth.dev_token()
    trainer = mock.store.deployments.application_named("trainer").id
    client = httpx.Client(
        transport=MockTransport(mock),
        base_url=IN_PROCESS_URL + "/api/svc/v1",
        headers={"Authorization": f"Bearer {token}"},
    )
    secrets = {"secretIds": ["secret-hf-token", "secret-openai-api-key"]}
    requests: dict[str, Callable[[], Any]] = {
        "listJobRuns limit=100": lambda: client.get(f"/jobs/{trainer}/runs", params={"limit": 100}),
        "listSecretDeployments": lambda: client.post("/secrets/deployments", json=secrets),
        "getSession": lambda: client.get("/session"),
    }
    for send in requests.values():
        send()
    per_entry(mock, token)
    per_request(requests, args.rounds, args.requests)


if __name__ == "__main__":
    main()
