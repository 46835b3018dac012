"""The `platform-mock` command, run as a real process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

SERVE_OUTPUT = re.compile(
    r"control plane: (?P<control>\S+).*gateway:\s+(?P<gateway>\S+).*"
    r"API docs:\s+(?P<docs>\S+).*\n  token:\s+(?P<token>\S+).*admin token:\s+(?P<admin>\S+)",
    re.DOTALL,
)


def start(*args: str) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start `python -m mock_server serve ARGS` and read the URLs and token it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Press Ctrl-C"):
            break
    match = SERVE_OUTPUT.search("".join(lines))
    assert match, f"unexpected start-up output: {''.join(lines)!r}"
    return process, match.groupdict()


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen, dict[str, str]]]:
    process, urls = start("--port", "0")
    yield process, urls
    if process.poll() is None:
        process.kill()
        process.wait()


def test_serve_prints_urls_on_a_free_port(served):
    _, urls = served
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api/svc/v1", urls["control"])
    assert not urls["control"].startswith("http://127.0.0.1:0/")


def test_printed_token_authenticates(served):
    _, urls = served
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {urls['token']}"},
    )
    assert response.status_code == 200


def test_printed_gateway_url_serves_model_responses(served):
    _, urls = served
    response = httpx.get(
        urls["gateway"] + "/responses/resp_0000000000000000000000000000demo",
        headers={"Authorization": f"Bearer {urls['token']}"},
    )
    assert response.json()["object"] == "response"


def test_printed_docs_url_serves_swagger_ui(served):
    _, urls = served
    response = httpx.get(urls["docs"])
    assert response.status_code == 200 and "swagger" in response.text.lower()


def test_sigterm_stops_cleanly(served):
    process, _ = served
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0


def test_gateway_prefix_option_moves_the_gateway():
    process, urls = start("--port", "0", "--gateway-prefix", "/llm")
    try:
        assert urls["gateway"].endswith("/llm")
        response = httpx.get(
            urls["gateway"] + "/responses/resp_0000000000000000000000000000demo",
            headers={"Authorization": f"Bearer {urls['token']}"},
        )
        assert response.status_code == 200
    finally:
        process.kill()
        process.wait()


def test_port_in_use_exits_with_a_clear_message():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "mock_server", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 3
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_token_command_matches_a_server_with_the_same_seed(served):
    _, urls = served
    printed = subprocess.run(
        [sys.executable, "-m", "mock_server", "token"], capture_output=True, text=True, check=True
    ).stdout.strip()
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {printed}"},
    )
    assert response.status_code == 200


def test_invalid_fixture_names_file_line_and_field(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("users:\n  - email: dana@acme.example\n  - slug: no-email\n")
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "token", "--fixtures", str(bad)],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=60,
    )
    assert result.returncode == 2
    assert f"{bad}:3: users[1]: 'email' is a required property" in result.stderr


def test_empty_world_serves_and_takes_fixtures_through_the_admin_api():
    process, urls = start("--port", "0", "--no-default-fixtures")
    try:
        admin = httpx.Client(
            base_url=urls["control"].removesuffix("/api/svc/v1") + "/__admin",
            headers={"Authorization": f"Bearer {urls['admin']}"},
        )
        loaded = admin.post(
            "/fixtures", json={"tenant": "acme", "users": [{"email": "dana@acme.example"}]}
        )
        assert loaded.status_code == 200, loaded.text
        assert [u["email"] for u in admin.get("/state").json()["users"]] == ["dana@acme.example"]
    finally:
        process.kill()
        process.wait()


def test_token_command_in_a_world_without_users_exits_2_with_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "token", "--no-default-fixtures"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("platform-mock: none: the world has no user")
    assert "Traceback" not in result.stderr


def test_token_command_for_another_subject_authenticates_as_it(served):
    _, urls = served
    printed = subprocess.run(
        [sys.executable, "-m", "mock_server", "token", "--subject", "bob@acme.example"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {printed}"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["createdBy"] == "bob@acme.example"


def test_token_command_for_an_unknown_subject_exits_2_with_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "token", "--subject", "nobody@acme.example"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "platform-mock: no user named 'nobody@acme.example' in this world\n"
