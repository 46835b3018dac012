"""Serving the mock from the command (`serve`): the uvicorn server that stops cleanly on the
first stop signal and at once on a second, the world loaded with its time, the banner, the
runtime file that lets `platform-mock token` find the server, the fixture watcher of
`--watch`, and the contract check at the end."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import IO, NoReturn

from mock_server.cli import runtime
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
from mock_server.core import escape, masking
from mock_server.core.addresses import ADMIN_PREFIX
from mock_server.core.coordinates import base_url
from mock_server.core.version import __version__
from mock_server.http import request_log
from mock_server.http.mock import CONTROL_PLANE_PREFIX, PlatformMock
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
    record: runtime.ServerFile | None = None  # written to the runtime files once serving

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.record is not None:
            _record(self.record)
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


# This process's runtime file, while it serves (removed as it stops, even at once).
_recorded: Path | None = None


def _record(record: runtime.ServerFile) -> None:
    """Write the server's runtime file; if it cannot be, say so and serve on."""
    global _recorded
    try:
        _recorded = runtime.write(record)
    except OSError as exc:
        print(
            f"platform-mock: cannot record this server for `platform-mock token` in "
            f"{runtime.directory()}: {exc.strerror or exc}",
            file=sys.stderr,
            flush=True,
        )


def _unrecord() -> None:
    global _recorded
    if _recorded is not None:
        runtime.remove(_recorded)
        _recorded = None


def _exit_at_once(sig: int) -> NoReturn:
    """End the process now, from a signal handler: without the report, and without unwinding
    the event loop, which would run the requests' cancellation. The kernel closes their
    connections."""
    _unrecord()
    # The interrupted code may be writing to these buffers: flushing them may fail, and the
    # message goes around them.
    with contextlib.suppress(OSError, RuntimeError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    message = f"platform-mock: second {signal.Signals(sig).name}, stopped at once without a report"
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), message.encode() + b"\n")
    os._exit(EXIT_FORCED + sig)


def built(args: argparse.Namespace, out: IO[str]) -> PlatformMock:
    """The mock the options describe, its loading said on `out` with the time it took (a
    big world takes seconds), and its start-up world out of the garbage collector's way:
    that world lives as long as the server (its snapshot does), and a full collection that
    walked it held the event loop about 100 ms at 100,000 runs, each time a big upload or
    dump set one off. Frozen, it is walked no more."""
    print(f"platform-mock: loading the world ({_fixture_files(args)})...", end="", file=out)
    out.flush()
    started = time.perf_counter()
    try:
        mock = PlatformMock(config(args))
    except BaseException as exc:
        print(" stopped" if isinstance(exc, KeyboardInterrupt) else " failed", file=out)
        out.flush()
        raise
    print(f" {time.perf_counter() - started:.1f} s", file=out)
    out.flush()
    gc.freeze()
    return mock


def cannot_bind(host: str, port: int, exc: OSError) -> int:
    """Say why the server cannot listen, with the fix when the port is taken: the exit
    status."""
    message = f"platform-mock: cannot listen on {host}:{port}: {exc.strerror}"
    if exc.errno == errno.EADDRINUSE:
        message += "; --port 0 picks a free port (the banner gives it)"
        with contextlib.suppress(OSError):
            for _, record in runtime.recorded():
                if record.port == port and runtime.process_runs(record.pid):
                    message += (
                        f", and platform-mock serve (pid {record.pid}) is serving there: "
                        f"`platform-mock token --port {port}` asks it for a token"
                    )
                    break
    print(message, file=sys.stderr)
    return EXIT_CANNOT_BIND


def log_stream(args: argparse.Namespace, here: IO[str]) -> IO[str] | None:
    """Where the request log goes: the file of --log-file, `here` for `-`, or nowhere."""
    if args.quiet or args.log_file is None:
        return None
    if args.log_file == "-":
        return here
    # Checked writable at start (`options.refusal`); the disk may have changed since.
    path = Path(args.log_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("w", encoding="utf-8")


def serve(args: argparse.Namespace) -> int:
    # Standard output is the JSON log's alone: a reader takes each of its lines as a record.
    json_here = args.log_format == "json" and args.log_file == "-"
    mock = built(args, sys.stderr if json_here else sys.stdout)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        return cannot_bind(args.host, args.port, exc)
    # Everything the process prints on standard output (the banner, the request log, the
    # stop) goes through an outlet that never waits on its reader: a reader that stops
    # reading, or goes away (`serve | head -1`), holds neither the server nor its stop.
    stdout = request_log.outlet(sys.stdout)
    if stdout is not None:
        sys.stdout = stdout
    out: IO[str] = sys.stderr if json_here else sys.stdout
    host, port = sock.getsockname()[:2]
    banner(mock, args, host, port, out)
    logged = log_stream(args, sys.stdout)
    if logged is not None:
        request_log.configure(logged, args.log_format, debug=args.log_level == "debug")
    served = uvicorn_config(mock, log_level=args.log_level)
    server = ForegroundServer(served, mock)
    server.out = out
    server.record = runtime.ServerFile(
        pid=os.getpid(),
        url=base_url(_reached_from_here(host), port),
        token=user_token(mock),
        admin_token=mock.auth.admin_token(),
        seed=mock.store.seed,
        version=__version__,
        started=time.time(),
    )
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
        _unrecord()
        if watcher is not None:
            watcher.stop()
        worlds.close()
    return finish(mock, args, out)


def _reached_from_here(host: str) -> str:
    """The address a client on this machine reaches a server bound to `host` at: loopback
    for a server bound to every address."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


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
        watched = ", ".join(map(_file_name, args.fixtures))
        lines.append(f"  watching:      {watched} (an edit reloads the world)")
    if not args.quiet and args.log_file not in (None, "-"):
        lines.append(f"  request log:   {args.log_file}")
    elif not args.quiet and args.log_file is None:  # run's default
        lines.append("  request log:   off (--log-file FILE keeps it; - shows the failures here)")
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


def _file_name(name: str) -> str:
    # Not the mock's to trust: whoever made the file named it.
    return escape.text(masking.masked_text(name))


def _fixture_files(args: argparse.Namespace) -> str:
    """The fixture files of the world, in the order they are loaded."""
    files = [] if args.no_default_fixtures else ["the bundled defaults"]
    files += map(_file_name, args.fixtures)
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


def fail_on_violation(args: argparse.Namespace) -> bool:
    """Whether a request that broke the contract fails the check: asked for with
    `--fail-on-violation` (serve), the default of `run` unless `--allow-violations`."""
    return bool(args.fail_on_violation or (args.command == "run" and not args.allow_violations))


def finish(
    mock: PlatformMock, args: argparse.Namespace, out: IO[str], command: str | None = None
) -> int:
    """Judge the contract report, write it, and say the verdict: the exit status of the
    mock's part of a run. `command` says how `run`'s command ended ("" when it passed); the
    run's last line is then the verdict, with every reason."""
    report = mock.report.to_dict()
    verdict = judge(
        report,
        fail_on_violation=fail_on_violation(args),
        min_coverage=args.min_coverage,
        command=command,
        require_requests=command is not None and not args.allow_no_requests,
        opt_outs=command is not None,
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
    checked = fail_on_violation(args) or args.min_coverage is not None
    if command is not None or args.report or checked:
        try:
            annotations = report_files.ci(report)
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
