"""Cost that does not grow with the data at rest: each operation's request on worlds 10x and 100x
bigger than a base one.

Three worlds: the default fixtures plus `--unit` users, each with a grant on its own workspace
and a personal access token, and `--unit` job runs on a job of the default world; then 10
and 100 times as many. Each operation's example request of the default world (the catalog's)
is sent in process (`mock_server.http.transport`, every layer, no socket) as a PAT of the world
authenticates it, and its CPU time per request measured over `--seconds` seconds per world
and operation, the worlds in rotating order each round (this machine is shared). The figure
is, per operation, the median over rounds of the per-round ratio to the base world: 1.0 is
flat.

With `--tokens N`, instead: the same request (GET job runs) authenticated by a personal
access token, on the default world with 10 tokens and with N (200,000 by default in
`token_cost`), each world in a process of its own (as a served mock holds one world), in
rotating rounds; the figure is the median of the per-round ratios of CPU time per request.

    python bench/flat.py [--unit 500] [--rounds 3] [--seconds 1]
    python bench/flat.py --tokens 200000 [--rounds 5] [--seconds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import statistics
import time
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from typing import Any

import httpx

from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.core.coordinates import CONTROL_PLANE_PREFIX
from mock_server.fixtures import loader as fixtures
from mock_server.handlers import catalog
from mock_server.http.mock import MockConfig
from mock_server.http.transport import IN_PROCESS_URL, MockTransport


def bigger(unit: int) -> dict:
    """`unit` users (each with a workspace, a grant and a token) and `unit` runs."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    users = [{"email": f"user-{i}@acme.example"} for i in range(unit)]
    return {
        "users": users,
        "workspaces": [{"name": f"ws-{i}", "cluster": "prod-cluster"} for i in range(unit)],
        "grants": [
            {
                "subject": f"user:user-{i}@acme.example",
                "role": "workspace-viewer",
                "resource": f"workspace:ws-{i}",
            }
            for i in range(unit)
        ],
        "personalAccessTokens": [
            {"owner": f"user-{i}@acme.example", "name": "ci"} for i in range(unit)
        ],
        "applications": [
            {
                "name": "scale-job",
                "type": "job",
                "workspace": "ml-team",
                "deployments": [
                    {
                        "manifest": {
                            "image": {"type": "image", "image_uri": "registry.acme.example/j:1"},
                            "trigger": {"type": "manual"},
                        }
                    }
                ],
                "runs": [
                    {
                        "status": "FINISHED",
                        "createdAt": (start + timedelta(seconds=i))
                        .isoformat()
                        .replace("+00:00", "Z"),
                        "durationSeconds": 10,
                    }
                    for i in range(unit)
                ],
            }
        ],
    }


# Owners of the token worlds' tokens: the same users whatever the number of tokens.
TOKEN_OWNERS = 100


def tokens(count: int) -> dict:
    """`count` personal access tokens, spread over TOKEN_OWNERS users of their own."""
    return {
        "users": [{"email": f"holder-{i}@acme.example"} for i in range(TOKEN_OWNERS)],
        "personalAccessTokens": [
            {"owner": f"holder-{i % TOKEN_OWNERS}@acme.example", "name": f"token-{i}"}
            for i in range(count)
        ],
    }


class World:
    """A mock of the default world and `document`, with an in-process client and a PAT of
    its default user."""

    def __init__(self, document: dict | None):
        started = time.perf_counter()
        extra = [fixtures.check(document, "the benchmark's world")] if document else []
        self.mock = PlatformMock(MockConfig())
        self.mock.reset(extra=extra)
        self.mock.store._snapshots.clear()  # keep one world's memory, not two
        self.built_s = time.perf_counter() - started
        self.client = httpx.Client(transport=MockTransport(self.mock), base_url=IN_PROCESS_URL)
        self._pats: dict[str, str] = {}

    def pat(self, email: str) -> str:
        """A PAT of the user, which a request authenticates by looking it up: made once,
        through the API."""
        if email not in self._pats:
            user = self.mock.store.identity.subject_named("user", email)
            made = self.client.get(
                CONTROL_PLANE_PREFIX + "/personal-access-tokens/bench",
                headers={"Authorization": f"Bearer {self.mock.auth.dev_token(user)}"},
            )
            self._pats[email] = made.json()["token"]
        return self._pats[email]

    def cpu_per_request_us(self, operation_id: str, seconds: float) -> float:
        request = catalog.example(operation_id).request(self.mock.store)
        operation = contract.operations()[operation_id]
        root = self.mock.gateway_prefix if operation.document == contract.GATEWAY_SPEC else ""
        headers = {"Authorization": f"Bearer {self.pat(request.caller)}"}
        count, cpu_started = 0, time.process_time()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            # A request that changes the world (stage, delete) changes it once; the world is
            # reset between requests, and the reset's cost is taken out.
            reset_started = time.process_time()
            if request.method != "GET":
                self.mock.store.reset()
            cpu_started += time.process_time() - reset_started
            self.client.request(
                request.method, root + request.path, params=request.query,
                json=request.body, headers=headers,
            )  # fmt: skip
            count += 1
        return (time.process_time() - cpu_started) * 1e6 / count


def _token_world(count: int, connection: Connection) -> None:
    """A process holding the default world and `count` tokens: measures what it is asked."""
    world = World(tokens(count))
    connection.send(world.built_s)
    while (asked := connection.recv()) is not None:
        connection.send(world.cpu_per_request_us(*asked))


def token_cost(
    many: int = 200_000,
    few: int = 10,
    rounds: int = 5,
    seconds: float = 2.0,
    operation_id: str = "listJobRuns",
) -> dict[str, Any]:
    """CPU time of a PAT-authenticated request with `many` tokens in the world and with
    `few`, each world in a process of its own, the order swapped every round: the medians,
    and the median of the per-round ratios (many / few)."""
    context = multiprocessing.get_context("spawn")
    workers: dict[int, tuple[Any, Connection]] = {}
    try:
        for count in (few, many):
            ours, theirs = context.Pipe()
            process = context.Process(target=_token_world, args=(count, theirs), daemon=True)
            process.start()
            workers[count] = (process, ours)
        built = {count: connection.recv() for count, (_, connection) in workers.items()}
        for _, connection in workers.values():  # warm up
            connection.send((operation_id, 0.5))
            connection.recv()
        costs: dict[int, list[float]] = {few: [], many: []}
        ratios = []
        for round_number in range(rounds):
            order = [few, many] if round_number % 2 == 0 else [many, few]
            for count in order:
                workers[count][1].send((operation_id, seconds))
                costs[count].append(workers[count][1].recv())
            ratios.append(costs[many][-1] / costs[few][-1])
    finally:
        for process, connection in workers.values():
            with contextlib.suppress(OSError):  # it has ended already
                connection.send(None)
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
    return {
        "operation": operation_id,
        "few": few,
        "many": many,
        "built_s": {str(count): value for count, value in built.items()},
        "few_us": statistics.median(costs[few]),
        "many_us": statistics.median(costs[many]),
        "ratio": statistics.median(ratios),
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument(
        "--tokens", type=int, default=None, help="compare a PAT request at this many tokens"
    )
    args = parser.parse_args()
    if args.tokens is not None:
        found = token_cost(args.tokens, rounds=args.rounds, seconds=args.seconds)
        print(
            f"{found['operation']} with a PAT: {found['few_us']:.0f} us of CPU at "
            f"{found['few']:,} tokens, {found['many_us']:.0f} us at {found['many']:,}; "
            f"median ratio of {found['rounds']} rounds {found['ratio']:.3f}"
        )
        return
    sizes = {"base": args.unit, "10x": 10 * args.unit, "100x": 100 * args.unit}
    worlds = {}
    for name, unit in sizes.items():
        worlds[name] = World(bigger(unit))
        print(
            f"{name}: {unit} users, grants, tokens and runs, built in {worlds[name].built_s:.1f} s"
        )
    operations = [op for op in catalog.PLATFORM if catalog.PLATFORM[op].example is not None]
    ratios: dict[str, dict[str, list[float]]] = {op: {"10x": [], "100x": []} for op in operations}
    costs: dict[str, dict[str, list[float]]] = {op: {n: [] for n in sizes} for op in operations}
    names = list(sizes)
    for round_number in range(args.rounds):
        order = names[round_number % 3 :] + names[: round_number % 3]
        for operation_id in operations:
            measured = {n: worlds[n].cpu_per_request_us(operation_id, args.seconds) for n in order}
            for name, value in measured.items():
                costs[operation_id][name].append(value)
            for name in ("10x", "100x"):
                ratios[operation_id][name].append(measured[name] / measured["base"])
    print(f"\n{'operation':34} {'base us':>9} {'10x':>6} {'100x':>6}")
    for operation_id in operations:
        base = statistics.median(costs[operation_id]["base"])
        ten = statistics.median(ratios[operation_id]["10x"])
        hundred = statistics.median(ratios[operation_id]["100x"])
        print(f"{operation_id:34} {base:9.0f} {ten:6.2f} {hundred:6.2f}")


if __name__ == "__main__":
    main()
