"""The `platform-mock proxy` and `platform-mock drift` commands: their options, and running them.

`proxy` listens like `serve` and forwards every request to a target platform, checking both
directions against the contract (`mock_server.proxy.forward`); when stopped (Ctrl-C, SIGTERM) it
writes the drift report (`--report`) and the recorded world (`--record`), and exits with the
verdict. `drift` sends the read-only requests of `mock_server.proxy.drift_check` to a target with
a token from the environment, prints the drift report and exits with the verdict.

Exit statuses: 0 the target agrees with the contract; 1 it does not (drift); 2 a usage
error; 3 the proxy cannot listen; 4 no drift found, but the target failed to answer (a
timeout, an answer too slow or too large, a connection error) or no answer was checked.
Every answer has one deadline (`--timeout`) and, for `drift`, a cap on its size.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from mock_server.cli.options import (
    EXIT_USAGE,
    Parser,
    examples,
    http_url,
    is_loopback,
    paragraph,
    whole_number,
)
from mock_server.core.choices import PROXY_TIMEOUT_SECONDS, REPORT_FORMATS

# What runs the commands is imported when one runs: declaring their options imports nothing
# of the web stack or the proxy (mock_server.cli.options says why).
TYPE_CHECKING = False  # not `typing`'s: see mock_server/__init__.py
if TYPE_CHECKING:
    from typing import IO, Any

    import uvicorn

    from mock_server.proxy.forward import Proxy
    from mock_server.proxy.recording import Recorder
    from mock_server.reports.drift import ProxiedExchange

COMMANDS = ("proxy", "drift")
EXIT_DRIFT = 1
EXIT_TARGET = 4
DEFAULT_TOKEN_VARIABLE = "TFY_API_KEY"  # where the platform's SDK and CLI read a token


def _seconds(text: str) -> float:
    from mock_server.core.numbers import number_problem

    problem = number_problem(text, "number")
    if problem:
        raise argparse.ArgumentTypeError(problem)
    value = float(text)
    if not 0 < value <= 3600 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not more than 0 and at most 3600 seconds")
    return value


def _pages(text: str) -> int:
    value = whole_number(text)
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text} is not from 1 to 10000")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        required=True,
        type=http_url,
        metavar="URL",
        help="the platform's base URL (its control plane is under /api/svc/v1)",
    )
    parser.add_argument(
        "--gateway-target",
        type=http_url,
        metavar="URL",
        help="the gateway's base URL, if not TARGET/gateway",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=PROXY_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="seconds the target may take for a whole answer, from the request sent to the "
        "answer's last byte, after which the request counts as a timeout (or an answer too "
        f"slow), not drift (default {PROXY_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument(
        "--report",
        dest="drift_report",
        action="append",
        default=[],
        metavar="DIR|FILE|FORMAT=FILE",
        help="write the drift report: into a directory (drift-report.json, .txt, .xml and "
        ".md), to a file whose suffix names its format, or as FORMAT=FILE with FORMAT one of "
        f"{', '.join(REPORT_FORMATS)} (repeatable)",
    )
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="write what the answers showed of the target's world as a fixture document "
        "(serve --no-default-fixtures --fixtures FILE loads it)",
    )


PROXY_EXAMPLES = examples(
    (
        "platform-mock proxy --target https://platform.example.com --report drift",
        "point your client at the proxy; Ctrl-C writes the drift report into drift/",
    ),
    (
        "platform-mock proxy --target https://platform.example.com --record world.yaml",
        "and record what the answers showed, as fixtures",
    ),
)
DRIFT_EXAMPLES = examples(
    (
        "platform-mock drift --target https://platform.example.com",
        "read-only requests to the platform with the token in TFY_API_KEY, and the drift report",
    ),
    (
        "platform-mock drift --target https://platform.example.com --job JOB_ID --report drift",
        "also read a job's runs; the reports in drift/",
    ),
)


def add_commands(commands: Any, only: str | None = None) -> None:
    """Add `proxy` and `drift` to the command's subparsers: with `only`, the options of that
    command alone (`options.build_parser`)."""
    proxy = commands.add_parser(
        "proxy",
        help="forward to a platform, checking its answers against the contract",
        description=paragraph(
            "Listen like serve and forward every request to the target platform with the "
            "caller's own credentials, checking the request and the target's answer against "
            "the contract. When stopped (Ctrl-C or SIGTERM), write the drift report and the "
            "recorded world, and exit 0 if every answer agreed, 1 on drift, 4 if the target "
            "failed to answer."
        ),
        epilog=PROXY_EXAMPLES,
    )
    check = commands.add_parser(
        "drift",
        help="check a platform against the contract with read-only requests",
        description=paragraph(
            "Send read-only requests of the contract's operations to the target platform "
            "(with the token in $TFY_API_KEY, or the variable --token-env names), print the "
            "drift report, and exit 0 if every answer agreed with the contract, 1 on drift, 4 "
            "if the target failed to answer. Nothing that changes the target is sent, unless "
            "--create-token asks for it."
        ),
        epilog=DRIFT_EXAMPLES,
    )
    if only in (None, "proxy"):
        _proxy_options(proxy)
    if only in (None, "drift"):
        _drift_options(check)


def _proxy_options(proxy: Parser) -> None:
    _common(proxy)
    proxy.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    proxy.add_argument(
        "--port",
        type=whole_number,
        default=8080,
        help="port to bind; 0 picks a free one (default 8080)",
    )
    proxy.add_argument(
        "--gateway-prefix", default="/gateway", help="path prefix of the gateway (default /gateway)"
    )
    proxy.add_argument("--quiet", action="store_true", help="no line per request")


def _drift_options(check: Parser) -> None:
    _common(check)
    check.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_VARIABLE,
        metavar="VARIABLE",
        help=f"the environment variable holding the token (default {DEFAULT_TOKEN_VARIABLE})",
    )
    check.add_argument(
        "--job", action="append", default=[], metavar="ID", help="a job to read the runs of"
    )
    check.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="ID",
        help="a secret to list the deployments of",
    )
    check.add_argument(
        "--response",
        action="append",
        default=[],
        metavar="ID",
        help="a model response of the gateway to read",
    )
    check.add_argument(
        "--max-pages",
        type=_pages,
        default=10,
        metavar="N",
        help="pages of 100 runs read per job at most (default 10)",
    )
    check.add_argument(
        "--create-token",
        metavar="NAME",
        help="also check getOrCreatePersonalAccessToken by getting your token NAME, which "
        "CREATES it on the target if you have none of that name",
    )


def _refusal(args: argparse.Namespace) -> str | None:
    """Why the options cannot be used (checked before anything starts), if they cannot."""
    from pathlib import Path

    from mock_server.reports import drift_files, report_files

    try:
        args.report_targets = report_files.targets(args.drift_report, drift_files.BASENAME)
    except report_files.TargetError as exc:
        return f"--report: {exc}"
    for path in args.report_targets.values():
        problem = report_files.target_problem(path)
        if problem:
            return f"--report: {problem}"
    if args.record:
        problem = report_files.target_problem(Path(args.record))
        if problem:
            return f"--record: {problem}"
        if any(report_files.same_file(Path(args.record), p) for p in args.report_targets.values()):
            return f"--record: {args.record} is also a report's file"
    return None


def run(args: argparse.Namespace, server_class: type[uvicorn.Server] | None = None) -> int:
    """Run `proxy` or `drift` (`args.command`); its exit status. `server_class` serves the
    proxy (the command's own, whose stop signals end it cleanly; uvicorn's by default)."""
    import uvicorn

    from mock_server.proxy.recording import Recorder

    refused = _refusal(args)
    if refused:
        print(f"platform-mock: {refused}", file=sys.stderr)
        return EXIT_USAGE
    recorder = Recorder() if args.record else None
    if args.command == "drift":
        return _drift(args, recorder)
    return _proxy(args, recorder, server_class or uvicorn.Server)


def _new_proxy(args: argparse.Namespace, recorder: Recorder | None) -> Proxy:
    from mock_server.proxy.forward import Proxy

    return Proxy(
        args.target,
        gateway=args.gateway_target,
        gateway_prefix=getattr(args, "gateway_prefix", "/gateway"),
        timeout=args.timeout,
        recorder=recorder,
        # `drift`'s own client would hold an answer whole: one past what is checked is
        # refused as too large. `proxy` passes it on to its client as it streams.
        stream_large=args.command == "proxy",
    )


def _proxy(
    args: argparse.Namespace, recorder: Recorder | None, server_class: type[uvicorn.Server]
) -> int:
    from mock_server.core.coordinates import CONTROL_PLANE_PREFIX, base_url
    from mock_server.http import request_log
    from mock_server.http.server import bind
    from mock_server.proxy.forward import proxy_config

    proxy = _new_proxy(args, recorder)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        from mock_server.cli.serving import cannot_bind

        return cannot_bind(args.host, args.port, exc)
    host, port = sock.getsockname()[:2]
    base = base_url(host, port)
    print(
        "\n".join(
            [
                "platform-mock proxy",
                f"  control plane: {base}{CONTROL_PLANE_PREFIX}  ->  {args.target}",
                f"  gateway:       {base}{proxy.router.gateway_prefix}  ->  {proxy.gateway}",
                "  every request is forwarded with its own credentials; answers are checked "
                "against the contract",
            ]
        ),
        flush=True,
    )
    if not is_loopback(args.host):
        print(
            f"  warning: listening on {args.host}: anyone who reaches it may use the platform "
            "through it with their own token",
            file=sys.stderr,
        )
    if not args.quiet:
        # Through an outlet that never waits on the reader: the log is written on the loop.
        from typing import cast

        proxy.log = _printer(cast("IO[str]", request_log.outlet(sys.stdout) or sys.stdout))
    server_class(proxy_config(proxy)).run(sockets=[sock])
    return _finish(proxy, args, recorder, sys.stdout)


def _printer(out: IO[str]) -> Any:
    from mock_server.core import escape
    from mock_server.proxy.forward import log_line

    gone = False

    def log(exchange: ProxiedExchange) -> None:
        nonlocal gone
        if gone:
            return
        try:
            print(escape.text(log_line(exchange)), file=out, flush=True)
        except (OSError, ValueError):  # the reader has gone (`| head`): the proxy goes on
            gone = True

    return log


def _drift(args: argparse.Namespace, recorder: Recorder | None) -> int:
    import asyncio

    from mock_server.proxy import drift_check

    token = os.environ.get(args.token_env, "").strip()
    if not token:
        print(
            f"platform-mock: no token: set {args.token_env} to a token of the target "
            "(the drift check reads it from the environment, never from its arguments)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    proxy = _new_proxy(args, recorder)
    asked = drift_check.Asked(
        jobs=args.job,
        secrets=args.secret,
        responses=args.response,
        create_token=args.create_token,
        max_pages=args.max_pages,
    )
    asyncio.run(drift_check.check(proxy, token, asked))
    return _finish(proxy, args, recorder, sys.stdout, show=True)


def _finish(
    proxy: Proxy,
    args: argparse.Namespace,
    recorder: Recorder | None,
    out: IO[str],
    show: bool = False,
) -> int:
    """Judge the drift report, write it and the recording, and say the verdict: the exit
    status."""
    from mock_server.core import escape
    from mock_server.proxy.recording import RecordingRefused
    from mock_server.reports import drift, drift_files, report_files

    report = proxy.report.to_dict()
    verdict = drift.judge(report)
    report = {"verdict": verdict, **report}
    status = 0
    if args.report_targets:
        try:
            written = report_files.write(report, args.report_targets, drift_files.RENDERERS)
        except OSError as exc:  # checked at start; the disk may have changed since
            print(f"platform-mock: cannot write the drift report: {exc}", file=sys.stderr)
            status = EXIT_USAGE
        else:
            shown = ", ".join(map(str, written))
            print(f"platform-mock: drift report written to {shown}", file=sys.stderr)
    if recorder is not None:
        try:
            path = recorder.write(args.record)
        except (OSError, RecordingRefused) as exc:
            print(f"platform-mock: cannot write the recording: {exc}", file=sys.stderr)
            status = EXIT_USAGE
        else:
            print(f"platform-mock: recorded world written to {path}", file=sys.stderr)
    try:
        annotations = drift_files.ci(report)
    except OSError as exc:
        print(f"platform-mock: cannot write the job summary: {exc}", file=sys.stderr)
        status = status or EXIT_USAGE
        annotations = []
    # Printed once every file is written: a reader of standard output that goes away
    # early (`| head`) ends the command, and must not cost the report.
    if show:
        print(drift_files.text(report), file=out, end="")
    print("\n".join(annotations), file=sys.stdout, end="\n" if annotations else "")
    line = escape.text(drift_files.verdict_line(verdict))
    print(f"platform-mock: drift check {line}", file=sys.stderr)
    if status:
        return status
    if drift.drifted(verdict):
        return EXIT_DRIFT
    return 0 if verdict["passed"] else EXIT_TARGET
