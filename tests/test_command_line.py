"""A command line that corrects you: short usage errors with the fix, "did you mean" for
options, values and commands, examples in every help, every option of serve and run from
the environment, --port 0 offered when the port is taken, the world's loading said with its
time, and options read without importing the mock."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import mock_server
from mock_server import cli
from mock_server.cli import options
from mock_server.services.auth import KEY_VARIABLE
from tests import pages
from tests.budget import budget

# Environments without the variables of the options: a test sets those it means.
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_MOCK_")}
CLEAN["PLATFORM_MOCK_RUNTIME_DIR"] = os.environ["PLATFORM_MOCK_RUNTIME_DIR"]


def command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", *args],
        capture_output=True,
        text=True,
        timeout=budget(120),
        env=CLEAN if env is None else env,
        stdin=subprocess.DEVNULL,
    )


def refused(capsys, *args: str, env: dict[str, str] | None = None) -> str:
    """`platform-mock ARGS` in this process, refused as a usage error: its one line."""
    environ = {**CLEAN, **(env or {})}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", environ)
        patch.setattr(cli, "serve", lambda args: pytest.fail(f"served with {args}"))
        patch.setattr(cli, "run", lambda args, command: pytest.fail(f"ran with {args}"))
        try:
            status = cli.main(list(args))
        except SystemExit as exited:
            status = exited.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err and "usage:" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert status in (2, 3), (status, err)
    return lines[0]


def parsed(*args: str, env: dict[str, str] | None = None) -> argparse.Namespace:
    """`args` as the command reads them, with `env` as the environment."""
    name = options.command_of(args) or ""
    parser = cli.build_parser(only=name)
    options.defaults_from_environment(parser.commands[name], env or {})  # type: ignore[attr-defined]
    return parser.parse_args(args)


# -- usage errors: one line, and the fix --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        pytest.param(
            ["serve", "--prot", "9000"],
            "platform-mock serve: no option --prot; did you mean --port?",
            id="option",
        ),
        pytest.param(
            ["serve", "--prot=9000"],
            "platform-mock serve: no option --prot; did you mean --port?",
            id="option-with-its-value",
        ),
        pytest.param(
            ["run", "--fail-on-violations", "--", "true"],
            "platform-mock run: no option --fail-on-violations; did you mean --fail-on-violation?",
            id="run-option",
        ),
        pytest.param(
            ["token", "--admn"],
            "platform-mock token: no option --admn; did you mean --admin?",
            id="token-option",
        ),
        pytest.param(
            ["drift", "--tagret", "https://x.example"],
            "platform-mock drift: no option --tagret; did you mean --target?",
            id="drift-option",
        ),
        pytest.param(
            ["serv", "--port", "0"],
            "platform-mock: no command 'serv'; did you mean serve?",
            id="command",
        ),
        pytest.param(
            ["serve", "--log-level", "warn"],
            "platform-mock serve: argument --log-level: 'warn' is not one of debug, info, "
            "warning, error; did you mean warning?",
            id="value",
        ),
        pytest.param(
            ["serve", "--host-check", "al"],
            "platform-mock serve: argument --host-check: 'al' is not one of admin, all; did you "
            "mean all?",
            id="host-check",
        ),
        pytest.param(
            ["serve", "--port", "0", "--log-format", "jsno"],
            "platform-mock: --log-format 'jsno': one of text, json; did you mean json?",
            id="log-format",
        ),
    ],
)
def test_a_mistyped_word_is_one_line_naming_the_one_meant(capsys, args: list[str], line: str):
    assert refused(capsys, *args) == line


@pytest.mark.parametrize(
    ("args", "line"),
    [
        pytest.param(
            ["serve", "--port", "abc"],
            "platform-mock serve: argument --port: 'abc' is not a whole number (ASCII digits, "
            "with an optional leading -) (see platform-mock serve --help)",
            id="bad-value",
        ),
        pytest.param(
            ["serve", "--zzz"],
            "platform-mock serve: no option --zzz; platform-mock serve --help lists them",
            id="unknown-option",
        ),
        pytest.param(
            ["run", "pytest"],
            "platform-mock run: unexpected argument 'pytest'; the command goes after --: "
            "platform-mock run [options] -- pytest ...",
            id="run-command-without-separator",
        ),
        pytest.param(
            [],
            "platform-mock: a command is needed: serve, run, token, proxy, drift (see "
            "platform-mock --help)",
            id="no-command",
        ),
        pytest.param(
            ["frobnicate"],
            "platform-mock: no command 'frobnicate'; the commands are serve, run, token, proxy, "
            "drift",
            id="unknown-command",
        ),
        pytest.param(
            ["token", "--admin", "--subject", "bob@acme.example"],
            "platform-mock token: argument --subject: not allowed with argument --admin (see "
            "platform-mock token --help)",
            id="exclusive-options",
        ),
    ],
)
def test_a_usage_error_is_one_line_with_the_fix_not_the_whole_usage(
    capsys, args: list[str], line: str
):
    assert refused(capsys, *args) == line


def test_a_usage_error_of_the_real_command_is_that_one_line_and_status_2():
    done = command("serve", "--prot", "9000")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "platform-mock serve: no option --prot; did you mean --port?\n"


# -- the options are read before anything of the mock is imported ------------------------------

HEAVY = ("connexion", "flask", "starlette", "uvicorn", "jsonschema", "faker", "yaml", "jwt")
LAYERS = ("mock_server.http", "mock_server.state", "mock_server.contract", "mock_server.fixtures")
IMPORTED = (
    "import sys\n"
    "from mock_server.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}"
    " or m.startswith({layers})), file=sys.stderr)\n"
)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--version"], id="version"),
        pytest.param(["--help"], id="help"),
        pytest.param(["serve", "--help"], id="serve-help"),
        pytest.param(["run", "--help"], id="run-help"),
        pytest.param(["proxy", "--help"], id="proxy-help"),
        pytest.param(["serve", "--prot", "9000"], id="unknown-option"),
        pytest.param(["serv"], id="unknown-command"),
        pytest.param(["run", "--", "true", "--quiet=maybe"], id="run-bad-variable"),
        pytest.param(["drift", "--target", "http://x", "--max-pages", "0"], id="bad-number"),
        pytest.param(["token", "--help"], id="token-help"),
        # Asks the servers recorded in this session's runtime directory, or says there is none.
        pytest.param(["token"], id="token-of-a-running-server"),
    ],
)
def test_version_help_and_usage_errors_import_nothing_of_the_mock(args: list[str]):
    script = IMPORTED.format(heavy=set(HEAVY), layers=LAYERS)
    env = {**CLEAN, "PLATFORM_MOCK_QUIET": "maybe"}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=budget(60),
    )
    assert done.stderr.splitlines()[-1] == "[]", done.stderr


# -- help with examples -------------------------------------------------------------------------


def examples_of(name: str) -> list[str]:
    """The command lines of a command's help's examples."""
    parser = cli.build_parser()
    text = (parser.commands[name] if name else parser).format_help()  # type: ignore[attr-defined]
    assert "\nexamples:\n" in text
    found = re.findall(r"^  (\S.*)$", text.split("\nexamples:\n", 1)[1], re.MULTILINE)
    assert found, text
    return found


@pytest.mark.parametrize("name", [*cli.COMMANDS, ""], ids=[*cli.COMMANDS, "platform-mock"])
def test_every_commands_help_has_examples_that_the_command_takes(name: str):
    for line in examples_of(name):
        words = shlex.split(line.replace("$(platform-mock token)", "TOKEN"))
        variables = {}
        while "=" in words[0]:
            key, _, value = words.pop(0).partition("=")
            variables[key] = value
        if words[0] != "platform-mock":
            continue  # a command of another tool (curl) using this one
        head = words[1 : words.index("--")] if "--" in words else words[1:]
        if "--help" in head:
            continue
        args = parsed(*head, env=variables)
        assert args.command == head[0], line
        for key in variables:
            assert key in args.from_environment.values() or key == "TFY_API_KEY", line


# -- options from the environment ---------------------------------------------------------------

EXPECTED_VARIABLE = re.compile(r"--([a-z-]+)")


@pytest.mark.parametrize("name", ["serve", "run"])
def test_every_option_of_serve_and_run_has_its_variable(name: str):
    parser = cli.build_parser(only=name).commands[name]  # type: ignore[attr-defined]
    named = {f"--{o}" for o in EXPECTED_VARIABLE.findall(parser.format_usage())} - {"--help"}
    variables = {v.name for v in parser.variables.values()}
    expected = {"PLATFORM_MOCK_" + o[2:].upper().replace("-", "_") for o in named}
    assert variables == expected
    assert len(named) >= 18


def test_the_signing_keys_variable_is_one_of_them():
    parser = cli.build_parser(only="serve").commands["serve"]  # type: ignore[attr-defined]
    assert parser.variables["signing_key"].name == KEY_VARIABLE


def test_the_docs_document_each_variable_in_one_table():
    text = "\n".join(path.read_text() for path in pages.every_page())
    rows = re.findall(r"^\| `(PLATFORM_MOCK_[A-Z_]+)` \| `(--[a-z-]+)` \|", text, re.MULTILINE)
    documented = dict(rows)
    for name in ("serve", "run"):
        parser = cli.build_parser(only=name).commands[name]  # type: ignore[attr-defined]
        for dest, variable in parser.variables.items():
            option = "--" + dest.replace("_", "-")
            assert documented.get(variable.name) == option, variable.name
    assert len(rows) == len(documented)  # each once


@pytest.mark.parametrize(
    ("variables", "args", "expected"),
    [
        pytest.param({"PLATFORM_MOCK_PORT": "9000"}, [], {"port": 9000}, id="number"),
        pytest.param({"PLATFORM_MOCK_PORT": "9000"}, ["--port", "9001"], {"port": 9001}, id="wins"),
        pytest.param({"PLATFORM_MOCK_QUIET": "yes"}, [], {"quiet": True}, id="yes"),
        pytest.param({"PLATFORM_MOCK_QUIET": "0"}, [], {"quiet": False}, id="no"),
        pytest.param({"PLATFORM_MOCK_QUIET": ""}, [], {"quiet": False}, id="empty-is-unset"),
        pytest.param(
            {"PLATFORM_MOCK_FIXTURES": os.pathsep.join(["a.yaml", "b.yaml"])},
            [],
            {"fixtures": ["a.yaml", "b.yaml"]},
            id="files",
        ),
        pytest.param(
            {"PLATFORM_MOCK_FIXTURES": "a.yaml"},
            ["--fixtures", "c.yaml"],
            {"fixtures": ["c.yaml"]},
            id="files-replaced",
        ),
        pytest.param(
            {"PLATFORM_MOCK_ALLOWED_HOST": "localhost  mock.internal:9000"},
            [],
            {"allowed_host": ["localhost", "mock.internal:9000"]},
            id="names",
        ),
        pytest.param(
            {"PLATFORM_MOCK_LOG_LEVEL": "debug", "PLATFORM_MOCK_SEED": "7"},
            [],
            {"log_level": "debug", "seed": 7},
            id="two",
        ),
        pytest.param(
            {"PLATFORM_MOCK_PORT": "abc"}, ["--port", "0"], {"port": 0}, id="bad-but-replaced"
        ),
    ],
)
def test_an_option_comes_from_its_variable_and_the_command_line_wins(
    variables: dict[str, str], args: list[str], expected: dict
):
    found = parsed("serve", *args, env=variables)
    assert {key: getattr(found, key) for key in expected} == expected


@pytest.mark.parametrize(
    ("variables", "line"),
    [
        pytest.param(
            {"PLATFORM_MOCK_PORT": "abc"},
            "platform-mock: PLATFORM_MOCK_PORT: 'abc' is not a whole number (ASCII digits, with "
            "an optional leading -)",
            id="number",
        ),
        pytest.param(
            {"PLATFORM_MOCK_QUIET": "maybe"},
            "platform-mock: PLATFORM_MOCK_QUIET: 'maybe' is not yes or no: one of 1, true, yes, "
            "on or 0, false, no, off",
            id="yes-or-no",
        ),
        pytest.param(
            {"PLATFORM_MOCK_LOG_LEVEL": "loud"},
            "platform-mock: PLATFORM_MOCK_LOG_LEVEL: 'loud' is not one of debug, info, warning, "
            "error",
            id="choice",
        ),
        pytest.param(
            {"PLATFORM_MOCK_LOG_FORMAT": "xml"},
            "platform-mock: PLATFORM_MOCK_LOG_FORMAT 'xml': one of text, json",
            id="log-format",
        ),
        pytest.param(
            {"PLATFORM_MOCK_GATEWAY_PREFIX": "/"},
            "platform-mock: PLATFORM_MOCK_GATEWAY_PREFIX '/': the gateway needs a path of its "
            "own (such as /gateway), not the root",
            id="gateway-prefix",
        ),
        pytest.param(
            {"PLATFORM_MOCK_PORT": "99999"},
            "platform-mock: cannot listen on 127.0.0.1:99999 (PLATFORM_MOCK_PORT): a port is a "
            "number from 0 to 65535",
            id="port-range",
        ),
        pytest.param(
            {"PLATFORM_MOCK_CORS": "localhost:3000"},
            "platform-mock: PLATFORM_MOCK_CORS 'localhost:3000': an origin is "
            "http(s)://host[:port], such as http://localhost:3000, or *",
            id="origin",
        ),
        pytest.param(
            {"PLATFORM_MOCK_SIGNING_KEY": "short"},
            "platform-mock: PLATFORM_MOCK_SIGNING_KEY: a signing key has at least 32 bytes "
            "(such as the output of `openssl rand -hex 32`): a shorter one can be guessed from "
            "any token it signed",
            id="key",
        ),
    ],
)
def test_a_bad_value_from_the_environment_is_one_line_naming_the_variable(
    capsys, variables: dict[str, str], line: str
):
    assert refused(capsys, "serve", env=variables) == line


def test_serve_takes_its_options_from_the_environment(tmp_path: Path):
    report = tmp_path / "report.json"
    env = {
        **CLEAN,
        "PLATFORM_MOCK_PORT": "0",
        "PLATFORM_MOCK_SEED": "7",
        "PLATFORM_MOCK_REPORT": str(report),
        "PLATFORM_MOCK_GATEWAY_PREFIX": "/llm",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        banner = ""
        while "Press Ctrl-C" not in banner:
            line = process.stdout.readline()
            assert line, banner
            banner += line
        process.terminate()
        assert process.wait(timeout=budget(60)) == 0
    finally:
        process.kill()
        process.wait()
    assert "(seed 7)" in banner and re.search(r"gateway:\s+http://127\.0\.0\.1:\d+/llm\n", banner)
    assert json.loads(report.read_text())["verdict"]["passed"] is True


# -- a taken port, a big world ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["serve"], id="serve"),
        pytest.param(["run", "--", "true"], id="run"),
        pytest.param(["proxy", "--target", "http://platform.example"], id="proxy"),
    ],
)
def test_a_taken_port_suggests_port_0(args: list[str]):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        head = args[: args.index("--")] if "--" in args else args
        done = command(*head, "--port", str(port), *args[len(head) :])
    assert done.returncode == 3
    line = done.stderr.splitlines()[-1]
    assert line.startswith(f"platform-mock: cannot listen on 127.0.0.1:{port}: ")
    assert line.endswith("; --port 0 picks a free port (the banner gives it)")


def test_run_says_it_loads_the_world_and_how_long_it_took_before_its_banner():
    done = command("run", "--allow-no-requests", "--", sys.executable, "-c", "pass")
    assert done.returncode == 0, done.stderr
    first, second = done.stderr.splitlines()[:2]
    assert re.fullmatch(
        r"platform-mock: loading the world \(the bundled defaults\)\.\.\. \d+\.\d s", first
    )
    assert second.startswith("platform-mock ") and "(seed 0)" in second


def test_version_is_answered_before_the_command_lines_modules_are_imported():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mock_server", "--version"],
        capture_output=True,
        text=True,
        timeout=budget(60),
    )
    assert done.stdout == f"platform-mock {mock_server.__version__}\n"
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert "mock_server.core.version" in imported
    assert [name for name in imported if name.startswith("mock_server.cli")] == []


# What a usage error's start measured without (docs/performance.md): each of these costs a
# third to twice the interpreter's own start, and the options need none of them.
NOT_FOR_A_USAGE_ERROR = ("typing", "dataclasses", "inspect", "orjson")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["serve", "--prot", "9000"], id="unknown-option"),
        pytest.param(["serv"], id="unknown-command"),
        pytest.param(["serve", "--port", "x"], id="bad-number"),
        pytest.param(["drift", "--target", "http://x", "--max-pages", "0"], id="out-of-range"),
        pytest.param(["serve", "--gateway-prefix", "/api"], id="gateway-prefix"),
        pytest.param(["serve", "--cors", "http://Example.com"], id="cors-origin"),
        pytest.param(["serve", "--allowed-host", "a host"], id="allowed-host"),
    ],
)
def test_a_usage_error_imports_no_module_it_does_not_need(args: list[str]):
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mock_server", *args],
        capture_output=True,
        text=True,
        env=CLEAN,
        timeout=budget(60),
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and lines[-1].startswith("platform-mock"), lines[-1]
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import ")}
    assert imported.isdisjoint(NOT_FOR_A_USAGE_ERROR), imported & set(NOT_FOR_A_USAGE_ERROR)
