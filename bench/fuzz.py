"""A long fuzzing run of the mock against its own contract, for local use (not a test).

    python bench/fuzz.py --examples 500 --seed 7

Starts a mock on the default world (`BackgroundServer(PlatformMock())`) and runs the checks of
`tests/test_fuzz.py` with more examples (both use `bench/fuzzing.py`: the same schemas,
configuration, dictionaries, hooks and custom checks): every operation of both documents
gets `--examples` generated requests, positive and negative, each on a fresh world; then
each linked workflow runs `--scenarios` state-machine scenarios. Unlike the test, a failure
does not stop the run: every failing request is counted, and the summary lists each
distinct failure once with a curl command that reproduces it.
Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hypothesis  # noqa: E402
from hypothesis import HealthCheck  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis import Case, GenerationMode, Response  # noqa: E402
from schemathesis.core.failures import Failure, FailureGroup, ServerError  # noqa: E402

from bench.fuzzing import (  # noqa: E402
    CONTROL_PLANE,
    GATEWAY,
    KEY,
    TOKEN,
    WORKFLOWS,
    WORLD,
    WORLD_SEED,
    ContractModel,
    business_rule_400_only,
    linked_contract,
    world_dictionaries,
)
from mock_server import MockConfig, PlatformMock  # noqa: E402
from mock_server.http.server import BackgroundServer  # noqa: E402

MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


@dataclass
class Tally:
    """Requests sent and failures found, by operation."""

    examples: Counter[str] = field(default_factory=Counter)
    steps: Counter[str] = field(default_factory=Counter)
    failing_requests: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    violations: int = 0
    # (operation, kind, first line of the message) -> (count, curl of the first one)
    distinct: dict[tuple[str, str, str], list[Any]] = field(default_factory=dict)

    def record(self, label: str, group: FailureGroup, response: Response, curl: str) -> None:
        self.failing_requests[label] += 1
        for failure in group.exceptions:
            if isinstance(failure, ServerError):
                self.server_errors += 1
                what = _error_message(response)  # tells one cause of a 500 from another
            else:
                self.violations += 1
                what = (failure.message.strip().splitlines() or [""])[0]
            entry = self.distinct.setdefault((label, _kind(failure), what[:160]), [0, curl])
            entry[0] += 1


def _error_message(response: Response) -> str:
    try:
        return f"{response.status_code}: {response.json()['message']}"
    except (ValueError, KeyError, TypeError):
        return f"{response.status_code}: {response.text[:120]}"


def _kind(failure: Failure) -> str:
    return f"{failure.code} {failure.title}" if failure.title else failure.code


def _settings(examples: int, steps: int = 50) -> hypothesis.settings:
    return hypothesis.settings(
        max_examples=examples,
        stateful_step_count=steps,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],  # no shrinking
    )


def _operation_run(mock: PlatformMock, tally: Tally, label: str, base_url: str, strategy, args):
    @hypothesis.seed(args.seed)
    @_settings(args.examples)
    @hypothesis.given(case=strategy)
    def run(case: Case) -> None:
        tally.examples[label] += 1
        mock.reset(seed=WORLD_SEED)  # a fresh world for every request, as in the test
        response = case.call(base_url=base_url)
        try:
            case.validate_response(
                response,
                additional_checks=[business_rule_400_only],
                transport_kwargs={"base_url": base_url},
            )
        except FailureGroup as group:
            tally.record(label, group, response, case.as_curl_command(base_url=base_url))

    return run


def fuzz_operations(mock: PlatformMock, server: BackgroundServer, tally: Tally, args) -> None:
    for schema, base_url in ((CONTROL_PLANE, server.url), (GATEWAY, server.gateway_url)):
        for result in schema.get_all_operations():
            operation = result.ok()
            label = operation.label
            strategy = st.one_of([operation.as_strategy(generation_mode=mode) for mode in MODES])
            run = _operation_run(mock, tally, label, base_url, strategy, args)
            started = time.monotonic()
            run()
            print(
                f"  {label:55} {tally.examples[label]:6} requests"
                f" {tally.failing_requests[label]:5} failing  ({time.monotonic() - started:.1f}s)",
                flush=True,
            )


def _workflow_machine(links, label: str, mock: PlatformMock, server, tally: Tally) -> type:
    base = linked_contract(links).as_state_machine()

    class Workflow(base):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            mock.reset(seed=WORLD_SEED)  # each scenario starts from the initial world
            self.model = ContractModel()

        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            return {"base_url": server.url}

        def step(self, input):  # type: ignore[no-untyped-def]
            tally.steps[label] += 1
            return super().step(input)

        def validate_response(self, response, case, additional_checks=None, **kwargs):  # type: ignore[no-untyped-def]
            checks = [*(additional_checks or []), self.model.sequence_rules]
            try:
                super().validate_response(response, case, additional_checks=checks, **kwargs)
            except FailureGroup as group:
                tally.record(label, group, response, case.as_curl_command(base_url=server.url))

    return Workflow


def run_workflows(mock: PlatformMock, server: BackgroundServer, tally: Tally, args) -> None:
    for workflow, links in WORKFLOWS.items():
        label = f"workflow {workflow}"
        machine = _workflow_machine(links, label, mock, server, tally)
        started = time.monotonic()
        hypothesis.seed(args.seed)(machine).run(settings=_settings(args.scenarios, args.steps))
        print(
            f"  {label:55} {tally.steps[label]:6} calls   "
            f" {tally.failing_requests[label]:5} failing  ({time.monotonic() - started:.1f}s)",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="requests per operation")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed")
    parser.add_argument("--scenarios", type=int, default=100, help="scenarios per workflow")
    parser.add_argument("--steps", type=int, default=10, help="at most this many calls a scenario")
    args = parser.parse_args(argv)

    # Each 500 is reported below with its request; the mock's own traceback would bury them.
    logging.getLogger("mock_server").setLevel(logging.CRITICAL)
    # Seed 0: the world the dictionaries of tests/test_fuzz.py name, signed with its key.
    mock = PlatformMock(MockConfig(signing_key=KEY))
    if world_dictionaries(mock.store) != WORLD or mock.auth.dev_token() != TOKEN:
        parser.error("the default world is not the one tests/test_fuzz.py fuzzes")
    tally = Tally()
    started = time.monotonic()
    with BackgroundServer(mock) as server:
        print(f"Fuzzing {server.url} (seed {args.seed}, {args.examples} requests per operation)")
        fuzz_operations(mock, server, tally, args)
        run_workflows(mock, server, tally, args)

    operations = len(tally.examples)
    print()
    print(f"operations fuzzed:       {operations}")
    print(f"examples generated:      {sum(tally.examples.values())}")
    print(f"workflow calls:          {sum(tally.steps.values())}")
    print(f"failing requests:        {sum(tally.failing_requests.values())}")
    print(f"  server errors (5xx):   {tally.server_errors}")
    print(f"  contract violations:   {tally.violations}")
    print(f"elapsed:                 {time.monotonic() - started:.0f}s")
    if tally.distinct:
        print(f"\n{len(tally.distinct)} distinct failures:")
        for (label, kind, message), (count, curl) in sorted(tally.distinct.items()):
            print(f"\n- {label}: {kind} (x{count})\n    {message}\n    {curl}")
    return 1 if tally.distinct else 0


if __name__ == "__main__":
    sys.exit(main())
