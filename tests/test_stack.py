"""The request's way through the mock: one ordered list of layers, `RequestLimits` outermost,
and the response's way out one pass through the journal's readers."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.http import request_log, stack
from mock_server.http.mock import MockConfig, PlatformMock

# The order a request meets the layers in: the mock's own around the Connexion app, then
# Connexion's (its defaults, four replaced, less its ContextMiddleware), with the mock's own
# at their places.
ORDER = [
    "RequestLimits",
    "HostGuard",
    "Cors",
    "SignedUrls",
    "Journaling",
    "ServerErrorMiddleware",
    "ExceptionMiddleware",
    "PathGuard",
    "ViewPage",
    "SwaggerUIMiddleware",
    "RoutingMiddleware",
    "SecurityMiddleware",
    "RequestValidationMiddleware",
    "FaultInjection",
    "EventStream",
    "ResponseValidationMiddleware",
    "LifespanMiddleware",
]


def _name(layer: Any) -> str:
    return str(getattr(getattr(layer, "func", layer), "__name__", layer))


@pytest.fixture(scope="module")
def mock() -> PlatformMock:
    return PlatformMock(MockConfig(cors=["http://page.example"]))


def test_the_pipeline_is_one_list_in_this_order(mock):
    assert [_name(layer) for layer in stack.pipeline(mock)] == ORDER


def test_the_composed_app_is_the_list_around_the_connexion_app(mock):
    met, app = [], mock._outer
    while not isinstance(app, type(mock.app)):
        met.append(type(app).__name__)
        app = app.app
    assert met == ORDER[: ORDER.index("Journaling") + 1]


def test_without_origins_there_is_no_cors_layer():
    names = [_name(layer) for layer in stack.outer_layers(PlatformMock(MockConfig()))]
    assert names == ["RequestLimits", "HostGuard", "SignedUrls", "Journaling"]


def test_the_journal_readers_read_each_entry_in_one_pass_in_order(mock):
    assert mock.journal.observers == [
        mock.report.add,
        mock._journal_report_add,
        mock.live.entry,
        request_log.log_entry,
    ]
