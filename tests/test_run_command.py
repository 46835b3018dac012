"""`platform-mock run [options] -- COMMAND`, run as a real process around real commands: the
command's environment, its exit status, the contract checks, the reports and the signals."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.budget import budget

LOG_LINE = re.compile(r"\d\d:\d\d:\d\d\.\d{3} [A-Z]+ /")  # a request log line's start
DEMO_RESPONSE = "resp_0000000000000000000000000000demo"
COORDINATES = (
    "PLATFORM_MOCK_URL",
    "PLATFORM_MOCK_API_URL",
    "PLATFORM_MOCK_GATEWAY_URL",
    "PLATFORM_MOCK_ADMIN_URL",
    "PLATFORM_MOCK_TOKEN",
    "PLATFORM_MOCK_ADMIN_TOKEN",
    "TFY_HOST",
    "TFY_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)
# A command that calls the control plane with the coordinates it was given, printing each
# status, and exits with the status it is given; with `bogus`, it first sends a request
# that breaks the contract.
CALLER = textwrap.dedent(
    """
    import os, sys, urllib.error, urllib.request

    def call(query=""):
        request = urllib.request.Request(
            os.environ["PLATFORM_MOCK_API_URL"] + "/personal-access-tokens/ci" + query,
            headers={"Authorization": "Bearer " + os.environ["PLATFORM_MOCK_TOKEN"]},
        )
        try:
            return urllib.request.urlopen(request).status
        except urllib.error.HTTPError as error:
            return error.code

    if "bogus" in sys.argv[2:]:
        print("bogus", call("?bogus=1"))
    print("valid", call())
    sys.exit(int(sys.argv[1]))
    """
)


def environment() -> dict[str, str]:
    """This process's environment, less what would make the run write GitHub's files."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


def run(
    *options: str, command: list[str], timeout: float = budget(60)
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "run", *options, "--", *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=environment(),
    )


def caller(*, status: int = 0, bogus: bool = False) -> list[str]:
    return [sys.executable, "-c", CALLER, str(status), *(["bogus"] if bogus else [])]


@pytest.fixture(scope="module")
def violating(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """A passing command that sent one valid request and one that broke the contract,
    with every report written into a directory."""
    reports = tmp_path_factory.mktemp("run") / "reports"
    return run("--report", str(reports), command=caller(bogus=True)), reports


# -- the command, its environment and its status ---------------------------------------------


def test_command_gets_the_mocks_coordinates_in_its_environment():
    shown = f"import json, os; print(json.dumps({{k: os.environ.get(k) for k in {COORDINATES!r}}}))"
    done = run("--allow-no-requests", command=[sys.executable, "-c", shown])
    found = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert all(found[name] for name in COORDINATES), found
    assert found["PLATFORM_MOCK_API_URL"] == found["PLATFORM_MOCK_URL"] + "/api/svc/v1"
    assert found["OPENAI_BASE_URL"] == found["PLATFORM_MOCK_URL"] + "/gateway"


def test_command_using_the_coordinates_reaches_the_mock():
    done = run(command=caller())
    assert (done.returncode, done.stdout) == (0, "valid 200\n"), done.stderr


def test_openai_client_needs_nothing_but_the_environment():
    script = f"from openai import OpenAI; print(OpenAI().responses.retrieve({DEMO_RESPONSE!r}).id)"
    done = run(command=[sys.executable, "-c", script])
    assert (done.returncode, done.stdout) == (0, f"{DEMO_RESPONSE}\n"), done.stderr


def test_failing_command_status_is_the_runs_status():
    done = run(command=caller(status=3))
    assert done.returncode == 3, done.stderr


def test_standard_output_is_the_commands_alone(violating):
    done, _ = violating
    assert done.stdout == "bogus 400\nvalid 200\n"


def test_command_not_found_exits_127_saying_so():
    done = run(command=["platform-mock-no-such-command"])
    assert done.returncode == 127
    assert "cannot run platform-mock-no-such-command: command not found" in done.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(["run", "--seed", "1"], "run needs a command after --", id="run-without"),
        pytest.param(["serve", "--", "true"], "serve takes no command", id="serve-with"),
    ],
)
def test_a_command_where_none_belongs_or_none_where_one_does_is_a_usage_error(
    arguments: list[str], message: str
):
    done = subprocess.run(
        [sys.executable, "-m", "mock_server", *arguments],
        capture_output=True,
        text=True,
        timeout=budget(60),
    )
    assert done.returncode == 2
    assert message in done.stderr


# -- the contract checks ---------------------------------------------------------------------


def test_a_violation_fails_a_passing_command_by_default(violating):
    done, _ = violating
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "platform-mock: contract check FAILED: 1 of 2 request(s) broke the contract "
        "(--allow-violations lets them pass); the command passed"
    )


def test_allow_violations_lets_a_passing_command_that_broke_the_contract_pass():
    done = run("--allow-violations", command=caller(bogus=True))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "platform-mock: contract check PASSED: the command passed; 1 of 2 request(s) broke the "
        "contract; not checked (--fail-on-violation would fail on any); contract coverage "
    )


def test_fail_on_violation_is_the_default_and_still_accepted():
    done = run("--fail-on-violation", command=caller(bogus=True))
    assert done.returncode == 1, done.stderr


def test_a_violation_keeps_a_failing_commands_own_status():
    done = run(command=caller(status=5, bogus=True))
    assert done.returncode == 5, done.stderr


@pytest.mark.parametrize(
    "options",
    [
        pytest.param([], id="by-default"),
        pytest.param(["--allow-violations"], id="violations-allowed"),
        pytest.param(["--min-coverage", "0"], id="with-min-coverage"),
    ],
)
def test_a_run_no_request_reached_fails_saying_so(options):
    done = run(*options, command=[sys.executable, "-c", "pass"])
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "platform-mock: contract check FAILED: no request reached the mock, so nothing was "
        "checked against the contract (--allow-no-requests allows it)"
    )


def test_allow_no_requests_lets_a_run_no_request_reached_pass_and_still_says_so():
    done = run("--allow-no-requests", command=[sys.executable, "-c", "pass"])
    assert done.returncode == 0, done.stderr
    assert "no request reached the mock" in done.stderr.splitlines()[-1]


def test_min_coverage_fails_a_passing_command_naming_what_was_never_exercised():
    done = run("--min-coverage", "90", command=caller())
    assert done.returncode == 1, done.stderr
    verdict = done.stderr.splitlines()[-1]
    assert verdict.startswith("platform-mock: contract check FAILED: contract coverage ")
    assert "below --min-coverage 90%" in verdict
    assert "never called: generateRoleBindingManifests" in done.stderr


def test_min_coverage_met_passes():
    # One request of a contract of a few hundred statuses, parameters and values.
    done = run("--min-coverage", "0.1", command=caller())
    assert done.returncode == 0, done.stderr


def test_request_log_stays_off_the_commands_output_by_default(violating):
    done, _ = violating
    output = done.stdout.splitlines() + done.stderr.splitlines()
    assert [line for line in output if LOG_LINE.match(line)] == []
    assert "  request log:   off (--log-file FILE keeps it" in done.stderr


# -- the reports -----------------------------------------------------------------------------


def test_report_directory_gets_every_format(violating):
    _, reports = violating
    names = sorted(path.name for path in reports.iterdir())
    assert names == [f"contract-report.{s}" for s in ("json", "md", "txt", "xml")]


def test_junit_report_fails_the_violating_request(violating):
    _, reports = violating
    root = ET.parse(reports / "contract-report.xml").getroot()
    failures = [
        case
        for case in root.iter("testcase")
        if case.find("failure") is not None and case.get("classname") != "contract.verdict"
    ]
    assert [case.get("classname") for case in failures] == [
        "contract.getOrCreatePersonalAccessToken"
    ]
    assert "?bogus" not in (failures[0].get("name") or "")  # the path; the query is in the text
    assert '"bogus"' in (failures[0].find("failure").text or "")  # type: ignore[union-attr]


def test_markdown_goes_to_the_github_job_summary(tmp_path: Path):
    summary = tmp_path / "summary.md"
    done = subprocess.run(
        [sys.executable, "-m", "mock_server", "run", "--", *caller()],
        capture_output=True,
        text=True,
        timeout=budget(60),
        stdin=subprocess.DEVNULL,
        env={**environment(), "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.returncode == 0, done.stderr
    assert summary.read_text().startswith("### Platform API contract: ✅ PASSED\n")


# -- signals ---------------------------------------------------------------------------------

WAITER = textwrap.dedent(
    """
    import pathlib, signal, sys, time
    seen = pathlib.Path(sys.argv[1])
    def stop(sig, frame):
        seen.write_text(signal.Signals(sig).name)
        sys.exit(7)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    seen.write_text("ready")
    time.sleep(60)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_stop_signal_is_passed_on_and_the_run_ends_with_the_commands_status(
    tmp_path: Path, sig: signal.Signals
):
    seen = tmp_path / "seen"
    report = tmp_path / "report.json"
    waiter = [sys.executable, "-c", WAITER, str(seen)]
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "run", "--report", str(report), "--", *waiter],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    try:
        deadline = time.monotonic() + budget(30)
        while not (seen.exists() and seen.read_text() == "ready"):
            assert process.poll() is None and time.monotonic() < deadline, "never started"
            time.sleep(0.02)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=budget(30))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (process.returncode, seen.read_text()) == (7, sig.name), stderr
    assert report.exists()  # the mock stopped after the command, and wrote its report


# -- an unread CI log ------------------------------------------------------------------------

FLOOD = textwrap.dedent(
    """
    import os, urllib.error, urllib.request

    for i in range(1500):  # twenty rules broken, each a line and an example in the report
        query = f"?bogus{i % 20}=" + "x" * 200
        request = urllib.request.Request(
            os.environ["PLATFORM_MOCK_API_URL"] + "/personal-access-tokens/ci" + query,
            headers={"Authorization": "Bearer " + os.environ["PLATFORM_MOCK_TOKEN"]},
        )
        try:
            urllib.request.urlopen(request)
        except urllib.error.HTTPError:
            pass
    """
)


def test_a_run_whose_log_nobody_reads_ends_with_its_command():
    # Standard error is a pipe of one page that nobody reads: the log of 1,500 refused
    # requests and the report after it, written as they came, would wait for a reader.
    reader, writer = os.pipe()
    fcntl.fcntl(writer, fcntl.F_SETPIPE_SZ, 4096)
    try:
        unread = subprocess.Popen(
            [
                *(sys.executable, "-m", "mock_server", "run", "--allow-violations", "--"),
                *(sys.executable, "-c", FLOOD),
            ],
            stdout=subprocess.DEVNULL,
            stderr=writer,
            stdin=subprocess.DEVNULL,
            env=environment(),
        )
        try:
            assert unread.wait(timeout=budget(60)) == 0
        finally:
            unread.kill()
    finally:
        os.close(reader)
        os.close(writer)


def test_runs_banner_names_the_variables_that_hold_the_tokens(violating):
    done, _ = violating
    banner = done.stderr.split("Press Ctrl-C")[0]
    assert "  token:         $PLATFORM_MOCK_TOKEN" in banner
    assert "  admin token:   $PLATFORM_MOCK_ADMIN_TOKEN" in banner
    assert "eyJ" not in done.stderr


# -- how the command ended -------------------------------------------------------------------


def test_a_command_that_exits_137_itself_is_said_to_have_exited_with_it():
    done = run("--allow-no-requests", command=[sys.executable, "-c", "raise SystemExit(137)"])
    assert done.returncode == 137, done.stderr
    assert (
        "the command (python -c 'raise SystemExit(137)') exited with status 137"
        in (done.stderr.splitlines()[-1])
    )


def test_a_command_a_signal_ended_is_said_to_have_been_ended_by_it():
    script = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    done = run("--allow-no-requests", command=[sys.executable, "-c", script])
    assert done.returncode == 137, done.stderr
    assert "was ended by SIGKILL (status 137)" in done.stderr.splitlines()[-1]
