"""The command's options: declared once for each subcommand, each checked before anything
starts (a refused option is one line on stderr and a usage status), and the exit statuses
the command speaks."""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mock_server.contract.validation import number_problem
from mock_server.core.version import __version__
from mock_server.http import request_log
from mock_server.http.cors import origin_problem
from mock_server.http.hosts import allowed_host_problem
from mock_server.http.mock import ADMIN_PREFIX, API_ROOT, HOST_CHECKS, MockConfig
from mock_server.reports import report_files
from mock_server.reports.report import percentage
from mock_server.services.auth import KEY_VARIABLE, key_problem
from mock_server.services.journal import DEFAULT_BUDGET
from mock_server.state.sources import seed_problem

EXIT_VIOLATIONS = 1  # the contract checks asked for failed
EXIT_BAD_FIXTURES = 2
EXIT_USAGE = 2  # as argparse exits on a usage error
EXIT_CANNOT_BIND = 3
EXIT_CANNOT_RUN = 126  # as a shell reports a command it found but could not run
EXIT_NOT_FOUND = 127  # as a shell reports a command it did not find
EXIT_FORCED = 128  # plus the signal's number, as a shell reports a process a signal ended


# Paths the app answers itself whatever the gateway's prefix (mock_server.http.mock): the platform
# API's root, the admin API, and the Swagger UI (with its static files) and spec of the
# control plane, whose base path is `/`. A gateway there would shadow them or be shadowed.
RESERVED_PATHS = (API_ROOT.rstrip("/"), ADMIN_PREFIX, "/docs", "/openapi.json", "/openapi.yaml")


# Characters a path segment holds unescaped with no meaning to the routers: `{}` would make
# a route parameter of the prefix, and `%`, `?` or `#` a prefix no request path matches.
PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")


NO_USER = (
    "none: the world has no user (load fixtures with one, then mint its token with "
    "POST /__admin/tokens)"
)


NO_KEY = (
    "a server signs its tokens with a key it draws when it starts, which no other process "
    "knows: copy the token from the server's banner, mint one with POST /__admin/tokens "
    f"(with the admin token), or give the server and this command the same key "
    f"(--signing-key, or the variable {KEY_VARIABLE})"
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
        "--seed",
        type=_seed,
        default=0,
        help="seed of ids, timestamps and data: a whole number from 0 to 2^53 - 1 (default 0)",
    )


def _key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--signing-key",
        metavar="KEY",
        default=None,
        help=f"the key that signs the tokens, of at least 32 bytes (default: the variable "
        f"{KEY_VARIABLE}, else a key drawn at random when the server starts); a key given "
        "keeps tokens valid across restarts",
    )


def whole_number(text: str) -> int:
    """An integer option in the one grammar of integers (`int()` would take `1_0`, ` 5`)."""
    problem = number_problem(text, "integer")
    if problem:
        raise argparse.ArgumentTypeError(problem)
    try:
        return int(text)
    except ValueError:  # past the interpreter's limit of digits
        raise argparse.ArgumentTypeError(f"a number of {len(text):,} digits is too big") from None


class Parser(argparse.ArgumentParser):
    """argparse's parser, refusing `--option=--`: argparse drops a `--` given as an option's
    value and leaves the option an empty list, never checked by its type. The subcommands'
    parsers are of this class too (argparse makes them of their parent's)."""

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        for arg in args or []:
            name, equals, value = arg.partition("=")
            if equals and value == "--" and name.startswith("-"):
                self.error(f"argument {name}: expected one argument")
        return super().parse_known_args(args, namespace)


def _seed(text: str) -> int:
    value = whole_number(text)
    problem = seed_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def _mebibytes(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= 1024 * 1024:
        raise argparse.ArgumentTypeError(f"{text} is not from 1 to 1048576 MiB")
    return value * 1024 * 1024


def _serving_options(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=whole_number,
        default=default_port,
        help=f"port to bind; 0 picks a free one (default {default_port})",
    )
    parser.add_argument(
        "--gateway-prefix", default="/gateway", help="path prefix of the gateway (default /gateway)"
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="uvicorn's log level; debug also logs the admin API's and the docs' requests, "
        "and uvicorn's access lines (default warning)",
    )
    parser.add_argument(
        "--log-format",
        default="text",
        metavar="{" + ",".join(request_log.FORMATS) + "}",
        help="the request log as text (coloured on a terminal unless NO_COLOR is set) or as "
        "one JSON object per line, the rest of the output then going to stderr (default text)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no request log (start-up and shutdown still print)"
    )
    parser.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browser scripts from ORIGIN (such as http://localhost:3000, or * for any) "
        "call the mock: answer preflights and add CORS headers (repeatable; default off)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a name the server answers the admin API under besides its own address and, on "
        "loopback, localhost (such as mock.internal, or mock.internal:9000 behind a port "
        "mapping; * for any name); repeatable",
    )
    parser.add_argument(
        "--host-check",
        choices=HOST_CHECKS,
        default="admin",
        help="where a request must name one of the server's hosts: the admin API only, or "
        "every path (default admin)",
    )
    parser.add_argument(
        "--report",
        action="append",
        default=[],
        metavar="DIR|FILE|FORMAT=FILE",
        help="when stopping, write the contract report: into a directory (contract-report.json, "
        ".txt, .xml and .md), to a file whose suffix names its format, or as FORMAT=FILE with "
        f"FORMAT one of {', '.join(report_files.FORMATS)} (repeatable)",
    )
    parser.add_argument(
        "--fail-on-violation",
        action="store_true",
        help=f"exit with status {EXIT_VIOLATIONS} if any request broke the contract",
    )
    parser.add_argument(
        "--min-coverage",
        metavar="PERCENT",
        type=_percentage,
        default=None,
        help=f"exit with status {EXIT_VIOLATIONS} if the requests exercised less than PERCENT "
        "of the contract's documented statuses, query parameters and enum values",
    )
    parser.add_argument(
        "--journal-budget",
        metavar="MIB",
        type=_mebibytes,
        default=DEFAULT_BUDGET,
        help="MiB the request journal may hold; the oldest entries go first (default 32)",
    )


def _percentage(text: str) -> float:
    try:
        return percentage(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser(*more: Callable[[Any], None]) -> argparse.ArgumentParser:
    """The command's parser; `more` adds, to its subparsers, the commands another module of
    the command owns with their options (`proxying.add_commands`: it builds on these)."""
    parser = Parser(prog="platform-mock", description="Contract-driven mock of the platform's API.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the control plane and the gateway")
    _serving_options(serve, default_port=8080)
    _world_options(serve)
    _key_option(serve)
    serve.add_argument(
        "--watch",
        action="store_true",
        help="reload the world when a --fixtures file changes (the journal is kept; an edit "
        "that cannot load keeps the running world and says why)",
    )

    run = commands.add_parser(
        "run",
        help="serve on a free port while COMMAND runs against it: platform-mock run -- COMMAND",
        description="Start the mock on a free port, run COMMAND (given after --) with the "
        "mock's URLs and tokens in its environment, stop the mock when COMMAND ends, write "
        "the reports, and exit with COMMAND's status (1 if COMMAND passed but the contract "
        "check failed: a request broke the contract, no request reached the mock, or "
        "--min-coverage was not met). The request log, on stderr, shows failed requests "
        "(every request with --log-level debug).",
    )
    _serving_options(run, default_port=0)
    _world_options(run)
    _key_option(run)
    # The contract check is strict by default: each way to loosen it is named for what it
    # lets pass.
    run.add_argument(
        "--allow-violations",
        action="store_true",
        help="let requests that broke the contract pass the check (they are still reported)",
    )
    run.add_argument(
        "--allow-no-requests",
        action="store_true",
        help="let a run that no request reached pass the check (by default it fails: the "
        "command never used the mock's URL)",
    )

    token = commands.add_parser("token", help="print a development token for the default user")
    chosen = token.add_mutually_exclusive_group()
    chosen.add_argument("--admin", action="store_true", help="print the admin API's token instead")
    chosen.add_argument(
        "--subject",
        metavar="WHO",
        help="another subject of the world: a user's e-mail, or type:name (team:ml-platform)",
    )
    _world_options(token)
    _key_option(token)
    for add in more:
        add(commands)
    return parser


def config(args: argparse.Namespace) -> MockConfig:
    return MockConfig(
        seed=args.seed,
        fixtures=args.fixtures,
        default_fixtures=not args.no_default_fixtures,
        gateway_prefix=getattr(args, "gateway_prefix", "/gateway"),
        journal_budget=getattr(args, "journal_budget", DEFAULT_BUDGET),
        cors=getattr(args, "cors", []),
        allowed_hosts=getattr(args, "allowed_host", []),
        host_check=getattr(args, "host_check", "admin"),
        signing_key=args.signing_key,
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refusal(args: argparse.Namespace) -> tuple[int, str] | None:
    """The exit status and one-line message refusing an option that could only fail once
    serving (the port, the gateway prefix, the report's path), checked before the fixtures
    load; None if the options can be used. For any command having these options."""
    if "signing_key" in vars(args):  # the commands that sign tokens: serve, run, token
        if args.signing_key is None:
            # An empty variable is an unset one, as CI systems leave a secret they lack.
            args.signing_key, source = os.environ.get(KEY_VARIABLE) or None, KEY_VARIABLE
        else:
            source = "--signing-key"
        problem = key_problem(args.signing_key) if args.signing_key is not None else None
        if problem:
            return EXIT_USAGE, f"{source}: {problem}"
    port = getattr(args, "port", None)
    if port is not None and not 0 <= port <= 65535:
        return EXIT_CANNOT_BIND, (
            f"cannot listen on {args.host}:{port}: a port is a number from 0 to 65535"
        )
    prefix = getattr(args, "gateway_prefix", None)
    problem = None if prefix is None else _gateway_prefix_problem(prefix)
    if problem:
        return EXIT_USAGE, f"--gateway-prefix {prefix!r}: {problem}"
    reports = getattr(args, "report", [])
    try:
        # Kept for the end of the run, where each is written.
        args.report_targets = report_files.targets(reports)
    except report_files.TargetError as exc:
        return EXIT_USAGE, f"--report: {exc}"
    for path in args.report_targets.values():
        problem = report_files.target_problem(path)
        if problem:
            return EXIT_USAGE, f"--report: {problem}"
        for fixture in getattr(args, "fixtures", []):
            if report_files.same_file(path, Path(fixture)):
                return EXIT_USAGE, f"--report: {path} is the fixture file {fixture}"
    log_format = getattr(args, "log_format", None)
    if log_format is not None and log_format not in request_log.FORMATS:
        return EXIT_USAGE, f"--log-format {log_format!r}: one of {', '.join(request_log.FORMATS)}"
    for origin in getattr(args, "cors", []):
        problem = origin_problem(origin)
        if problem:
            return EXIT_USAGE, f"--cors {origin!r}: {problem}"
    for host in getattr(args, "allowed_host", []):
        problem = allowed_host_problem(host)
        if problem:
            return EXIT_USAGE, f"--allowed-host {host!r}: {problem}"
    if getattr(args, "watch", False) and not args.fixtures:
        return EXIT_USAGE, "--watch follows the files of --fixtures: give one at least"
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
