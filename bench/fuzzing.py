"""The fuzzing machinery that the fuzz test (`tests/test_fuzz.py`) and the long fuzzing run
(`bench/fuzz.py`) share: schemathesis' configuration and the contract as it reads it, the
dictionaries of the default world it draws ids from, the signing key and token of the run,
the check that a valid request's 400 is a documented business rule, and the linked workflows
with the rules of the contract that only a sequence of calls shows (`ContractModel`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import schemathesis
import yaml
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.specs.openapi.schemas import OpenApiSchema

from mock_server.contract import documents as contract
from mock_server.core import errors
from mock_server.fixtures import loader as fixtures
from mock_server.handlers import catalog
from mock_server.services.auth import Authenticator, Signer
from mock_server.state import Store

SPEC = Path(__file__).resolve().parents[1] / "spec"
SEED = 20260101  # schemathesis seed: each operation's Hypothesis seed is derived from it
WORLD_SEED = 0  # the mock's world in these tests, the one the ids below come from
EXAMPLES = 50  # fuzzing-phase examples per operation (coverage and examples phases add theirs)
SCENARIOS = 25  # state-machine scenarios per workflow
STEPS = 6  # at most this many calls per scenario

# Outcomes of a schema-valid request that the contract documents and that do not mean "your
# request is invalid": ids in paths are random, so most are 404; 403, 409, 422 and 424 are
# business rules. 401 is left out: every request carries a valid token. 5xx is left to
# `not_a_server_error`, so that a server error is reported once.
ACCEPTED = ["2xx", "403", "404", "409", "422", "424", "5xx"]

# Rules OpenAPI 3.0 cannot express: a schema-valid request that breaks them is a 400 with its
# own code, never 40001 ("breaks the contract"); the catalog names the condition of an
# operation's 400. For these operations 400 is accepted as a positive outcome, and
# `business_rule_400_only` pins the code.
BUSINESS_RULE_400 = {
    operation_id: {entry.errors[400].code}
    for operation_id, entry in catalog.PLATFORM.items()
    if entry.errors.get(400, errors.InvalidRequest) is not errors.InvalidRequest
}


def world_dictionaries(store: Store) -> dict[str, list[str]]:
    """Ids and names of the default world that the generator may draw (positive data only)."""
    identity, secrets = store.identity, store.secrets
    groups = [secrets.group_named(name) for name in ("llm-keys", "legacy-vault")]
    jobs = [store.deployments.application_named(name) for name in ("trainer", "chat-api")]
    return {
        "resource-types": ["workspace", "secret-group", "tenant"],  # of each resource id below
        "resource-ids": [
            identity.resource_named("workspace", "ml-team").id,
            groups[0].resource.id,
            identity.tenant.id,
        ],
        "subject-types": ["user", "user", "team"],  # the type of each subject id below
        "subject-ids": [
            identity.subject_named("user", "alice@acme.example").id,
            identity.subject_named("user", "bob@acme.example").id,
            identity.subject_named("team", "ml-platform").id,
        ],
        "secret-ids": [secret_id for group in groups for secret_id in group.secrets],
        "secret-group-ids": [group.resource.id for group in groups],
        "ml-repos": ["demo-repo"],
        "artifact-version-ids": list(store.world.artifact_versions),
        "teams": ["ml-platform"],
        "job-ids": [job.id for job in jobs],  # a job (200) and a service (422)
        "model-response-ids": list(store.world.model_responses),
        "models": [model.id for model in store.gateway.models()],
        "chat-models": [m.id for m in store.gateway.models() if m.kind == "chat"],
        "embedding-models": [m.id for m in store.gateway.models() if m.kind == "embedding"],
    }


# The fuzzing run's signing key: schemathesis takes the token when this module is imported,
# before the session's mock (which draws a key of its own) exists; `world` lends it this key.
KEY = "the fuzzing run's signing key, 32 bytes or more"
_STORE = Store(WORLD_SEED, fixtures.default_fixtures(), Signer(KEY))
WORLD = world_dictionaries(_STORE)

# Values that broke servers before, drawn for any string or integer the bindings above leave
# free (a fuzzing dictionary): line breaks, percent signs and dots that a router may decode,
# control and bidi characters; integers past the signed and unsigned 64-bit limits.
HOSTILE = {
    "hostile-strings": ["\n", "line\nbreak", "%", "%2F", "..", "\u0000", " ", "\u202eevil", "😀"],
    "big-integers": [2**63, 2**64, 10**24],
}
# The default user's development token (alice, tenant admin) in that world: what
# `mock.auth.dev_token()` returns on the served mock (the `world` fixture checks it).
TOKEN = Authenticator(_STORE).dev_token()


def _bind(operation_id: str, **parameters: str) -> dict[str, Any]:
    """Operation-scoped bindings of parameters to dictionaries, each drawn half the time."""
    return {
        "include-operation-id": operation_id,
        "parameters": {
            name: {"dictionary": dictionary, "probability": 0.5}
            for name, dictionary in parameters.items()
        },
    }


def _positive_outcomes(operation_id: str) -> dict[str, Any]:
    return {
        "include-operation-id": operation_id,
        "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}},
    }


# schemathesis's own list of the statuses that refuse invalid data, and 413.
REJECTED = [
    "400",
    "401",
    "403",
    "404",
    "405",
    "406",
    "409",
    "413",
    "415",
    "422",
    "428",
    "429",
    "5XX",
]

SETTINGS: dict[str, Any] = {
    "seed": SEED,
    # Schemathesis sets the header on every case, except the negative ones whose
    # Authorization it corrupts on purpose (those must be 401).
    "auth": {"openapi": {"bearerAuth": {"bearer": TOKEN}}},
    "generation": {
        "max-examples": EXAMPLES,
        "mode": "all",  # positive and negative data
        "database": "none",  # no replay of earlier runs: every run is the same run
        "dictionaries": {
            "string": {"dictionary": "hostile-strings", "probability": 0.2},
            "integer": {"dictionary": "big-integers", "probability": 0.25},
        },
    },
    "checks": {
        "positive_data_acceptance": {"expected-statuses": ACCEPTED},
        # A body past the limit (1 MiB) is refused before it is read (413): an array of
        # 2,049 long texts or token lists, one past an embeddings request's maxItems, is one.
        "negative_data_rejection": {"expected-statuses": REJECTED},
    },
    "phases": {"stateful": {"max-steps": STEPS}},
    "dictionaries": {name: {"values": values} for name, values in {**WORLD, **HOSTILE}.items()},
    "operations": [
        *(_positive_outcomes(operation_id) for operation_id in BUSINESS_RULE_400),
        _bind(
            "generateRoleBindingManifests",
            **{
                "query.resourceType": "resource-types",
                "query.resourceId": "resource-ids",
                "query.subjectType": "subject-types",
                "query.subjectId": "subject-ids",
            },
        ),
        # "A page past the end is an empty data with the true total": so pages far past it.
        _bind(
            "listSecretDeployments",
            **{"body.secretIds[*]": "secret-ids", "query.offset": "big-integers"},
        ),
        _bind("stageArtifactVersion", **{"body.manifest.ml_repo": "ml-repos"}),
        _bind("applyArtifactVersionTags", **{"body.artifact_version_id": "artifact-version-ids"}),
        _bind("getOrCreatePersonalAccessToken", **{"query.teamName": "teams"}),
        _bind("deleteSecretGroup", **{"path.id": "secret-group-ids"}),
        _bind("listJobRuns", **{"path.jobId": "job-ids", "query.offset": "big-integers"}),
        _bind("getModelResponse", **{"path.id": "model-response-ids"}),
        _bind("deleteModelResponse", **{"path.id": "model-response-ids"}),
        _bind("listModelResponseInputItems", **{"path.id": "model-response-ids"}),
        _bind("createModelResponse", **{"body.model": "chat-models"}),
        _bind("createChatCompletion", **{"body.model": "chat-models"}),
        _bind("createEmbedding", **{"body.model": "embedding-models"}),
        _bind("retrieveModel", **{"path.model": "models"}),
    ],
}
CONFIG = schemathesis.Config.from_dict(SETTINGS)
# The workflows' links are the ones written below, and only those: schemathesis would
# otherwise infer more from the contract (a list of secret groups feeding their deletion),
# and a new operation would change what a workflow runs.
LINKED_CONFIG = schemathesis.Config.from_dict(
    {
        **SETTINGS,
        "phases": {"stateful": {"max-steps": STEPS, "inference": {"algorithms": []}}},
    }
)


def _as_read(name: str) -> dict[str, Any]:
    """A contract document as the mock reads request bodies. The contract reads an optional
    field given as `null` as absent (its introduction says so), which OpenAPI 3.0 can only
    say with `nullable`: schemathesis would count such a null as invalid data, and a request
    otherwise valid (the documents' examples name records of the world) as accepted invalid
    data. So each optional field of a request body is marked nullable in the copy fuzzed
    here; bodies are inlined first, so that no response's schema changes."""
    raw = yaml.load((SPEC / name).read_text(), yaml.CSafeLoader)  # C: read as tests collect
    resolved = contract.resolved(raw)
    for path, item in raw["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            for media_type, content in (body or {}).get("content", {}).items():
                inlined = resolved["paths"][path][method]["requestBody"]["content"][media_type]
                content["schema"] = _optionals_nullable(inlined["schema"])
    return raw


def _optionals_nullable(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_optionals_nullable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _optionals_nullable(value) for key, value in schema.items()}
    required = set(schema.get("required", ()))
    for name, field in out.get("properties", {}).items():
        if name not in required and isinstance(field, dict):
            field["nullable"] = True
    return out


CONTROL_PLANE = schemathesis.openapi.from_dict(_as_read("control-plane.yaml"), config=CONFIG)
GATEWAY = schemathesis.openapi.from_dict(_as_read("gateway.yaml"), config=CONFIG)

ROLE_BINDING_MODES = {"resourceType", "resourceId", "subjectType", "subjectId"}
ROLE_BINDING_QUERY = jsonschema.Draft4Validator(
    {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            parameter["name"]: parameter["schema"]
            for parameter in CONTROL_PLANE.raw_schema["paths"][
                "/api/svc/v1/role-bindings/generate-manifest"
            ]["get"]["parameters"]
        },
    }
)


@CONTROL_PLANE.hook
def flatmap_query(context: schemathesis.HookContext, query: dict[str, Any] | None):
    """Role bindings take exactly one of two modes, which OpenAPI 3.0 cannot say: random
    optional parameters nearly always mix them (400, code 40002). A valid query is therefore
    also tried with one whole mode, naming a resource or subject of the world, so that the
    fuzzer reaches the manifests too. An invalid query is left as it is."""
    operation = context.operation
    if (
        operation is None
        or operation.definition.raw.get("operationId") != "generateRoleBindingManifests"
        or not ROLE_BINDING_QUERY.is_valid(query or {})
    ):
        return st.just(query)
    rest = {name: value for name, value in (query or {}).items() if name not in ROLE_BINDING_MODES}
    resources = list(zip(WORLD["resource-types"], WORLD["resource-ids"], strict=True))
    subjects = list(zip(WORLD["subject-types"], WORLD["subject-ids"], strict=True))
    by_resource = st.sampled_from(resources).map(
        lambda pair: {**rest, "resourceType": pair[0], "resourceId": pair[1]}
    )
    by_subject = st.sampled_from(subjects).map(
        lambda pair: {**rest, "subjectType": pair[0], "subjectId": pair[1]}
    )
    return st.one_of(st.just(query), by_resource, by_subject)


def business_rule_400_only(ctx: Any, response: schemathesis.Response, case: schemathesis.Case):
    """A schema-valid request answered 400 broke a documented business rule, not the contract."""
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return None
    if response.status_code != 400:
        return None
    operation_id = case.operation.definition.raw.get("operationId")
    allowed = BUSINESS_RULE_400.get(operation_id)
    if allowed is None:
        return None  # 400 is not accepted at all there: positive_data_acceptance reports it
    code = response.json().get("code")
    assert code in allowed, (
        f"A schema-valid request was answered 400 with code {code}; {operation_id} documents "
        f"400 for valid data only with code {sorted(allowed)}"
    )
    return None


def _paths_by_operation_id(raw: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        definition["operationId"]: (path, method)
        for path, methods in raw["paths"].items()
        for method, definition in methods.items()
    }


WORKFLOW = contract.WORKFLOW
WORKFLOWS = contract.workflows()


def linked_contract(links: dict[tuple[str, str], dict[str, Any]]) -> OpenApiSchema:
    """The control plane with these links, restricted to the operations they join."""
    raw = _as_read("control-plane.yaml")
    # The versions' `run_ids` filter names runs of the platform's experiment tracking, which
    # no operation of the contract makes: schemathesis infers a resource from it that no
    # answer gives, reads a manifest's `run_id` as a reference to it, and would never start
    # a workflow with the stage that carries one.
    for methods in raw["paths"].values():
        for definition in methods.values():
            definition["parameters"] = [
                p for p in definition.get("parameters", []) if p.get("name") != "run_ids"
            ]
    for methods in raw["paths"].values():  # the other workflows' links go
        for definition in methods.values():
            for response in definition["responses"].values():
                response.pop("links", None)
    for response in raw["components"]["responses"].values():
        response.pop("links", None)
    paths = _paths_by_operation_id(raw)
    for (operation_id, status), named in links.items():
        path, method = paths[operation_id]
        responses = raw["paths"][path][method]["responses"]
        response = responses[status]
        if "$ref" in response:  # links cannot sit beside a $ref in OpenAPI 3.0
            response = copy.deepcopy(
                raw["components"]["responses"][response["$ref"].split("/")[-1]]
            )
            responses[status] = response
        response["links"] = named
    targets = {link["operationId"] for named in links.values() for link in named.values()}
    sources = {operation_id for operation_id, _ in links}
    schema = schemathesis.openapi.from_dict(raw, config=LINKED_CONFIG)
    included = schema.include(operation_id=sorted(sources | targets))
    assert isinstance(included, OpenApiSchema)
    return included


class ContractModel:
    """What the contract says a sequence of calls must show, checked on every step."""

    def __init__(self) -> None:
        self.staged: set[tuple[str, str, str, int]] = set()  # repo, variant, name, version
        self.staged_ids: set[str] = set()
        self.tokens: dict[str, str] = {}  # name -> value first issued
        self.deleted: set[str] = set()  # secret group ids
        self.failed: set[str] = set()  # ids of versions marked failed
        self.finalised: dict[str, str] = {}  # ids of versions finalised: their FQN

    def sequence_rules(self, ctx: Any, response: schemathesis.Response, case: schemathesis.Case):
        if case.meta is None or case.meta.generation.mode is not GenerationMode.POSITIVE:
            return None  # an invalid request is rejected whatever came before it
        operation_id = case.operation.definition.raw.get("operationId")
        status = response.status_code
        rule: Callable[[schemathesis.Case, int, schemathesis.Response], None] | None = getattr(
            self, f"_{operation_id}", None
        )
        if rule is not None and status < 500:
            rule(case, status, response)
        return None

    def _stageArtifactVersion(self, case, status, response) -> None:
        manifest = case.body.get("manifest") if isinstance(case.body, dict) else None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("version"), int):
            if status == 200:
                self.staged_ids.add(response.json()["id"])
            return
        key = (manifest["ml_repo"], manifest["type"], manifest["name"], manifest["version"])
        if key in self.staged:
            assert status == 409, f"version {key} was staged already: expected 409, got {status}"
        elif status == 200:
            self.staged.add(key)
            self.staged_ids.add(response.json()["id"])

    def _markArtifactVersionStageFailure(self, case, status, response) -> None:
        version_id = case.body.get("id") if isinstance(case.body, dict) else None
        if version_id in self.finalised:
            assert status == 409, f"version {version_id} was finalised: its staging cannot fail"
        elif version_id in self.failed:
            assert status == 200, f"version {version_id} failed already: marking it again is 200"
        elif status == 200 and version_id is not None:
            self.failed.add(version_id)

    def _createOrUpdateArtifactVersion(self, case, status, response) -> None:
        if status == 200:
            version = response.json()["data"]
            self.finalised[version["id"]] = version["fqn"]

    def _getArtifactVersion(self, case, status, response) -> None:
        version_id = case.path_parameters.get("id") if case.path_parameters else None
        if version_id in self.finalised:
            assert status == 200, f"version {version_id} was finalised: reading it must be 200"
            assert response.json()["data"]["fqn"] == self.finalised[version_id]

    def _listArtifactVersions(self, case, status, response) -> None:
        query = {k: v for k, v in (case.query or {}).items() if v is not None}
        fqn = query.get("fqn")
        if fqn not in self.finalised.values() or query.keys() - {"fqn", "limit"}:
            return  # another filter, or a page further, may leave it out
        found = [version["fqn"] for version in response.json()["data"]]
        assert (status, found) == (200, [fqn]), f"listing by {fqn} must find that version"

    def _applyArtifactVersionTags(self, case, status, response) -> None:
        version_id = case.body.get("artifact_version_id") if isinstance(case.body, dict) else None
        if version_id in self.failed:
            assert status == 409, f"version {version_id} failed staging: tagging it must be 409"
        elif version_id in self.staged_ids:
            assert status in (200, 409), (
                f"version {version_id} was just staged: tagging it must be 200 or 409, got {status}"
            )

    def _getOrCreatePersonalAccessToken(self, case, status, response) -> None:
        if status != 200:
            return
        name, body = case.path_parameters["name"], response.json()
        if name in self.tokens:
            assert body["created"] is False, f"token {name!r} exists: expected created false"
            assert body["token"] == self.tokens[name], f"token {name!r}: not the value first issued"
        else:
            assert body["created"] is True, f"token {name!r} is new: expected created true"
            self.tokens[name] = body["token"]

    def _deleteSecretGroup(self, case, status, response) -> None:
        group_id = case.path_parameters["id"]
        if group_id in self.deleted:
            assert status == 404, f"group {group_id} was deleted: a second delete must be 404"
        elif status == 200:
            self.deleted.add(group_id)


def link_name(transition_id: str) -> str:
    """`TagTheStagedVersion` from `POST /a/stage -> [200] TagTheStagedVersion -> PUT /a/tags`."""
    return transition_id.split("] ", 1)[1].split(" -> ", 1)[0]
