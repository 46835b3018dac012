"""`platform-mock proxy` and `platform-mock drift`: their options, output, files and exit
statuses, against a mock of the default world and against the differing platform of
tests/test_drift.py.

`proxy` runs once as a process of its own (started, sent a client's requests, stopped with
SIGTERM as CI stops it); `drift` runs in this process, as `main` would run it.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import yaml

from mock_server import cli
from mock_server.cli import proxying
from mock_server.contract import documents as contract
from mock_server.handlers import catalog
from mock_server.http.mock import MockConfig, PlatformMock
from mock_server.http.server import BackgroundServer
from mock_server.proxy import drift_check
from mock_server.proxy.forward import Proxy
from mock_server.reports import drift_files
from mock_server.reports.drift import ProxiedExchange
from tests.budget import budget
from tests.test_drift import (
    PLANTED,
    PROXY_TIMEOUT,
    SLOW_MS,
    DifferingPlatform,
    client_suite,
    found,
)


@pytest.fixture(scope="module")
def platform() -> Iterator[BackgroundServer]:
    """A mock of the default world: a platform that keeps the contract."""
    with BackgroundServer(PlatformMock()) as served:
        yield served


@pytest.fixture(scope="module")
def differing() -> Iterator[BackgroundServer]:
    """A platform whose answers differ from the contract (tests/test_drift.py)."""
    with BackgroundServer(DifferingPlatform()) as served:
        yield served


def ids_of(served: BackgroundServer) -> list[str]:
    """The options naming the default world's job, secrets and model response."""
    store = served.mock.store
    trainer = store.deployments.application_named("trainer").id
    secrets = [s.id for s in store.secrets.group_named("llm-keys").secrets.values()]
    return [
        "--job", trainer, *(option for s in secrets for option in ("--secret", s)),
        "--response", "resp_0000000000000000000000000000demo",
    ]  # fmt: skip


@dataclass
class Ran:
    status: int
    out: str
    err: str


class WrongCondition(PlatformMock):
    """A platform answering an unknown job with the code of an unknown path: a code the
    contract has for 404, but not for that condition."""

    async def __call__(self, scope, receive, send):
        async def send_(message):
            body = message.get("body", b"")
            if message["type"] == "http.response.body" and b'"code":40406' in body:
                message = {**message, "body": body.replace(b"40406", b"40401")}
            await send(message)

        return await super().__call__(scope, receive, send_)


def exit_status(args: list[str]) -> int | str | None:
    try:
        return cli.main(args)
    except SystemExit as exc:  # argparse's usage errors
        return exc.code


@pytest.fixture
def drift(monkeypatch, capsys):
    """Run `platform-mock drift --target URL ARGS` with `token` (default: the served mock's
    user's) in TFY_API_KEY."""

    def run(served: BackgroundServer | str, *args: str, token: str | None = "default") -> Ran:
        url = served if isinstance(served, str) else served.url
        if token == "default" and not isinstance(served, str):
            token = served.coordinates.token
        if token is None:
            monkeypatch.delenv("TFY_API_KEY", raising=False)
        else:
            monkeypatch.setenv("TFY_API_KEY", token)
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        status = cli.main(["drift", "--target", url, *args])
        captured = capsys.readouterr()
        return Ran(status, captured.out, captured.err)

    return run


def state(served: BackgroundServer) -> dict:
    admin = {"Authorization": f"Bearer {served.mock.auth.admin_token()}"}
    return httpx.get(f"{served.url}/__admin/state", headers=admin).json()


# -- drift ---------------------------------------------------------------------------------------


def test_a_mock_agrees_with_its_own_contract(drift, platform):
    ran = drift(platform, *ids_of(platform))
    assert (ran.status, "drift check PASSED" in ran.err) == (0, True)


def test_drift_checks_every_operation_that_reads(drift, platform):
    ran = drift(platform, *ids_of(platform), "--max-pages", "1")
    checked = re.findall(r"^  (\w+) +agrees", ran.out, re.MULTILINE)
    reading = [op for op, entry in catalog.PLATFORM.items() if entry.read_only]
    assert sorted(checked) == sorted(reading)


def test_an_operation_that_reads_and_needs_no_world_is_sent_as_its_example(platform):
    sent: list[tuple[str, str]] = []

    class Sent:
        async def send(self, method: str, path: str, **request: Any) -> None:
            sent.append((method, path))

    proxy = Proxy(platform.url)
    asyncio.run(drift_check.by_example(cast(Any, Sent()), proxy))
    operations = contract.operations()
    expected = [
        (
            entry.example.method,
            ("/gateway" if operations[op].document == contract.GATEWAY_SPEC else "")
            + entry.example.path,
        )
        for op, entry in catalog.PLATFORM.items()
        if entry.read_only and entry.example and not entry.example.needs_a_world()
    ]
    assert ("GET", "/api/svc/v1/session") in expected
    assert sent == expected


@pytest.mark.parametrize(
    ("operation_id", "needs"),
    [
        pytest.param("getSession", False, id="nothing"),
        pytest.param("listJobRuns", True, id="path-parameter"),
        pytest.param("generateRoleBindingManifests", True, id="object-in-the-query"),
        pytest.param("listSecretDeployments", True, id="object-in-the-body"),
    ],
)
def test_an_example_needs_a_world_when_it_names_a_part_of_it(operation_id, needs):
    assert catalog.example(operation_id).needs_a_world() is needs


def test_drift_changes_nothing_on_the_target(drift, platform):
    before = state(platform)
    drift(platform, *ids_of(platform))
    assert state(platform) == before


def test_drift_sends_no_request_that_writes(drift, platform):
    platform.mock.journal.clear()
    drift(platform, *ids_of(platform))
    sent = {(entry.method, entry.operation_id) for entry in platform.mock.journal}
    # Every GET but get-or-create changes nothing; a few POSTs only read (listing the
    # deployments of secrets, or a version's files): the catalog says which.
    writes = {(method, op) for method, op in sent if not catalog.PLATFORM[str(op)].read_only}
    assert (writes, len(sent) > 5) == (set(), True)


def test_create_token_gets_or_creates_the_token_named(drift, platform):
    drift(platform, "--create-token", "drift-check")
    tokens = [t["name"] for t in state(platform).get("personalAccessTokens", [])]
    assert "drift-check" in tokens


def test_drift_exits_1_and_names_each_difference(drift, differing):
    ran = drift(differing, *ids_of(differing))
    assert (ran.status, "DRIFT undocumented field user.avatarUrl" in ran.out) == (1, True)


def test_a_code_the_contract_gives_another_condition_is_drift(drift):
    with BackgroundServer(WrongCondition()) as served:
        ran = drift(served)
    assert (ran.status, "DRIFT error code code '40401'" in ran.out) == (1, True)


def test_drift_exits_4_when_the_target_does_not_answer(drift, platform):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    ran = drift(f"http://127.0.0.1:{port}", token="a-token")
    assert (ran.status, "the target failed to answer" in ran.err) == (4, True)


def test_drift_without_a_token_says_where_to_put_one(drift, platform):
    ran = drift(platform, token=None)
    assert (ran.status, "set TFY_API_KEY" in ran.err) == (2, True)


def test_drift_reads_the_token_from_the_variable_named(drift, platform, monkeypatch):
    monkeypatch.setenv("PLATFORM_TOKEN", platform.coordinates.token or "")
    ran = drift(platform, "--token-env", "PLATFORM_TOKEN", token=None)
    assert ran.status == 0


def test_drift_writes_the_report_in_every_format(drift, platform, tmp_path, junit_schema):
    drift(platform, "--report", str(tmp_path / "drift"))
    files = sorted(p.name for p in (tmp_path / "drift").iterdir())
    junit_schema.validate((tmp_path / "drift" / "drift-report.xml").read_text())
    assert files == ["drift-report.json", "drift-report.md", "drift-report.txt", "drift-report.xml"]


def test_drift_records_a_world_the_mock_loads(drift, platform, tmp_path):
    drift(platform, *ids_of(platform), "--record", str(tmp_path / "world.yaml"))
    loaded = PlatformMock(MockConfig(default_fixtures=False, fixtures=[tmp_path / "world.yaml"]))
    trainer = platform.mock.store.deployments.application_named("trainer").id
    assert len(loaded.store.world.job_runs[trainer]) == 26


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--target", "ftp://x"], "is not an http:// or https:// URL", id="scheme"),
        pytest.param(["--target", "http://[::1"], "is not a URL: Invalid IPv6", id="bracket"),
        pytest.param(["--target", "http://x:99999"], "is not a URL: Port out of", id="port"),
        pytest.param(
            ["--target", "https://me:pw@x"], "a URL with credentials in it", id="credentials"
        ),
        pytest.param(["--target", "http://x", "--timeout", "0"], "more than 0", id="timeout"),
        pytest.param(["--target", "http://x", "--max-pages", "1_0"], "whole number", id="pages"),
        pytest.param(["--target", "http://x", "--max-pages=--"], "expected one", id="pages-dashes"),
        pytest.param(["--target", "http://x", "--report", "xml=r"], "no format 'xml'", id="report"),
        pytest.param(
            ["--target", "http://x", "--record", "/"], "--record: /: not a file name", id="record"
        ),
    ],
)
def test_options_that_cannot_be_used_are_refused(capsys, args: list[str], message: str):
    status = exit_status(["drift", *args])
    assert (status, message in capsys.readouterr().err) == (2, True)


# URLs urlsplit reads but no request can be sent to (httpx refuses them): accepted, each
# request "answered" 400 by the forwarding itself, reported as drift (drift) or as the
# client's doing (proxy), with "the target answered every request".
@pytest.mark.parametrize(
    "target",
    [
        pytest.param("http://[::1]x", id="text-after-the-brackets"),
        pytest.param("http://[v1.x]", id="ip-future"),
        pytest.param("http://x\x01", id="control-character"),
        pytest.param("http://x/\x7f", id="delete-in-the-path"),
    ],
)
def test_a_target_no_request_can_be_sent_to_is_a_usage_error(capsys, monkeypatch, target: str):
    monkeypatch.setenv("TFY_API_KEY", "a-token-of-the-target")
    status = exit_status(["drift", "--target", target, "--timeout", "2"])
    assert (status, "--target" in capsys.readouterr().err) == (2, True)


# -- proxy, as a process of its own -------------------------------------------------------------


@dataclass
class Proxied:
    status: int
    out: str
    err: str
    reports: Path
    recording: Path
    token: str
    sent: int  # requests the client suite sent through it


@pytest.fixture(scope="module")
def planted() -> Iterator[BackgroundServer]:
    """The differing platform, slow to answer one operation and failing another."""
    target = DifferingPlatform()
    target.faults.add("getMinCliVersion", delay_ms=SLOW_MS, times=None)
    target.faults.add("getTenantId", drop=True, times=None)
    with BackgroundServer(target) as served:
        yield served


@pytest.fixture(scope="module")
def proxied(planted, tmp_path_factory) -> Proxied:
    """`platform-mock proxy` in front of the planted platform, with the client suite of
    tests/test_drift.py run through it, then stopped with SIGTERM."""
    here = tmp_path_factory.mktemp("proxy")
    command = [
        sys.executable, "-m", "mock_server", "proxy", "--target", planted.url, "--port", "0",
        "--timeout", str(PROXY_TIMEOUT), "--report", str(here / "reports"),
        "--record", str(here / "world.yaml"),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        banner: list[str] = []
        while not banner or banner[-1] != "Press Ctrl-C to stop.\n":
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            banner.append(line)
        url = re.search(r"control plane: (http://\S+)/api/svc/v1", "".join(banner))
        assert url is not None
        token = planted.coordinates.token or ""
        sent = len(client_suite(url[1], planted.mock, token))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=budget(30))
    finally:
        process.kill()
    return Proxied(
        process.returncode,
        "".join(banner) + out,
        err,
        here / "reports",
        here / "world.yaml",
        token,
        sent,
    )


def test_proxy_in_front_of_a_client_suite_reports_exactly_the_planted_differences(
    proxied: Proxied,
):
    report = json.loads((proxied.reports / "drift-report.json").read_text())
    assert found(report) == PLANTED


def test_proxy_exits_1_on_drift_once_stopped(proxied: Proxied):
    assert proxied.status == 1, proxied.err


def test_proxy_logs_a_line_per_request(proxied: Proxied):
    logged = [line for line in proxied.out.split("\n") if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert len(logged) == proxied.sent


def test_proxy_logs_the_first_difference_an_answer_showed(proxied: Proxied):
    (session,) = [line for line in proxied.out.split("\n") if " /api/svc/v1/session " in line]
    assert session.endswith("DRIFT undocumented field user.avatarUrl")


def test_proxy_logs_a_timeout_as_such(proxied: Proxied):
    (slow,) = [line for line in proxied.out.split("\n") if "/min-cli-version " in line]
    assert " timeout getMinCliVersion " in slow and "DRIFT" not in slow


def test_proxy_writes_the_report_in_every_format_when_stopped(proxied: Proxied, junit_schema):
    junit_schema.validate((proxied.reports / "drift-report.xml").read_text())
    assert sorted(p.suffix for p in proxied.reports.iterdir()) == [".json", ".md", ".txt", ".xml"]


def test_proxy_writes_the_recording_when_stopped(proxied: Proxied):
    assert (
        yaml.safe_load(proxied.recording.read_text())["users"][0]["email"] == "alice@acme.example"
    )


def test_proxy_prints_and_writes_no_token(proxied: Proxied):
    written = [p.read_text() for p in proxied.reports.iterdir()] + [proxied.recording.read_text()]
    assert [text for text in [proxied.out, proxied.err, *written] if proxied.token in text] == []


def test_proxy_says_its_verdict_on_stderr(proxied: Proxied):
    assert "drift check FAILED: 5 difference(s)" in proxied.err


def test_a_log_reader_gone_leaves_the_proxy_serving():
    out = io.StringIO()
    out.close()  # as a pipe whose reader has gone
    log = proxying._printer(out)
    exchange = ProxiedExchange(
        seq=1, method="GET", path="/api/svc/v1/session", query={}, path_params={}, raw_headers={},
        raw_body=b"", operation_id="getSession", status=200,
    )  # fmt: skip
    assert [log(exchange), log(exchange)] == [None, None]


def test_drift_writes_its_files_before_printing(platform, tmp_path, monkeypatch):
    def gone(*args, **kwargs):
        raise BrokenPipeError  # the reader of standard output leaves at the first line

    monkeypatch.setattr(drift_files, "text", gone)
    monkeypatch.setenv("TFY_API_KEY", platform.coordinates.token or "")
    args = cli.build_parser().parse_args(
        ["drift", "--target", platform.url, "--report", str(tmp_path / "r.json")]
    )
    with pytest.raises(BrokenPipeError):
        proxying.run(args)
    assert (tmp_path / "r.json").exists()
