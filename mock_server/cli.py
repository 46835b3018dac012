"""The `platform-mock` command: `serve` the mock over HTTP, or print a development `token`."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
import warnings
from collections.abc import Sequence
from types import FrameType

# Connexion imports Starlette's test client, which warns about httpx at every start of the
# command; the command never uses it.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")

import uvicorn  # noqa: E402

from mock_server import __version__, errors  # noqa: E402
from mock_server.app import CONTROL_PLANE_PREFIX, MockConfig, PlatformMock  # noqa: E402
from mock_server.fixtures import FixtureError  # noqa: E402
from mock_server.server import bind, uvicorn_config  # noqa: E402

EXIT_VIOLATIONS = 1
EXIT_BAD_FIXTURES = 2
EXIT_CANNOT_BIND = 3
NO_USER = (
    "none: the world has no user (load fixtures with one; `platform-mock token` given the "
    "same fixtures and seed prints its token)"
)


def _world_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fixtures",
        action="append",
        default=[],
        metavar="PATH",
        help="fixture YAML file loaded after the defaults (repeatable)",
    )
    parser.add_argument(
        "--no-default-fixtures",
        action="store_true",
        help="start from an empty world instead of the bundled default fixtures",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of ids, timestamps and data")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="platform-mock", description="Contract-driven mock of the platform's API."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the control plane and the gateway")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8080, help="port to bind; 0 picks a free one (default 8080)"
    )
    serve.add_argument(
        "--gateway-prefix", default="/gateway", help="path prefix of the gateway (default /gateway)"
    )
    serve.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    serve.add_argument(
        "--report",
        metavar="PATH",
        help="on shutdown, write the contract report as JSON to PATH and a summary beside it",
    )
    serve.add_argument(
        "--fail-on-violation",
        action="store_true",
        help=f"exit with status {EXIT_VIOLATIONS} if any request broke the contract",
    )
    _world_options(serve)

    token = commands.add_parser("token", help="print a development token for the default user")
    chosen = token.add_mutually_exclusive_group()
    chosen.add_argument("--admin", action="store_true", help="print the admin API's token instead")
    chosen.add_argument(
        "--subject",
        metavar="WHO",
        help="another subject of the world: a user's e-mail, or type:name (team:ml-platform)",
    )
    _world_options(token)
    return parser


def _config(args: argparse.Namespace) -> MockConfig:
    return MockConfig(
        seed=args.seed,
        fixtures=args.fixtures,
        default_fixtures=not args.no_default_fixtures,
        gateway_prefix=getattr(args, "gateway_prefix", "/gateway"),
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Server(uvicorn.Server):
    """uvicorn, announcing when it is ready and exiting with 0 after a stop signal."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # Printed once the stop signals are handled, so a script may send one at once.
        print("Press Ctrl-C to stop.", flush=True)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises captured signals after shutting down, which would end the
        # process with the signal's status; Ctrl-C and SIGTERM are a normal stop here.
        self._captured_signals.clear()


def serve(args: argparse.Namespace) -> int:

    mock = PlatformMock(_config(args))
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(
            f"platform-mock: cannot listen on {args.host}:{args.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return EXIT_CANNOT_BIND
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    gateway = f"{base}{mock.gateway_prefix}"
    print(f"platform-mock {__version__} (seed {args.seed})")
    print(f"  control plane: {base}{CONTROL_PLANE_PREFIX}")
    print(f"  gateway:       {gateway}")
    print(f"  API docs:      {base}/docs/  and  {gateway}/docs/")
    print(f"  token:         {_user_token(mock) or NO_USER}")
    print(f"  admin token:   {mock.auth.admin_token()}  (admin API: {base}/__admin)")
    if not _is_loopback(args.host):
        print(
            f"  warning: listening on {args.host}, reachable from other machines", file=sys.stderr
        )
    sys.stdout.flush()
    config = uvicorn_config(mock, log_level=args.log_level)
    _Server(config).run(sockets=[sock])
    return _finish(mock, args)


def _finish(mock: PlatformMock, args: argparse.Namespace) -> int:
    """Write the contract report, and say whether the clients kept the contract."""
    violations = mock.report.violation_count
    if args.report:
        json_path, text_path = mock.report.write(args.report)
        print(f"platform-mock: contract report written to {json_path} and {text_path}")
    if violations:
        print(f"platform-mock: {violations} request(s) broke the contract", file=sys.stderr)
    return EXIT_VIOLATIONS if violations and args.fail_on_violation else 0


def _user_token(mock: PlatformMock) -> str | None:
    """The default user's token, or None in a world without users."""
    try:
        return mock.auth.dev_token()
    except errors.MockFailure:  # the only failure of minting: there is no user to name
        return None


def token(args: argparse.Namespace) -> int:
    mock = PlatformMock(_config(args))
    if args.subject:
        try:
            subject = mock.store.identity.subject_by_reference(args.subject)
        except ValueError as exc:
            print(f"platform-mock: {exc} in this world", file=sys.stderr)
            return EXIT_BAD_FIXTURES
        minted: str | None = mock.auth.dev_token(subject)
    else:
        minted = mock.auth.admin_token() if args.admin else _user_token(mock)
    if minted is None:
        print(f"platform-mock: {NO_USER}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    print(minted)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return serve(args) if args.command == "serve" else token(args)
    except FixtureError as exc:
        print(f"platform-mock: invalid fixtures:\n{exc}", file=sys.stderr)
        return EXIT_BAD_FIXTURES


if __name__ == "__main__":
    sys.exit(main())
