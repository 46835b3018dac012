"""Which operation of the contract a request is for: the contract's routing rules in one table.

The rules are the mock's (its Connexion router is built with the same ones, and
`tests/test_drift.py` checks the two agree on every documented path and method): the control
plane's paths in full, the gateway's under its prefix; HEAD as its GET; one path segment
per parameter; no trailing slash; and OpenAPI's rule for paths that overlap: a concrete path
is matched before a templated one (`/artifact-versions/files` is never
`/artifact-versions/{id}`), so a method the concrete path lacks matches nothing (the mock's
405), never another operation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mock_server.contract import documents as contract
from mock_server.contract.documents import GATEWAY_SPEC, Operation

_PARAMETER = re.compile(r"\{([^}]+)\}")


@dataclass(frozen=True)
class _Route:
    operation: Operation
    pattern: re.Pattern[str]


class Router:
    """Which operation of the contract a request is for, and its path parameters."""

    def __init__(self, gateway_prefix: str):
        self.gateway_prefix = "/" + gateway_prefix.strip("/")
        self._routes: dict[str, list[_Route]] = {}
        operations = list(contract.operations().values())
        full = {operation: self._full_path(operation) for operation in operations}
        concrete = sorted({path for path in full.values() if "{" not in path})
        for operation in operations:
            parts = _PARAMETER.split(full[operation])
            # Even parts are literal text, odd ones parameter names: one segment each.
            regex = "".join(
                re.escape(part) if index % 2 == 0 else f"(?P<{_group(part)}>[^/]+)"
                for index, part in enumerate(parts)
            )
            taken = [path for path in concrete if len(parts) > 1 and re.fullmatch(regex, path)]
            if taken:  # a concrete path is matched before a templated one
                exact = "|".join(re.escape(path) for path in taken)
                regex = f"(?!(?:{exact})$){regex}"
            route = _Route(operation, re.compile(regex))
            self._routes.setdefault(operation.method, []).append(route)

    def _full_path(self, operation: Operation) -> str:
        return (self.gateway_prefix if operation.document == GATEWAY_SPEC else "") + operation.path

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation and path parameters of a request; None if the contract has none."""
        for route in self._routes.get("GET" if method == "HEAD" else method, ()):
            found = route.pattern.fullmatch(path)
            if found:
                names = _PARAMETER.findall(route.operation.path)
                return route.operation, {name: found[_group(name)] for name in names}
        return None

    def is_gateway(self, path: str) -> bool:
        return path == self.gateway_prefix or path.startswith(self.gateway_prefix + "/")


def _group(name: str) -> str:
    """A regex group name for a path parameter (which may hold `-`)."""
    return "p_" + re.sub(r"[^0-9A-Za-z_]", "_", name)
