"""The `platform-mock` command: each subcommand dispatched to the module that owns it.

`options` declares and checks every option; `serving` serves the mock (`serve`); `running`
runs a command against it (`run`), under `supervision`; `token` mints a development token;
`proxying` owns `proxy` and `drift`."""

from __future__ import annotations

import warnings

# Connexion imports Starlette's test client, which warns about httpx at every start of the
# command; the command never uses it.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")

import argparse  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from mock_server.cli import options, proxying, supervision  # noqa: E402
from mock_server.cli.options import EXIT_BAD_FIXTURES, EXIT_FORCED, refusal  # noqa: E402
from mock_server.cli.running import run  # noqa: E402
from mock_server.cli.serving import ForegroundServer, serve, world_counts  # noqa: E402
from mock_server.cli.token import token  # noqa: E402
from mock_server.fixtures.loader import FixtureError  # noqa: E402
from mock_server.http import request_log  # noqa: E402
from mock_server.http.server import raise_file_limit  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The command's parser, with every subcommand."""
    return options.build_parser(proxying.add_commands)


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
    refused = refusal(args)
    if refused:
        status, message = refused
        print(f"platform-mock: {message}", file=sys.stderr)
        return status
    if args.command in ("serve", "run"):
        supervision.remember_file_limit(raise_file_limit())
    try:
        if args.command in proxying.COMMANDS:
            return proxying.run(args, ForegroundServer)
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


__all__ = ["build_parser", "main", "run", "serve", "token", "world_counts"]
