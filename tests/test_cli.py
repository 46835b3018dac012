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

from mock_server import MockConfig, PlatformMock
from mock_server.cli import world_counts
from tests.budget import budget

SERVE_OUTPUT = re.compile(
    r"control plane: (?P<control>\S+).*gateway:\s+(?P<gateway>\S+).*"
    r"API docs:\s+(?P<docs>\S+).*\n  token:\s+(?P<token>\S+).*admin token:\s+(?P<admin>\S+)",
    re.DOTALL,
)


# A key of the tests' own: `serve` and `token` given it sign alike.
KEY = "k" * 32
KEYED = {**os.environ, "PLATFORM_MOCK_SIGNING_KEY": KEY}


def token_command(*args: str, env: dict[str, str] = KEYED) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "token", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=budget(60),
    )


def start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start `python -m mock_server serve ARGS` and read the URLs and token it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    return process, printed_urls(process).groupdict()


def printed(process: subprocess.Popen) -> str:
    """What `serve` printed on its standard output, up to its "Press Ctrl-C" line."""
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Press Ctrl-C"):
            break
    return "".join(lines)


def printed_urls(process: subprocess.Popen) -> re.Match[str]:
    """The URLs and tokens `serve` printed, read as SERVE_OUTPUT."""
    text = printed(process)
    match = SERVE_OUTPUT.search(text)
    assert match, f"unexpected start-up output: {text!r}"
    return match


def _serving() -> Iterator[tuple[subprocess.Popen, dict[str, str]]]:
    process, urls = start("--port", "0", env=KEYED)
    yield process, urls
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture
def served() -> Iterator[tuple[subprocess.Popen, dict[str, str]]]:
    """A server of this test's own (one it may stop)."""
    yield from _serving()


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[subprocess.Popen, dict[str, str]]]:
    """One server for the tests that only read what it printed and call it with tokens."""
    yield from _serving()


def test_serve_prints_urls_on_a_free_port(shared):
    _, urls = shared
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api/svc/v1", urls["control"])
    assert not urls["control"].startswith("http://127.0.0.1:0/")


def banner(*args: str) -> str:
    """What `serve ARGS` prints before it is ready."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        return printed(process)
    finally:
        process.kill()
        process.wait()


def test_banner_counts_the_default_world():
    """The same counts as the default world built in this process (whose exact numbers
    belong to the default fixtures)."""
    counts = world_counts(PlatformMock().store)
    assert counts["users"] > 0 and counts["runs"] > 0
    printed = banner()
    assert "  fixtures:      the bundled defaults\n" in printed
    expected = ", ".join(
        f"{n} {name.removesuffix('s') if n == 1 else name}" for name, n in counts.items()
    )
    assert f"  world:         {expected}\n" in printed


def test_banner_names_each_fixture_file_and_counts_what_it_added(tmp_path: Path):
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        "tenant: acme\nusers:\n  - email: dana@acme.example\n"
        "teams:\n  - name: solo\n    members: [dana@acme.example]\n"
    )
    printed = banner("--no-default-fixtures", "--fixtures", str(extra), "--seed", "7")
    loading, printed = printed.split("\n", 1)
    assert re.fullmatch(rf"platform-mock: loading the world \({extra}\)\.\.\. \d+\.\d s", loading)
    assert printed.startswith("platform-mock ") and "(seed 7)\n" in printed
    assert f"  fixtures:      {extra}\n" in printed
    assert (
        "  world:         1 user, 1 team, 0 applications, 0 runs, 0 secret groups, "
        "0 model responses\n"
    ) in printed


def test_banner_says_when_the_world_is_empty():
    printed = banner("--no-default-fixtures")
    assert "  fixtures:      none (an empty world)\n" in printed
    assert "  world:         0 users, 0 teams, 0 applications, 0 runs," in printed


def test_printed_token_authenticates(shared):
    _, urls = shared
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {urls['token']}"},
    )
    assert response.status_code == 200


def test_printed_gateway_url_serves_model_responses(shared):
    _, urls = shared
    response = httpx.get(
        urls["gateway"] + "/responses/resp_0000000000000000000000000000demo",
        headers={"Authorization": f"Bearer {urls['token']}"},
    )
    assert response.json()["object"] == "response"


def test_printed_docs_url_serves_swagger_ui(shared):
    _, urls = shared
    response = httpx.get(urls["docs"])
    assert response.status_code == 200 and "swagger" in response.text.lower()


def test_sigterm_stops_cleanly(served):
    process, _ = served
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=budget(15)) == 0


@pytest.mark.parametrize(
    "prefix", [pytest.param("/llm", id="one-segment"), pytest.param("/llm/v1", id="two-segments")]
)
def test_gateway_prefix_option_moves_the_gateway(prefix: str):
    process, urls = start("--port", "0", "--gateway-prefix", prefix)
    try:
        assert urls["gateway"].endswith(prefix)
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
            timeout=budget(60),
        )
    assert result.returncode == 3
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


# -- options refused before serving ----------------------------------------------------------


def refused(*args: str) -> tuple[int, str]:
    """Run `serve ARGS`, which should refuse them without serving: the exit status and the
    one line it printed on stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "serve", *args],
        capture_output=True,
        text=True,
        timeout=budget(60),
    )
    assert result.stdout == "", result.stdout  # no banner: it never served
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("platform-mock: "), result.stderr
    return result.returncode, lines[0]


@pytest.mark.parametrize(
    "port",
    [
        pytest.param("99999", id="99999"),
        pytest.param("65536", id="just-past-the-last"),
        pytest.param("-1", id="negative"),
    ],
)
def test_port_out_of_range_exits_3_with_one_line(port: str):
    status, line = refused("--port", port)
    assert status == 3
    assert line == (
        f"platform-mock: cannot listen on 127.0.0.1:{port}: a port is a number from 0 to 65535"
    )


def test_port_range_is_checked_before_the_fixtures_load(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("users:\n  - slug: no-email\n")
    status, line = refused("--port", "99999", "--fixtures", str(bad))
    assert status == 3 and "99999" in line


# Gateway prefixes on a path of the mock's own: refused at every door.
ON_A_PATH = [
    pytest.param("/", id="root"),
    pytest.param("//", id="only-slashes"),
    pytest.param("", id="empty"),
    pytest.param("/api", id="api-root"),
    pytest.param("/api/svc/v1", id="control-plane"),
    pytest.param("/api/other", id="under-api"),
    pytest.param("/__admin", id="admin"),
    pytest.param("/__admin/gateway", id="under-admin"),
    pytest.param("/docs", id="docs"),
    pytest.param("/docs/gateway", id="under-docs"),
    pytest.param("/openapi.json", id="control-plane-spec"),
]
# Gateway prefixes no route could hold.
MALFORMED_PREFIXES = [
    pytest.param("/llm//v1", id="empty-segment"),
    pytest.param("/{tenant}", id="route-parameter"),
    pytest.param("/llm%20v1", id="percent-escape"),
    pytest.param("/llm/../v1", id="dot-dot"),
]


@pytest.mark.parametrize("prefix", ON_A_PATH)
def test_gateway_prefix_on_a_path_of_the_mock_exits_2_with_one_line(prefix: str):
    status, line = refused("--port", "0", "--gateway-prefix", prefix)
    assert status == 2
    assert line.startswith(f"platform-mock: --gateway-prefix {prefix!r}: ")


@pytest.mark.parametrize("prefix", MALFORMED_PREFIXES)
def test_malformed_gateway_prefix_exits_2_with_one_line(prefix: str):
    status, line = refused("--port", "0", "--gateway-prefix", prefix)
    assert status == 2
    assert line == (
        f"platform-mock: --gateway-prefix {prefix!r}: "
        "each segment must be a name of letters, digits and . _ ~ -"
    )


@pytest.mark.parametrize(
    "log_format",
    [
        pytest.param("xml", id="xml"),
        pytest.param("JSON", id="upper-case"),
        pytest.param("", id="empty"),
    ],
)
def test_unknown_log_format_exits_2_with_one_line(log_format: str):
    status, line = refused("--port", "0", "--log-format", log_format)
    assert status == 2
    assert line == f"platform-mock: --log-format {log_format!r}: one of text, json"


def test_two_report_formats_on_one_file_exit_2_with_one_line(tmp_path: Path):
    report = tmp_path / "report.json"
    status, line = refused("--port", "0", "--report", str(report), "--report", f"text={report}")
    assert status == 2
    assert line == (
        f"platform-mock: --report: the json and text reports would both be written to {report}"
    )
    assert not report.exists()


def _file_as_parent(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("")
    return tmp_path / "file" / "report.json"


def _directory_as_report(tmp_path: Path) -> Path:
    (tmp_path / "report.json").mkdir()
    return tmp_path / "report.json"


def _directory_no_one_may_write(tmp_path: Path) -> Path:
    # Not a read-only directory: root writes in those. In /proc, no one may make a file.
    return Path("/proc/platform-mock-report/report.json")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        pytest.param(_file_as_parent, "is not a directory", id="parent-is-a-file"),
        pytest.param(_directory_as_report, "is a directory", id="report-is-a-directory"),
        pytest.param(_directory_no_one_may_write, "cannot write in", id="unwritable-directory"),
    ],
)
def test_unwritable_report_path_exits_2_before_serving(tmp_path: Path, make, problem: str):
    report = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    status, line = refused("--port", "0", "--report", str(report))
    assert status == 2
    assert line.startswith("platform-mock: --report: ") and problem in line
    assert sorted(tmp_path.rglob("*")) == before  # looked, left nothing behind


def test_report_in_a_missing_directory_is_written_there_at_shutdown(tmp_path: Path):
    report = tmp_path / "not" / "yet" / "report.json"
    process, _ = start("--port", "0", "--report", str(report))
    try:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=budget(15)) == 0
    finally:
        process.kill()
        process.wait()
    assert report.exists()


def test_token_command_matches_a_server_with_the_same_key_and_seed(shared):
    _, urls = shared
    printed = token_command().stdout.strip()
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {printed}"},
    )
    assert response.status_code == 200


def test_invalid_fixture_names_file_line_and_field(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("users:\n  - email: dana@acme.example\n  - slug: no-email\n")
    result = token_command("--fixtures", str(bad))
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
    result = token_command("--no-default-fixtures")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("platform-mock: none: the world has no user")
    assert "Traceback" not in result.stderr


def test_token_command_for_another_subject_authenticates_as_it(shared):
    _, urls = shared
    printed = token_command("--subject", "bob@acme.example").stdout.strip()
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {printed}"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["createdBy"] == "bob@acme.example"


def test_token_command_for_an_unknown_subject_exits_2_with_one_line():
    result = token_command("--subject", "nobody@acme.example")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "platform-mock: no user named 'nobody@acme.example' in this world\n"


UNKEYED = {k: v for k, v in os.environ.items() if k != "PLATFORM_MOCK_SIGNING_KEY"}


@pytest.mark.parametrize("args", [[], ["--admin"]], ids=["user", "admin"])
def test_token_command_with_no_server_running_and_no_key_says_how_to_get_a_token(
    args, tmp_path: Path
):
    result = token_command(*args, env={**UNKEYED, "PLATFORM_MOCK_RUNTIME_DIR": str(tmp_path)})
    assert (result.returncode, result.stdout) == (2, "")
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith("platform-mock: no server is running for this user")
    assert "`platform-mock serve`" in line and "--signing-key" in line


@pytest.mark.parametrize(
    ("args", "env", "source"),
    [
        pytest.param(["--signing-key", "short"], UNKEYED, "--signing-key", id="option"),
        pytest.param(
            [],
            {**UNKEYED, "PLATFORM_MOCK_SIGNING_KEY": "x" * 31},
            "PLATFORM_MOCK_SIGNING_KEY",
            id="variable",
        ),
    ],
)
def test_signing_key_shorter_than_32_bytes_is_a_usage_error(args, env, source):
    result = token_command(*args, env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(f"platform-mock: {source}: a signing key has at least 32")


def test_option_key_wins_over_the_variable(shared):
    _, urls = shared
    env = {**os.environ, "PLATFORM_MOCK_SIGNING_KEY": "v" * 32}
    printed = token_command("--signing-key", KEY, env=env).stdout.strip()
    response = httpx.get(
        urls["control"] + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {printed}"},
    )
    assert response.status_code == 200


def test_two_servers_without_a_key_sign_alike_nothing():
    first, first_urls = start("--port", "0", env=UNKEYED)
    second, second_urls = start("--port", "0", env=UNKEYED)
    try:
        assert first_urls["admin"] != second_urls["admin"]
        response = httpx.get(
            second_urls["control"].removesuffix("/api/svc/v1") + "/__admin/journal",
            headers={"Authorization": f"Bearer {first_urls['admin']}"},
        )
        assert response.status_code == 401
    finally:
        for process in (first, second):
            process.kill()
            process.wait()


def test_cors_option_answers_preflights_from_its_origins():
    process, urls = start("--port", "0", "--cors", "http://localhost:3000", "--cors", "*")
    try:
        response = httpx.options(
            urls["control"] + "/personal-access-tokens/ci",
            headers={"Origin": "https://other.example", "Access-Control-Request-Method": "GET"},
        )
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == "*"
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    ("origin", "problem"),
    [
        pytest.param(
            "localhost:3000",
            "an origin is http(s)://host[:port], such as http://localhost:3000, or *",
            id="no-scheme",
        ),
        pytest.param(
            "http://localhost:3000/",
            "an origin has no path, query or user: only http(s)://host[:port]",
            id="trailing-slash",
        ),
    ],
)
def test_cors_origin_no_browser_sends_exits_2_with_one_line(origin: str, problem: str):
    status, line = refused("--port", "0", "--cors", origin)
    assert status == 2
    assert line == f"platform-mock: --cors {origin!r}: {problem}"


def test_journal_budget_option_sets_the_journals_byte_budget():
    process, urls = start("--port", "0", "--journal-budget", "1")
    try:
        response = httpx.get(
            urls["control"].removesuffix("/api/svc/v1") + "/__admin/journal",
            headers={"Authorization": f"Bearer {urls['admin']}"},
        )
        assert response.json()["budgetBytes"] == 1024 * 1024
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--port", "1_0"], id="port-underscore"),
        pytest.param(["--port", "+80"], id="port-plus-sign"),
        pytest.param(["--seed", " 5"], id="seed-leading-space"),
        pytest.param(["--journal-budget", "0"], id="journal-budget-zero"),
        pytest.param(["--seed", "9" * 5000], id="seed-past-the-digit-limit"),
        pytest.param(["--port=--"], id="port-given-the-separator"),
        pytest.param(["--seed=--"], id="seed-given-the-separator"),
    ],
)
def test_integer_option_outside_the_integer_grammar_is_a_usage_error(args):
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "serve", *args],
        capture_output=True,
        text=True,
        timeout=budget(60),
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"argument {args[0].partition('=')[0]}" in result.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(["token"], id="token"),
        pytest.param(["token", "--admin"], id="admin-token"),
        pytest.param(["--help"], id="help"),
    ],
)
def test_a_reader_gone_ends_the_command_quietly(arguments: list[str]):
    printing = subprocess.Popen(
        [sys.executable, "-m", "mock_server", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=KEYED,  # `token` needs the key it signs with
    )
    assert printing.stdout is not None and printing.stderr is not None
    printing.stdout.close()  # before the command prints: as `| head -c 0` would
    said = printing.stderr.read()
    assert printing.wait(timeout=budget(60)) in (0, 128 + signal.SIGPIPE)
    assert said == b""


@pytest.mark.parametrize("prefix", [*ON_A_PATH, *MALFORMED_PREFIXES])
def test_a_mock_configured_in_code_refuses_the_prefixes_the_command_line_does(prefix: str):
    with pytest.raises(ValueError, match="gateway_prefix"):
        PlatformMock(MockConfig(gateway_prefix=prefix))
