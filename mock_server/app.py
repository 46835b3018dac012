"""The mock server app: both OpenAPI documents on one Connexion FlaskApp, with its own store.

Connexion routes every request by the specs, authenticates it (`auth`), validates it in both
directions (`validation`) and calls the handler named by its operationId (`handlers`). Every
error on the way, Connexion's and Starlette's included, leaves as the platform error body.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import connexion
from connexion.exceptions import (
    BadRequestProblem,
    NonConformingResponse,
    OAuthProblem,
    ProblemException,
    UnsupportedMediaTypeProblem,
)
from connexion.jsonifier import Jsonifier
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import ConnexionMiddleware
from connexion.middleware.request_validation import (
    RequestValidationMiddleware as ConnexionRequestValidationMiddleware,
)
from connexion.options import SwaggerUIOptions
from connexion.resolver import Resolver
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from mock_server import errors, fixtures
from mock_server.auth import Authenticator
from mock_server.handlers import OPERATIONS
from mock_server.handlers.context import EXTENSION
from mock_server.resources import package_file
from mock_server.state import Store
from mock_server.validation import VALIDATOR_MAP, RequestValidationMiddleware, invalid_request

logger = logging.getLogger(__name__)

CONTROL_PLANE_SPEC = "control-plane.yaml"
GATEWAY_SPEC = "gateway.yaml"


@dataclass
class MockConfig:
    """How to build a mock: its world (fixtures and seed) and where the gateway lives."""

    seed: int = 0
    fixtures: list[str | Path] = field(default_factory=list)
    default_fixtures: bool = True
    gateway_prefix: str = "/gateway"
    signing_key: str | None = None


class PlatformMock:
    """One mock server: an ASGI app with its own store and token authority.

    Two instances in one process share nothing.
    """

    def __init__(self, config: MockConfig | None = None):
        self.config = config or MockConfig()
        documents = fixtures.default_fixtures() if self.config.default_fixtures else []
        documents += [fixtures.load(path) for path in self.config.fixtures]
        self.store = Store(self.config.seed, documents, self.config.signing_key)
        self.auth = Authenticator(self.store)
        self.gateway_prefix = "/" + self.config.gateway_prefix.strip("/")
        self.app = build_connexion_app(self.store, self.auth, self.gateway_prefix)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def build_connexion_app(
    store: Store, auth: Authenticator, gateway_prefix: str
) -> connexion.FlaskApp:
    app = connexion.FlaskApp(
        __name__,
        middlewares=[
            RequestValidationMiddleware if m is ConnexionRequestValidationMiddleware else m
            for m in ConnexionMiddleware.default_middlewares
        ],
        specification_dir=package_file("spec"),
        strict_validation=True,
        validate_responses=True,
        validator_map=VALIDATOR_MAP,
        security_map=auth.security_map(),
        resolver=Resolver(function_resolver=OPERATIONS.__getitem__),
        pythonic_params=True,
        jsonifier=Jsonifier(json, separators=(",", ":")),
        swagger_ui_options=SwaggerUIOptions(swagger_ui_path="/docs"),
    )
    app.add_api(CONTROL_PLANE_SPEC, base_path="")
    app.add_api(GATEWAY_SPEC, base_path=gateway_prefix)
    app.app.extensions[EXTENSION] = store
    # Starlette picks the handler by the exception's class hierarchy: Connexion registers its
    # own for ProblemException, so each base is claimed here.
    for condition in (Exception, HTTPException, ProblemException, errors.PlatformError):
        app.add_error_handler(condition, render_error)
    return app


def as_platform_error(
    exc: Exception, request: ConnexionRequest | None = None
) -> errors.PlatformError:
    """The platform error condition for anything raised while serving a request."""
    if isinstance(exc, errors.PlatformError):
        return exc
    detail = str(getattr(exc, "detail", "") or exc)
    if isinstance(exc, UnsupportedMediaTypeProblem):
        return errors.UnsupportedMediaType(detail)
    if isinstance(exc, OAuthProblem):
        return errors.MissingToken()
    if isinstance(exc, BadRequestProblem):
        return invalid_request([{"location": "request", "field": "", "message": detail}])
    if isinstance(exc, NonConformingResponse):
        return errors.MockFailure(
            f"The mock produced a response that breaks its contract: {detail}"
        )
    status = getattr(exc, "status_code", 500)
    where = f"{request.method} {request.url.path}" if request is not None else "this request"
    if status == 404:
        return errors.RouteNotFound(f"No route for {where}")
    if status == 405:
        return errors.MethodNotAllowed(f"Method not allowed: {where}")
    if isinstance(exc, HTTPException) and 400 <= status < 500:
        return invalid_request([{"location": "request", "field": "", "message": detail}])
    logger.error("Unexpected error serving %s", where, exc_info=exc)
    return errors.MockFailure()


def render_error(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    error = as_platform_error(exc, request)
    headers: dict[str, Any] = dict(getattr(exc, "headers", None) or {})
    headers.pop("Content-Type", None)
    return ConnexionResponse(
        status_code=error.status,
        mimetype="application/json",
        content_type="application/json",
        body=json.dumps(error.body(), separators=(",", ":")),
        headers=headers,
    )
