"""The contract itself: the OpenAPI documents are valid, complete and wired to handlers."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml
from openapi_spec_validator import validate

from mock_server.contract import documents as contract
from mock_server.core import errors
from mock_server.handlers import catalog
from mock_server.http.app import argument_name
from tests import pages
from tests.budget import budget
from tools import tables

ROOT = Path(__file__).resolve().parent.parent
SPECS = {
    "control-plane": ROOT / "spec/control-plane.yaml",
    "gateway": ROOT / "spec/gateway.yaml",
    "admin": ROOT / "spec/admin.yaml",
}
PLATFORM = ("control-plane", "gateway")


@cache
def spec(name: str) -> dict:
    return yaml.load(SPECS[name].read_text(), yaml.CSafeLoader)  # C: at each collection


def schema(name: str, component: str) -> dict:
    return spec(name)["components"]["schemas"][component]


def operations(name: str) -> dict[str, dict]:
    return {
        operation["operationId"]: operation
        for path in spec(name)["paths"].values()
        for method, operation in path.items()
        if method in ("get", "put", "post", "delete", "patch")
    }


@pytest.mark.parametrize("name", SPECS)
def test_document_is_valid_openapi(name):
    validate(spec(name))


@pytest.mark.parametrize("name", SPECS)
def test_document_is_openapi_3_0(name):
    assert spec(name)["openapi"].startswith("3.0.")


def test_control_plane_version_is_0_1_0():
    assert spec("control-plane")["info"]["version"] == "0.1.0"


def test_control_plane_paths_carry_the_version_prefix():
    assert all(path.startswith("/api/svc/v1/") for path in spec("control-plane")["paths"])


OPERATION_ROW = re.compile(r"^\| (\d+) \| `(\w+) ([^`]+)` \| `(\w+)` \|$", re.MULTILINE)


def test_the_operations_table_lists_every_operation_of_the_contract_once():
    section = pages.section(tables.OPERATIONS_PAGE, "The operations")
    rows = OPERATION_ROW.findall(section)
    assert [int(number) for number, *_ in rows] == list(range(1, len(rows) + 1))
    listed = {(method, path, op) for _, method, path, op in rows}
    assert listed == {
        (o.method, ("{gateway}" if o.document == contract.GATEWAY_SPEC else "") + o.path, op)
        for op, o in contract.operations().items()
    }


def test_the_reliability_page_counts_the_operations_of_the_contract():
    count = len(contract.operations())
    assert f"all {count} operations" in tables.RELIABILITY_PAGE.read_text()


def test_gateway_path_has_no_version_segment():
    paths = list(spec("gateway")["paths"])
    assert "/responses/{id}" in paths
    assert not [path for path in paths if path.split("/")[1] in ("v1", "openai")], paths


@pytest.mark.parametrize(
    "operation_id, parameter",
    [
        pytest.param(op_id, p["name"], id=f"{op_id}-{p['name']}")
        for name in SPECS
        for op_id, operation in operations(name).items()
        for p in operation.get("parameters", [])
        if p["in"] in ("path", "query")  # headers are read from the request, not passed
    ],
)
def test_every_parameter_reaches_its_handler_as_an_argument(operation_id, parameter):
    accepted = inspect.signature(catalog.handler(operation_id)).parameters
    assert argument_name(parameter) in accepted


@pytest.mark.parametrize("name", PLATFORM)
def test_every_operation_but_the_bootstrap_requires_the_bearer_scheme(name):
    # The operations a client asks before it has a token are tagged `bootstrap` and take
    # none; every other one takes the bearer token.
    document = spec(name)
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    for operation in operations(name).values():
        expected: list[dict[str, list[str]]] = (
            [] if "bootstrap" in operation.get("tags", []) else [{"bearerAuth": []}]
        )
        assert operation.get("security", document["security"]) == expected


def test_the_contract_knows_which_operations_take_no_token():
    assert {op for op, o in contract.operations().items() if not o.token} == {
        op
        for name in PLATFORM
        for op, o in operations(name).items()
        if "bootstrap" in o.get("tags", [])
    }


# Every field of the source document's tables, by the component that must carry it.
SOURCE_FIELDS = [
    ("Pagination", "total offset limit"),
    ("Error", "statusCode message code details"),
    ("RoleBindingManifest", "type name subjects permissions"),
    ("RoleBindingSubject", "type name"),
    ("RoleBindingPermission", "resourceType resourceFqn role"),
    (
        "SubjectReference",
        "subjectId subjectType subjectSlug subjectDisplayName subjectPatName "
        "subjectControllerName subjectExternalIdentitySlug",
    ),
    (
        "Deployment",
        "manifest createdBySubject id version fqn applicationId application createdAt "
        "updatedAt deploymentBuilds deploymentStatuses currentStatusId currentStatus "
        "appliedRecommendations createdBy",
    ),
    (
        "DeploymentApplication",
        "lifecycleStage id fqn name type metadata workspaceId activeVersion applicationSetId",
    ),
    ("DeploymentBuild", "name status"),
    (
        "DeploymentStatus",
        "id deploymentId status state transition message retryCount createdAt updatedAt",
    ),
    (
        "AppliedRecommendation",
        "recommendationData recommendationType expiryTimestamp id clusterId applicationId "
        "deploymentId applicationVersion appliedDeploymentId createdAt updatedAt",
    ),
    (
        # The source's manifest is a service's (its sample: `type: service`).
        "ServiceManifest",
        "name type image ports replicas artifacts_download resources env service_account "
        "mounts labels kustomize liveness_probe readiness_probe startup_probe workspace_fqn "
        "auto_shutdown allow_interception rollout_strategy",
    ),
    ("BuildImage", "type build_source build_spec docker_registry"),
    ("BuildSource", "type remote_uri"),
    (
        "BuildSpec",
        "type dockerfile_path build_context_path command build_args build_secrets",
    ),
    ("BuildSecret", "id value env"),
    ("Port", "port protocol expose app_protocol host path rewrite_path_to auth"),
    ("PortAuth", "type username password"),
    ("ArtifactsDownload", "artifacts cache_volume"),
    ("ArtifactToDownload", "type artifact_version_fqn download_path_env_variable"),
    ("CacheVolume", "storage_class cache_size"),
    (
        "Resources",
        "cpu_request cpu_limit memory_request memory_limit ephemeral_storage_request "
        "ephemeral_storage_limit shared_memory_size node devices",
    ),
    ("NodeSelector", "type instance_families capacity_type"),
    ("Device", "type count name"),
    ("Mount", "type mount_path secret_fqn"),
    ("Kustomize", "patch additions"),
    (
        "Probe",
        "config initial_delay_seconds period_seconds timeout_seconds success_threshold "
        "failure_threshold",
    ),
    ("ProbeConfig", "type path port host scheme"),
    ("AutoShutdown", "wait_time"),
    ("RolloutStrategy", "type max_unavailable_percentage max_surge_percentage"),
    (
        "ArtifactManifest",
        "type metadata source step name ml_repo version description version_alias run_id",
    ),
    (
        "ModelManifest",
        "type metadata source step name ml_repo version description version_alias run_id "
        "framework environment",
    ),
    # The source document gives an agent skill the fields of an artifact and one source of
    # `type` and `uri` for all three; the platform's SDK, which its clients send, gives a
    # skill no step, run or description of its own, and each variant sources of its own.
    ("AgentSkillManifest", "type metadata source name ml_repo version"),
    ("ManagedSource", "type uri"),
    ("ExternalSource", "type uri"),
    ("InlineSkillSource", "type skill_md"),
    ("BlobStorageSkillSource", "type description uri"),
    ("StagedArtifactVersion", "id storage_root artifact_id"),
    ("ApplyTagsRequest", "artifact_version_id tags force"),
    ("SecretDeploymentsRequest", "secretIds"),
    ("PersonalAccessTokenResponse", "data token created"),
    (
        "PersonalAccessToken",
        "id type tenantName accountId jwtId createdBy nextScheduledRotation createdBySubject "
        "createdAt updatedAt lastAccessedAt isExpired manifest jwts metadata roleIds "
        "rolesWithResource",
    ),
    (
        "TokenJwt",
        "id subjectType subjectId expiry tokenType createdAt updatedAt metadata",
    ),
    (
        "PersonalAccessTokenManifest",
        "name type permissions expiration_date auto_rotate notification_target "
        "secret_store_config ownedBy tags identity_provider_mapping token_type",
    ),
    ("TokenPermission", "resource_fqn resource_type role_id"),
    ("AutoRotate", "auto_rotate_interval grace_period"),
    ("NotificationTarget", "type notification_channel to_emails"),
    ("SecretStoreConfig", "integration_fqn secret_path"),
    ("OwnedBy", "team account"),
    ("IdentityProviderMapping", "identity_provider value"),
    (
        "JobRun",
        "id name applicationName deploymentVersion command error triggeredBy sparkUi "
        "applicationId deploymentId tenantName createdAt endTime duration totalRetries "
        "exitCode triggeredBySubject status",
    ),
    ("JobRunList", "data pagination"),
    ("DeploymentList", "data pagination"),
    ("RoleBindingManifestList", "data"),
]
GATEWAY_FIELDS = [
    (
        "ModelResponse",
        "id object created_at status max_output_tokens model output parallel_tool_calls "
        "previous_response_id reasoning service_tier store temperature text tool_choice tools "
        "top_p truncation usage metadata provider error incomplete_details instructions user",
    ),
]
MODEL_RESPONSE_REQUIRED = (
    "id object created_at status max_output_tokens model output parallel_tool_calls "
    "previous_response_id reasoning service_tier store temperature text tool_choice tools "
    "top_p truncation usage metadata provider"
)


@pytest.mark.parametrize(
    ("document", "component", "fields"),
    [pytest.param("control-plane", c, f, id=c) for c, f in SOURCE_FIELDS]
    + [pytest.param("gateway", c, f, id=c) for c, f in GATEWAY_FIELDS],
)
def test_component_has_every_source_field(document, component, fields):
    properties = schema(document, component).get("properties", {})
    assert [f for f in fields.split() if f not in properties] == []


@pytest.mark.parametrize(
    ("component", "required"),
    [
        pytest.param("RoleBindingManifest", "type name subjects permissions", id="role-binding"),
        pytest.param("RoleBindingSubject", "type name", id="role-binding-subject"),
        pytest.param("RoleBindingPermission", "resourceType resourceFqn role", id="permission"),
        pytest.param(
            "JobRun",
            "id name applicationName deploymentVersion createdAt command totalRetries status",
            id="job-run",
        ),
        pytest.param("Error", "statusCode message code details", id="error"),
        pytest.param("Pagination", "total offset limit", id="pagination"),
    ],
)
def test_required_fields_follow_the_source(component, required):
    assert set(required.split()) <= set(schema("control-plane", component)["required"])


def test_model_response_required_fields_follow_the_source():
    assert set(MODEL_RESPONSE_REQUIRED.split()) <= set(
        schema("gateway", "ModelResponse")["required"]
    )


@pytest.mark.parametrize(
    ("component", "field", "rule"),
    [
        pytest.param(
            "RoleBindingManifest",
            "name",
            {"pattern": "^[a-z][a-z0-9-]{1,64}[a-z0-9]$"},
            id="binding-name-pattern",
        ),
        pytest.param("RoleBindingManifest", "type", {"enum": ["role-binding"]}, id="binding-type"),
        pytest.param(
            "RoleBindingSubject", "name", {"minLength": 1, "maxLength": 1024}, id="subject-name"
        ),
        pytest.param(
            "RoleBindingSubject",
            "type",
            {"enum": ["user", "team", "virtualaccount", "agent"]},
            id="subject-type",
        ),
        pytest.param(
            "RoleBindingPermission",
            "resourceType",
            {"minLength": 1, "maxLength": 128},
            id="permission-resource-type",
        ),
        pytest.param(
            "RoleBindingPermission",
            "resourceFqn",
            {"minLength": 1, "maxLength": 1024},
            id="permission-resource-fqn",
        ),
        pytest.param(
            "RoleBindingPermission",
            "role",
            {"minLength": 1, "maxLength": 255},
            id="permission-role",
        ),
    ],
)
def test_limits_of_the_source_are_in_the_schemas(component, field, rule):
    prop = schema("control-plane", component)["properties"][field]
    assert {key: prop.get(key) for key in rule} == rule


def _parameter(operation_id: str, name: str) -> dict:
    operation = operations("control-plane")[operation_id]
    return next(p for p in operation["parameters"] if p["name"] == name)


@pytest.mark.parametrize(
    ("operation_id", "name", "rule"),
    [
        pytest.param(
            "listJobRuns", "limit", {"minimum": 1, "maximum": 1000, "default": 100}, id="runs-limit"
        ),
        pytest.param("listJobRuns", "offset", {"minimum": 0, "default": 0}, id="runs-offset"),
        pytest.param(
            "listSecretDeployments",
            "limit",
            {"minimum": 1, "maximum": 1000, "default": 100},
            id="deployments-limit",
        ),
        pytest.param(
            "listSecretDeployments", "offset", {"minimum": 0, "default": 0}, id="deployments-offset"
        ),
        pytest.param(
            "deleteSecretGroup", "forceDelete", {"type": "boolean", "default": False}, id="force"
        ),
    ],
)
def test_parameter_limits_are_in_the_spec(operation_id, name, rule):
    param_schema = _parameter(operation_id, name)["schema"]
    assert {key: param_schema.get(key) for key in rule} == rule


@pytest.mark.parametrize("name", ["status", "triggeredBy", "versionNumbers"])
def test_array_query_parameters_are_repeated_keys(name):
    param = _parameter("listJobRuns", name)
    assert (param.get("style", "form"), param.get("explode", True)) == ("form", True)


def test_team_name_is_the_token_query_parameter():
    assert _parameter("getOrCreatePersonalAccessToken", "teamName")["in"] == "query"


def test_artifact_manifest_variants_are_told_apart_by_type():
    manifest = schema("control-plane", "ArtifactVersionManifest")
    assert manifest["discriminator"]["propertyName"] == "type"
    assert set(manifest["discriminator"]["mapping"]) == {
        "artifact-version",
        "model-version",
        "agent-skill",
    }


@pytest.mark.parametrize("variant", ["ArtifactManifest", "ModelManifest", "AgentSkillManifest"])
def test_manifest_variants_require_the_platform_fields(variant):
    assert set(schema("control-plane", variant)["required"]) == {
        "type",
        "name",
        "ml_repo",
        "source",
    }


PLATFORM_OPERATIONS = [pytest.param(op, id=op) for op in contract.operations()]


@pytest.mark.parametrize("operation_id", PLATFORM_OPERATIONS)
def test_operation_documents_exactly_the_errors_its_catalog_entry_decides(operation_id):
    documented = {s for s in contract.operations()[operation_id].statuses if s >= 400}
    assert documented == set(catalog.CATALOG[operation_id].errors)


@pytest.mark.parametrize("operation_id", PLATFORM_OPERATIONS)
def test_error_decided_for_a_status_has_that_status(operation_id):
    decided = catalog.CATALOG[operation_id].errors
    assert {status: cls.status for status, cls in decided.items()} == {s: s for s in decided}


@pytest.mark.parametrize("operation_id", PLATFORM_OPERATIONS)
def test_operation_documents_the_errors_every_request_can_meet(operation_id):
    # A request can always break the contract (400), lack a token (401) or meet a platform
    # failure (500, 503); what the body adds, only a body can meet (413, 415).
    operation = contract.operations()[operation_id]
    expected = {400, 500, 503} | ({401} if operation.token else set())
    assert expected | ({413, 415} if operation.body else set()) <= operation.statuses


@pytest.mark.parametrize("operation_id", PLATFORM_OPERATIONS)
def test_operation_without_a_token_documents_no_401(operation_id):
    operation = contract.operations()[operation_id]
    assert (401 in operation.statuses) == operation.token


TABLE_ROW = re.compile(r"^\|[^|]+\|\s*(\d{3})\s*\|\s*(\d{5})\s*\|$", re.MULTILINE)


def test_admin_api_requires_the_admin_scheme():
    scheme = spec("admin")["components"]["securitySchemes"]["adminAuth"]
    assert (scheme["scheme"], scheme["x-platform-mock-admin"]) == ("bearer", True)
    assert spec("admin")["security"] == [{"adminAuth": []}]


def test_error_table_in_the_spec_matches_the_error_classes():
    table = TABLE_ROW.findall(spec("control-plane")["info"]["description"])
    assert [(int(s), int(c)) for s, c in table] == [
        (cls.status, cls.code) for cls in errors.error_classes()
    ]


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ("control-plane", "gateway")])
def test_docs_lead_with_the_operations_and_fold_the_conventions(name: str):
    """Swagger UI renders `info.description` above the operations: all but its opening
    paragraph is in a collapsed `<details>` block, the error table included."""
    description = spec(name)["info"]["description"]
    opening, folded = description.split("<details>", 1)
    assert len(opening.strip().splitlines()) <= 5
    assert "## " not in opening and not TABLE_ROW.search(opening)
    assert folded.rstrip().endswith("</details>")
    assert "\n<summary>" in folded and "## Errors" in folded and TABLE_ROW.search(folded)


def test_error_table_of_the_errors_page_matches_the_error_classes():
    table = TABLE_ROW.findall(tables.ERRORS_PAGE.read_text())
    assert [(int(s), int(c)) for s, c in table] == [
        (cls.status, cls.code) for cls in errors.error_classes()
    ]


# -- the tables written from the contract and the error classes (tools/tables.py) -----------


def _bad_input_cases() -> int:
    from tests import test_bad_inputs  # the suite itself: imported only when counted

    return tables.cases(test_bad_inputs)


def _written(path: Path, text: str) -> str:
    if path == tables.RELIABILITY_PAGE:  # counted from the suite's module, not by a pytest run
        return tables.reliability_page(text, _bad_input_cases())
    return tables.WRITTEN[path](text)


@pytest.mark.parametrize(
    "path",
    [pytest.param(path, id=pages.name(path)) for path in tables.WRITTEN if path.suffix == ".md"],
)
def test_the_pages_tables_are_written_from_the_contract_and_the_error_classes(path):
    text = path.read_text()
    assert text == _written(path, text), "run `python -m tools.tables` to write them"


def test_the_specs_error_table_is_written_from_the_error_classes():
    text = (ROOT / "spec" / contract.CONTROL_PLANE_SPEC).read_text()
    assert text == tables.spec(text), "run `python -m tools.tables` to write it"


def test_a_new_operation_gets_the_next_number_and_a_gone_one_its_row_removed():
    text = tables.OPERATIONS_PAGE.read_text()
    rows = tables.OPERATION_ROW.findall(text)
    first, last = rows[0], rows[-1]
    without_first = text.replace(f"| {first[0]} | `{first[1]} {first[2]}` | `{first[3]}` |\n", "")
    gone = without_first.replace(f"`{last[3]}` |", "`listEverything` |")
    renumbered = tables.OPERATION_ROW.findall(tables.operations_table(gone))
    assert [op for *_, op in renumbered] == [op for *_, op in rows[1:-1]] + [first[3], last[3]]
    assert [int(n) for n, *_ in renumbered] == list(range(1, len(rows) + 1))


@pytest.mark.parametrize(
    "phrase",
    [
        pytest.param(tables.COUNTED, id="operations-count"),
        pytest.param(tables.WORKFLOWS, id="workflows"),
        pytest.param(tables.BAD_INPUTS, id="bad-input-count"),
    ],
)
def test_a_page_that_lost_a_written_phrase_fails_rather_than_goes_unchecked(phrase):
    text = phrase.sub("(gone)", tables.RELIABILITY_PAGE.read_text())
    with pytest.raises(AssertionError, match="matches 0 places"):
        tables.reliability_page(text, _bad_input_cases())


def test_the_bad_input_count_is_the_number_of_cases_pytest_collects():
    from tests import test_bad_inputs

    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/test_bad_inputs.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(120),
    )
    cases = [line for line in collected.stdout.splitlines() if "::" in line]
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert tables.cases(test_bad_inputs) == len(cases)
