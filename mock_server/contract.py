"""The contract as data: the operations of both specs, their statuses and parameters.

Read once from `spec/`; used where the mock reasons about the contract rather than
enforcing it (which statuses a fault may inject, what a report counts as exercised).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import yaml

from mock_server.resources import package_file

SPEC_FILES = ("control-plane.yaml", "gateway.yaml")
METHODS = ("get", "put", "post", "delete", "patch")


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    path: str
    statuses: frozenset[int]
    parameters: tuple[str, ...]


@cache
def operations() -> dict[str, Operation]:
    """Every operation of the platform API, by operationId."""
    found: dict[str, Operation] = {}
    for name in SPEC_FILES:
        document = yaml.safe_load((package_file("spec") / name).read_text())
        for path, item in document["paths"].items():
            for method, operation in item.items():
                if method not in METHODS:
                    continue
                found[operation["operationId"]] = Operation(
                    operation["operationId"],
                    method.upper(),
                    path,
                    frozenset(int(status) for status in operation["responses"]),
                    tuple(p["name"] for p in operation.get("parameters", [])),
                )
    return found


def documented_statuses() -> dict[str, set[int]]:
    return {op_id: set(op.statuses) for op_id, op in operations().items()}
