"""Which host a request may name and which page may send it: the guard of the admin API.

A web page the developer visits can reach a server on 127.0.0.1 two ways: under a name of
its own that resolves there (DNS rebinding: `Host: evil.example:8080`), or from its own
origin (`Origin: https://evil.example`, or a `fetch` in `no-cors` mode). `HostGuard` answers
the admin API (and, with `everywhere`, every path) only when the request's `Host` is one of
the server's own names, and, for the admin API, only when no page of another origin sent it.

The server's own names, for a request that came in on local address A and port P:

- when A is a loopback address: `localhost`, `127.0.0.1` and `[::1]` (and A itself, and
  `0.0.0.0` and `[::]`, which reach the machine itself: the URLs a server bound to every
  address prints), at P;
- otherwise (a server bound to 0.0.0.0 or to an interface): A itself, at P;
- and the names configured (`--allowed-host`): `name` at any port, `name:port` at that one,
  `*` for any name (which turns the check off).

Refusals are the platform error body, 403, and happen before anything else: they are not
journaled, logged as requests of the contract, or given CORS headers.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.core import errors
from mock_server.core.addresses import ANY_HOST, allowed_host_problem, split_host
from mock_server.http.scope import on_gateway

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"})
# Fetch Metadata: what a browser says of a request's sender. Only the page itself
# (`same-origin`) or the user (`none`: typed, bookmarked) may drive the admin API.
_OWN_SITES = frozenset({"same-origin", "none"})


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # without an IPv6 zone
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _same_name(name: str, other: str) -> bool:
    """Whether two host names are one: equal text, or the same IP address written two ways."""
    if name == other:
        return True
    first, second = _address(name), _address(other)
    return first is not None and first == second


class HostGuard:
    """`app`, answering the admin API (every path, with `everywhere`) only under one of the
    server's own names, and the admin API only to its own pages."""

    def __init__(
        self,
        app: ASGIApp,
        admin_prefix: str,
        allowed: list[str],
        *,
        everywhere: bool = False,
        gateway_prefix: str = "",
    ):
        for value in allowed:
            problem = allowed_host_problem(value)
            if problem:
                raise ValueError(f"allowed host {value!r}: {problem}")
        self.app = app
        self.admin_prefix = admin_prefix
        self.gateway_prefix = gateway_prefix  # whose refusals speak OpenAI's dialect too
        self.everywhere = everywhere
        self.any_host = ANY_HOST in allowed
        self.allowed = [split_host(value) for value in allowed if value != ANY_HOST]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        admin = path == self.admin_prefix or path.startswith(self.admin_prefix + "/")
        if not (admin or self.everywhere):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.own_host(host, scope.get("server")):
            shown = host[:100] or "(none)"
            refused = errors.ForeignHost(
                f"Host {shown!r} is not a name of this server: it answers "
                + ("" if admin else "here ")
                + "only under its own address or a name given with --allowed-host"
            )
            gateway = on_gateway(scope, self.gateway_prefix)
            return await errors.send_error(send, errors.error_answer(refused, gateway=gateway))
        if admin and not _from_own_page(headers, host):
            return await errors.send_error(
                send,
                errors.CrossOrigin(
                    "The admin API does not answer a web page of another origin (Origin: "
                    f"{headers.get('origin', '-')[:100]!r}, Sec-Fetch-Site: "
                    f"{headers.get('sec-fetch-site', '-')[:30]!r})"
                ),
            )
        return await self.app(scope, receive, send)

    def own_host(self, host: str, server: tuple[str, int | None] | None) -> bool:
        """Whether `host` (a Host header) names this server, reached at `server` (the local
        address and port of the connection, as the ASGI scope gives them)."""
        if self.any_host:
            return True
        named = split_host(host)
        if named is None:
            return False
        name, port = named
        for allowed_name, allowed_port in self.allowed:  # type: ignore[misc]
            if _same_name(name, allowed_name) and allowed_port in (None, port or 80):
                return True
        if server is None:  # served without a socket (an in-process ASGI client)
            return name in LOOPBACK_NAMES
        local, local_port = server[0], server[1]
        if (port or 80) != local_port:
            return False
        address = _address(local)
        if address is not None and address.is_loopback and name in LOOPBACK_NAMES:
            return True
        return _same_name(name, local)


def _from_own_page(headers: Headers, host: str) -> bool:
    """Whether no web page of another origin sent the request: a browser names the sender's
    origin (`Origin`) on every request a script sends but a same-origin GET, and says whose
    site it is (`Sec-Fetch-Site`) on every request; other clients send neither."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in _OWN_SITES:
        return False
    origin = headers.get("origin")
    return origin is None or origin.lower() == f"http://{host.strip().lower()}"
