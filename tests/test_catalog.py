"""The operation catalog: one entry for each operation of the specs, and each entry coherent
with its operation's contract. The generic suites parametrise over the catalog, so an
operation without an entry would go untested: here it fails instead."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.contract import documents as contract
from mock_server.fixtures import loader as fixtures
from mock_server.handlers import catalog
from mock_server.handlers.operation import Example
from mock_server.state import Store
from tests.budget import budget
from tests.conftest import new_store

EVERY_SPEC_OPERATION = {**contract.operations(), **contract.admin_operations()}


@pytest.fixture(scope="module")
def default_world() -> Store:
    return new_store(0, fixtures.default_fixtures())


@pytest.mark.parametrize("operation_id", [pytest.param(op, id=op) for op in EVERY_SPEC_OPERATION])
def test_every_operation_of_the_specs_has_a_catalog_entry(operation_id):
    assert operation_id in catalog.CATALOG


@pytest.mark.parametrize("operation_id", [pytest.param(op, id=op) for op in catalog.CATALOG])
def test_every_catalog_entry_names_an_operation_of_the_specs(operation_id):
    assert operation_id in EVERY_SPEC_OPERATION


@pytest.mark.parametrize("operation_id", [pytest.param(op, id=op) for op in contract.operations()])
def test_every_operation_of_the_platform_has_an_example(operation_id):
    assert catalog.PLATFORM[operation_id].example is not None


@pytest.mark.parametrize("operation_id", [pytest.param(op, id=op) for op in catalog.CATALOG])
def test_handler_of_an_operation_is_its_entrys(operation_id):
    assert catalog.handler(operation_id) is catalog.CATALOG[operation_id].handler


def declaring_modules() -> list[str]:
    """The modules of mock_server/handlers/ that declare an operation (`@operation`)."""
    folder = Path(catalog.__file__).parent
    return sorted(
        f"mock_server.handlers.{path.stem}"
        for path in folder.glob("*.py")
        if re.search(r"^@operation\(", path.read_text(), re.M)
    )


@pytest.mark.parametrize("module", declaring_modules())
def test_every_handler_module_that_declares_an_operation_is_in_the_catalog(module):
    assert module in {m.__name__ for m in catalog.HANDLER_MODULES}, (
        f"{module} declares an operation: add it to HANDLER_MODULES in handlers/catalog.py"
    )


def test_the_declaring_modules_are_found():
    assert "mock_server.handlers.jobs" in declaring_modules()


def test_handler_of_an_operation_the_catalog_does_not_have_is_a_key_error():
    with pytest.raises(KeyError):
        catalog.handler("listEverything")


PLATFORM = [pytest.param(op, id=op) for op in catalog.PLATFORM]


@pytest.mark.parametrize("operation_id", PLATFORM)
def test_example_is_a_request_of_its_operation(operation_id):
    example, operation = catalog.example(operation_id), contract.operations()[operation_id]
    assert (example.method, example.path) == (operation.method, operation.path)


@pytest.mark.parametrize("operation_id", PLATFORM)
def test_example_keeps_the_rules_of_examples(operation_id):
    problems = catalog.example(operation_id).problems(
        contract.operations()[operation_id].parameters
    )
    assert problems == [], f"the example of {operation_id} " + "; ".join(problems)


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({"limit": 5}, id="limit"),
        pytest.param({"offset": 10}, id="offset"),
        pytest.param({"limit": 5, "offset": 10}, id="both"),
    ],
)
def test_a_paginated_operations_example_that_pages_breaks_a_rule(query):
    example = Example("GET", "/api/svc/v1/things", query=query)
    (problem,) = example.problems(["limit", "offset", "q"])
    assert "sets neither limit nor offset" in problem


def test_an_operation_without_paging_may_have_an_example_with_a_limit():
    assert Example("GET", "/api/svc/v1/things", query={"limit": 5}).problems(["limit"]) == []


@pytest.mark.parametrize("operation_id", PLATFORM)
def test_example_gives_every_path_parameter(operation_id):
    example = catalog.example(operation_id)
    assert set(example.params) == set(re.findall(r"{([^}]+)}", example.path))


@pytest.mark.parametrize("operation_id", PLATFORM)
def test_example_has_a_body_exactly_when_its_operation_takes_one(operation_id):
    taking = contract.operations()[operation_id].body
    assert (catalog.example(operation_id).body is not None) == taking


@pytest.mark.parametrize("operation_id", PLATFORM)
def test_example_filled_for_the_default_world_names_no_reference(operation_id, default_world):
    request = catalog.example(operation_id).request(default_world)
    assert "<" not in f"{request.path} {request.query} {request.body}", request


def test_reference_is_filled_with_the_id_it_names(default_world):
    trainer = default_world.deployments.application_named("trainer")
    assert catalog.fill({"jobs": ["<application:trainer>"]}, default_world) == {
        "jobs": [trainer.id]
    }


def test_path_parameter_is_filled_percent_encoded(default_world):
    example = catalog.Example("GET", "/api/svc/v1/personal-access-tokens/{name}", {"name": "a/b"})
    assert example.request(default_world).path == "/api/svc/v1/personal-access-tokens/a%2Fb"


def test_reference_of_an_unknown_kind_is_a_key_error(default_world):
    with pytest.raises(KeyError):
        catalog.fill_text("<planet:mars>", default_world)


def send_example(server, mock, operation_id: str, **kwargs: Any) -> httpx.Response:
    """Send an operation's example request, filled for the served world, with its caller's
    token (and any other `headers` given) over real HTTP; for the suites that go through
    every operation."""
    request = catalog.example(operation_id).request(mock.store)
    operation = contract.operations()[operation_id]
    root = server.gateway_url if operation.document == contract.GATEWAY_SPEC else server.url
    caller = mock.store.identity.subject_named("user", request.caller)
    headers = {
        "Authorization": f"Bearer {mock.auth.dev_token(caller)}",
        **kwargs.pop("headers", {}),
    }
    if request.body is not None:
        kwargs.setdefault("json", request.body)
    with httpx.Client(timeout=budget(30)) as client:
        return client.request(
            request.method, root + request.path, params=request.query, headers=headers, **kwargs
        )
