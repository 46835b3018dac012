"""The operation catalog: every per-operation fact the contract does not say, one entry each.

The spec documents say an operation's method, path, parameters, body and documented
statuses (`contract.operations()`). What they cannot say its handler declares beside it
(`handlers.operation`): a valid example request in the default world, the error condition
of each of its own error statuses, the client model of its success body. The catalog
gathers those entries from the handler modules and completes each with what its contract
implies: the condition of each generic status it documents (400 for a request that breaks
the contract, 401 for an expired token, 413 and 415 for a body, 500 and 503), and whether it
only reads (GET, unless its handler declares otherwise). The journal,
the faults, the report and the generic test suites read both, so adding an operation means
its spec, its handler with its entry, its state rule and its own tests; tests fail when an
operation of the specs has no entry, or an entry no operation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from mock_server.contract import documents as contract
from mock_server.core import errors
from mock_server.core.errors import PlatformError
from mock_server.handlers import (
    admin,
    applications,
    artifacts,
    gateway,
    jobs,
    manifests,
    role_bindings,
    secrets,
    session,
    storage,
    tokens,
)
from mock_server.handlers.operation import (
    DEFAULT_CALLER,
    KINDS,
    Example,
    OperationEntry,
    Request,
    declared,
    fill,
    fill_text,
)

__all__ = [
    "ADMIN",
    "CATALOG",
    "DEFAULT_CALLER",
    "KINDS",
    "PLATFORM",
    "Example",
    "OperationEntry",
    "Request",
    "conditions",
    "example",
    "fill",
    "fill_text",
    "handler",
]

# The handler modules, one per resource of the platform: a new one is added here, and
# tests/test_catalog.py fails, naming it, while a module of this folder that declares an
# operation is missing.
HANDLER_MODULES = (
    admin,
    applications,
    artifacts,
    gateway,
    jobs,
    manifests,
    role_bindings,
    secrets,
    session,
    storage,
    tokens,
)

# Statuses every operation of the platform may document, each with its one condition. A
# fault's 401 is an expired token: what a long-running client meets.
GENERIC: dict[int, type[PlatformError]] = {
    400: errors.InvalidRequest,
    401: errors.ExpiredToken,
    500: errors.PlatformInternalError,
    503: errors.ServiceUnavailable,
}
WITH_BODY: dict[int, type[PlatformError]] = {
    413: errors.PayloadTooLarge,
    415: errors.UnsupportedMediaType,
}


def generic_conditions(operation: contract.Operation) -> dict[int, type[PlatformError]]:
    """The conditions of the generic statuses an operation documents, by what its contract
    says of it: a body brings 413 and 415; an operation that takes no token meets no 401."""
    found = {**GENERIC, **(WITH_BODY if operation.body else {})}
    return {status: cls for status, cls in found.items() if status in operation.statuses}


def _gathered() -> tuple[dict[str, OperationEntry], dict[str, OperationEntry]]:
    operations = contract.operations()
    platform: dict[str, OperationEntry] = {}
    admin_api: dict[str, OperationEntry] = {}
    for module in HANDLER_MODULES:
        for operation_id, entry in declared(module).items():
            assert operation_id not in platform and operation_id not in admin_api, operation_id
            if operation_id in operations:
                operation = operations[operation_id]
                platform[operation_id] = dataclasses.replace(
                    entry,
                    errors={**generic_conditions(operation), **entry.errors},
                    read_only=(
                        operation.method == "GET" if entry.read_only is None else entry.read_only
                    ),
                )
            else:
                admin_api[operation_id] = entry
    # In the contract's order, as the suites list them.
    ordered = {op: platform[op] for op in operations if op in platform}
    return {**ordered, **platform}, admin_api


PLATFORM, ADMIN = _gathered()
CATALOG: dict[str, OperationEntry] = {**PLATFORM, **ADMIN}


def conditions() -> dict[str, dict[int, type[PlatformError]]]:
    """By operation, the error condition each documented error status answers with (and a
    fault of that status injects)."""
    return {operation_id: entry.errors for operation_id, entry in CATALOG.items()}


def handler(operation_id: str) -> Callable[..., Any]:
    """The function that serves an operation (KeyError for one the catalog does not have)."""
    return CATALOG[operation_id].handler


def example(operation_id: str) -> Example:
    """The valid example request of an operation of the platform API."""
    found = PLATFORM[operation_id].example
    assert found is not None, f"{operation_id} has no example"  # every platform entry has one
    return found
