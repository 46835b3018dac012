"""The `platform-mock` command: `serve` the mock over HTTP, `run` a command against it, or
print a development `token`; `proxy` and `drift` are `mock_server.proxy_cli`'s."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ipaddress
import os
import re
import resource
import shlex
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, NoReturn

# Connexion imports Starlette's test client, which warns about httpx at every start of the
# command; the command never uses it.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")


from mock_server import __version__, errors, proxy_cli, report_files  # noqa: E402
from mock_server.app import (  # noqa: E402
    ADMIN_PREFIX,
    API_ROOT,
    CONTROL_PLANE_PREFIX,
    HOST_CHECKS,
    MockConfig,
    PlatformMock,
)
from mock_server.auth import KEY_VARIABLE, Authenticator, key_problem  # noqa: E402
from mock_server.coordinates import FAIL_ON_VIOLATION, base_url  # noqa: E402
from mock_server.fixtures import FixtureError  # noqa: E402
from mock_server.http import request_log  # noqa: E402
from mock_server.http.cors import origin_problem  # noqa: E402
from mock_server.http.hosts import allowed_host_problem  # noqa: E402
from mock_server.journal import DEFAULT_BUDGET  # noqa: E402
from mock_server.report import (  # noqa: E402
    coverage,
    gaps,
    judge,
    percentage,
    reasons,
    verdict_line,
)
from mock_server.server import (  # noqa: E402
    BackgroundServer,
    Server,
    Worlds,
    bind,
    raise_file_limit,
    user_token,
    uvicorn_config,
)
from mock_server.state import Store  # noqa: E402
from mock_server.state.sources import seed_problem  # noqa: E402
from mock_server.validation import number_problem  # noqa: E402
from mock_server.view.page import url as view_url  # noqa: E402
from mock_server.watch import FixtureWatcher  # noqa: E402

EXIT_VIOLATIONS = 1
EXIT_BAD_FIXTURES = 2
EXIT_USAGE = 2  # as argparse exits on a usage error
EXIT_CANNOT_BIND = 3
EXIT_CANNOT_RUN = 126  # as a shell reports a command it found but could not run
EXIT_NOT_FOUND = 127  # as a shell reports a command it did not find
EXIT_FORCED = 128  # plus the signal's number, as a shell reports a process a signal ended
# Paths the app answers itself whatever the gateway's prefix (mock_server.app): the platform
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


def _whole_number(text: str) -> int:
    """An integer option in the one grammar of integers (`int()` would take `1_0`, ` 5`)."""
    problem = number_problem(text, "integer")
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return int(text)


def _seed(text: str) -> int:
    value = _whole_number(text)
    problem = seed_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def _mebibytes(text: str) -> int:
    value = _whole_number(text)
    if not 1 <= value <= 1024 * 1024:
        raise argparse.ArgumentTypeError(f"{text} is not from 1 to 1048576 MiB")
    return value * 1024 * 1024


def _serving_options(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=_whole_number,
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="platform-mock", description="Contract-driven mock of the platform's API."
    )
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
        "the reports, and exit with COMMAND's status (1 if COMMAND passed but "
        "--fail-on-violation or --min-coverage failed). The request log, on stderr, shows "
        "failed requests (every request with --log-level debug).",
    )
    _serving_options(run, default_port=0)
    _world_options(run)
    _key_option(run)

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
    proxy_cli.add_commands(commands)
    return parser


def _config(args: argparse.Namespace) -> MockConfig:
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


class _Server(Server):
    """uvicorn, announcing when it is ready and exiting with 0 after a stop signal, and at
    once after a second one."""

    out: IO[str] = sys.stdout

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # Printed once the stop signals are handled, so a script may send one at once.
        print("Press Ctrl-C to stop.", file=self.out, flush=True)

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
    # Everything the process prints on standard output (the banner, the request log, the
    # stop) goes through an outlet that never waits on its reader: a reader that stops
    # reading, or goes away (`serve | head -1`), holds neither the server nor its stop.
    stdout = request_log.outlet(sys.stdout)
    if stdout is not None:
        sys.stdout = stdout  # type: ignore[assignment]
    # Standard output is the JSON log's alone: a reader takes each of its lines as a record.
    out: IO[str] = sys.stderr if args.log_format == "json" else sys.stdout
    host, port = sock.getsockname()[:2]
    _banner(mock, args, host, port, out)
    if not args.quiet:
        request_log.configure(sys.stdout, args.log_format, debug=args.log_level == "debug")
    config = uvicorn_config(mock, log_level=args.log_level)
    server = _Server(config, mock)
    server.out = out
    mock.worlds = worlds = Worlds(mock, host)
    watcher = None
    if args.watch:
        watcher = FixtureWatcher(
            mock,
            say=lambda line: print(line, file=out, flush=True),
            complain=lambda text: print(text, file=sys.stderr, flush=True),
        ).start()
        watcher.ready.wait(5)  # an edit right after the banner is seen
    try:
        server.run(sockets=[sock])
    finally:
        if watcher is not None:
            watcher.stop()
        worlds.close()
    return _finish(mock, args, out)


def _banner(mock: PlatformMock, args: argparse.Namespace, host: str, port: int, out: IO[str]):
    base = base_url(host, port)
    gateway = f"{base}{mock.gateway_prefix}"
    lines = [
        f"platform-mock {__version__} (seed {args.seed})",
        f"  fixtures:      {_fixture_files(args)}",
        f"  world:         {_world_summary(mock.store)}",
        f"  control plane: {base}{CONTROL_PLANE_PREFIX}",
        f"  gateway:       {gateway}",
        f"  API docs:      {base}/docs/  and  {gateway}/docs/",
        f"  live view:     {view_url(base)}  (open it with the admin token)",
    ]
    if args.cors:
        lines.append(f"  CORS origins:  {', '.join(args.cors)}")
    if getattr(args, "watch", False):
        lines.append(f"  watching:      {', '.join(args.fixtures)} (an edit reloads the world)")
    if args.command == "run":
        # A CI log is read by more people than the run's command: the tokens stay in the
        # command's environment.
        lines += [
            f"  token:         {'$PLATFORM_MOCK_TOKEN' if user_token(mock) else NO_USER}",
            f"  admin token:   $PLATFORM_MOCK_ADMIN_TOKEN  (admin API: {base}{ADMIN_PREFIX})",
        ]
    else:
        lines += [
            f"  token:         {user_token(mock) or NO_USER}",
            f"  admin token:   {mock.auth.admin_token()}  (admin API: {base}{ADMIN_PREFIX})",
        ]
    print("\n".join(lines), file=out, flush=True)
    if not _is_loopback(args.host):
        print(
            f"  warning: listening on {args.host}, reachable from other machines", file=sys.stderr
        )


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


def _finish(
    mock: PlatformMock, args: argparse.Namespace, out: IO[str], command: str | None = None
) -> int:
    """Judge the contract report, write it, and say the verdict: the exit status of the
    mock's part of a run. `command` says how `run`'s command ended ("" when it passed); the
    run's last line is then the verdict, with every reason."""
    report = mock.report.to_dict()
    verdict = judge(
        report,
        fail_on_violation=args.fail_on_violation,
        min_coverage=args.min_coverage,
        command=command,
    )
    report = {"verdict": verdict, **report}
    status = 0
    if args.report_targets:
        try:
            written = report_files.write(report, args.report_targets)
        except OSError as exc:  # checked at start; the disk may have changed since
            print(f"platform-mock: cannot write the contract report: {exc}", file=sys.stderr)
            status = EXIT_USAGE
        else:
            shown = ", ".join(map(str, written))
            print(f"platform-mock: contract report written to {shown}", file=out)
    checked = args.fail_on_violation or args.min_coverage is not None
    if command is not None or args.report or checked:
        try:
            annotations = report_files.github(report)
        except OSError as exc:
            print(f"platform-mock: cannot write the job summary: {exc}", file=sys.stderr)
            status = status or EXIT_USAGE
        else:
            # GitHub reads workflow commands from standard output.
            print("\n".join(annotations), file=sys.stdout, end="\n" if annotations else "")
    failing = reasons(verdict)
    if command is None:
        for reason in failing:
            print(f"platform-mock: {reason}", file=sys.stderr)
        short = args.min_coverage is not None and coverage(report) < args.min_coverage
        if short:
            for line in gaps(report):
                print(f"  never exercised: {line}", file=sys.stderr)
    if command is not None or checked or args.report or report["summary"]["violations"]:
        print(f"platform-mock: contract check {verdict_line(verdict)}", file=sys.stderr)
    return status or (EXIT_VIOLATIONS if failing else 0)


def environment(server: BackgroundServer, args: argparse.Namespace) -> dict[str, str]:
    """The environment a command run against the mock gets: the mock's coordinates, and the
    checks the run makes, for the pytest plugin to apply to each test."""
    found = server.coordinates.environment()
    if args.fail_on_violation:
        found[FAIL_ON_VIOLATION] = "1"
    return found


def run(args: argparse.Namespace, command: list[str]) -> int:
    """Serve on a thread while `command` runs against the mock; COMMAND's exit status, or
    1 when it passed but the contract checks asked for failed."""
    mock = PlatformMock(_config(args))
    try:
        server = BackgroundServer(mock, args.host, args.port)
    except OSError as exc:
        print(
            f"platform-mock: cannot listen on {args.host}:{args.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return EXIT_CANNOT_BIND
    # Standard output is the command's; the mock speaks on standard error. What the mock
    # prints on either (its log, the report, the verdict, GitHub's annotations) goes through
    # outlets that never wait on their reader: an unread CI log holds nothing, the stop
    # included. The command writes to the same descriptors, unchanged.
    for name in ("stdout", "stderr"):
        found = request_log.outlet(getattr(sys, name))
        if found is not None:
            setattr(sys, name, found)
    _banner(mock, args, server.host, server.port, sys.stderr)
    if not args.quiet:
        request_log.configure(
            sys.stderr, args.log_format, debug=args.log_level == "debug", failures_only=True
        )
    with server:
        status = _run_command(command, {**os.environ, **environment(server, args)})
    report = mock.report.to_dict()
    print(report_files.text(report), file=sys.stderr, end="")
    checked = _finish(mock, args, sys.stderr, _ending(command, status))
    return status or checked


def _ending(command: list[str], status: int) -> str:
    """How the command ended, for the verdict; "" when it passed."""
    if status == 0:
        return ""
    program = shlex.join([os.path.basename(command[0]), *command[1:]])
    if len(program) > 60:
        program = program[:59] + "…"
    if status > EXIT_FORCED and status - EXIT_FORCED in signal.valid_signals():
        name = signal.Signals(status - EXIT_FORCED).name
        return f"the command ({program}) was ended by {name} (status {status})"
    return f"the command ({program}) exited with status {status}"


# Signals a run passes on to its command: the command decides how to stop, and the mock
# stops once it has.
_PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KILL_AFTER_SECONDS = 10  # from a stop signal passed on (or COMMAND's end) to SIGKILL
# The limits of open files the process started with, when it raised its own (serve, run).
_STARTING_FILE_LIMIT: tuple[int, int] | None = None
_POLL_SECONDS = 0.02  # how often the run looks whether COMMAND has ended
_PR_SET_CHILD_SUBREAPER = 36  # prctl(2)


def _run_command(command: list[str], env: dict[str, str]) -> int:
    """Run `command` to its end, passing stop signals on; its exit status, 128 + N when
    signal N ended it (as a shell reports it).

    COMMAND leads a process group of its own, always, and everything it starts is in it.
    On a terminal whose foreground this run holds, the group becomes the foreground: Ctrl-C
    reaches it from the terminal, once (this run does not see it, so does not pass it on),
    and Ctrl-Z stops it and this run with it, as a shell's job. Every stop signal this run
    gets goes to the whole group; `KILL_AFTER_SECONDS` later, whatever of the group still
    runs is killed (a second signal kills at once). When COMMAND ends, what it left running
    in its group (background jobs a shell does not stop on SIGINT) gets SIGTERM, and
    SIGKILL after the same grace: nothing the run started outlives it."""
    terminal = _foreground_terminal()
    _adopt_orphans()
    group: int | None = None
    signalled: list[int] = []  # stop signals received, in order
    deadline: float | None = None

    def pass_on(sig: int, frame: FrameType | None) -> None:
        nonlocal deadline
        signalled.append(sig)
        if group is None:
            return  # passed on as soon as the command has started
        _signal_group(group, signal.SIGKILL if len(signalled) > 1 else sig)
        if deadline is None:
            deadline = time.monotonic() + KILL_AFTER_SECONDS

    previous = {sig: signal.signal(sig, pass_on) for sig in _PASSED_ON}
    try:
        try:
            with _own_file_limit():
                child = subprocess.Popen(command, env=env, process_group=0)
        except FileNotFoundError:
            print(f"platform-mock: cannot run {command[0]}: command not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        except OSError as exc:
            print(f"platform-mock: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        group = child.pid
        if terminal is not None:
            _hand_terminal(terminal, group)
        for sig in signalled[:1]:  # one that came while the command was starting
            _signal_group(group, sig)
            deadline = time.monotonic() + KILL_AFTER_SECONDS
        killed = False
        while not _has_ended(child.pid):
            if terminal is not None:
                _follow_stops(child.pid, terminal, group)
            if deadline is not None and time.monotonic() >= deadline and not killed:
                _signal_group(group, signal.SIGKILL)
                killed = True
            time.sleep(_POLL_SECONDS)
        if terminal is not None:
            _hand_terminal(terminal, os.getpgrp())
        # The group outlives its leader until its last member ends: end them, before the
        # leader is reaped and its id may be given to another process.
        _signal_group(group, signal.SIGTERM)
        returncode = child.wait()
        leftovers = _signal_group(group, 0)  # members besides COMMAND, ending or not
        if leftovers and not _group_ended(group, KILL_AFTER_SECONDS):
            _signal_group(group, signal.SIGKILL)
            _group_ended(group, KILL_AFTER_SECONDS)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if killed:
        print(
            f"platform-mock: {command[0]} did not stop within {KILL_AFTER_SECONDS} s of "
            f"{signal.Signals(signalled[0]).name}: killed (SIGKILL)",
            file=sys.stderr,
        )
    elif len(signalled) > 1:
        print(f"platform-mock: second stop signal: {command[0]} killed", file=sys.stderr)
    if leftovers:
        print(
            f"platform-mock: ended what {command[0]} left running in its process group",
            file=sys.stderr,
        )
    return EXIT_FORCED - returncode if returncode < 0 else returncode


def _signal_group(group: int, sig: int) -> bool:
    """Send `sig` to every process of `group`; whether there was one."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member that changed its user (setuid): it is its own now
        return True
    return True


def _has_ended(pid: int) -> bool:
    """Whether the child has ended, without reaping it (its id stays its group's)."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _group_ended(group: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for every process of `group` to end; whether they did.
    Those handed to this process when their parent ended (`_adopt_orphans`) are reaped
    here: an ended process nobody reaps would still count as one of the group."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not _signal_group(group, 0):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_SECONDS)


def _adopt_orphans() -> None:
    """On Linux, become the parent of COMMAND's processes whose own parent ends first (a
    shell's background jobs), as `tini -s` does: this process then reaps them once they
    end. Otherwise they go to the system's first process, which in a container may never
    reap them, and an ended one would still count as a member of COMMAND's group."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _foreground_terminal() -> int | None:
    """The terminal (one of the standard streams) whose foreground this process group
    holds: the one whose Ctrl-C and Ctrl-Z are the user's; None when there is none (CI, a
    pipe, a run started in the background)."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return fd
    return None


def _hand_terminal(fd: int, group: int) -> None:
    """Make `group` the terminal's foreground. A background process may do so only with
    SIGTTOU blocked (else the terminal stops it)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(OSError):  # the terminal went away (a closed window)
            os.tcsetpgrp(fd, group)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _follow_stops(pid: int, terminal: int, group: int) -> None:
    """Job control, for a run on a terminal: when Ctrl-Z stops COMMAND, stop this run too
    (its shell then shows the job as stopped) and, once continued (`fg`), give COMMAND the
    terminal back and continue it. A stop because COMMAND touched the terminal before it
    was handed the foreground is undone at once."""
    try:
        found = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WNOHANG)
    except ChildProcessError:
        return
    if found is None or found.si_code != os.CLD_STOPPED:
        return
    if found.si_status not in (signal.SIGTTIN, signal.SIGTTOU):
        _hand_terminal(terminal, os.getpgrp())
        os.kill(os.getpid(), signal.SIGSTOP)  # returns when the shell continues this run
        _hand_terminal(terminal, group)
    _signal_group(group, signal.SIGCONT)


@contextlib.contextmanager
def _own_file_limit() -> Iterator[None]:
    """While COMMAND starts, the limit of open files this process started with: it raised
    its own for the server's connections (`raise_file_limit`), which COMMAND should not
    inherit."""
    if _STARTING_FILE_LIMIT is None:
        yield
        return
    raised = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, _STARTING_FILE_LIMIT)
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, raised)


def _dev_token(auth: Authenticator) -> str | None:
    """The default user's token, or None in a world without users."""
    try:
        return auth.dev_token()
    except errors.MockFailure:  # the only failure of minting: there is no user to name
        return None


def token(args: argparse.Namespace) -> int:
    if args.signing_key is None:
        print(f"platform-mock: {NO_KEY}", file=sys.stderr)
        return EXIT_USAGE
    # The world and its token authority only: minting needs no server, only its key.
    store = _config(args).world()
    auth = Authenticator(store)
    if args.subject:
        try:
            subject = store.identity.subject_by_reference(args.subject)
        except ValueError as exc:
            print(f"platform-mock: {exc} in this world", file=sys.stderr)
            return EXIT_BAD_FIXTURES
        minted: str | None = auth.dev_token(subject)
    else:
        minted = auth.admin_token() if args.admin else _dev_token(auth)
    if minted is None:
        print(f"platform-mock: {NO_USER}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    print(minted)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, where a reader gone is caught, not at the interpreter's exit
    except BrokenPipeError:
        # The reader of standard output has gone (`platform-mock token | head -c 80`): exit
        # as a program that SIGPIPE ended, with nothing on stderr. Standard output points to
        # the null device, for the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FORCED + signal.SIGPIPE
    return status


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # `run`'s command is everything after the first `--`, options included, untouched.
    split = arguments.index("--") if "--" in arguments else len(arguments)
    parser = build_parser()
    args = parser.parse_args(arguments[:split])
    command = arguments[split + 1 :]
    if args.command == "run" and not command:
        parser.error("run needs a command after --: platform-mock run [options] -- COMMAND ...")
    if args.command != "run" and split < len(arguments):
        parser.error(f"{args.command} takes no command; did you mean: platform-mock run ... --")
    refused = _refusal(args)
    if refused:
        status, message = refused
        print(f"platform-mock: {message}", file=sys.stderr)
        return status
    if args.command in ("serve", "run"):
        global _STARTING_FILE_LIMIT
        _STARTING_FILE_LIMIT = raise_file_limit()
    try:
        if args.command in proxy_cli.COMMANDS:
            return proxy_cli.run(args, _Server)
        if args.command == "serve":
            return serve(args)
        return run(args, command) if args.command == "run" else token(args)
    except FixtureError as exc:
        print(f"platform-mock: invalid fixtures:\n{exc}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    except KeyboardInterrupt:  # Ctrl-C while loading fixtures or writing the report
        return EXIT_FORCED + signal.SIGINT
    finally:
        _close_log()


def _close_log() -> None:
    """Give the request log's reader a last, bounded chance to take what is left, and say
    how many lines it missed."""
    dropped = request_log.close()
    if dropped:
        print(
            f"platform-mock: the request log dropped {dropped} line(s): its reader did not keep up",
            file=sys.stderr,
        )


if __name__ == "__main__":
    sys.exit(main())
