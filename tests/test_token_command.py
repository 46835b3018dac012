"""Tokens that just work: a running `serve` records where it is and its tokens in a file of
the user's own, and `platform-mock token` asks that server, with no key shared; with several
running it says which it asked and takes --port or --url; a file a dead server left is
removed, never believed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mock_server import cli
from mock_server.cli import runtime
from tests.budget import budget

CONTROL = "/api/svc/v1"
URL = re.compile(r"control plane: (?P<base>http://127\.0\.0\.1:(?P<port>\d+))/api/svc/v1")


def environment(**more: str) -> dict[str, str]:
    """This process's environment with no key to share, no runtime directory named, and no
    mock of `run` named (the tests name what they mean), plus `more`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("PLATFORM_MOCK_", "XDG_"))}
    return {**kept, **more}


@dataclass
class Served:
    process: subprocess.Popen
    base: str
    port: int

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=budget(60))


def serve(env: dict[str, str], *args: str) -> Served:
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    banner = ""
    while "Press Ctrl-C" not in banner:  # printed once the runtime file is written
        line = process.stdout.readline()
        assert line, f"serve ended early: {banner!r}"
        banner += line
    found = URL.search(banner)
    assert found, banner
    return Served(process, found["base"], int(found["port"]))


def token(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "token", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=budget(120),
        stdin=subprocess.DEVNULL,
    )


def status_of(url: str, minted: str) -> int:
    return httpx.get(
        url, headers={"Authorization": f"Bearer {minted}"}, timeout=budget(30)
    ).status_code


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    """A login session's runtime directory ($XDG_RUNTIME_DIR), made as a system makes it."""
    found = tmp_path_factory.mktemp("session")
    found.chmod(0o700)
    return found


@pytest.fixture(scope="module")
def served(session: Path) -> Iterator[Served]:
    """One server with no key given, as a user starts it: its runtime file in the session's
    directory."""
    started = serve(environment(XDG_RUNTIME_DIR=str(session)))
    yield started
    started.process.kill()
    started.process.wait()


def files_in(directory: Path) -> list[Path]:
    return sorted(directory.glob("server-*.json"))


def test_a_running_server_records_itself_in_a_file_of_the_users_own(session, served):
    directory = session / "platform-mock"
    (path,) = [p for p in files_in(directory) if p.name == f"server-{served.process.pid}.json"]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    recorded = json.loads(path.read_text())
    assert recorded["url"] == served.base and recorded["pid"] == served.process.pid
    assert status_of(served.base + "/__admin/journal", recorded["admin_token"]) == 200


@pytest.mark.parametrize(
    ("args", "path"),
    [
        pytest.param([], CONTROL + "/personal-access-tokens/ci", id="user"),
        pytest.param(["--admin"], "/__admin/journal", id="admin"),
    ],
)
def test_token_finds_the_running_server_with_nothing_shared(session, served, args, path):
    done = token(environment(XDG_RUNTIME_DIR=str(session)), *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # one server: nothing to say
    assert status_of(served.base + path, done.stdout.strip()) == 200


def test_token_for_another_subject_is_the_servers_for_its_world_as_it_is(session, served):
    done = token(environment(XDG_RUNTIME_DIR=str(session)), "--subject", "bob@acme.example")
    assert done.returncode == 0, done.stderr
    answer = httpx.get(
        served.base + CONTROL + "/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {done.stdout.strip()}"},
        timeout=budget(30),
    )
    assert answer.json()["data"]["createdBy"] == "bob@acme.example"


def test_a_subject_the_world_lacks_is_the_servers_answer_in_one_line(session, served):
    done = token(environment(XDG_RUNTIME_DIR=str(session)), "--subject", "nobody@acme.example")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("platform-mock: No subject 'nobody@acme.example' in this world")
    assert done.stderr.count("\n") == 1


def test_world_options_without_a_key_are_refused_as_the_servers_world_is_asked(session, served):
    done = token(environment(XDG_RUNTIME_DIR=str(session)), "--seed", "7")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("platform-mock: --seed describe a world to mint a token for")


def dead_pid() -> int:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def planted(directory: Path, pid: int, port: int, started: float) -> Path:
    """A runtime file as a server that ended without stopping leaves it."""
    return runtime.write(
        runtime.ServerFile(
            pid=pid,
            url=f"http://127.0.0.1:{port}",
            token="eyJ.stale.token",
            admin_token="eyJ.stale.admin",
            seed=0,
            version="0.1.0",
            started=started,
        )
    )


@pytest.mark.parametrize(
    "left",
    [
        pytest.param("dead-process", id="its-process-ended"),
        pytest.param("nothing-listens", id="its-port-is-closed"),
        pytest.param("another-server", id="another-server-on-its-port"),
    ],
)
def test_a_file_a_server_left_is_removed_and_never_believed(
    tmp_path, monkeypatch, served, left: str
):
    """Each stale file claims to be the latest server: `token` still prints a token of the
    live one, alone, and the stale file is gone."""
    monkeypatch.setenv("PLATFORM_MOCK_RUNTIME_DIR", str(tmp_path))
    env = environment(PLATFORM_MOCK_RUNTIME_DIR=str(tmp_path))
    live = serve(env)
    try:
        pid = {"dead-process": dead_pid()}.get(left, os.getpid())  # this process: alive
        port = served.port if left == "another-server" else free_port()
        stale = planted(tmp_path, pid, port, started=time.time() + 3600)
        done = token(env)
        assert done.returncode == 0, done.stderr
        path = live.base + CONTROL + "/personal-access-tokens/ci"
        assert status_of(path, done.stdout.strip()) == 200
        assert not stale.exists()
        assert done.stderr == ""  # one server runs: the stale file was not counted
    finally:
        live.process.kill()
        live.process.wait()


def test_with_several_servers_it_says_which_it_asked_and_takes_port_or_url(tmp_path):
    env = environment(PLATFORM_MOCK_RUNTIME_DIR=str(tmp_path))
    first = serve(env)
    second = serve(env)  # the latest started
    try:
        latest = token(env)
        assert latest.returncode == 0, latest.stderr
        said = latest.stderr.splitlines()
        assert said[0].startswith(
            f"platform-mock: 2 servers are running; this token is from {second.base} "
            f"(pid {second.process.pid}, started at "
        )
        assert said[1].startswith(f"  --port {first.port}  {first.base} (pid {first.process.pid}")
        path = CONTROL + "/personal-access-tokens/ci"
        assert status_of(second.base + path, latest.stdout.strip()) == 200
        assert status_of(first.base + path, latest.stdout.strip()) == 401  # not signed there
        for picked in (["--port", str(first.port)], ["--url", f"http://localhost:{first.port}/"]):
            done = token(env, *picked)
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""  # picked: nothing to say
            assert status_of(first.base + path, done.stdout.strip()) == 200
        absent = token(env, "--port", str(free_port()))
        assert (absent.returncode, absent.stdout) == (2, "")
        assert absent.stderr.startswith("platform-mock: no running server at --port ")
        assert f"--port {first.port}" in absent.stderr and f"--port {second.port}" in absent.stderr
    finally:
        for server in (first, second):
            server.process.kill()
            server.process.wait()


def test_the_file_goes_when_the_server_stops(tmp_path):
    env = environment(PLATFORM_MOCK_RUNTIME_DIR=str(tmp_path))
    started = serve(env)
    try:
        assert [p.name for p in files_in(tmp_path)] == [f"server-{started.process.pid}.json"]
        assert started.stop() == 0
        assert files_in(tmp_path) == []
    finally:
        started.process.kill()
        started.process.wait()


def test_a_directory_open_to_others_is_closed_before_tokens_go_in(tmp_path):
    directory = tmp_path / "runtime"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    started = serve(environment(PLATFORM_MOCK_RUNTIME_DIR=str(directory)))
    try:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    finally:
        started.process.kill()
        started.process.wait()


def test_the_taken_port_of_a_running_server_names_it(tmp_path):
    env = environment(PLATFORM_MOCK_RUNTIME_DIR=str(tmp_path))
    started = serve(env)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mock_server", "serve", "--port", str(started.port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=budget(120),
        )
        assert done.returncode == 3
        assert (
            f"platform-mock serve (pid {started.process.pid}) is serving there: "
            f"`platform-mock token --port {started.port}` asks it for a token"
        ) in done.stderr
    finally:
        started.process.kill()
        started.process.wait()


def test_a_command_of_run_gets_a_token_of_runs_own_server(session, served):
    """Whatever else runs (the module's server is recorded in this directory too)."""
    script = (
        "import os, subprocess, sys, urllib.request\n"
        "minted = subprocess.run([sys.executable, '-m', 'mock_server', 'token'],"
        " capture_output=True, text=True, check=True).stdout.strip()\n"
        "request = urllib.request.Request(os.environ['PLATFORM_MOCK_API_URL']"
        " + '/personal-access-tokens/ci', headers={'Authorization': 'Bearer ' + minted})\n"
        "print(urllib.request.urlopen(request).status)\n"
    )
    env = environment(XDG_RUNTIME_DIR=str(session))
    done = subprocess.run(
        [sys.executable, "-m", "mock_server", "run", "--", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=budget(180),
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (0, "200\n"), done.stderr


def test_a_server_that_cannot_record_itself_says_so_and_serves(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the runtime directory's place is a file: nothing can go in it
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(PLATFORM_MOCK_RUNTIME_DIR=str(blocked / "runtime")),
    )
    try:
        assert process.stdout is not None
        banner = ""
        while "Press Ctrl-C" not in banner:
            line = process.stdout.readline()
            assert line, banner
            banner += line
        found = URL.search(banner)
        assert found
        assert httpx.get(found["base"] + "/__admin/health", timeout=budget(30)).status_code == 200
        process.terminate()
        _, stderr = process.communicate(timeout=budget(60))
    finally:
        process.kill()
        process.wait()
    assert (
        f"platform-mock: cannot record this server for `platform-mock token` in "
        f"{blocked / 'runtime'}: "
    ) in stderr
    assert "eyJ" not in stderr  # the file's tokens are nowhere else


@pytest.mark.parametrize(
    ("url", "message"),
    [
        pytest.param("http://[::1", "is not a URL: Invalid IPv6", id="bracket"),
        pytest.param("http://127.0.0.1:99999", "is not a URL: Port out of", id="port"),
        pytest.param("127.0.0.1:8080", "is not an http:// or https:// URL", id="no-scheme"),
    ],
)
def test_a_url_that_names_no_server_is_a_usage_error(capsys, url: str, message: str):
    with pytest.raises(SystemExit) as exited:
        cli.main(["token", "--url", url])
    assert (exited.value.code, message in capsys.readouterr().err) == (2, True)
