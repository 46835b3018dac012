"""The `platform-mock` command: `serve` the mock over HTTP, or print a development `token`."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import re
import signal
import socket
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

# Connexion imports Starlette's test client, which warns about httpx at every start of the
# command; the command never uses it.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")

import uvicorn  # noqa: E402

from mock_server import __version__, errors  # noqa: E402
from mock_server.app import (  # noqa: E402
    ADMIN_PREFIX,
    API_ROOT,
    CONTROL_PLANE_PREFIX,
    MockConfig,
    PlatformMock,
)
from mock_server.fixtures import FixtureError  # noqa: E402
from mock_server.http import request_log  # noqa: E402
from mock_server.http.cors import origin_problem  # noqa: E402
from mock_server.journal import DEFAULT_BUDGET  # noqa: E402
from mock_server.server import bind, uvicorn_config  # noqa: E402
from mock_server.state import Store  # noqa: E402
from mock_server.validation import number_problem  # noqa: E402

EXIT_VIOLATIONS = 1
EXIT_BAD_FIXTURES = 2
EXIT_USAGE = 2  # as argparse exits on a usage error
EXIT_CANNOT_BIND = 3
EXIT_FORCED = 128  # plus the signal's number, as a shell reports a process a signal ended
# Paths the app answers itself whatever the gateway's prefix (mock_server.app): the platform
# API's root, the admin API, and the Swagger UI (with its static files) and spec of the
# control plane, whose base path is `/`. A gateway there would shadow them or be shadowed.
RESERVED_PATHS = (API_ROOT.rstrip("/"), ADMIN_PREFIX, "/docs", "/openapi.json", "/openapi.yaml")
# Characters a path segment holds unescaped with no meaning to the routers: `{}` would make
# a route parameter of the prefix, and `%`, `?` or `#` a prefix no request path matches.
PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
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
    parser.add_argument(
        "--seed", type=_whole_number, default=0, help="seed of ids, timestamps and data"
    )


def _whole_number(text: str) -> int:
    """An integer option in the one grammar of integers (`int()` would take `1_0`, ` 5`)."""
    problem = number_problem(text, "integer")
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return int(text)


def _mebibytes(text: str) -> int:
    value = _whole_number(text)
    if not 1 <= value <= 1024 * 1024:
        raise argparse.ArgumentTypeError(f"{text} is not from 1 to 1048576 MiB")
    return value * 1024 * 1024


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="platform-mock", description="Contract-driven mock of the platform's API."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the control plane and the gateway")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=_whole_number,
        default=8080,
        help="port to bind; 0 picks a free one (default 8080)",
    )
    serve.add_argument(
        "--gateway-prefix", default="/gateway", help="path prefix of the gateway (default /gateway)"
    )
    serve.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="uvicorn's log level; debug also logs the admin API's and the docs' requests, "
        "and uvicorn's access lines (default warning)",
    )
    serve.add_argument(
        "--log-format",
        default="text",
        metavar="{" + ",".join(request_log.FORMATS) + "}",
        help="the request log as text (coloured on a terminal unless NO_COLOR is set) or as "
        "one JSON object per line (default text)",
    )
    serve.add_argument(
        "--quiet", action="store_true", help="no request log (start-up and shutdown still print)"
    )
    serve.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browser scripts from ORIGIN (such as http://localhost:3000, or * for any) "
        "call the mock: answer preflights and add CORS headers (repeatable; default off)",
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
    serve.add_argument(
        "--journal-budget",
        metavar="MIB",
        type=_mebibytes,
        default=DEFAULT_BUDGET,
        help="MiB the request journal may hold; the oldest entries go first (default 32)",
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
        journal_budget=getattr(args, "journal_budget", DEFAULT_BUDGET),
        cors=getattr(args, "cors", []),
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _refusal(args: argparse.Namespace) -> tuple[int, str] | None:
    """The exit status and one-line message refusing an option that could only fail once
    serving (the port, the gateway prefix, the report's path), checked before the fixtures
    load; None if the options can be used. For any command having these options."""
    port = getattr(args, "port", None)
    if port is not None and not 0 <= port <= 65535:
        return EXIT_CANNOT_BIND, (
            f"cannot listen on {args.host}:{port}: a port is a number from 0 to 65535"
        )
    prefix = getattr(args, "gateway_prefix", None)
    problem = None if prefix is None else _gateway_prefix_problem(prefix)
    if problem:
        return EXIT_USAGE, f"--gateway-prefix {prefix!r}: {problem}"
    report = getattr(args, "report", None)
    problem = None if report is None else _report_problem(report)
    if problem:
        return EXIT_USAGE, f"--report {report!r}: {problem}"
    log_format = getattr(args, "log_format", None)
    if log_format is not None and log_format not in request_log.FORMATS:
        return EXIT_USAGE, f"--log-format {log_format!r}: one of {', '.join(request_log.FORMATS)}"
    for origin in getattr(args, "cors", []):
        problem = origin_problem(origin)
        if problem:
            return EXIT_USAGE, f"--cors {origin!r}: {problem}"
    return None


def _gateway_prefix_problem(prefix: str) -> str | None:
    path = "/" + prefix.strip("/")
    if path == "/":
        return "the gateway needs a path of its own (such as /gateway), not the root"
    for reserved in RESERVED_PATHS:
        if path == reserved or path.startswith(reserved + "/"):
            return (
                f"the mock serves {reserved} itself; the gateway needs a path outside "
                f"{', '.join(RESERVED_PATHS[:-1])} and {RESERVED_PATHS[-1]}"
            )
    segments = path[1:].split("/")
    if not all(PREFIX_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments):
        return "each segment must be a name of letters, digits and . _ ~ -"
    return None


def _report_problem(report: str) -> str | None:
    """Why the report and its summary could not be written at shutdown, if they could not.

    A missing directory is no problem, the report creates it; its nearest existing ancestor
    must be a directory the process may write in. Permissions say little to root (who may
    write anywhere, but not in /proc), so the directory is then tried for real with a file
    made and removed at once; only the directories the report needs anyway may be left."""
    json_path = Path(report)
    if json_path.name in ("", ".."):
        return "not a file name"
    text_path = json_path.with_suffix(".txt")
    # Compared regardless of case: on macOS and Windows, report.TXT is report.txt.
    if str(text_path).casefold() == str(json_path).casefold():
        return f"the summary is written beside the report as {text_path}, over the report"
    for path in (json_path, text_path):
        if path.is_dir():
            return f"{path} is a directory"
        if path.exists() and not os.access(path, os.W_OK):
            return f"{path} is not writable"
    directory = json_path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    if not directory.is_dir():
        return f"{directory} is not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"cannot write in {directory}"
    try:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=json_path.parent):
            pass
    except OSError as exc:
        return f"cannot write in {json_path.parent}: {exc.strerror or exc}"
    return None


class _Server(uvicorn.Server):
    """uvicorn, announcing when it is ready and exiting with 0 after a stop signal, and at
    once after a second one."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # Printed once the stop signals are handled, so a script may send one at once.
        print("Press Ctrl-C to stop.", flush=True)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            # A second stop signal: the user will not wait out the requests in flight. Left
            # to uvicorn, a second Ctrl-C would cancel them (a traceback, and a 500 to their
            # clients) and a second SIGTERM would do nothing.
            _exit_at_once(sig)
        super().handle_exit(sig, frame)
        # uvicorn re-raises captured signals after shutting down, which would end the
        # process with the signal's status; Ctrl-C and SIGTERM are a normal stop here.
        self._captured_signals.clear()


def _exit_at_once(sig: int) -> NoReturn:
    """End the process now, from a signal handler: without the report, and without unwinding
    the event loop, which would run the requests' cancellation. The kernel closes their
    connections."""
    # The interrupted code may be writing to these buffers: flushing them may fail, and the
    # message goes around them.
    with contextlib.suppress(OSError, RuntimeError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    message = f"platform-mock: second {signal.Signals(sig).name}, stopped at once without a report"
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), message.encode() + b"\n")
    os._exit(EXIT_FORCED + sig)


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
    print(f"  fixtures:      {_fixture_files(args)}")
    print(f"  world:         {_world_summary(mock.store)}")
    print(f"  control plane: {base}{CONTROL_PLANE_PREFIX}")
    print(f"  gateway:       {gateway}")
    print(f"  API docs:      {base}/docs/  and  {gateway}/docs/")
    if args.cors:
        print(f"  CORS origins:  {', '.join(args.cors)}")
    print(f"  token:         {_user_token(mock) or NO_USER}")
    print(f"  admin token:   {mock.auth.admin_token()}  (admin API: {base}/__admin)")
    if not _is_loopback(args.host):
        print(
            f"  warning: listening on {args.host}, reachable from other machines", file=sys.stderr
        )
    sys.stdout.flush()
    if not args.quiet:
        request_log.configure(sys.stdout, args.log_format, debug=args.log_level == "debug")
    config = uvicorn_config(mock, log_level=args.log_level)
    _Server(config).run(sockets=[sock])
    return _finish(mock, args)


def _fixture_files(args: argparse.Namespace) -> str:
    """The fixture files of the world, in the order they are loaded."""
    files = [] if args.no_default_fixtures else ["the bundled defaults"]
    files += args.fixtures
    return ", ".join(files) or "none (an empty world)"


def world_counts(store: Store) -> dict[str, int]:
    """How many of each kind of entity the world holds, by the name the banner gives it."""
    world = store.world
    return {
        "users": sum(1 for type_, _ in world.subjects if type_ == "user"),
        "teams": sum(1 for type_, _ in world.subjects if type_ == "team"),
        "applications": len(world.applications),
        "runs": sum(len(runs) for runs in world.job_runs.values()),
        "secret groups": len(world.secret_groups),
        "model responses": len(world.model_responses),
    }


def _world_summary(store: Store) -> str:
    return ", ".join(
        f"{count} {name.removesuffix('s') if count == 1 else name}"
        for name, count in world_counts(store).items()
    )


def _finish(mock: PlatformMock, args: argparse.Namespace) -> int:
    """Write the contract report, and say whether the clients kept the contract."""
    violations = mock.report.violation_count
    if args.report:
        try:
            json_path, text_path = mock.report.write(args.report)
        except OSError as exc:  # checked at start; the disk may have changed since
            print(f"platform-mock: cannot write the contract report: {exc}", file=sys.stderr)
            return EXIT_USAGE
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
    refused = _refusal(args)
    if refused:
        status, message = refused
        print(f"platform-mock: {message}", file=sys.stderr)
        return status
    try:
        return serve(args) if args.command == "serve" else token(args)
    except FixtureError as exc:
        print(f"platform-mock: invalid fixtures:\n{exc}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    except KeyboardInterrupt:  # Ctrl-C while loading fixtures or writing the report
        return EXIT_FORCED + signal.SIGINT


if __name__ == "__main__":
    sys.exit(main())
