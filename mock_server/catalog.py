"""The operation catalog: the per-operation facts the contract does not say, one entry each.

The spec documents say an operation's method, path, parameters, body and documented
statuses (`contract.operations()`). What they cannot say is here, in one entry per
operationId: the handler that serves it, a valid example request in the default world
(`fixtures/default.yaml`), and, for each documented error status, the error condition the
operation answers with (the one a fault injects). The journal, the faults, the report and
the generic test suites read both, so adding an operation means its spec, its entry here,
its handler, its state rule and its own tests; tests fail when an operation of the specs
has no entry, or an entry no operation.

An example names objects of the world by reference, `<kind:name>` (see `KINDS`), and is
filled with their ids for a given store: ids depend on the world's seed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mock_server import errors
from mock_server.errors import PlatformError
from mock_server.handlers import (
    admin,
    artifacts,
    gateway,
    jobs,
    role_bindings,
    secrets,
    session,
    tokens,
)

if TYPE_CHECKING:
    from mock_server.state import Store

DEFAULT_CALLER = "alice@acme.example"  # the tenant admin of the default world


def _artifact_version(store: Store, name: str) -> str:
    artifact_name, _, version = name.rpartition("/")
    artifact = next(a for a in store.world.artifacts.values() if a.name == artifact_name)
    return artifact.versions[int(version)]


def _secret(store: Store, name: str) -> str:
    group, _, key = name.partition("/")
    secret = next(s for s in store.secrets.group_named(group).secrets.values() if s.key == key)
    return secret.id


# How a reference `<kind:name>` is read in a store: the id of the object of that kind and name.
KINDS: dict[str, Callable[[Store, str], str]] = {
    "user": lambda store, email: store.identity.subject_named("user", email).id,
    "team": lambda store, name: store.identity.subject_named("team", name).id,
    "secret-group": lambda store, name: store.secrets.group_named(name).resource.id,
    "secret": _secret,  # group/KEY
    "application": lambda store, name: store.deployments.application_named(name).id,
    "artifact-version": _artifact_version,  # artifact/version number
}
REFERENCE = re.compile(r"<([a-z-]+):([^<>]+)>")


def fill_text(text: str, store: Store) -> str:
    """The text with every reference `<kind:name>` replaced by the id it names in the store."""
    return REFERENCE.sub(lambda found: KINDS[found[1]](store, found[2]), text)


def fill(value: Any, store: Store) -> Any:
    """A JSON value with the references in its strings filled (keys are kept as they are)."""
    if isinstance(value, str):
        return fill_text(value, store)
    if isinstance(value, list):
        return [fill(item, store) for item in value]
    if isinstance(value, dict):
        return {key: fill(item, store) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class Request:
    """An example filled for one store: what a client sends."""

    method: str
    path: str  # percent-encoded, under the root of its document's server
    query: dict[str, Any]
    body: Any  # the JSON body, or None
    caller: str  # the e-mail of the user whose development token sends it


@dataclass(frozen=True)
class Example:
    """A valid request of an operation in the default world, answered 200."""

    method: str
    path: str  # the spec's path template
    params: Mapping[str, str] = field(default_factory=dict)  # path parameters
    query: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    caller: str = DEFAULT_CALLER  # the e-mail of the user whose development token sends it

    def request(self, store: Store) -> Request:
        """The request filled with the ids of the objects it names in this store."""
        filled = {
            name: quote(fill_text(value, store), safe="") for name, value in self.params.items()
        }
        return Request(
            self.method,
            self.path.format_map(filled),
            fill(dict(self.query), store),
            fill(self.body, store),
            self.caller,
        )


@dataclass(frozen=True)
class Entry:
    """What the mock knows of one operation beyond its contract."""

    handler: Callable[..., Any]
    # None only for the admin API, which no generic suite of the platform API sends.
    example: Example | None = None
    # Each documented error status -> the condition the operation answers with (and a fault
    # injects); empty for the admin API, which faults never touch.
    errors: dict[int, type[PlatformError]] = field(default_factory=dict)
    # The platform client's model of the success body, as `module:Name` (e.g.
    # `truefoundry_sdk.types:ListJobRunResponse`): the oracle the test suite reads every such
    # body with. Empty where the suite has an oracle of its own (tests/test_sdk_oracle.py).
    client_model: str = ""
    # The top-level field of the body the model reads, where the client models only that.
    client_field: str = ""


# Statuses every operation of the platform documents, and those of every one taking a body.
# A fault's 401 is an expired token: what a long-running client meets.
_EVERY_OPERATION: dict[int, type[PlatformError]] = {
    400: errors.InvalidRequest,
    401: errors.ExpiredToken,
    500: errors.PlatformInternalError,
    503: errors.ServiceUnavailable,
}
# An operation that takes no token cannot meet a 401.
_WITHOUT_TOKEN = {status: cls for status, cls in _EVERY_OPERATION.items() if status != 401}
_WITH_BODY: dict[int, type[PlatformError]] = {
    413: errors.PayloadTooLarge,
    415: errors.UnsupportedMediaType,
}

PLATFORM: dict[str, Entry] = {
    "generateRoleBindingManifests": Entry(
        role_bindings.generate_manifests,
        Example(
            "GET",
            "/api/svc/v1/role-bindings/generate-manifest",
            query={"subjectType": "user", "subjectId": "<user:alice@acme.example>"},
        ),
        {
            **_EVERY_OPERATION,
            400: errors.InvalidRoleBindingQuery,
            404: errors.RoleBindingTargetNotFound,
        },
    ),
    "listSecretDeployments": Entry(
        secrets.list_deployments,
        Example(
            "POST",
            "/api/svc/v1/secrets/deployments",
            body={"secretIds": ["<secret:llm-keys/OPENAI_API_KEY>", "<secret:llm-keys/HF_TOKEN>"]},
        ),
        {**_EVERY_OPERATION, **_WITH_BODY},
    ),
    "stageArtifactVersion": Entry(
        artifacts.stage_version,
        Example(
            "POST",
            "/api/svc/v1/artifact-versions/stage",
            body={
                "manifest": {
                    "type": "artifact-version",
                    "name": "tokenizer",
                    "ml_repo": "demo-repo",
                    "source": {"type": "platform", "uri": "s3://bucket/tokenizer/"},
                }
            },
        ),
        {
            **_EVERY_OPERATION,
            **_WITH_BODY,
            403: errors.PermissionDenied,
            404: errors.MlRepoNotFound,
            409: errors.ArtifactVersionExists,
        },
    ),
    "applyArtifactVersionTags": Entry(
        artifacts.apply_tags,
        Example(
            "PUT",
            "/api/svc/v1/artifact-versions/tags",
            body={"artifact_version_id": "<artifact-version:sentiment/1>", "tags": ["candidate"]},
        ),
        {
            **_EVERY_OPERATION,
            **_WITH_BODY,
            403: errors.PermissionDenied,
            404: errors.ArtifactVersionNotFound,
            409: errors.TagInUse,
        },
    ),
    "getOrCreatePersonalAccessToken": Entry(
        tokens.get_or_create,
        Example("GET", "/api/svc/v1/personal-access-tokens/{name}", params={"name": "ci"}),
        {**_EVERY_OPERATION, 400: errors.InvalidTeam},
    ),
    "deleteSecretGroup": Entry(
        secrets.delete_group,
        Example(
            "DELETE", "/api/svc/v1/secret-groups/{id}", params={"id": "<secret-group:llm-keys>"}
        ),
        {
            **_EVERY_OPERATION,
            403: errors.PermissionDenied,
            404: errors.SecretGroupNotFound,
            424: errors.SecretIntegrationUnavailable,
        },
    ),
    "listJobRuns": Entry(
        jobs.list_runs,
        Example("GET", "/api/svc/v1/jobs/{jobId}/runs", params={"jobId": "<application:trainer>"}),
        {
            **_EVERY_OPERATION,
            403: errors.PermissionDenied,
            404: errors.JobNotFound,
            422: errors.NotAJob,
        },
    ),
    "markArtifactVersionStageFailure": Entry(
        artifacts.mark_stage_failure,
        Example(
            "POST",
            "/api/svc/v1/artifact-versions/mark-stage-failure",
            body={"id": "<artifact-version:sentiment/1>"},
        ),
        {
            **_EVERY_OPERATION,
            **_WITH_BODY,
            403: errors.PermissionDenied,
            404: errors.ArtifactVersionNotFound,
        },
        client_model="truefoundry_sdk.types:EmptyResponse",
    ),
    "getSession": Entry(
        session.get_session,
        Example("GET", "/api/svc/v1/session"),
        dict(_EVERY_OPERATION),
        client_model="truefoundry_sdk.types:Session",
        client_field="user",
    ),
    # The two operations a client asks before it has a token: their client is the platform's
    # library (`truefoundry`), whose models the tests read them with in its own environment.
    "getMinCliVersion": Entry(
        session.min_cli_version,
        Example("GET", "/api/svc/v1/min-cli-version"),
        _WITHOUT_TOKEN,
        client_model="truefoundry.common.entities:PythonSDKConfig",
    ),
    "getTenantId": Entry(
        session.tenant_id,
        Example("GET", "/api/svc/v1/tenant-id", query={"hostName": "127.0.0.1:8080"}),
        {**_WITHOUT_TOKEN, 404: errors.TenantNotFound},
        client_model="truefoundry.common.entities:TenantInfo",
    ),
    "getModelResponse": Entry(
        gateway.get_response,
        Example("GET", "/responses/{id}", params={"id": "resp_0000000000000000000000000000demo"}),
        {
            **_EVERY_OPERATION,
            400: errors.InvalidMetadataHeader,
            404: errors.ModelResponseNotFound,
        },
    ),
}

ADMIN: dict[str, Entry] = {
    "adminHealth": Entry(admin.health),
    "adminReset": Entry(admin.reset),
    "adminLoadFixtures": Entry(admin.load_fixtures),
    "adminMintToken": Entry(admin.mint_token),
    "adminGetState": Entry(admin.get_state),
    "adminGetJournal": Entry(admin.get_journal),
    "adminClearJournal": Entry(admin.clear_journal),
    "adminListFaults": Entry(admin.list_faults),
    "adminAddFault": Entry(admin.add_fault),
    "adminClearFaults": Entry(admin.clear_faults),
    "adminDeleteFault": Entry(admin.delete_fault),
    "adminGetReport": Entry(admin.get_report),
    "adminStartTest": Entry(admin.start_test),
    "adminEndTest": Entry(admin.end_test),
    "adminCreateWorld": Entry(admin.create_world),
    "adminDeleteWorld": Entry(admin.delete_world),
    "adminListRequests": Entry(admin.list_requests),
    "adminGetRequest": Entry(admin.get_request),
    "adminGetWorld": Entry(admin.get_world),
    "adminListRecords": Entry(admin.list_records),
    "adminEvents": Entry(admin.events),
}

CATALOG: dict[str, Entry] = {**PLATFORM, **ADMIN}


def handler(operation_id: str) -> Callable[..., Any]:
    """The function that serves an operation (KeyError for one the catalog does not have)."""
    return CATALOG[operation_id].handler


def example(operation_id: str) -> Example:
    """The valid example request of an operation of the platform API."""
    found = PLATFORM[operation_id].example
    assert found is not None, f"{operation_id} has no example"  # every platform entry has one
    return found
