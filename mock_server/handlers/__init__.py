"""Thin request handlers, one per operationId: each unpacks what Connexion validated and calls
the state layer (or, for the admin API, the mock's journal, faults and report).

`OPERATIONS` maps every operationId of the specs to its handler, and a test checks that it
covers exactly the operations of the specs; `resolve` gives the app what it calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from connexion.decorators.parameter import pythonic

from mock_server.handlers import admin, artifacts, gateway, jobs, role_bindings, secrets, tokens

OPERATIONS: dict[str, Callable[..., Any]] = {
    "generateRoleBindingManifests": role_bindings.generate_manifests,
    "listSecretDeployments": secrets.list_deployments,
    "stageArtifactVersion": artifacts.stage_version,
    "applyArtifactVersionTags": artifacts.apply_tags,
    "getOrCreatePersonalAccessToken": tokens.get_or_create,
    "deleteSecretGroup": secrets.delete_group,
    "listJobRuns": jobs.list_runs,
    "getModelResponse": gateway.get_response,
    # spec/admin.yaml
    "adminReset": admin.reset,
    "adminLoadFixtures": admin.load_fixtures,
    "adminMintToken": admin.mint_token,
    "adminGetState": admin.get_state,
    "adminGetJournal": admin.get_journal,
    "adminClearJournal": admin.clear_journal,
    "adminListFaults": admin.list_faults,
    "adminAddFault": admin.add_fault,
    "adminClearFaults": admin.clear_faults,
    "adminDeleteFault": admin.delete_fault,
    "adminGetReport": admin.get_report,
}


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
    handler = OPERATIONS[operation_id]
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
