"""The platform's published clients read every record the mock returns.

Two checks, over the default world and a generated one (another seed, `generate:` for
applications, runs and model responses):

- Shapes: for every operation of the contract, the success bodies the world can produce
  (every page, every mode, every variant) and a documented error body are parsed from the
  raw JSON with the client's model, the platform SDK's (`truefoundry-sdk`) for the control
  plane and `openai`'s for the gateway, and must agree with it strictly (`sdk_oracle`).
- Methods: where the SDK has a method for an operation, the method itself is called
  against the mock, and each documented error arrives as the SDK's own exception class.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pydantic
import pytest
from openai.types.responses import Response
from pydantic import v1
from truefoundry_gateway_sdk.types import RequestErrorResponse
from truefoundry_sdk import TrueFoundry
from truefoundry_sdk import types as sdk
from truefoundry_sdk.core.api_error import ApiError
from truefoundry_sdk.errors import (
    FailedDependencyError,
    ForbiddenError,
    NotFoundError,
    UnprocessableEntityError,
)

from mock_server import PlatformMock
from mock_server.contract import documents as contract
from mock_server.fixtures import loader as fixtures
from mock_server.handlers import catalog
from tests.budget import budget
from tests.conftest import CONTROL_PLANE, token_of
from tests.sdk_oracle import disagreements

CAROL = "carol@acme.example"  # holds no grant

# A world the seed and Faker make: applications, runs and model responses generated.
GENERATED_WORLD = {
    "applications": [
        {"generate": 12, "workspace": "ml-team"},
        {
            "name": "sweeps",
            "type": "job",
            "workspace": "ml-team",
            "deployments": [
                {
                    "manifest": {
                        "image": {"type": "image", "image_uri": "registry.acme.example/sw:2.0.1"},
                        "trigger": {"type": "manual"},
                    }
                }
            ],
            "runs": [{"generate": 250}],
        },
    ],
    "modelResponses": [{"generate": 20}],
}


UNKNOWN_REPO = {
    "type": "model-version",
    "name": "m",
    "ml_repo": "nope",
    "source": {"type": "truefoundry"},
}


# -- envelopes the SDK has no model of, made of the SDK's own models ----------------------------


class _Envelope(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")  # extras are reported, not refused


class RoleBindingManifests(_Envelope):
    data: list[sdk.RoleBindingManifest]


class DeploymentPage(_Envelope):
    data: list[sdk.Deployment]
    pagination: sdk.Pagination


class TokenResponse(_Envelope):
    data: sdk.VirtualAccount
    token: str
    created: bool


class DeletedResponse(_Envelope):
    """What OpenAI answers a delete (`openai`'s `responses.delete` reads no body)."""

    id: str
    object: str
    deleted: bool


class ModelPage(_Envelope):
    object: str
    data: list[openai.types.Model]


@dataclass
class World:
    """A served world and the raw bodies to check in it."""

    mock: PlatformMock
    api: httpx.Client
    gateway: httpx.Client

    def ok(self, response: httpx.Response) -> bytes:
        assert response.status_code == 200, response.text
        return response.content

    def job_ids(self) -> list[str]:
        return [a.id for a in self.mock.store.world.applications.values() if a.type == "job"]


def _role_bindings(world: World) -> Iterator[bytes]:
    identity = world.mock.store.world
    for (type_, subject_id), _ in identity.subjects.items():
        for only_tenant in ("false", "true"):
            params = {"subjectType": type_, "subjectId": subject_id}
            params["includeOnlyTenantRoles"] = only_tenant
            yield world.ok(world.api.get("/role-bindings/generate-manifest", params=params))
    for (type_, resource_id), _ in identity.resources.items():
        params = {"resourceType": type_, "resourceId": resource_id}
        yield world.ok(world.api.get("/role-bindings/generate-manifest", params=params))


def _secret_deployments(world: World) -> Iterator[bytes]:
    secret_ids = [s for g in world.mock.store.world.secret_groups.values() for s in g.secrets]
    offset = 0
    while True:  # every page, and the empty one past the end
        body = world.ok(
            world.api.post(
                "/secrets/deployments",
                json={"secretIds": secret_ids},
                params={"limit": 2, "offset": offset},
            )
        )
        yield body
        if b'"data":[]' in body:
            return
        offset += 2


def _stage(world: World) -> Iterator[bytes]:
    kinds: list[tuple[str, dict[str, Any]]] = [
        # The SDK's own name for the platform's storage.
        ("artifact-version", {"metadata": {"rows": 10}, "source": {"type": "truefoundry"}}),
        (
            "model-version",
            {"framework": {"type": "transformers"}, "source": {"type": "truefoundry"}},
        ),
        ("agent-skill", {"source": {"type": "inline", "skill_md": "# A skill\n"}}),
    ]
    for type_, extra in kinds:
        manifest = {"type": type_, "name": "oracle", "ml_repo": "demo-repo", **extra}
        yield world.ok(world.api.post("/artifact-versions/stage", json={"manifest": manifest}))


def _tags(world: World) -> Iterator[bytes]:
    staged = next(_stage(world))
    version = pydantic.TypeAdapter(sdk.StageArtifactResponse).validate_json(staged).id
    body = {"artifact_version_id": version, "tags": ["oracle"], "force": True}
    yield world.ok(world.api.put("/artifact-versions/tags", json=body))


def _tokens(world: World) -> Iterator[bytes]:
    yield world.ok(world.api.get("/personal-access-tokens/plain"))
    yield world.ok(world.api.get("/personal-access-tokens/plain"))  # existing: created false
    yield world.ok(
        world.api.get("/personal-access-tokens/team", params={"teamName": "ml-platform"})
    )


def _delete_group(world: World) -> Iterator[bytes]:
    for group in list(world.mock.store.world.secret_groups.values()):
        path = f"/secret-groups/{group.resource.id}"
        yield world.ok(world.api.delete(path, params={"forceDelete": "true"}))


def _job_runs(world: World) -> Iterator[bytes]:
    for job_id in world.job_ids():
        for sort_by in ("startTime", "duration", "triggeredBy"):
            offset = 0
            while True:
                params = {"limit": 100, "offset": offset, "sortBy": sort_by}
                body = world.ok(world.api.get(f"/jobs/{job_id}/runs", params=params))
                yield body
                if b'"data":[]' in body:
                    break
                offset += 100


def _model_responses(world: World) -> Iterator[bytes]:
    for response_id in list(world.mock.store.world.model_responses):
        yield world.ok(world.gateway.get(f"/responses/{response_id}"))


@dataclass(frozen=True)
class Oracle:
    """How to check one operation: the client model of its success body, the requests
    whose bodies to check, and one request the contract documents as an error."""

    model: Any
    bodies: Callable[[World], Iterator[bytes]]
    error: Callable[[World], httpx.Response]
    extras: frozenset[str] = frozenset()  # fields the platform adds to the client's model


ORACLES: dict[str, Oracle] = {
    "generateRoleBindingManifests": Oracle(
        RoleBindingManifests,
        _role_bindings,
        lambda w: w.api.get(
            "/role-bindings/generate-manifest", params={"subjectType": "user", "subjectId": "x"}
        ),
    ),
    "listSecretDeployments": Oracle(
        DeploymentPage,
        _secret_deployments,
        lambda w: w.api.post("/secrets/deployments", json={"secretIds": "x"}),
    ),
    "stageArtifactVersion": Oracle(
        sdk.StageArtifactResponse,
        _stage,
        lambda w: w.api.post("/artifact-versions/stage", json={"manifest": UNKNOWN_REPO}),
    ),
    "applyArtifactVersionTags": Oracle(
        sdk.EmptyResponse,
        _tags,
        lambda w: w.api.put(
            "/artifact-versions/tags", json={"artifact_version_id": "nope", "tags": ["a"]}
        ),
    ),
    "getOrCreatePersonalAccessToken": Oracle(
        TokenResponse,
        _tokens,
        lambda w: w.api.get("/personal-access-tokens/x", params={"teamName": "data-science"}),
    ),
    "deleteSecretGroup": Oracle(
        sdk.DeleteSecretGroupResponse,
        _delete_group,
        lambda w: w.api.delete("/secret-groups/nope"),
    ),
    "listJobRuns": Oracle(
        sdk.ListJobRunResponse, _job_runs, lambda w: w.api.get("/jobs/nope/runs")
    ),
    # The gateway's response is OpenAI's, plus two fields the source document requires
    # that the openai package does not declare (it keeps them, as OpenAI-compatible
    # clients do).
    "getModelResponse": Oracle(
        Response,
        _model_responses,
        lambda w: w.gateway.get("/responses/resp_nope"),
        extras=frozenset({"provider", "store"}),
    ),
    # A response created is the same record, with the same two fields.
    "createModelResponse": Oracle(
        Response,
        lambda w: iter(
            [w.ok(w.gateway.post("/responses", json={"model": "gpt-4o-mini", "input": "Hi."}))]
        ),
        lambda w: w.gateway.post("/responses", json={"model": "gpt-4o-mini", "input": 1}),
        extras=frozenset({"provider", "store"}),
    ),
    "deleteModelResponse": Oracle(
        DeletedResponse,
        lambda w: iter(
            [w.ok(w.gateway.delete("/responses/resp_0000000000000000000000000000demo"))]
        ),
        lambda w: w.gateway.delete("/responses/resp_nope"),
    ),
    # `openai`'s pager reads the list's `data` as its models.
    "listModels": Oracle(
        ModelPage,
        lambda w: iter([w.ok(w.gateway.get("/models"))]),
        lambda w: w.gateway.get("/models", params={"limit": 1}),
    ),
}


# -- the records of the users' flows: every kind an apply makes, every page of versions ------

ROOT = "s3://platform-acme-artifacts/demo-repo"
SKILL_MD = "---\nname: oracle\ndescription: d\n---\nDo it.\n"


def _applied(world: World) -> Iterator[bytes]:
    """An apply of each kind the mock applies, created then updated, and a dry run."""
    binding = {
        "type": "role-binding",
        "name": "oracle-binding",
        "subjects": [{"type": "team", "name": "ml-platform"}],
        "permissions": [
            {
                "resourceType": "mlf-project",
                "resourceFqn": "acme:demo-repo",
                "role": "mlf-project-viewer",
            }
        ],
    }
    group = {
        "type": "secret-group",
        "name": "oracle-keys",
        "integration_fqn": "acme:aws:secrets-manager",
        "secrets": [{"key": "K", "value": "v"}],
    }
    skill = {"type": "agent-skill", "name": "oracle", "ml_repo": "demo-repo", "metadata": {}}
    staged = world.ok(
        world.api.post(
            "/artifact-versions/stage",
            json={"manifest": {**skill, "source": {"type": "inline", "skill_md": SKILL_MD}}},
        )
    )
    uri = json.loads(staged)["storage_root"]
    external = {"type": "external", "uri": "s3://bucket/oracle/"}
    model = {"type": "model-version", "name": "sentiment", "ml_repo": "demo-repo", "metadata": {}}
    manifests = [
        binding,
        group,
        {**skill, "source": {"type": "blob-storage", "description": "d", "uri": uri}},
        {**skill, "name": "oracle-inline", "source": {"type": "inline", "skill_md": SKILL_MD}},
        {**model, "name": "oracle", "framework": {"type": "xgboost"}, "source": external},
        {**model, "name": "oracle-artifact", "type": "artifact-version", "source": external},
        {**model, "source": {"type": "truefoundry", "uri": f"{ROOT}/models/sentiment/1/"}},
    ]
    for manifest in manifests:
        yield world.ok(world.api.put("/apply", json={"manifest": manifest}))
        yield world.ok(world.api.put("/apply", json={"manifest": manifest, "dryRun": True}))


def _versions(path: str) -> Callable[[World], Iterator[bytes]]:
    def bodies(world: World) -> Iterator[bytes]:
        offset = 0
        while True:  # every page, and the empty one past the end
            body = world.ok(world.api.get(path, params={"limit": 2, "offset": offset}))
            yield body
            if b'"data":[]' in body:
                return
            offset += 2

    return bodies


def _triggered(world: World) -> Iterator[bytes]:
    for job_id in world.job_ids():
        application = world.mock.store.world.applications[job_id]
        deployment = application.deployment_ids[application.active_version]
        yield world.ok(world.api.post("/jobs/trigger", json={"deploymentId": deployment}))


def _applications(world: World) -> Iterator[bytes]:
    for application_id in list(world.mock.store.world.applications):
        yield world.ok(world.api.get(f"/apps/{application_id}"))


ORACLES.update(
    {
        "applyManifest": Oracle(
            sdk.TrueFoundryApplyResponse,
            _applied,
            lambda w: w.api.put("/apply", json={"manifest": {"type": "service"}}),
        ),
        "listArtifactVersions": Oracle(
            sdk.ListArtifactVersionsResponse,
            _versions("/artifact-versions"),
            lambda w: w.api.get("/artifact-versions", params={"limit": 0}),
        ),
        "listModelVersions": Oracle(
            sdk.ListModelVersionsResponse,
            _versions("/model-versions"),
            lambda w: w.api.get("/model-versions", params={"limit": 0}),
        ),
        "triggerJob": Oracle(
            sdk.TriggerJobRunResponse,
            _triggered,
            lambda w: w.api.post("/jobs/trigger", json={"deploymentId": "nope"}),
        ),
        "getApplication": Oracle(
            sdk.GetApplicationResponse,
            _applications,
            lambda w: w.api.get("/apps/nope"),
            extras=frozenset({"data.workspace"}),
        ),
    }
)


# The platform's library (`truefoundry`, not installed here): the models of the operations
# only it reads are checked in its own environment (tests/test_truefoundry_library.py).
LIBRARY = "truefoundry."


def _from_catalog(operation_id: str) -> Oracle | None:
    """The oracle of an operation the catalog names a client model for: its example's body
    (or the body's field the model reads: the rest of the body must be that field alone),
    and the example with an unknown query parameter as the documented error (400)."""
    entry = catalog.CATALOG[operation_id]
    if not entry.client_model or entry.example is None or entry.client_model.startswith(LIBRARY):
        return None
    module, _, name = entry.client_model.partition(":")
    model = getattr(importlib.import_module(module), name)
    if entry.client_field:
        model = pydantic.create_model(  # type: ignore[call-overload]  # a field named at run time
            f"{name}Envelope", __base__=_Envelope, **{entry.client_field: (model, ...)}
        )
    operation = contract.operations()[operation_id]
    example = entry.example

    def send(world: World, **extra_query: Any) -> httpx.Response:
        request = example.request(world.mock.store)
        client = world.gateway if operation.document == contract.GATEWAY_SPEC else world.api
        token = token_of(world.mock, request.caller)
        return client.request(
            request.method,
            request.path.removeprefix(CONTROL_PLANE),  # the client's base URL has it
            params={**request.query, **extra_query},
            json=request.body,
            headers={"Authorization": f"Bearer {token}"},
        )

    return Oracle(
        model,
        lambda w: iter([w.ok(send(w))]),
        lambda w: send(w, notAParameterOfIt="1"),
        extras=entry.client_extras,
    )


for _operation in contract.operations():
    if _operation not in ORACLES and (_oracle := _from_catalog(_operation)) is not None:
        ORACLES[_operation] = _oracle


@pytest.mark.platform_mock(expect_violations=True)  # its documented error is a bad query
def test_a_client_model_named_in_the_catalog_makes_an_oracle(world, monkeypatch):
    entry = dataclasses.replace(
        catalog.CATALOG["listJobRuns"], client_model="truefoundry_sdk.types:ListJobRunResponse"
    )
    monkeypatch.setitem(catalog.CATALOG, "listJobRuns", entry)
    oracle = _from_catalog("listJobRuns")
    assert oracle is not None
    (body,) = oracle.bodies(world)
    assert disagreements(oracle.model, body) == []
    assert oracle.error(world).status_code == 400


def test_every_operation_of_the_contract_has_an_oracle():
    # Written here for the first eight; any other names its client model in its catalog
    # entry: the SDK's, checked here, or the platform library's, checked in its environment.
    library = {op for op, e in catalog.PLATFORM.items() if e.client_model.startswith(LIBRARY)}
    assert sorted(ORACLES) == sorted(set(contract.operations()) - library)
    assert not set(ORACLES) & library


def test_a_client_model_of_a_field_reads_that_field_and_no_other(world, monkeypatch):
    entry = dataclasses.replace(
        catalog.CATALOG["getSession"], client_model="truefoundry_sdk.types:Session"
    )
    monkeypatch.setitem(catalog.CATALOG, "getSession", entry)
    oracle = _from_catalog("getSession")
    assert oracle is not None
    (body,) = oracle.bodies(world)
    assert disagreements(oracle.model, body) == []
    widened = json.dumps({**json.loads(body), "tenantInfo": {"tenantName": "acme"}})
    assert disagreements(oracle.model, widened) == ["tenantInfo: not a field of SessionEnvelope"]


@pytest.fixture(params=["default", "generated"])
def world(request, mock, server, token) -> Iterator[World]:
    if request.param == "generated":
        mock.reset(seed=7, extra=[fixtures.check(GENERATED_WORLD, "generated")])
        token = mock.auth.dev_token()
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx.Client(base_url=server.url + CONTROL_PLANE, headers=headers) as api,
        httpx.Client(base_url=server.gateway_url, headers=headers) as gateway,
    ):
        yield World(mock, api, gateway)


@pytest.mark.parametrize("operation", sorted(ORACLES))
def test_every_success_body_agrees_with_the_client_model(world, operation):
    oracle = ORACLES[operation]
    checked = 0
    for body in oracle.bodies(world):
        assert disagreements(oracle.model, body, extras=oracle.extras) == [], body[:300]
        checked += 1
    assert checked > 0


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize("operation", sorted(ORACLES))
def test_a_documented_error_body_agrees_with_the_sdk_error_model(world, operation):
    response = ORACLES[operation].error(world)
    assert 400 <= response.status_code < 500, response.text
    assert str(response.status_code) in _documented(operation)
    if contract.operations()[operation].document != contract.GATEWAY_SPEC:
        assert disagreements(sdk.HttpError, response.content) == []
        return
    # A gateway error speaks both dialects: the platform SDK's fields, and OpenAI's `error`
    # object, which the platform's gateway SDK reads (its model of every gateway error).
    assert disagreements(sdk.HttpError, response.content, extras=frozenset({"error"})) == []
    platform = frozenset({"statusCode", "message", "code", "details"})
    assert disagreements(RequestErrorResponse, response.content, extras=platform) == []


def _documented(operation_id: str) -> set[str]:
    for name in contract.PLATFORM_SPECS:
        for item in contract.spec(name)["paths"].values():
            for method, op in item.items():
                if method in contract.METHODS and op["operationId"] == operation_id:
                    return set(op["responses"])
    raise AssertionError(f"no operation {operation_id}")


def test_the_oracle_sees_a_field_the_sdk_requires_missing():
    run = (
        b'{"data": [{"id": "r", "name": "r", "applicationName": "a", "deploymentVersion": "1",'
        b' "createdAt": 1, "command": "c", "totalRetries": 0, "status": "FAILED",'
        b' "triggeredBySubject": {"subjectId": "u"}}], "pagination": {"total": 1}}'
    )
    assert disagreements(sdk.ListJobRunResponse, run) == [
        "data.0.triggeredBySubject.subjectType: Field required"
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b'{"total": "3"}', "total: '3' coerced into int 3", id="string-as-int"),
        pytest.param(b'{"total": 3, "pages": 1}', "pages: not a field of Pagination", id="extra"),
    ],
)
def test_the_oracle_sees_what_the_sdk_would_let_through(body, expected):
    assert disagreements(sdk.Pagination, body) == [expected]


def test_the_oracle_sees_a_value_the_sdk_does_not_know():
    body = b'{"id": "s", "status": "SUCCESS"}'
    assert disagreements(sdk.DeploymentStatus, body) == [
        "status: 'SUCCESS' is not a value DeploymentStatusValue knows"
    ]


# -- the SDK's own methods against the mock ---------------------------------------------------


@pytest.fixture
def client(server, token) -> Iterator[TrueFoundry]:
    with httpx.Client(timeout=budget(30)) as http:
        yield TrueFoundry(api_key=token, base_url=server.url, httpx_client=http)


@pytest.fixture
def carol_client(server, mock) -> Iterator[TrueFoundry]:
    with httpx.Client(timeout=budget(30)) as http:
        yield TrueFoundry(api_key=token_of(mock, CAROL), base_url=server.url, httpx_client=http)


def _job(store, name: str = "trainer") -> str:
    return store.deployments.application_named(name).id


def test_sdk_pager_walks_every_run_and_stops_on_the_empty_page(client, store):
    runs = list(client.jobs.list_runs(_job(store), limit=7))
    expected = store.world.job_runs[_job(store)]
    assert sorted(run.id for run in runs) == sorted(run.id for run in expected)


def test_sdk_filters_runs_by_a_users_email(client, store):
    bob = "bob@acme.example"
    runs = list(client.jobs.list_runs(_job(store), triggered_by=[bob], limit=5))
    assert runs and {run.triggered_by_subject.subject_slug for run in runs} == {bob}


@pytest.mark.parametrize(
    ("job", "as_carol", "error", "status"),
    [
        pytest.param("nope", False, NotFoundError, 404, id="404-unknown-job"),
        pytest.param("chat-api", False, UnprocessableEntityError, 422, id="422-not-a-job"),
        pytest.param("trainer", True, ForbiddenError, 403, id="403-no-grant"),
    ],
)
def test_sdk_list_runs_errors_arrive_as_sdk_exceptions(
    client, carol_client, store, job, as_carol, error, status
):
    job_id = job if job == "nope" else _job(store, job)
    with pytest.raises(error) as raised:
        list((carol_client if as_carol else client).jobs.list_runs(job_id))
    assert raised.value.status_code == status


def test_sdk_stages_a_model_version(client, store):
    staged = client.artifact_versions.stage(
        manifest=sdk.ModelManifest(
            name="sdk-model",
            ml_repo="demo-repo",
            metadata={"owner": "sdk"},
            source=sdk.TrueFoundryManagedSource(),
            framework=sdk.TransformersFramework(),
        )
    )
    assert store.world.artifact_versions[staged.id].manifest["name"] == "sdk-model"


def test_sdk_marks_a_staged_version_failed(client, store):
    manifest = sdk.ArtifactManifest(
        name="sdk-failed", ml_repo="demo-repo", metadata={}, source=sdk.TrueFoundryManagedSource()
    )
    staged = client.artifact_versions.stage(manifest=manifest)
    client.artifact_versions.mark_stage_failure(id=staged.id)
    assert store.world.artifact_versions[staged.id].failed


def test_sdk_mark_stage_failure_of_an_unknown_version_is_its_api_error_404(client):
    with pytest.raises(ApiError) as raised:
        client.artifact_versions.mark_stage_failure(id="00000000-0000-4000-8000-000000000000")
    assert raised.value.status_code == 404


def test_sdk_stage_in_an_unknown_repo_is_its_api_error_404(client):
    manifest = sdk.ArtifactManifest(
        name="x", ml_repo="nope", metadata={}, source=sdk.TrueFoundryManagedSource()
    )
    with pytest.raises(ApiError) as raised:
        client.artifact_versions.stage(manifest=manifest)
    assert (raised.value.status_code, raised.value.body["code"]) == (404, 40403)


def test_sdk_applies_tags_with_its_default_force(client, store):
    staged = client.artifact_versions.stage(
        manifest=sdk.ArtifactManifest(
            name="tagged", ml_repo="demo-repo", metadata={}, source=sdk.TrueFoundryManagedSource()
        )
    )
    client.artifact_versions.apply_tags(artifact_version_id=staged.id, tags=["sdk"])
    assert store.artifacts.version(staged.id).tags == ["sdk"]


def test_sdk_tag_taken_by_another_version_is_its_api_error_409(client, store):
    production = next(v for v in store.world.artifact_versions.values() if v.tags)
    staged = client.artifact_versions.stage(
        manifest=sdk.ModelManifest(
            name="sentiment",
            ml_repo="demo-repo",
            metadata={},
            source=sdk.TrueFoundryManagedSource(),
        )
    )
    with pytest.raises(ApiError) as raised:
        client.artifact_versions.apply_tags(artifact_version_id=staged.id, tags=production.tags)
    assert (raised.value.status_code, raised.value.body["code"]) == (409, 40901)


def test_sdk_deletes_a_secret_group(client, store):
    group = store.secrets.group_named("llm-keys").resource.id
    client.secret_groups.delete(group)
    assert group not in store.world.secret_groups


@pytest.mark.parametrize(
    ("group", "as_carol", "error"),
    [
        pytest.param(None, False, NotFoundError, id="404-unknown-group"),
        pytest.param("legacy-vault", False, FailedDependencyError, id="424-integration-down"),
        pytest.param("llm-keys", True, ForbiddenError, id="403-no-grant"),
    ],
)
def test_sdk_delete_errors_arrive_as_sdk_exceptions(
    client, carol_client, store, group, as_carol, error
):
    group_id = store.secrets.group_named(group).resource.id if group else "nope"
    with pytest.raises(error):
        (carol_client if as_carol else client).secret_groups.delete(group_id)
    assert group is None or group_id in store.world.secret_groups


def test_sdk_force_deletes_a_group_whose_integration_is_down(client, store):
    group = store.secrets.group_named("legacy-vault").resource.id
    client.secret_groups.delete(group, force_delete=True)
    assert group not in store.world.secret_groups


def test_openai_client_retrieves_every_stored_response(server, token, store):
    with openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as gateway:
        for response_id in store.world.model_responses:
            assert gateway.responses.retrieve(response_id).id == response_id


def test_openai_client_unknown_response_is_its_not_found_error(server, token):
    with (
        openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as gateway,
        pytest.raises(openai.NotFoundError) as raised,
    ):
        gateway.responses.retrieve("resp_nope")
    assert raised.value.status_code == 404


# A world at the edges of what the fixture schema lets through: every value must still be
# one the contract can return and the SDK read (the fixture bounds agree with the spec's).
EDGE_WORLD = {
    "users": [{"email": "e" * 1000 + "@acme.example", "displayName": "E" * 5000}],
    "applications": [
        {
            "name": "e" * 128,
            "type": "job",
            "workspace": "ml-team",
            "deployments": [
                {
                    "manifest": {
                        "image": {"type": "image", "image_uri": "r/e:1"},
                        "trigger": {"type": "manual"},
                        "retries": 10,
                    }
                }
            ],
            "runs": [
                {
                    "status": "FAILED",
                    "createdAt": "1970-01-01T00:00:00Z",
                    "durationSeconds": 1_000_000_000,
                    "totalRetries": 2**53 - 1,
                    "exitCode": -(2**53 - 1),
                    "triggeredBy": "e" * 1000 + "@acme.example",
                },
                {"status": "RUNNING", "createdAt": "8999-12-31T23:59:59Z", "totalRetries": 0},
            ],
        }
    ],
    "modelResponses": [
        {"id": "resp_edge", "maxOutputTokens": 2**53 - 1, "temperature": 2, "text": ""}
    ],
}


def test_a_world_at_the_fixture_bounds_is_served_and_read_by_the_sdk(mock, api, gateway):
    mock.reset(extra=[fixtures.check(EDGE_WORLD, "edge")])
    job = mock.store.deployments.application_named("e" * 128).id
    runs = api.get(f"/jobs/{job}/runs")
    assert runs.status_code == 200, runs.text
    assert disagreements(sdk.ListJobRunResponse, runs.content) == []
    response = gateway.get("/responses/resp_edge")
    assert response.status_code == 200, response.text
    assert disagreements(Response, response.content, extras=frozenset({"provider", "store"})) == []


# -- the platform library's models are pydantic's v1 models: read as strictly ---------------


class _V1Config(v1.BaseModel):
    class Config:
        allow_population_by_field_name = True

    min_version: str = v1.Field(alias="minVersion")
    flag: bool | None = v1.Field(alias="useIt", default=False)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param('{"minVersion": "1.0", "useIt": true}', [], id="agrees"),
        pytest.param('{"useIt": true}', ["minVersion: field required"], id="missing"),
        pytest.param('{"minVersion": 1}', ["minVersion: 1 coerced into str '1'"], id="coerced"),
        pytest.param(
            '{"minVersion": "1", "other": 2}', ["other: not a field of _V1Config"], id="extra"
        ),
    ],
)
def test_the_oracle_reads_a_v1_model_as_strictly(body, expected):
    assert disagreements(_V1Config, body) == expected
