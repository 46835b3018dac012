"""The request log of `platform-mock serve`: one line per request to the platform's API, as
the person at the terminal (or a program reading the output) sees it."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

import httpx
import pytest

from mock_server.http.request_log import RequestLine, render_text
from tests.test_cli import SERVE_OUTPUT

ANSI = re.compile(r"\x1b\[[0-9;]*m")
DEMO_RESPONSE = "resp_0000000000000000000000000000demo"
TOKEN_PATH = "/personal-access-tokens/ci"


@dataclass
class Urls:
    control: str
    gateway: str
    admin: str
    token: str
    admin_token: str


def session(
    *args: str,
    requests: Callable[[Urls], None],
    tty: bool = False,
    env: dict[str, str | None] | None = None,
) -> str:
    """Run `serve --port 0 ARGS` (its stdout a pipe, or a terminal with `tty`), send the
    `requests`, stop it, and return what it printed after its banner, line endings as `\\n`."""
    environment = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    json_lines = "json" in args  # the banner then goes to stderr, and is read there
    if tty:
        leader, follower = pty.openpty()
        stdout: int = follower
    else:
        stdout = subprocess.PIPE
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", *args],
        stdout=stdout,
        stderr=subprocess.PIPE if json_lines else subprocess.DEVNULL,
        env=environment,
    )
    stream: IO[bytes]
    if tty:
        os.close(follower)
        stream = os.fdopen(leader, "rb", buffering=0)
    else:
        assert process.stdout is not None
        stream = process.stdout
    try:
        banner = b""
        banner_stream = process.stderr if json_lines else stream
        assert banner_stream is not None
        while b"Press Ctrl-C" not in banner:
            line = banner_stream.readline()
            assert line, f"serve ended early: {banner!r}"
            banner += line
        match = SERVE_OUTPUT.search(banner.decode())
        assert match, banner
        control = match["control"]
        requests(
            Urls(
                control=control,
                gateway=match["gateway"],
                admin=control.removesuffix("/api/svc/v1") + "/__admin",
                token=match["token"],
                admin_token=match["admin"],
            )
        )
        process.send_signal(signal.SIGTERM)
        rest = b""
        while True:
            try:
                chunk = stream.read(65536)
            except OSError:  # a terminal whose other side has closed
                break
            if not chunk:
                break
            rest += chunk
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        stream.close()
        if process.stderr is not None:
            process.stderr.close()
    return rest.decode().replace("\r\n", "\n")


def request_lines(output: str) -> list[str]:
    """The lines of the request log (their continuation lines included), without the
    shutdown messages."""
    return [line for line in output.splitlines() if not line.startswith("platform-mock:")]


def mixed_requests(urls: Urls) -> None:
    """A success, a request breaking the contract twice, an unauthenticated one, and one a
    fault rule answers; an admin request sets the rule."""
    bearer = {"Authorization": f"Bearer {urls.token}"}
    with httpx.Client(headers=bearer) as client:
        assert client.get(urls.control + TOKEN_PATH).status_code == 200
        bad = client.get(urls.control + TOKEN_PATH, params={"page_size": "5", "colour": "red"})
        assert bad.status_code == 400
        assert httpx.get(urls.control + TOKEN_PATH).status_code == 401
        rule = httpx.post(
            urls.admin + "/faults",
            json={"operationId": "getModelResponse", "status": 503},
            headers={"Authorization": f"Bearer {urls.admin_token}"},
        )
        assert rule.status_code == 201, rule.text
        assert client.get(f"{urls.gateway}/responses/{DEMO_RESPONSE}").status_code == 503


@pytest.fixture(scope="module")
def piped() -> list[str]:
    return request_lines(session(requests=mixed_requests))


def line_of(lines: list[str], status: str) -> tuple[str, list[str]]:
    """The request line with this status, and its continuation lines."""
    for i, line in enumerate(lines):
        if not line.startswith(" ") and f" {status} " in line:
            rest = []
            for more in lines[i + 1 :]:
                if not more.startswith("    "):
                    break
                rest.append(more.strip())
            return line, rest
    raise AssertionError(f"no {status} line in {lines}")


def test_success_line_names_method_path_status_operation_and_caller(piped):
    line, more = line_of(piped, "200")
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d\.\d{3} GET /api/svc/v1/personal-access-tokens/ci 200 "
        r"getOrCreatePersonalAccessToken \d+\.\dms user:alice@acme\.example",
        line,
    ), line
    assert more == []


def test_bad_request_line_has_the_code_and_each_violation(piped):
    line, more = line_of(piped, "400")
    assert "?page_size=5&colour=red 400 getOrCreatePersonalAccessToken" in line
    assert line.endswith("user:alice@acme.example code 40001")
    assert more == [
        "query page_size: is not a parameter of this operation",
        "query colour: is not a parameter of this operation",
    ]


def test_unauthenticated_request_has_no_caller_and_says_why(piped):
    line, more = line_of(piped, "401")
    assert line.endswith(" - code 40101")
    assert more == ["No bearer token: send 'Authorization: Bearer <token>'"]


def test_fault_line_names_the_rule_that_fired(piped):
    line, _ = line_of(piped, "503")
    assert f"/gateway/responses/{DEMO_RESPONSE} 503 getModelResponse" in line
    assert line.endswith("code 50301 (armed fault fault-1)")


def test_admin_request_is_not_logged_at_the_default_level(piped):
    assert [line for line in piped if "__admin" in line] == []


def test_one_line_per_request_to_the_api(piped):
    assert len([line for line in piped if not line.startswith(" ")]) == 4


def test_piped_output_has_no_colour(piped):
    assert not any(ANSI.search(line) for line in piped)


def test_json_format_writes_one_object_per_request_with_its_fields():
    output = session("--log-format", "json", requests=mixed_requests)
    records = [json.loads(line) for line in request_lines(output)]
    assert [(r["method"], r["status"], r["operationId"]) for r in records] == [
        ("GET", 200, "getOrCreatePersonalAccessToken"),
        ("GET", 400, "getOrCreatePersonalAccessToken"),
        ("GET", 401, "getOrCreatePersonalAccessToken"),
        ("GET", 503, "getModelResponse"),
    ]
    success, bad, unauthenticated, faulted = records
    assert success["caller"] == "user:alice@acme.example"
    assert success["path"] == "/api/svc/v1/personal-access-tokens/ci"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", success["time"])
    assert success["durationMs"] > 0
    assert (bad["code"], bad["query"]) == (40001, "page_size=5&colour=red")
    assert bad["violations"] == [
        {
            "location": "query",
            "field": "page_size",
            "message": "is not a parameter of this operation",
        },
        {"location": "query", "field": "colour", "message": "is not a parameter of this operation"},
    ]
    assert (unauthenticated["caller"], unauthenticated["code"]) == ("-", 40101)
    assert faulted["fault"] == "fault-1"


def test_json_format_keeps_standard_output_for_json_lines():
    output = session("--log-format", "json", requests=mixed_requests)
    assert [type(json.loads(line)) for line in output.splitlines()] == [dict] * 4


def test_quiet_prints_no_request_lines():
    output = session("--quiet", requests=mixed_requests)
    assert request_lines(output) == []


def test_admin_requests_are_logged_at_debug():
    output = session("--log-level", "debug", requests=mixed_requests)
    assert re.search(r" POST /__admin/faults 201 adminAddFault ", output), output


OWN = "opaque-SEKRIT-own-credential-0042"


def own_credential_sent_again(urls: Urls) -> None:
    """The caller's own credential sent again in the path and the query of a request to the
    admin API and to the docs, which are logged at debug."""
    own = {"Authorization": f"Bearer {OWN}"}
    escaped = OWN.replace("S", "%53")  # as a query reads it: the credential
    for base in (urls.admin, urls.control.removesuffix("/api/svc/v1") + "/docs"):
        httpx.get(f"{base}/{OWN}?note={OWN}&escaped={escaped}", headers=own)


def test_a_line_at_debug_hides_the_callers_own_credential_in_its_path_and_query():
    output = session("--log-level", "debug", requests=own_credential_sent_again)
    assert output.count("<hidden>?note=<hidden>&escaped=<hidden>") == 2, output
    assert "SEKRIT" not in output


def only_a_success(urls: Urls) -> None:
    response = httpx.get(
        urls.control + TOKEN_PATH, headers={"Authorization": f"Bearer {urls.token}"}
    )
    assert response.status_code == 200


def test_terminal_output_is_coloured():
    output = session(requests=only_a_success, tty=True, env={"NO_COLOR": None})
    (line,) = request_lines(output)
    assert "\x1b[32m200\x1b[0m" in line


@pytest.mark.parametrize("value", [pytest.param("1", id="1"), pytest.param("yes", id="yes")])
def test_no_color_keeps_a_terminal_plain(value: str):
    output = session(requests=only_a_success, tty=True, env={"NO_COLOR": value})
    (line,) = request_lines(output)
    assert " 200 getOrCreatePersonalAccessToken " in line
    assert not ANSI.search(line)


def test_serve_with_output_to_the_null_device_logs_nothing(tmp_path):
    """A benchmark sends the output to /dev/null, where no line would be read: no handler
    is set up, while one is for a file."""
    script = (
        "import sys; from mock_server.http import request_log as r; "
        "r.configure(sys.stdout); print(bool(r.logger.handlers), file=sys.stderr)"
    )
    command = [sys.executable, "-c", script]
    with open(os.devnull, "w") as null:
        to_null = subprocess.run(command, stdout=null, stderr=subprocess.PIPE, text=True)
    with open(tmp_path / "log", "w") as file:
        to_file = subprocess.run(command, stdout=file, stderr=subprocess.PIPE, text=True)
    assert (to_null.stderr, to_file.stderr) == ("False\n", "True\n")


def test_a_clients_control_characters_cannot_forge_a_line_or_drive_the_terminal():
    from mock_server.http.request_log import RequestLine, render_text

    forged = "\n21:45:00.000 DELETE /api/svc/v1/secret-groups/all 200\x1b[31m"
    line = RequestLine(
        method="GET",
        path="/api/svc/v1/personal-access-tokens/ci",
        query="a=%0A",
        status=400,
        operation_id="getOrCreatePersonalAccessToken",
        duration_ms=1.0,
        caller="user:alice@acme.example",
        code=40001,
        message="Request does not conform to the API contract",
        violations=(("query", "x" + forged, "is not a parameter of this operation"),),
    )
    text = render_text(line, colour=False)
    assert len(text.splitlines()) == 2  # the request, and its one violation
    assert "\x1b" not in text
    assert "\\x0a21:45:00.000 DELETE" in text


@pytest.mark.parametrize(
    ("dropped", "shown"),
    [
        pytest.param(True, " dropped ", id="by-a-fault"),
        pytest.param(False, " unanswered ", id="client-left"),
    ],
)
def test_a_request_with_no_answer_says_whether_a_fault_dropped_it(dropped: bool, shown: str):
    line = RequestLine("GET", "/api/svc/v1/x", "", None, "op", 1.0, "-", dropped=dropped)
    assert shown in render_text(line, colour=False)


def test_a_method_holding_a_line_feed_or_an_escape_stays_on_its_line_inert():
    line = RequestLine("GET\nFORGED\x1b[31m", "/api/svc/v1/x", "", 405, None, 1.0, "-")
    text = render_text(line, colour=False)
    assert "\n" not in text and "\x1b" not in text
