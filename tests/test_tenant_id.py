"""GET /api/svc/v1/tenant-id (`getTenantId`): the tenant of a host name, asked without a
token, with an `auth_server_url` that points back at the mock as the request reached it."""

from __future__ import annotations

import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.http.server import BackgroundServer
from tests.conftest import CONTROL_PLANE, assert_error, http_client

PATH = CONTROL_PLANE + "/tenant-id"


def test_names_the_worlds_tenant_and_the_mock_as_auth_server(anonymous, server):
    host = server.url.removeprefix("http://")
    response = anonymous.get(PATH, params={"hostName": host})
    assert response.status_code == 200, response.text
    assert response.json() == {"tenantName": "acme", "auth_server_url": server.url}


def test_any_host_name_names_the_one_tenant(anonymous):
    response = anonymous.get(PATH, params={"hostName": "platform.acme.example"})
    assert response.json()["tenantName"] == "acme"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("mock.internal:9000", "http://mock.internal:9000", id="name-and-port"),
        pytest.param("localhost", "http://localhost", id="name-alone"),
        pytest.param("[::1]:8080", "http://[::1]:8080", id="ipv6-literal"),
    ],
)
def test_auth_server_url_is_the_host_the_request_reached(anonymous, host, expected):
    response = anonymous.get(PATH, params={"hostName": "x"}, headers={"Host": host})
    assert response.json()["auth_server_url"] == expected


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("evil.example/path", id="path"),
        pytest.param("a b", id="space"),
        pytest.param("user@evil.example", id="userinfo"),
        pytest.param("", id="empty"),
    ],
)
def test_a_host_header_that_is_no_host_gives_the_servers_address(anonymous, server, host):
    response = anonymous.get(PATH, params={"hostName": "x"}, headers={"Host": host})
    assert response.status_code == 200, response.text
    assert response.json()["auth_server_url"] == server.url


@pytest.mark.platform_mock(expect_violations=True)
def test_host_name_is_required(anonymous):
    body = assert_error(anonymous.get(PATH), 400, 40001)
    assert [(d["field"], d["message"]) for d in body["details"]] == [("hostName", "is required")]


def test_a_world_without_a_tenant_is_404():
    with (
        BackgroundServer(PlatformMock(MockConfig(default_fixtures=False))) as empty,
        http_client(base_url=empty.url) as client,
    ):
        body = assert_error(client.get(PATH, params={"hostName": "x"}), 404, 40411)
    assert "the world has none" in body["message"]
