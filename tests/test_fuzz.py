"""Generated-request fuzzing: schemathesis drives the live mock against its own contract.

Both documents (`spec/control-plane.yaml` at `server.url`, `spec/gateway.yaml` at
`server.gateway_url`) are loaded from disk and every operation is fuzzed over real HTTP with
the default user's bearer token, in schemathesis' examples, coverage and fuzzing phases, with
positive and negative data, on a fresh world for every example. Every response goes through
all of schemathesis' checks, among them `not_a_server_error`, `status_code_conformance`,
`content_type_conformance`, `response_schema_conformance`, `positive_data_acceptance` (the
accepted statuses are configured, see ACCEPTED), `negative_data_rejection` and `ignored_auth`
(which resends each 2xx request without and with a bad token); a failure fails the test with
schemathesis' own report and a curl command that reproduces it on a fresh mock. One item per
operation: select one with `-k`, e.g. `-k "jobs"`.

The generator also draws, with some probability (schemathesis dictionaries), ids and names
that exist in the world, so that positive cases reach the 2xx answers and not only 404s, and
values that often break servers (line breaks, 64-bit overflows).

The contract has no OpenAPI links, so schemathesis' state machine would have only the links
it infers, and those change with every operation added. The stateful tests load a copy of
the contract with links added here and inference off, one workflow per machine, and check
on every step the rules of the contract that only a sequence of calls shows
(`ContractModel`).

The seed is fixed (SEED; the link choices inside schemathesis' state machine use true
randomness of their own) and examples per operation are bounded. `bench/fuzz.py` runs the
same checks with more examples; what both use is `bench/fuzzing.py`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.schemas import OpenApiSchema

from bench.fuzzing import (
    CONTROL_PLANE,
    GATEWAY,
    KEY,
    SCENARIOS,
    SEED,
    STEPS,
    TOKEN,
    WORKFLOW,
    WORKFLOWS,
    WORLD,
    WORLD_SEED,
    ContractModel,
    business_rule_400_only,
    link_name,
    linked_contract,
    world_dictionaries,
)
from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.http.server import BackgroundServer
from mock_server.services.auth import Signer

# Contract report: negative data: requests the contract refuses, sent on purpose.
pytestmark = pytest.mark.platform_mock(expect_violations=True)

if TYPE_CHECKING:
    from schemathesis.generation.stateful.state_machine import APIStateMachine

# Hypothesis warns that a function-scoped fixture (`mock`, through `world`) is set up once
# per test, that is once per operation, and not once per example: these tests reset the
# world themselves before every example (see `_call_and_validate`).
RESET_BY_THE_TEST = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _call_and_validate(case: schemathesis.Case, base_url: str, mock: PlatformMock) -> None:
    # A fresh world before every example: Hypothesis replays a failing example to shrink it
    # and to report it, and the reported curl command must reproduce on a fresh mock. Without
    # the reset, an example's outcome would depend on the ones before it (the first delete of
    # a real secret group is 200, every later one 404; a staged version number exists after
    # the first stage), so a failure could not be replayed. Sequences of calls are the state
    # machine's job, below.
    mock.reset(seed=WORLD_SEED)
    case.call_and_validate(base_url=base_url, additional_checks=[business_rule_400_only])


@pytest.fixture
def world(mock: PlatformMock) -> Iterator[PlatformMock]:
    """The mock with the world the generator's ids come from (reset with WORLD_SEED),
    signing with the fuzzing run's key for the test."""
    signer = mock.store.signer
    mock.store.signer = Signer(KEY)
    try:
        assert world_dictionaries(mock.store) == WORLD, "the served world is not the fuzzed one"
        assert mock.auth.dev_token() == TOKEN
        yield mock
    finally:
        mock.store.signer = signer


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Schemathesis names each operation's item `test_...[METHOD /path]`, but pytest 9 builds
    # node ids from the function's name and parameters only, so all operations of a document
    # would share one node id (and one line in -v and in the summary). A parameter naming the
    # document gives each item its own id: `test_...[GET /path][control-plane]`.
    if "document" in metafunc.fixturenames:
        metafunc.parametrize("document", [DOCUMENTS[metafunc.function.__name__]])


DOCUMENTS = {
    "test_control_plane_operation_keeps_its_contract": "control-plane",
    "test_gateway_operation_keeps_its_contract": "gateway",
}


@pytest.mark.platform_mock(seed=WORLD_SEED)
@CONTROL_PLANE.parametrize()
@RESET_BY_THE_TEST
def test_control_plane_operation_keeps_its_contract(
    case: schemathesis.Case, document: str, server: BackgroundServer, world: PlatformMock
):
    _call_and_validate(case, server.url, world)


@pytest.mark.platform_mock(seed=WORLD_SEED)
@GATEWAY.parametrize()
@RESET_BY_THE_TEST
def test_gateway_operation_keeps_its_contract(
    case: schemathesis.Case, document: str, server: BackgroundServer, world: PlatformMock
):
    _call_and_validate(case, server.gateway_url, world)


# --- Stateful: workflows over links added to a copy of the contract ----------------------


def test_every_link_of_the_spec_belongs_to_a_workflow():
    document = contract.resolved(contract.spec(contract.CONTROL_PLANE_SPEC))
    links = [
        link
        for methods in document["paths"].values()
        for definition in methods.values()
        for response in definition["responses"].values()
        for link in response.get("links", {}).values()
    ]
    assert links and all(WORKFLOW in link for link in links)


def _state_machine(
    schema: OpenApiSchema, server: BackgroundServer, mock: PlatformMock, steps: Counter[str]
) -> type[APIStateMachine]:
    """Schemathesis' state machine over the schema's links, against the live mock, each
    scenario on a fresh world and each step also checked against `ContractModel`; `steps`
    counts the links followed with the data they carry."""
    base = schema.as_state_machine()

    class Workflow(base):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            mock.reset(seed=WORLD_SEED)  # each scenario starts from the initial world
            self.model = ContractModel()

        def get_call_kwargs(self, case):
            return {"base_url": server.url}

        def step(self, input):
            if input.transition is not None and input.is_applied:
                steps[link_name(input.transition.id)] += 1
            return super().step(input)

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            checks = [*(additional_checks or []), self.model.sequence_rules]
            super().validate_response(response, case, additional_checks=checks, **kwargs)

    return Workflow


@pytest.mark.platform_mock(seed=WORLD_SEED)
@pytest.mark.parametrize("workflow", list(WORKFLOWS))
def test_linked_workflow_keeps_its_contract(
    workflow: str, server: BackgroundServer, world: PlatformMock
):
    schema = linked_contract(WORKFLOWS[workflow])
    steps: Counter[str] = Counter()
    machine = _state_machine(schema, server, world, steps)
    hypothesis.seed(SEED)(machine).run(
        settings=hypothesis.settings(
            max_examples=SCENARIOS,
            stateful_step_count=STEPS,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    # The scenarios did follow every link with the data it carries: a run that never got past
    # its first calls would check nothing about sequences.
    links = {name for named in WORKFLOWS[workflow].values() for name in named}
    assert set(steps) == links, steps
