"""The paths and names a served mock is given, and the rule of each: one rule, checked twice.

The command line refuses a bad `--gateway-prefix`, `--cors` or `--allowed-host` with one line
before it imports anything that serves (a usage error answers in milliseconds, not in the
second the web stack takes to import), and the layers that act on them (`http.mock`,
`http.cors`, `http.hosts`) read them by the same rules, from here.
"""

from __future__ import annotations

import re

ADMIN_PREFIX = "/__admin"  # the admin API's path
API_ROOT = "/api/"  # where the platform's API lives, whatever its version
ANY_ORIGIN = "*"  # `--cors *`: every origin
ANY_HOST = "*"  # `--allowed-host *`: every host name (the host guard off)
DEFAULT_PORTS = {"http": 80, "https": 443}  # which a browser leaves out of an origin

# Characters a path segment holds unescaped with no meaning to the routers: `{}` would make
# a route parameter of the prefix, and `%`, `?` or `#` a prefix no request path matches.
_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
# Paths the app answers itself whatever the gateway's prefix (`http.mock`): the platform
# API's root, the admin API, and the Swagger UI (with its static files) and spec of the
# control plane, whose base path is `/`. A gateway there would shadow them or be shadowed.
_RESERVED_PATHS = (API_ROOT.rstrip("/"), ADMIN_PREFIX, "/docs", "/openapi.json", "/openapi.yaml")
# A host as a browser serialises it: a lower-case name or IPv4 address, or an IPv6 one.
_ORIGIN_HOST = re.compile(r"[a-z0-9-]+(\.[a-z0-9-]+)*|[0-9a-f:.]+", re.IGNORECASE)
# A host name (letters, digits, - and .), an IPv4 address, or an IPv6 address in brackets.
_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]", re.IGNORECASE)


def gateway_prefix_problem(prefix: str) -> str | None:
    """Why `prefix` cannot be the gateway's path prefix, if it cannot."""
    path = "/" + prefix.strip("/")
    if path == "/":
        return "the gateway needs a path of its own (such as /gateway), not the root"
    for reserved in _RESERVED_PATHS:
        if path == reserved or path.startswith(reserved + "/"):
            return (
                f"the mock serves {reserved} itself; the gateway needs a path outside "
                f"{', '.join(_RESERVED_PATHS[:-1])} and {_RESERVED_PATHS[-1]}"
            )
    segments = path[1:].split("/")
    if not all(_PREFIX_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments):
        return "each segment must be a name of letters, digits and . _ ~ -"
    return None


def origin_problem(origin: str) -> str | None:
    """Why `origin` is not an origin a browser sends (`scheme://host[:port]`) nor `*`."""
    if origin == ANY_ORIGIN:
        return None
    from urllib.parse import urlsplit  # only for an origin given: not for every usage error

    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError as exc:
        return f"not an origin: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "an origin is http(s)://host[:port], such as http://localhost:3000, or *"
    if parts.path or parts.query or parts.fragment or parts.username or parts.password:
        return "an origin has no path, query or user: only http(s)://host[:port]"
    if not _ORIGIN_HOST.fullmatch(parts.hostname):
        return "an origin's host is a name of letters, digits, - and ., or an IP address"
    port = parts.port
    if port == DEFAULT_PORTS[parts.scheme] or parts.netloc.endswith(":"):
        shown = f"{parts.scheme}://{parts.netloc.rsplit(':', 1)[0]}".lower()
        return f"a browser leaves out a default or empty port: it sends {shown!r}"
    rebuilt = f"{parts.scheme}://{parts.netloc}"
    if origin != rebuilt.lower():
        return f"a browser sends an origin in lower case, as {rebuilt.lower()!r}"
    return None


def split_host(value: str) -> tuple[str, int | None] | None:
    """A Host header (or `--allowed-host` value) as its lower-case name, without the
    brackets of an IPv6 address, and its port (None when absent); None if it is neither."""
    value = value.strip().lower()
    name, port = value, None
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name += bracket
        if rest:
            if not rest.startswith(":"):
                return None
            port = rest[1:]
    elif value.count(":") == 1:
        name, port = value.split(":")
    if not _NAME.fullmatch(name):
        return None
    if port is not None:
        if not port.isascii() or not port.isdigit() or not 0 < int(port) <= 65535:
            return None
        return name.strip("[]"), int(port)
    return name.strip("[]"), None


def allowed_host_problem(value: str) -> str | None:
    """Why an `--allowed-host` value names no host, if it does not."""
    if value == ANY_HOST or split_host(value) is not None:
        return None
    return "a host is a name or an address, with an optional :port (such as mock.internal:8080)"
