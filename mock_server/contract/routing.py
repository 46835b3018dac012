"""Which operation of the contract a request is for: the one router, which the mock's stack
and the drift proxy both route by.

Its rules: the control plane's paths in full, the gateway's under its prefix, the admin
API's (the mock's only) under its own; HEAD as its GET; one path segment per parameter; no
trailing slash (no redirect to the path without it: `/secret-groups/x/` matches nothing,
never a delete); and OpenAPI's rule for paths that overlap: a concrete path is matched before
a templated one (`/artifact-versions/files` is never `/artifact-versions/{id}`), so a method
the concrete path lacks matches nothing, and `methods()` names the concrete path's alone (the
mock's 405 and its `Allow`), never another operation's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mock_server.contract import documents as contract
from mock_server.contract.documents import ADMIN_SPEC, CONTROL_PLANE_SPEC, GATEWAY_SPEC, Operation

_PARAMETER = re.compile(r"\{([^}]+)\}")


@dataclass(frozen=True)
class Route:
    operation: Operation
    base_path: str  # the prefix its document is served under ("" for the control plane)
    pattern: re.Pattern[str]
    names: tuple[str, ...]  # its path parameters, in the order of their regex groups


class Router:
    """Which operation of the contract a request is for, and its path parameters: those of
    the platform API, and the admin API's too where `admin_prefix` is given (the mock's)."""

    def __init__(self, gateway_prefix: str, admin_prefix: str | None = None):
        self.gateway_prefix = "/" + gateway_prefix.strip("/")
        self.base_paths = {CONTROL_PLANE_SPEC: "", GATEWAY_SPEC: self.gateway_prefix}
        operations = list(contract.operations().values())
        if admin_prefix is not None:
            self.base_paths[ADMIN_SPEC] = "/" + admin_prefix.strip("/")
            operations += contract.admin_operations().values()
        # By method and by the number of the path's slashes, which a route's path fixes (a
        # parameter is one segment): a request tries the few routes of its shape, not every
        # route of its method (fifteen regexes for a gateway request).
        self._routes: dict[tuple[str, int], list[Route]] = {}
        self._by_depth: dict[int, list[Route]] = {}
        self._every: list[Route] = []
        full = {op: self.base_paths[op.document] + op.path for op in operations}
        concrete = sorted({path for path in full.values() if "{" not in path})
        for operation in operations:
            parts = _PARAMETER.split(full[operation])
            # Even parts are literal text, odd ones parameter names: one segment each.
            regex = "".join(
                re.escape(part) if index % 2 == 0 else "([^/]+)" for index, part in enumerate(parts)
            )
            taken = [path for path in concrete if len(parts) > 1 and re.fullmatch(regex, path)]
            if taken:  # a concrete path is matched before a templated one
                exact = "|".join(re.escape(path) for path in taken)
                regex = f"(?!(?:{exact})$){regex}"
            base = self.base_paths[operation.document]
            route = Route(operation, base, re.compile(regex), tuple(parts[1::2]))
            depth = full[operation].count("/")
            self._routes.setdefault((operation.method, depth), []).append(route)
            self._by_depth.setdefault(depth, []).append(route)
            self._every.append(route)

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation and path parameters of a request; None if the contract has none."""
        route, params = self.route(method, path)
        return None if route is None else (route.operation, params)

    def route(self, method: str, path: str) -> tuple[Route | None, dict[str, str]]:
        """The route a request takes (its operation and its document's base path) and its path
        parameters; (None, {}) if the contract has none."""
        key = ("GET" if method == "HEAD" else method, path.count("/"))
        for route in self._routes.get(key, ()):
            found = route.pattern.fullmatch(path)
            if found:
                return route, dict(zip(route.names, found.groups(), strict=True))
        return None, {}

    def methods(self, path: str) -> list[str]:
        """Every method `path` takes, HEAD wherever GET is, sorted: none if no operation's."""
        shaped = self._by_depth.get(path.count("/"), ())
        found = {r.operation.method for r in shaped if r.pattern.fullmatch(path)}
        return sorted(found | ({"HEAD"} if "GET" in found else set()))

    def routes(self) -> list[Route]:
        """Every operation's route."""
        return list(self._every)

    def is_gateway(self, path: str) -> bool:
        return path == self.gateway_prefix or path.startswith(self.gateway_prefix + "/")
