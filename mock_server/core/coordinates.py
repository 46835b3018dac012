"""Where a served mock is and how to call it: its URLs, tokens and seed, as one record.

`platform-mock run` hands them to its command as environment variables (`environment`), the
admin API describes a world it serves beside itself with them (`to_dict`), and the pytest
plugin reads them back from either (`from_environment`, `from_dict`) to use a mock that lives
in another process. This module imports nothing heavy: the plugin reads it at start-up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from mock_server.core import camel
from mock_server.core.addresses import ADMIN_PREFIX

CONTROL_PLANE_PREFIX = "/api/svc/v1"  # in the control plane's paths, which carry it in full
# The variables of `platform-mock run` that say the checks its command's tests run under.
FAIL_ON_VIOLATION = "PLATFORM_MOCK_FAIL_ON_VIOLATION"
# The request header that names the test a request was sent by, for suites whose tests run
# side by side against one mock (Node's test runner runs files in parallel): it wins over
# the mock-wide test of `PUT /__admin/test`. `environment` names it as PLATFORM_MOCK_TEST_HEADER.
TEST_HEADER = "X-Platform-Mock-Test"
MAX_TEST_NAME = 4096  # characters of a test's name kept, as `PUT /__admin/test` takes


def base_url(host: str, port: int) -> str:
    """The URL of a server listening on host and port (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


# A Host header that is a host name or an IP literal, with an optional port: nothing else
# is echoed back as a URL.
HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(:[0-9]{1,5})?")


def reached_url(scheme: str, host: str, fallback: str) -> str:
    """The mock's base URL as a request reached it: its scheme and `Host` header, or
    `fallback` (the server's own address) when the Host is missing or not a host[:port]."""
    return f"{scheme}://{host}" if HOST.fullmatch(host) else fallback


class CoordinatesWire(TypedDict):
    """Where a served mock is, as the admin API describes a world (`spec/admin.yaml`,
    `World`, less its id), in this order."""

    url: str
    apiUrl: str
    gatewayUrl: str
    adminUrl: str
    token: str | None
    adminToken: str
    seed: int


@dataclass(frozen=True)
class Coordinates:
    """A served mock: its base URL (the control plane is under `/api/svc/v1`), its
    gateway's URL, the default user's token (None in a world without users), its admin
    token and the seed of its world."""

    url: str
    gateway_url: str
    token: str | None
    admin_token: str
    seed: int

    @property
    def api_url(self) -> str:
        return self.url + CONTROL_PLANE_PREFIX

    @property
    def admin_url(self) -> str:
        return self.url + ADMIN_PREFIX

    def environment(self) -> dict[str, str]:
        """The variables a command run against the mock gets: the mock's own, and the names
        the platform's SDK (`TFY_*`) and the OpenAI client (`OPENAI_*`) read."""
        found = {
            "PLATFORM_MOCK_URL": self.url,
            "PLATFORM_MOCK_API_URL": self.api_url,
            "PLATFORM_MOCK_GATEWAY_URL": self.gateway_url,
            "PLATFORM_MOCK_ADMIN_URL": self.admin_url,
            "PLATFORM_MOCK_ADMIN_TOKEN": self.admin_token,
            "PLATFORM_MOCK_SEED": str(self.seed),
            "PLATFORM_MOCK_TEST_HEADER": TEST_HEADER,
            "TFY_HOST": self.url,
            "OPENAI_BASE_URL": self.gateway_url,
        }
        if self.token is not None:  # a world without users has no user token to give
            found |= {
                "PLATFORM_MOCK_TOKEN": self.token,
                "TFY_API_KEY": self.token,
                "OPENAI_API_KEY": self.token,
            }
        return found

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Coordinates | None:
        """The mock the environment names (as `environment` writes it), or None when it
        names none: the URL, gateway URL, admin token and seed must all be there."""
        try:
            return cls(
                url=environ["PLATFORM_MOCK_URL"],
                gateway_url=environ["PLATFORM_MOCK_GATEWAY_URL"],
                token=environ.get("PLATFORM_MOCK_TOKEN"),
                admin_token=environ["PLATFORM_MOCK_ADMIN_TOKEN"],
                seed=int(environ["PLATFORM_MOCK_SEED"]),
            )
        except (KeyError, ValueError):
            return None

    def to_dict(self) -> CoordinatesWire:
        """As the admin API describes a world (`spec/admin.yaml`, `World`), less its id."""
        return camel.to_wire(self, CoordinatesWire)

    @classmethod
    def from_dict(cls, described: CoordinatesWire) -> Coordinates:
        """The mock a world's description names (its URLs of the API and the admin API
        follow from its `url`)."""
        return camel.from_wire(cls, described)
