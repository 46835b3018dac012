"""Serving the mock from the command (`serve`): the uvicorn server that stops cleanly on the
first stop signal and at once on a second, the banner, the fixture watcher of `--watch`, and
the contract check at the end."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import IO, NoReturn

from mock_server.cli.options import (
    EXIT_CANNOT_BIND,
    EXIT_FORCED,
    EXIT_USAGE,
    EXIT_VIOLATIONS,
    NO_USER,
    config,
    is_loopback,
)
from mock_server.cli.watch import FixtureWatcher
from mock_server.core.coordinates import base_url
from mock_server.core.version import __version__
from mock_server.http import request_log
from mock_server.http.mock import ADMIN_PREFIX, CONTROL_PLANE_PREFIX, PlatformMock
from mock_server.http.server import MockServer, Worlds, bind, user_token, uvicorn_config
from mock_server.http.view_page import url as view_url
from mock_server.reports import report_files
from mock_server.reports.report import coverage, gaps, judge, reasons, verdict_line
from mock_server.state import Store

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # a normal stop of `serve` and `run`


class ForegroundServer(MockServer):
    """uvicorn, ending the live view's streams as it stops (`mock_server.http.server.MockServer`),
    announcing when it is ready and exiting with 0 after a stop signal, and at once after a
    second one."""

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

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's (`Server.serve` serves inside it), less its raising the stop signal
        again once stopped, which would end the process with the signal's status: Ctrl-C
        and SIGTERM are a normal stop here (status 0)."""
        if threading.current_thread() is not threading.main_thread():
            yield  # signals are the main thread's
            return
        before = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


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


def built(args: argparse.Namespace) -> PlatformMock:
    """The mock the options describe, its start-up world out of the garbage collector's way:
    that world lives as long as the server (its snapshot does), and a full collection that
    walked it held the event loop about 100 ms at 100,000 runs, each time a big upload or
    dump set one off. Frozen, it is walked no more."""
    mock = PlatformMock(config(args))
    gc.freeze()
    return mock


def serve(args: argparse.Namespace) -> int:
    mock = built(args)
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
        sys.stdout = stdout
    # Standard output is the JSON log's alone: a reader takes each of its lines as a record.
    out: IO[str] = sys.stderr if args.log_format == "json" else sys.stdout
    host, port = sock.getsockname()[:2]
    banner(mock, args, host, port, out)
    if not args.quiet:
        request_log.configure(sys.stdout, args.log_format, debug=args.log_level == "debug")
    served = uvicorn_config(mock, log_level=args.log_level)
    server = ForegroundServer(served, mock)
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
    return finish(mock, args, out)


def banner(
    mock: PlatformMock, args: argparse.Namespace, host: str, port: int, out: IO[str]
) -> None:
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
    if not is_loopback(args.host):
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


def finish(
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
