"""`run`'s request log stays off its command's output unless asked for (`--log-file`), and a
fault armed on purpose is labelled as such, not printed as an error."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mock_server.http.request_log import RequestLine, render_text
from tests.budget import budget

LOG_LINE = re.compile(r"\d\d:\d\d:\d\d\.\d{3} [A-Z]+ /")  # a request log line's start
TOKEN_PATH = "/personal-access-tokens/ci"
# A command sending a valid request, one that breaks the contract, and one a fault it armed
# answers; it prints a line of its own between them, as a test runner's progress.
CALLER = textwrap.dedent(
    """
    import json, os, urllib.error, urllib.request

    def call(url, token, body=None):
        request = urllib.request.Request(
            url, data=body, headers={"Authorization": "Bearer " + token,
            "Content-Type": "application/json"})
        try:
            return urllib.request.urlopen(request).status
        except urllib.error.HTTPError as error:
            return error.code

    api, token = os.environ["PLATFORM_MOCK_API_URL"], os.environ["PLATFORM_MOCK_TOKEN"]
    admin = os.environ["PLATFORM_MOCK_ADMIN_URL"]
    print("valid", call(api + "/personal-access-tokens/ci", token))
    print("bogus", call(api + "/personal-access-tokens/ci?bogus=1", token))
    rule = json.dumps({"operationId": "getOrCreatePersonalAccessToken", "status": 503})
    print("armed", call(admin + "/faults", os.environ["PLATFORM_MOCK_ADMIN_TOKEN"], rule.encode()))
    print("faulted", call(api + "/personal-access-tokens/ci", token))
    """
)
PRINTED = "valid 200\nbogus 400\narmed 201\nfaulted 503\n"


def run(*options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    # The caller breaks the contract on purpose (a failed request to log): the check lets it
    # pass, so each test reads the log, not the verdict.
    mock = [sys.executable, "-m", "mock_server", "run", "--allow-violations", *options]
    return subprocess.run(
        [*mock, "--", sys.executable, "-c", CALLER],
        capture_output=True,
        text=True,
        timeout=budget(180),
        stdin=subprocess.DEVNULL,
        env={**environ, **(env or {})},
    )


def logged(text: str) -> list[str]:
    return [line for line in text.splitlines() if LOG_LINE.match(line)]


@pytest.fixture(scope="module")
def to_a_file(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    log = tmp_path_factory.mktemp("run") / "logs" / "requests.log"
    return run("--log-file", str(log)), log


def test_by_default_the_commands_output_holds_no_request_log():
    done = run()
    assert (done.returncode, done.stdout) == (0, PRINTED), done.stderr
    assert logged(done.stderr) == []
    assert "  request log:   off (--log-file FILE keeps it; - shows the failures here)" in (
        done.stderr
    )


def test_a_log_file_gets_every_request_and_the_output_none(to_a_file):
    done, log = to_a_file
    assert (done.returncode, done.stdout) == (0, PRINTED), done.stderr
    assert logged(done.stderr) == []
    assert f"  request log:   {log}\n" in done.stderr
    statuses = [line.split()[3] for line in logged(log.read_text())]
    assert statuses == ["200", "400", "503"]


def test_an_armed_fault_is_labelled_as_armed_in_the_log(to_a_file):
    _, log = to_a_file
    (faulted,) = [line for line in logged(log.read_text()) if " 503 " in line]
    assert faulted.endswith(" code 50301 (armed fault fault-1)")


def test_the_log_file_comes_from_its_variable_too(tmp_path: Path):
    log = tmp_path / "requests.log"
    done = run(env={"PLATFORM_MOCK_LOG_FILE": str(log)})
    assert done.returncode == 0, done.stderr
    assert len(logged(log.read_text())) == 3


def test_dash_shows_the_failed_requests_on_standard_error_as_before():
    done = run("--log-file", "-")
    assert done.returncode == 0, done.stderr
    statuses = [line.split()[3] for line in logged(done.stderr)]
    assert statuses == ["400", "503"]


def test_a_log_file_over_a_fixture_file_is_refused_before_the_run(tmp_path: Path):
    world = tmp_path / "world.yaml"
    world.write_text("users: []\n")
    done = run("--fixtures", str(world), "--log-file", str(world))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"platform-mock: --log-file: {world} is also the file {world}\n"
    assert world.read_text() == "users: []\n"


# ANSI colours of the text log: a server error's red, a fault's magenta.
RED, MAGENTA = "\x1b[31m", "\x1b[35m"


@pytest.mark.parametrize(
    ("source", "label"),
    [
        pytest.param("fault-1", "(armed fault fault-1)", id="rule"),
        pytest.param("prefer", "(fault asked by its Prefer header)", id="prefer-header"),
    ],
)
def test_a_faulted_line_is_painted_as_the_fault_not_as_an_error(source: str, label: str):
    line = RequestLine(
        method="GET",
        path="/api/svc/v1/x",
        query="",
        status=503,
        operation_id="op",
        duration_ms=1.0,
        caller="-",
        code=50301,
        message="Service unavailable",
        fault=source,
    )
    painted = render_text(line, colour=True)
    assert RED not in painted
    assert f"{MAGENTA}503\x1b[0m" in painted and f"{MAGENTA}{label}\x1b[0m" in painted
    assert render_text(line, colour=False).endswith(f"code 50301 {label}\n    Service unavailable")
