"""Handlers of who the caller is (`getSession`) and of what the platform's CLI and library
ask before anything else, without a token (`getMinCliVersion`, `getTenantId`)."""

from __future__ import annotations

from typing import TypedDict

from mock_server.core.coordinates import reached_url
from mock_server.handlers import render
from mock_server.handlers.context import caller, current, store
from mock_server.handlers.operation import Example, operation
from mock_server.state.identity import TenantNotFound


class ClientConfigRecord(TypedDict):
    """The contract's `ClientConfig`."""

    minVersion: str
    truefoundryCliMinVersion: str
    useSFYServerAuthAPIs: bool
    pythonBuildDefaultImageTag: str


class TenantInfoRecord(TypedDict):
    """The contract's `TenantInfo`."""

    tenantName: str
    auth_server_url: str


# The oldest client versions the platform serves: every published one. Refreshing a login
# through the auth server (`useSFYServerAuthAPIs` false) is never needed: the mock's tokens
# are long-lived.
CLIENT_CONFIG: ClientConfigRecord = {
    "minVersion": "0.1.0",
    "truefoundryCliMinVersion": "0.1.0",
    "useSFYServerAuthAPIs": False,
    "pythonBuildDefaultImageTag": "3.11",
}


@operation(
    "getSession",
    Example("GET", "/api/svc/v1/session"),
    client_model="truefoundry_sdk.types:Session",
    client_field="user",
)
def get_session() -> render.SessionRecord:
    return render.session(store().identity.session(caller()))


# The two operations a client asks before it has a token: their client is the platform's
# library (`truefoundry`), whose models the tests read them with in its own environment.
@operation(
    "getMinCliVersion",
    Example("GET", "/api/svc/v1/min-cli-version"),
    client_model="truefoundry.common.entities:PythonSDKConfig",
    recorded=False,  # the versions a client needs: nothing of the world
)
def min_cli_version() -> ClientConfigRecord:
    return CLIENT_CONFIG.copy()


@operation(
    "getTenantId",
    Example("GET", "/api/svc/v1/tenant-id", query={"hostName": "127.0.0.1:8080"}),
    {404: TenantNotFound},
    client_model="truefoundry.common.entities:TenantInfo",
)
def tenant_id(host_name: str) -> TenantInfoRecord:
    tenant = store().identity.tenant_of_host(host_name)
    return {"tenantName": tenant.name, "auth_server_url": own_url()}


def own_url() -> str:
    """The mock's base URL as this request reached it (`coordinates.reached_url`)."""
    call = current()
    return reached_url(call.scheme, call.headers.get("Host", ""), f"{call.scheme}://{call.server}")
