"""The `token` command: a token the running server accepts, asked of it, or one minted here
with the key a server was given.

A server `platform-mock serve` started on this machine is found in the user's runtime files
(`runtime`), and asked for the token (`POST /__admin/tokens`, with its admin token): what is
printed is what that server answered, for its world as it is now. A command run by
`platform-mock run` asks run's server, which its environment names. With the key a server
signs with (`--signing-key`, `PLATFORM_MOCK_SIGNING_KEY`) and no server picked, the token is
minted here, for the world the options describe, as CI does with a key it shares.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mock_server.cli import runtime
from mock_server.cli.options import EXIT_BAD_FIXTURES, EXIT_USAGE, NO_USER, is_loopback
from mock_server.core.addresses import ADMIN_PREFIX
from mock_server.core.coordinates import Coordinates
from mock_server.core.jsonvalue import JsonObject

if TYPE_CHECKING:
    from mock_server.handlers.admin import TokenBody

ASK_SECONDS = 10.0  # how long a server may take to answer before it is passed over
# The options of the world a token is minted for here, as the command line names them.
WORLD_OPTIONS = {
    "fixtures": "--fixtures",
    "no_default_fixtures": "--no-default-fixtures",
    "seed": "--seed",
}


@dataclass(frozen=True)
class Server:
    """A server to ask: where it is, its admin token, and its runtime file (None for the
    server of a `run`, which its environment names)."""

    url: str
    admin_token: str
    pid: int | None = None
    started: str = ""
    path: Path | None = None

    @property
    def port(self) -> int | None:
        return urlsplit(self.url).port

    def described(self) -> str:
        return f"{self.url} (pid {self.pid}, started at {self.started})" if self.pid else self.url


class Gone(Exception):
    """The server is not there any more, or another one answers at its address."""


class Silent(Exception):
    """The server did not answer in time."""


def token(args: argparse.Namespace) -> int:
    picked = args.url is not None or args.port is not None
    if args.signing_key is not None and not picked:
        return _minted_here(args)
    given = [option for dest, option in WORLD_OPTIONS.items() if _given(args, dest)]
    if given:
        print(
            f"platform-mock: {', '.join(given)} describe a world to mint a token for here, "
            "with the key its server signs with (--signing-key, or PLATFORM_MOCK_SIGNING_KEY); "
            "without one, the running server answers for its own world",
            file=sys.stderr,
        )
        return EXIT_USAGE
    run_server = None if picked else Coordinates.from_environment(os.environ)
    if run_server is not None:  # a command of `run`: its server, whatever else runs
        servers = [Server(run_server.url, run_server.admin_token)]
    else:
        try:
            servers = _recorded(args)
        except OSError as exc:
            print(f"platform-mock: cannot read the running servers: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if not servers:
        print(f"platform-mock: {_none_found(args)}", file=sys.stderr)
        return EXIT_USAGE
    body: TokenBody = {"subject": args.subject} if args.subject else {}
    for server in list(servers):
        try:
            status, answer = _ask(server, body)
        except Gone:
            if server.path is not None:
                runtime.remove(server.path)  # a server that ended without stopping left it
            servers.remove(server)
            continue
        except Silent:
            print(
                f"platform-mock: {server.url} did not answer within {ASK_SECONDS:g} s; passed over",
                file=sys.stderr,
            )
            continue
        token = answer.get("token")
        if args.admin and status in (200, 404):  # the admin token was taken: it is valid
            printed = server.admin_token
        elif status == 200 and isinstance(token, str):
            printed = token
        else:
            problem = answer.get("message") or f"status {status}"
            shown = NO_USER if status == 404 and not args.subject else problem
            print(f"platform-mock: {shown} (asked {server.url})", file=sys.stderr)
            return EXIT_BAD_FIXTURES
        _say_which(server, servers)
        print(printed)
        return 0
    print(f"platform-mock: {_none_found(args)}", file=sys.stderr)
    return EXIT_USAGE


def _given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the command line (not a variable) gave a world option another value than its
    default."""
    if dest in getattr(args, "from_environment", {}):
        return False
    return bool(getattr(args, dest))


def _recorded(args: argparse.Namespace) -> list[Server]:
    """The recorded servers that still run and that the options pick, the latest started
    first. The files of servers whose process has ended are removed."""
    found = []
    for path, record in runtime.recorded():
        if not runtime.process_runs(record.pid):
            runtime.remove(path)
            continue
        if args.port is not None and record.port != args.port:
            continue
        if args.url is not None and not _same_place(args.url, record.url):
            continue
        server = Server(record.url, record.admin_token, record.pid, record.started_at, path)
        found.append((record.started, server))
    return [server for _, server in sorted(found, key=lambda pair: -pair[0])]


def _same_place(given: str, recorded: str) -> bool:
    """Whether a URL the user gave names the recorded server: the same port, and the same
    host or both this machine's loopback."""
    first, second = urlsplit(given.strip().rstrip("/")), urlsplit(recorded)
    try:
        if first.port != second.port:
            return False
    except ValueError:  # not a port
        return False
    one, other = first.hostname or "", second.hostname or ""
    return one == other or (is_loopback(one) and is_loopback(other))


def _none_found(args: argparse.Namespace) -> str:
    where = runtime.directory()
    if args.port is not None or args.url is not None:
        picked = f"--port {args.port}" if args.port is not None else f"--url {args.url}"
        others = [
            f"{record.url} (--port {record.port})"
            for _, record in runtime.recorded()
            if runtime.process_runs(record.pid)
        ]
        running = f"; running: {', '.join(others)}" if others else "; none is running"
        return f"no running server at {picked}{running}"
    return (
        f"no server is running for this user (none recorded in {where}): start one with "
        "`platform-mock serve` and run this again, or mint a token here with the key a server "
        "was given (--signing-key, or PLATFORM_MOCK_SIGNING_KEY)"
    )


def _say_which(server: Server, servers: list[Server]) -> None:
    """With several servers running, which one answered, and how to pick another."""
    others = [other for other in servers if other is not server]
    if not others:
        return
    lines = [
        f"platform-mock: {len(servers)} servers are running; this token is from "
        f"{server.described()}, the latest started. Another, with --port or --url:"
    ]
    lines += [f"  --port {other.port}  {other.described()}" for other in others]
    print("\n".join(lines), file=sys.stderr)


def _ask(server: Server, body: TokenBody) -> tuple[int, JsonObject]:
    """POST /__admin/tokens to the server: its status and JSON answer."""
    request = urllib.request.Request(
        server.url + ADMIN_PREFIX + "/tokens",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {server.admin_token}",
            "Content-Type": "application/json",
        },
    )
    # A server on this machine is reached directly, whatever proxy the environment names.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=ASK_SECONDS) as response:
            return response.status, _json(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 401:  # another server at that address, with a key of its own
            raise Gone from None
        return exc.code, _json(exc.read())
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise Silent from None
        raise Gone from None
    except TimeoutError:
        raise Silent from None
    except (OSError, ValueError):  # reset, or not HTTP at all: not one of ours
        raise Gone from None


def _json(data: bytes) -> JsonObject:
    try:
        found = json.loads(data)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _minted_here(args: argparse.Namespace) -> int:
    """The token minted in this process with the key given, for the world the options
    describe."""
    from mock_server.cli.options import config
    from mock_server.core import errors
    from mock_server.services.auth import Authenticator

    store = config(args).world()
    auth = Authenticator(store)
    if args.subject:
        try:
            subject = store.identity.subject_by_reference(args.subject)
        except ValueError as exc:
            print(f"platform-mock: {exc} in this world", file=sys.stderr)
            return EXIT_BAD_FIXTURES
        minted: str | None = auth.dev_token(subject)
    elif args.admin:
        minted = auth.admin_token()
    else:
        try:
            minted = auth.dev_token()
        except errors.MockFailure:  # the only failure of minting: there is no user to name
            minted = None
    if minted is None:
        print(f"platform-mock: {NO_USER}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    print(minted)
    return 0
