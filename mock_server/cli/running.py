"""The `run` command: the mock served on a thread while a command runs against it (under
supervision), then the report and the contract check, with the command's exit status."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys

from mock_server.cli.serving import (
    banner,
    built,
    cannot_bind,
    fail_on_violation,
    finish,
    log_stream,
)
from mock_server.cli.supervision import Ended, run_command
from mock_server.core.coordinates import FAIL_ON_VIOLATION
from mock_server.http import request_log
from mock_server.http.server import BackgroundServer
from mock_server.reports import report_files


def environment(server: BackgroundServer, args: argparse.Namespace) -> dict[str, str]:
    """The environment a command run against the mock gets: the mock's coordinates, and the
    checks the run makes, for the pytest plugin to apply to each test."""
    found = server.coordinates.environment()
    if fail_on_violation(args):
        found[FAIL_ON_VIOLATION] = "1"
    return found


def run(args: argparse.Namespace, command: list[str]) -> int:
    """Serve on a thread while `command` runs against the mock; COMMAND's exit status, or
    1 when it passed but the contract checks asked for failed."""
    mock = built(args, sys.stderr)
    try:
        server = BackgroundServer(mock, args.host, args.port)
    except OSError as exc:
        return cannot_bind(args.host, args.port, exc)
    # Standard output is the command's; the mock speaks on standard error. What the mock
    # prints on either (its log, the report, the verdict, GitHub's annotations) goes through
    # outlets that never wait on their reader: an unread CI log holds nothing, the stop
    # included. The command writes to the same descriptors, unchanged.
    for name in ("stdout", "stderr"):
        found = request_log.outlet(getattr(sys, name))
        if found is not None:
            setattr(sys, name, found)
    banner(mock, args, server.host, server.port, sys.stderr)
    # The request log stays off the command's output unless asked for (--log-file): in a
    # file, every request to the platform's API, as serve logs them; on standard error
    # (`-`), among the command's own lines, only those that failed.
    logged = log_stream(args, sys.stderr)
    if logged is not None:
        request_log.configure(
            logged,
            args.log_format,
            debug=args.log_level == "debug",
            failures_only=logged is sys.stderr,
        )
    with server:
        ended = run_command(command, {**os.environ, **environment(server, args)})
    report = mock.report.to_dict()
    print(report_files.text(report), file=sys.stderr, end="")
    checked = finish(mock, args, sys.stderr, _ending(command, ended))
    return ended.status or checked


def _ending(command: list[str], ended: Ended) -> str:
    """How the command ended, for the verdict; "" when it passed. A signal that ended it is
    told apart from a status of 128 + N the command exited with itself."""
    if ended.status == 0:
        return ""
    program = shlex.join([os.path.basename(command[0]), *command[1:]])
    if len(program) > 60:
        program = program[:59] + "…"
    if ended.signal is not None:
        name = signal.Signals(ended.signal).name
        return f"the command ({program}) was ended by {name} (status {ended.status})"
    return f"the command ({program}) exited with status {ended.status}"
