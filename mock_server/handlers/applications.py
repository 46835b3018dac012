"""Handlers of the application lookups the platform's CLI makes before it triggers or
terminates a job (by FQN, then by id), with the wire form of an application as the platform
SDK's `Application` reads it (and the `workspace` the CLI reads beside it)."""

from __future__ import annotations

from typing import TypedDict

from mock_server.core import errors
from mock_server.core.jsonvalue import JsonObject
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation
from mock_server.state.entities import Application
from mock_server.state.jobs import ApplicationNotFound
from mock_server.state.sources import iso


class FqnIdsRecord(TypedDict):
    """The contract's `FqnIds`."""

    applicationId: str
    workspaceId: str


class ApplicationWorkspaceRecord(TypedDict):
    """The contract's `ApplicationWorkspace`, as the platform's CLI reads it."""

    name: str
    fqn: str
    clusterId: str


class WireApplication(TypedDict):
    """The contract's `Application`, with its active deployment and its workspace."""

    id: str
    fqn: str
    name: str
    type: str
    createdBySubject: render.SubjectReferenceRecord
    tenantName: str
    metadata: render.ApplicationMetadataRecord
    lifecycleStage: str
    workspaceId: str
    workspaceFqn: str
    lastVersion: int
    activeVersion: int
    applicationSetId: str
    createdAt: str
    updatedAt: str
    autopilot: JsonObject
    createdBy: str
    deployment: render.WireDeployment
    activeDeploymentId: str
    lastDeploymentId: str
    workspace: ApplicationWorkspaceRecord


@operation(
    "getIdFromFqn",
    Example(
        "GET",
        "/api/svc/v1/fqn/{type}",
        params={"type": "app"},
        query={"fqn": "<application-fqn:trainer>"},
    ),
    {403: errors.PermissionDenied, 404: ApplicationNotFound},
    client_model="truefoundry.deploy.v2.lib.models:ApplicationFqnResponse",
)
def ids_of_fqn(type_: str, *, fqn: str) -> FqnIdsRecord:
    application = store().deployments.application_by_fqn(caller(), fqn)
    return {"applicationId": application.id, "workspaceId": application.workspace_id}


@operation(
    "getApplication",
    Example("GET", "/api/svc/v1/apps/{id}", params={"id": "<application:trainer>"}),
    {403: errors.PermissionDenied, 404: ApplicationNotFound},
    client_model="truefoundry_sdk.types:GetApplicationResponse",
    client_extras=frozenset({"data.workspace"}),
)
def get_application(id_: str) -> render.DataRecord[WireApplication]:
    return {"data": application_record(store().deployments.get_application(caller(), id_))}


def application_record(application: Application) -> WireApplication:
    """An application with its active deployment, as the SDK's `Application` reads it, and
    its workspace as the platform's CLI reads it (its `Application` requires one)."""
    world = store().world
    workspace = world.resources[("workspace", application.workspace_id)]
    cluster_name = workspace.fqn.split(":")[0]
    cluster = store().identity.resource_named("cluster", cluster_name)
    active = world.deployments[application.deployment_ids[application.active_version]]
    last_version = max(application.deployment_ids)
    first = world.deployments[application.deployment_ids[min(application.deployment_ids)]]
    return {
        "id": application.id,
        "fqn": application.fqn,
        "name": application.name,
        "type": application.type,
        "createdBySubject": render.subject_reference(application.created_by),
        "tenantName": store().identity.tenant.name,
        "metadata": {"paused": False},
        "lifecycleStage": "active",
        "workspaceId": workspace.id,
        "workspaceFqn": workspace.fqn,
        "lastVersion": last_version,
        "activeVersion": application.active_version,
        "applicationSetId": application.application_set_id,
        "createdAt": iso(first.created_at),
        "updatedAt": iso(world.deployments[application.deployment_ids[last_version]].created_at),
        "autopilot": {},
        "createdBy": application.created_by.slug,
        "deployment": render.deployment(active),
        "activeDeploymentId": active.id,
        "lastDeploymentId": application.deployment_ids[last_version],
        "workspace": {"name": workspace.name, "fqn": workspace.fqn, "clusterId": cluster.id},
    }
