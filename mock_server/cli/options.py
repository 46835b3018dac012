"""The command's options: declared once for each subcommand, read from the command line or
the environment (`PLATFORM_MOCK_<OPTION>`, the command line winning), each checked before
anything starts (a refused option is one line on stderr and a usage status, with the fix
when there is one), and the exit statuses the command speaks.

Reading the options imports nothing of the mock, so that `--version`, `--help` and a usage
error answer at once: what checks a value against the mock's own rules is imported when an
option is given (its type) or once the options are read (`refusal`, `config`)."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import textwrap
from collections.abc import Callable, Sequence

from mock_server.core.addresses import (
    allowed_host_problem,
    gateway_prefix_problem,
    origin_problem,
)
from mock_server.core.choices import HOST_CHECKS, JOURNAL_BUDGET_MIB, LOG_FORMATS, REPORT_FORMATS
from mock_server.core.version import __version__

TYPE_CHECKING = False  # not `typing`'s: see mock_server/__init__.py
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from mock_server.http.mock import MockConfig

EXIT_VIOLATIONS = 1  # the contract checks asked for failed
EXIT_BAD_FIXTURES = 2
EXIT_USAGE = 2  # as argparse exits on a usage error
EXIT_CANNOT_BIND = 3
EXIT_CANNOT_RUN = 126  # as a shell reports a command it found but could not run
EXIT_NOT_FOUND = 127  # as a shell reports a command it did not find
EXIT_FORCED = 128  # plus the signal's number, as a shell reports a process a signal ended

PROG = "platform-mock"
# Where an option of serve, run (and the world and key options of token) may also come from:
# PLATFORM_MOCK_ and its name, upper case, - as _ (--log-level: PLATFORM_MOCK_LOG_LEVEL).
VARIABLE_PREFIX = "PLATFORM_MOCK_"
# The values a variable of a yes-or-no option (--quiet) may hold, either case.
YES, NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
LOG_LEVELS = ("debug", "info", "warning", "error")


NO_USER = (
    "none: the world has no user (load fixtures with one, then mint its token with "
    "POST /__admin/tokens)"
)


def usage_error(message: str, prog: str = PROG) -> NoReturn:
    """Refuse the command line: one line on stderr, and the usage status."""
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def suggestion(word: str, known: Sequence[str]) -> str:
    """`; did you mean X?` for the known word closest to `word`, or "" when none is close."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def whole_number(text: str) -> int:
    """An integer option in the one grammar of integers (`int()` would take `1_0`, ` 5`)."""
    from mock_server.core.numbers import number_problem

    problem = number_problem(text, "integer")
    if problem:
        raise argparse.ArgumentTypeError(problem)
    try:
        return int(text)
    except ValueError:  # past the interpreter's limit of digits
        raise argparse.ArgumentTypeError(f"a number of {len(text):,} digits is too big") from None


def http_url(text: str) -> str:
    """A server's base URL, http:// or https://, without credentials, query or fragment;
    given back without its trailing slash."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (a port past 65535, or not a number, raises here)
    except ValueError as error:  # `http://[::1`, `http://host:99999`
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL")
    if parts.username or parts.password:
        raise argparse.ArgumentTypeError(
            "a URL with credentials in it; the token goes in the Authorization header"
        )
    if parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(f"{text!r} has a query or fragment; give the base URL")
    return text.rstrip("/")


def _unsendable(text: str) -> str | None:
    """Why the client that sends the requests refuses a URL `http_url` took, if it does:
    urlsplit reads `http://[::1]x` or a control character, which httpx refuses at every
    request (and each refusal would be reported as the target's answer). Checked after the
    command line is read, since it imports httpx."""
    import httpx

    try:
        httpx.URL(text)
    except httpx.InvalidURL as error:
        return f"{text!r} is not a URL: {error}"
    return None


def one_of(choices: Sequence[str]) -> Callable[[str], str]:
    """A type that takes one of `choices`, refusing anything else with the closest one."""

    def chosen(text: str) -> str:
        if text not in choices:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not one of {', '.join(choices)}{suggestion(text, choices)}"
            )
        return text

    return chosen


def _yes_or_no(text: str) -> bool:
    if text.lower() in YES:
        return True
    if text.lower() in NO:
        return False
    raise argparse.ArgumentTypeError(
        f"{text!r} is not yes or no: one of {', '.join(YES)} or {', '.join(NO)}"
    )


class FromEnvironment:
    """An option's value as its variable gives it, not yet read: the command line may still
    replace it, and a value it replaces is never checked."""

    __slots__ = ("text", "variable")

    def __init__(self, variable: str, text: str):
        self.variable, self.text = variable, text


class Variable:
    """The variable of an option, and how its text becomes the option's value."""

    __slots__ = ("name", "read")

    def __init__(self, name: str, read: Callable[[str], Any]):
        self.name, self.read = name, read


class Parser(argparse.ArgumentParser):
    """argparse's parser, with short usage errors: one line, and the fix (the option or
    command meant, or where the help is) instead of the whole usage. It refuses
    `--option=--`: argparse drops a `--` given as an option's value and leaves the option
    an empty list, never checked by its type. The subcommands' parsers are of this class
    too (argparse makes them of their parent's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The examples of each command's help keep their lines.
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.variables: dict[str, Variable] = {}  # by destination: those it reads
        self.given: list[str] = []  # the arguments being read
        self.commands: dict[str, Parser] = {}  # a command's parser by its name

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given = list(args or [])
        for arg in self.given:
            name, equals, value = arg.partition("=")
            if equals and value == "--" and name.startswith("-"):
                self.error(f"argument {name}: expected one argument")
        return super().parse_known_args(args, namespace)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        found, extra = self.parse_known_args(args, namespace)
        if extra:
            command = self.commands.get(getattr(found, "command", None) or "", self)
            command.unexpected(extra[0])
        if self.commands:
            read_environment(found, self.commands.get(found.command))
        return found

    def unexpected(self, arg: str) -> NoReturn:
        """Refuse an argument this command does not take, naming the one meant."""
        if not arg.startswith("-") or arg == "-":
            fix = (
                f"the command goes after --: {self.prog} [options] -- {arg} ..."
                if self.prog == f"{PROG} run"
                else f"see {self.prog} --help"
            )
            usage_error(f"unexpected argument {arg!r}; {fix}", self.prog)
        name = arg.partition("=")[0]
        fix = suggestion(name, self.known_options()) or f"; {self.prog} --help lists them"
        usage_error(f"no option {name}{fix}", self.prog)

    def known_options(self) -> list[str]:
        """Every option the command has, as its help names them (argparse lists them no
        other way)."""
        return sorted(set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", self.format_help())))

    def error(self, message: str) -> NoReturn:
        # An option mistyped is the first thing to fix: a required one it was meant to be
        # is missing only because of it.
        for arg in self.given if not self.commands else []:  # a command's own parser
            name = arg.partition("=")[0]
            mistyped = name.startswith("--") and name != "--"
            if mistyped and not any(known.startswith(name) for known in self.known_options()):
                self.unexpected(arg)
        fix = "" if "did you mean" in message else f" (see {self.prog} --help)"
        usage_error(message + fix, self.prog)

    def option(
        self,
        *names: str,
        variable: bool = True,
        split: Callable[[str], list[str]] | None = None,
        group: Any = None,
        **kwargs: Any,
    ) -> None:
        """Declare an option (in `group`, if given) and, with `variable`, its variable:
        PLATFORM_MOCK_ and its name. A repeatable option's variable holds its values as
        `split` parts them; a value given on the command line replaces the variable's."""
        if kwargs.get("action") == "append":
            kwargs["action"] = Repeated
        action = (group or self).add_argument(*names, **kwargs)
        if not variable:
            return
        name = VARIABLE_PREFIX + names[0].lstrip("-").upper().replace("-", "_")
        kind = kwargs.get("type") or str
        if kwargs.get("action") == "store_true":
            read: Callable[[str], Any] = _yes_or_no
        elif kwargs.get("action") is Repeated:
            part = split or str.split
            read = lambda text: [kind(item) for item in part(text) if item]  # noqa: E731
        else:
            read = kind
        self.variables[action.dest] = Variable(name, read)


class Repeated(argparse.Action):
    """A repeatable option (argparse's append), whose values on the command line replace
    those of its variable rather than adding to them."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest, None)
        items = list(current) if isinstance(current, list) else []
        setattr(namespace, self.dest, [*items, values])


def read_environment(args: argparse.Namespace, command: Parser | None) -> None:
    """Read each option the command line left to its variable: refused in one line naming
    the variable, or set, and the variable kept in `args.from_environment` for any later
    message about the value."""
    args.from_environment = {}
    for dest, variable in (command.variables if command else {}).items():
        value = getattr(args, dest, None)
        if not isinstance(value, FromEnvironment):
            continue
        try:
            setattr(args, dest, variable.read(value.text))
        except (argparse.ArgumentTypeError, ValueError) as exc:
            usage_error(f"{variable.name}: {exc}")
        args.from_environment[dest] = variable.name


def defaults_from_environment(command: Parser, environ: dict[str, str] | None = None) -> None:
    """Give each option of `command` that has a variable set (not empty: CI systems leave a
    secret they lack empty) that variable, read once the command line is (`read_environment`)."""
    found = os.environ if environ is None else environ
    command.set_defaults(
        **{
            dest: FromEnvironment(variable.name, found[variable.name])
            for dest, variable in command.variables.items()
            if found.get(variable.name)
        }
    )


def named(args: argparse.Namespace, dest: str, option: str) -> str:
    """How a message names an option's value: by its variable when it came from there."""
    return str(getattr(args, "from_environment", {}).get(dest, option))


def paragraph(text: str) -> str:
    return textwrap.fill(text, width=78)


def examples(*lines: tuple[str, str]) -> str:
    """A help's examples, each command over what it does."""
    shown = [f"  {command}\n      {what}" for command, what in lines]
    return "examples:\n" + "\n".join(shown)


def _environment_note(command: str) -> str:
    return paragraph(
        f"Every option of {command} can also come from the environment, as PLATFORM_MOCK_ "
        "and its name (--log-level: PLATFORM_MOCK_LOG_LEVEL=debug; a yes-or-no option: 1 or "
        "0; a repeatable one: its values separated by spaces, or by : for files). The "
        "command line wins."
    )


def _world_options(parser: Parser) -> None:
    parser.option(
        "--fixtures",
        action="append",
        default=[],
        metavar="PATH",
        split=lambda text: text.split(os.pathsep),
        help="fixture YAML file loaded after the defaults (repeatable)",
    )
    parser.option(
        "--no-default-fixtures",
        action="store_true",
        help="start from an empty world instead of the bundled default fixtures",
    )
    parser.option(
        "--seed",
        type=_seed,
        default=0,
        help="seed of ids, timestamps and data: a whole number from 0 to 2^53 - 1 (default 0)",
    )


def _key_option(parser: Parser) -> None:
    parser.option(
        "--signing-key",
        metavar="KEY",
        default=None,
        help="the key that signs the tokens, of at least 32 bytes (default: the variable "
        "PLATFORM_MOCK_SIGNING_KEY, else a key drawn at random when the server starts); a "
        "key given keeps tokens valid across restarts",
    )


def _seed(text: str) -> int:
    from mock_server.state.sources import seed_problem

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


def _serving_options(parser: Parser, command: str) -> None:
    run = command == "run"
    default_port = 0 if run else 8080
    parser.option("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.option(
        "--port",
        type=whole_number,
        default=default_port,
        help=f"port to bind; 0 picks a free one (default {default_port})",
    )
    parser.option(
        "--gateway-prefix", default="/gateway", help="path prefix of the gateway (default /gateway)"
    )
    parser.option(
        "--log-level",
        default="warning",
        type=one_of(LOG_LEVELS),
        metavar="{" + ",".join(LOG_LEVELS) + "}",
        help="uvicorn's log level; debug also logs the admin API's and the docs' requests, "
        "and uvicorn's access lines (default warning)",
    )
    parser.option(
        "--log-format",
        default="text",
        metavar="{" + ",".join(LOG_FORMATS) + "}",
        help="the request log as text (coloured on a terminal unless NO_COLOR is set) or as "
        "one JSON object per line"
        + ("" if run else ", the rest of the output then going to stderr")
        + " (default text)",
    )
    parser.option(
        "--log-file",
        metavar="FILE",
        default=None if run else "-",
        help=(
            "write the request log, every request to the platform's API, to FILE; - shows "
            "only the failed ones on standard error, among the command's own output (default: "
            "no log, and the report at the end)"
            if run
            else "write the request log to FILE instead of standard output (default -: "
            "standard output)"
        ),
    )
    parser.option(
        "--quiet", action="store_true", help="no request log (start-up and shutdown still print)"
    )
    parser.option(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browser scripts from ORIGIN (such as http://localhost:3000, or * for any) "
        "call the mock: answer preflights and add CORS headers (repeatable; default off)",
    )
    parser.option(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a name the server answers the admin API under besides its own address and, on "
        "loopback, localhost (such as mock.internal, or mock.internal:9000 behind a port "
        "mapping; * for any name); repeatable",
    )
    parser.option(
        "--host-check",
        type=one_of(HOST_CHECKS),
        metavar="{" + ",".join(HOST_CHECKS) + "}",
        default="admin",
        help="where a request must name one of the server's hosts: the admin API only, or "
        "every path (default admin)",
    )
    parser.option(
        "--report",
        action="append",
        default=[],
        metavar="DIR|FILE|FORMAT=FILE",
        split=lambda text: text.split(os.pathsep),
        help="when stopping, write the contract report: into a directory (contract-report.json, "
        ".txt, .xml and .md), to a file whose suffix names its format, or as FORMAT=FILE with "
        f"FORMAT one of {', '.join(REPORT_FORMATS)} (repeatable)",
    )
    parser.option(
        "--fail-on-violation",
        action="store_true",
        help=f"exit with status {EXIT_VIOLATIONS} if any request broke the contract"
        + (" (run's default: --allow-violations lets them pass)" if run else ""),
    )
    parser.option(
        "--min-coverage",
        metavar="PERCENT",
        type=_percentage,
        default=None,
        help=f"exit with status {EXIT_VIOLATIONS} if the requests exercised less than PERCENT "
        "of the contract's documented statuses, query parameters and enum values",
    )
    parser.option(
        "--journal-budget",
        metavar="MIB",
        type=_mebibytes,
        default=JOURNAL_BUDGET_MIB * 1024 * 1024,
        help="MiB the request journal may hold; the oldest entries go first "
        f"(default {JOURNAL_BUDGET_MIB})",
    )


def _percentage(text: str) -> float:
    from mock_server.reports.report import percentage

    try:
        return percentage(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


SERVE_EXAMPLES = examples(
    ("platform-mock serve", "the bundled world on http://127.0.0.1:8080"),
    ("platform-mock serve --port 0 --seed 7", "a free port, and another world"),
    ("platform-mock serve --fixtures world.yaml --watch", "your world, reloaded as you edit it"),
    (
        "platform-mock serve --host 0.0.0.0 --allowed-host mock.internal",
        "reachable from other machines; the admin API answers under mock.internal too",
    ),
    ("PLATFORM_MOCK_PORT=9000 platform-mock serve", "an option from the environment"),
)
RUN_EXAMPLES = examples(
    ("platform-mock run -- pytest", "pytest against a mock on a free port"),
    (
        "platform-mock run --min-coverage 60 --report contract -- npm test",
        "fail the job on a broken contract (the default) or a thin coverage; reports in contract/",
    ),
    ("platform-mock run --log-file requests.log -- ./tests.sh", "keep the request log"),
)
TOKEN_EXAMPLES = examples(
    ("platform-mock token", "the default user's token, from the server running on this machine"),
    ("platform-mock token --admin", "the admin API's token (the live view asks for it)"),
    ("platform-mock token --subject team:ml-platform", "another subject of the world"),
    ("platform-mock token --port 9000", "from the server on port 9000, when several run"),
    (
        "platform-mock token --seed 7",
        "with PLATFORM_MOCK_SIGNING_KEY set to the server's key: minted here, no server needed",
    ),
)
TOP_EXAMPLES = examples(
    ("platform-mock serve", "serve the mock; its banner gives its URLs and tokens"),
    (
        'curl -H "Authorization: Bearer $(platform-mock token)" URL',
        "call it from a second terminal",
    ),
    ("platform-mock run -- pytest", "run a test suite against a mock of its own"),
    ("platform-mock serve --help", "a command's options, with examples"),
)


def build_parser(
    *more: Callable[[Any, str | None], None], only: str | None = None
) -> argparse.ArgumentParser:
    """The command's parser; `more` adds, to its subparsers, the commands another module of
    the command owns with their options (`proxying.add_commands`: it builds on these).
    With `only`, the options of that command alone are declared (the others keep their
    names and help lines), so that a command reads no more than it needs."""
    parser = Parser(
        prog=PROG, description="Contract-driven mock of the platform's API.", epilog=TOP_EXAMPLES
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="serve the control plane and the gateway",
        description=paragraph(
            "Serve the control plane, the gateway, their docs, the live view and the admin "
            "API on one port, until Ctrl-C; the banner gives the URLs and the tokens."
        ),
        epilog=f"{SERVE_EXAMPLES}\n\n{_environment_note('serve')}",
    )
    if only in (None, "serve"):
        _serving_options(serve, "serve")
        _world_options(serve)
        _key_option(serve)
        serve.option(
            "--watch",
            action="store_true",
            help="reload the world when a --fixtures file changes (the journal is kept; an "
            "edit that cannot load keeps the running world and says why)",
        )

    run = commands.add_parser(
        "run",
        help="serve on a free port while COMMAND runs against it: platform-mock run -- COMMAND",
        description=paragraph(
            "Start the mock on a free port, run COMMAND (given after --) with the mock's URLs "
            "and tokens in its environment, stop the mock when COMMAND ends, write the "
            "reports, and exit with COMMAND's status (1 if COMMAND passed but the contract "
            "check failed: a request broke the contract, no request reached the mock, or "
            "--min-coverage was not met). Standard output is COMMAND's, and the request log "
            "stays off it: --log-file keeps it."
        ),
        epilog=f"{RUN_EXAMPLES}\n\n{_environment_note('run')}",
    )
    if only in (None, "run"):
        _serving_options(run, "run")
        _world_options(run)
        _key_option(run)
        # The contract check is strict by default: each way to loosen it is named for what
        # it lets pass.
        run.option(
            "--allow-violations",
            action="store_true",
            help="let requests that broke the contract pass the check (they are still reported)",
        )
        run.option(
            "--allow-no-requests",
            action="store_true",
            help="let a run that no request reached pass the check (by default it fails: the "
            "command never used the mock's URL)",
        )

    token = commands.add_parser(
        "token",
        help="print a token of the running server: the default user's, or --admin",
        description=paragraph(
            "Print a token the running server accepts, asked of it: the server records "
            "where it is in a file only you can read, which this command finds. With several "
            "servers running, the latest started is asked (--url or --port picks another). "
            "Given the key a server signs with (--signing-key, PLATFORM_MOCK_SIGNING_KEY), "
            "the token is minted here instead, for the world --seed and --fixtures describe."
        ),
        epilog=TOKEN_EXAMPLES,
    )
    if only in (None, "token"):
        chosen = token.add_mutually_exclusive_group()
        token.option(
            "--admin",
            action="store_true",
            variable=False,
            group=chosen,
            help="print the admin API's token instead",
        )
        token.option(
            "--subject",
            metavar="WHO",
            variable=False,
            group=chosen,
            help="another subject of the world: a user's e-mail, or type:name (team:ml-platform)",
        )
        token.option(
            "--url",
            metavar="URL",
            type=http_url,
            variable=False,
            help="the running server to ask, by its URL as its banner gives it "
            "(http://127.0.0.1:8080)",
        )
        token.option(
            "--port",
            type=whole_number,
            variable=False,
            help="the running server to ask, by its port on this machine",
        )
        _world_options(token)
        _key_option(token)
    for add in more:
        add(commands, only)
    parser.commands = {name: commands.choices[name] for name in commands.choices}
    return parser


def command_of(arguments: Sequence[str]) -> str | None:
    """The command `arguments` name: the first that is not an option (the command's own
    options follow it), or None."""
    for arg in arguments:
        if not arg.startswith("-"):
            return arg
    return None


def config(args: argparse.Namespace) -> MockConfig:
    from mock_server.http.mock import MockConfig

    return MockConfig(
        seed=args.seed,
        fixtures=args.fixtures,
        default_fixtures=not args.no_default_fixtures,
        gateway_prefix=getattr(args, "gateway_prefix", "/gateway"),
        journal_budget=getattr(args, "journal_budget", JOURNAL_BUDGET_MIB * 1024 * 1024),
        cors=getattr(args, "cors", []),
        allowed_hosts=getattr(args, "allowed_host", []),
        host_check=getattr(args, "host_check", "admin"),
        signing_key=args.signing_key,
    )


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refusal(args: argparse.Namespace) -> tuple[int, str] | None:
    """The exit status and one-line message refusing an option that could only fail once
    serving (the port, the gateway prefix, the report's path), checked before the fixtures
    load; None if the options can be used. For any command having these options. A value
    from the environment is named by its variable. Each check imports its rule when there
    is a value to check: `token` asking a running server imports none."""
    key = getattr(args, "signing_key", None)  # the commands that sign tokens: serve, run, token
    if key is not None:
        from mock_server.services.auth import key_problem

        problem = key_problem(key)
        if problem:
            return EXIT_USAGE, f"{named(args, 'signing_key', '--signing-key')}: {problem}"
    for name, flag in (
        ("target", "--target"),
        ("gateway_target", "--gateway-target"),
        ("url", "--url"),
    ):
        url = getattr(args, name, None)
        problem = None if url is None else _unsendable(url)
        if problem:
            return EXIT_USAGE, f"{named(args, name, flag)}: {problem}"
    port = getattr(args, "port", None)
    if hasattr(args, "host") and port is not None and not 0 <= port <= 65535:
        where = f"{args.host}:{port}"
        if "port" in getattr(args, "from_environment", {}):
            where += f" ({named(args, 'port', '--port')})"
        return EXIT_CANNOT_BIND, f"cannot listen on {where}: a port is a number from 0 to 65535"
    prefix = getattr(args, "gateway_prefix", None)
    problem = None if prefix is None else gateway_prefix_problem(prefix)
    if problem:
        shown = named(args, "gateway_prefix", "--gateway-prefix")
        return EXIT_USAGE, f"{shown} {prefix!r}: {problem}"
    refused = _files_refusal(args)
    if refused:
        return EXIT_USAGE, refused
    log_format = getattr(args, "log_format", None)
    if log_format is not None and log_format not in LOG_FORMATS:
        shown = named(args, "log_format", "--log-format")
        meant = suggestion(log_format, LOG_FORMATS)
        return EXIT_USAGE, f"{shown} {log_format!r}: one of {', '.join(LOG_FORMATS)}{meant}"
    origins = getattr(args, "cors", [])
    if origins:
        for origin in origins:
            problem = origin_problem(origin)
            if problem:
                return EXIT_USAGE, f"{named(args, 'cors', '--cors')} {origin!r}: {problem}"
    hosts = getattr(args, "allowed_host", [])
    if hosts:
        for host in hosts:
            problem = allowed_host_problem(host)
            if problem:
                shown = named(args, "allowed_host", "--allowed-host")
                return EXIT_USAGE, f"{shown} {host!r}: {problem}"
    if getattr(args, "watch", False) and not args.fixtures:
        return EXIT_USAGE, "--watch follows the files of --fixtures: give one at least"
    return None


def _files_refusal(args: argparse.Namespace) -> str | None:
    """Why the files the command would write (the reports, the request log) cannot be
    written, or would overwrite a fixture file or one another, if so. Sets
    `args.report_targets`, kept for the end of the run, where each is written."""
    args.report_targets = {}
    reports = getattr(args, "report", [])
    log_file = getattr(args, "log_file", None)
    if not reports and log_file in (None, "-"):
        return None
    from pathlib import Path

    from mock_server.reports import report_files

    shown = named(args, "report", "--report")
    try:
        args.report_targets = report_files.targets(reports)
    except report_files.TargetError as exc:
        return f"{shown}: {exc}"
    fixtures = [Path(fixture) for fixture in getattr(args, "fixtures", [])]
    for path in args.report_targets.values():
        problem = report_files.target_problem(path)
        if problem:
            return f"{shown}: {problem}"
        for fixture in fixtures:
            if report_files.same_file(path, fixture):
                return f"{shown}: {path} is the fixture file {fixture}"
    if log_file not in (None, "-"):
        shown = named(args, "log_file", "--log-file")
        problem = report_files.target_problem(Path(log_file))
        if problem:
            return f"{shown}: {problem}"
        for other in [*fixtures, *args.report_targets.values()]:
            if report_files.same_file(Path(log_file), other):
                return f"{shown}: {log_file} is also the file {other}"
    return None
