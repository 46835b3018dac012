"""The `platform-mock` command: each subcommand dispatched to the module that owns it.

`options` declares and checks every option; `serving` serves the mock (`serve`); `running`
runs a command against it (`run`), under `supervision`; `token` prints a token of a running
server (`runtime` finds it) or mints one; `proxying` owns `proxy` and `drift`.

The options are read before anything else is imported: `--version`, `--help` and a usage
error import nothing of the web stack or the contract, and each command imports what it
runs when it runs."""

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

from mock_server.cli import options, proxying  # noqa: E402

TYPE_CHECKING = False  # not `typing`'s: see mock_server/__init__.py
if TYPE_CHECKING:
    from typing import Any, TypeGuard

    from mock_server.fixtures.loader import FixtureError
from mock_server.cli.options import EXIT_BAD_FIXTURES, EXIT_FORCED, refusal  # noqa: E402

COMMANDS = ("serve", "run", "token", *proxying.COMMANDS)
# The commands whose options may come from the environment (PLATFORM_MOCK_<OPTION>).
FROM_ENVIRONMENT = ("serve", "run", "token")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser, with every subcommand (with `only`, the options of that one)."""
    return options.build_parser(proxying.add_commands, only=only)


def serve(args: argparse.Namespace) -> int:
    from mock_server.cli.serving import serve as serving

    return serving(args)


def run(args: argparse.Namespace, command: list[str]) -> int:
    from mock_server.cli.running import run as running

    return running(args, command)


def token(args: argparse.Namespace) -> int:
    from mock_server.cli.token import token as printing

    return printing(args)


def __getattr__(name: str) -> Any:
    if name == "world_counts":  # the banner's counts, for tests; imported on first use
        from mock_server.cli.serving import world_counts

        return world_counts
    raise AttributeError(f"module 'mock_server.cli' has no attribute {name!r}")


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


def _parsed(arguments: list[str]) -> argparse.Namespace:
    """The options before any `--`, the command's own and its variables', or a usage error."""
    name = options.command_of(arguments)
    if name is None and not {"-h", "--help", "--version"} & set(arguments):
        options.usage_error(
            f"a command is needed: {', '.join(COMMANDS)} (see {options.PROG} --help)"
        )
    if name is not None and name not in COMMANDS:
        fix = options.suggestion(name, COMMANDS) or f"; the commands are {', '.join(COMMANDS)}"
        options.usage_error(f"no command {name!r}{fix}")
    parser = build_parser(only=name or "")  # "": no command's options (--help, --version)
    if name in FROM_ENVIRONMENT:
        options.defaults_from_environment(parser.commands[name])  # type: ignore[attr-defined]
    return parser.parse_args(arguments)


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # `run`'s command is everything after the first `--`, options included, untouched.
    split = arguments.index("--") if "--" in arguments else len(arguments)
    args = _parsed(arguments[:split])
    command = arguments[split + 1 :]
    if args.command == "run" and not command:
        options.usage_error(
            "run needs a command after --: platform-mock run [options] -- COMMAND ...",
            f"{options.PROG} run",
        )
    if args.command != "run" and split < len(arguments):
        options.usage_error(
            f"{args.command} takes no command; did you mean: platform-mock run ... -- COMMAND"
        )
    refused = refusal(args)
    if refused:
        status, message = refused
        print(f"platform-mock: {message}", file=sys.stderr)
        return status
    if args.command in ("serve", "run"):
        from mock_server.cli import supervision
        from mock_server.http.server import raise_file_limit

        supervision.remember_file_limit(raise_file_limit())
    try:
        if args.command in proxying.COMMANDS:
            from mock_server.cli.serving import ForegroundServer

            return proxying.run(args, ForegroundServer)
        if args.command == "serve":
            return serve(args)
        return run(args, command) if args.command == "run" else token(args)
    except KeyboardInterrupt:  # Ctrl-C while loading fixtures or writing the report
        return EXIT_FORCED + signal.SIGINT
    except Exception as exc:
        if not _is_fixture_error(exc):
            raise
        from mock_server.cli import watch  # the loader is imported: so is what shows it

        shown = "\n".join(watch.said(exc))  # what the files hold, and their names, masked
        print(f"platform-mock: invalid fixtures:\n{shown}", file=sys.stderr)
        return EXIT_BAD_FIXTURES
    finally:
        _close_log()


def _is_fixture_error(exc: Exception) -> TypeGuard[FixtureError]:
    """Whether `exc` is the fixtures' refusal (only once they were read: the loader is then
    imported)."""
    loader = sys.modules.get("mock_server.fixtures.loader")
    return loader is not None and isinstance(exc, loader.FixtureError)


def _close_log() -> None:
    """Give the request log's reader a last, bounded chance to take what is left, and say
    how many lines it missed."""
    request_log = sys.modules.get("mock_server.http.request_log")
    dropped = request_log.close() if request_log is not None else 0
    if dropped:
        print(
            f"platform-mock: the request log dropped {dropped} line(s): its reader did not keep up",
            file=sys.stderr,
        )


__all__ = ["build_parser", "main", "run", "serve", "token"]
