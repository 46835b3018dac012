"""Thin request handlers, one per operationId: each unpacks what Connexion validated and calls
the state layer (or, for the admin API, the mock's journal, faults and report).

Which handler serves which operation is the catalog's (`mock_server.catalog`); `resolve`
gives the app what it calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from connexion.decorators.parameter import pythonic


def argument_name(passed: str) -> str:
    """A handler's argument for a parameter as Connexion passes it (the spec's name with what
    an identifier cannot hold stripped): snake_case, with `_` after a builtin (`id_`)."""
    return pythonic(passed)


def resolve(operation_id: str) -> Callable[..., Any]:
    """The handler of an operation, taking what Connexion passes (`sortBy`, `id`) under its
    own argument names (`sort_by`, `id_`), and nothing it does not declare. Each name is
    turned into snake_case once, where Connexion's `pythonic_params` would run inflection's
    regexes over every name of every request. A test checks every parameter of the specs
    reaches its handler."""
    # Imported when the app resolves its operations, not with this package: the catalog
    # imports the handler modules, which are this package's.
    from mock_server import catalog

    handler = catalog.handler(operation_id)
    accepted = set(inspect.signature(handler).parameters)
    names: dict[str, str] = {}

    def call(**given: Any) -> Any:
        arguments = {}
        for key, value in given.items():
            name = names.get(key)
            if name is None:
                name = names[key] = argument_name(key)
            if name in accepted:
                arguments[name] = value
        return handler(**arguments)

    call.__name__ = call.__qualname__ = handler.__name__
    return call
