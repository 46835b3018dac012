"""Thin request handlers, one per operationId: each unpacks what Connexion validated and calls
the state layer (or, for the admin API, the mock's journal, faults and report).

`OPERATIONS` maps every operationId of the specs to its handler; the app's resolver uses it,
and a test checks that it covers exactly the operations of the specs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    "adminGetState": admin.get_state,
    "adminGetJournal": admin.get_journal,
    "adminClearJournal": admin.clear_journal,
    "adminListFaults": admin.list_faults,
    "adminAddFault": admin.add_fault,
    "adminClearFaults": admin.clear_faults,
    "adminDeleteFault": admin.delete_fault,
    "adminGetReport": admin.get_report,
}
