"""Handlers of operations 2 and 6: deployments behind secrets, and deleting a secret group."""

from __future__ import annotations

from typing import TypedDict

from mock_server.core import errors
from mock_server.handlers import render
from mock_server.handlers.context import caller, store
from mock_server.handlers.operation import Example, operation


class SecretDeploymentsRequest(TypedDict):
    """The contract's `SecretDeploymentsRequest`."""

    secretIds: list[str]


@operation(
    "listSecretDeployments",
    Example(
        "POST",
        "/api/svc/v1/secrets/deployments",
        body={"secretIds": ["<secret:llm-keys/OPENAI_API_KEY>", "<secret:llm-keys/HF_TOKEN>"]},
    ),
    read_only=True,  # a POST only for the length of its list of ids
)
def list_deployments(
    body: SecretDeploymentsRequest, *, limit: int, offset: int
) -> render.PageRecord[render.WireDeployment]:
    # limit and offset: Connexion fills in the spec's defaults.
    page = store().deployments.active_for_secrets(
        caller(), body["secretIds"], limit=limit, offset=offset
    )
    return render.page(page.items, page.total, page.offset, page.limit, render.deployment)


@operation(
    "deleteSecretGroup",
    Example("DELETE", "/api/svc/v1/secret-groups/{id}", params={"id": "<secret-group:llm-keys>"}),
    {
        403: errors.PermissionDenied,
        404: errors.SecretGroupNotFound,
        424: errors.SecretIntegrationUnavailable,
    },
)
def delete_group(id_: str, *, force_delete: bool) -> render.EmptyRecord:
    store().secrets.delete_group(caller(), id_, force_delete=force_delete)
    return {}
