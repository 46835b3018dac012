"""`serve --watch`: an edited fixture file reloads the world without a restart; an edit that
cannot load keeps the running world and says every problem, with its file, line and field."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mock_server import MockConfig, PlatformMock
from mock_server.cli.watch import FixtureWatcher
from mock_server.http.server import BackgroundServer
from tests.budget import budget
from tests.conftest import CONTROL_PLANE
from tests.test_cli import printed

DANA = "users:\n  - email: dana@acme.example\n"
DANA_AND_ERIN = DANA + "  - email: erin@acme.example\n"
MISSPELT = "users:\n  - email: erin@acme.example\n    displayname: Erin\n"
UNKNOWN_MEMBER = "teams:\n  - name: night-shift\n    members: [nobody@acme.example]\n"


class Watched:
    """A mock whose fixture file is watched, with what the watcher said."""

    def __init__(self, path: Path):
        self.path = path
        self.mock = PlatformMock(MockConfig(fixtures=[path]))
        self.said: list[str] = []
        self.complaints: list[str] = []
        self.watcher = FixtureWatcher(self.mock, self.said.append, self.complaints.append)

    def users(self) -> set[str]:
        return {s.name for (kind, _), s in self.mock.store.world.subjects.items() if kind == "user"}

    def edit(self, text: str) -> None:
        self.path.write_text(text)


def _until(check: Callable[[], bool], timeout: float = budget(10.0)) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)


@pytest.fixture
def watched(tmp_path) -> Iterator[Watched]:
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    found = Watched(path)
    found.watcher.start()
    assert found.watcher.ready.wait(10)
    yield found
    found.watcher.stop()


def test_an_edit_reloads_the_world(watched):
    watched.edit(DANA_AND_ERIN)

    _until(lambda: "erin@acme.example" in watched.users())


def test_an_edit_saved_by_renaming_a_new_file_reloads_the_world(watched):
    written = watched.path.with_suffix(".tmp")
    written.write_text(DANA_AND_ERIN)

    written.rename(watched.path)

    _until(lambda: "erin@acme.example" in watched.users())


def test_a_reload_says_so_in_a_line(watched):
    watched.edit(DANA_AND_ERIN)

    _until(lambda: bool(watched.said))

    assert "people.yaml changed: the world is reloaded (5 users" in watched.said[0]


def test_a_reload_keeps_the_journal(tmp_path):
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    found = Watched(path)
    with BackgroundServer(found.mock) as server:
        token = found.mock.auth.dev_token()
        httpx.get(
            server.url + CONTROL_PLANE + "/session", headers={"Authorization": f"Bearer {token}"}
        )
        found.edit(DANA_AND_ERIN)

        outcome = found.watcher.reload(["people.yaml"])

        assert outcome["reloaded"] is True
        assert [e.operation_id for e in found.mock.journal] == ["getSession"]


def test_the_printed_token_works_after_a_reload(tmp_path):
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    found = Watched(path)
    token = found.mock.auth.dev_token()
    found.edit(DANA_AND_ERIN)
    found.watcher.reload(["people.yaml"])
    with BackgroundServer(found.mock) as server:
        response = httpx.get(
            server.url + CONTROL_PLANE + "/session", headers={"Authorization": f"Bearer {token}"}
        )
    assert response.status_code == 200


def test_a_reload_is_an_event_of_the_live_view(tmp_path):
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    found = Watched(path)
    found.edit(DANA_AND_ERIN)

    found.watcher.reload(["people.yaml"])

    event = found.mock.live.last_reload
    assert event is not None
    assert (event["type"], event["reloaded"], event["files"]) == ("reload", True, ["people.yaml"])
    counts = event["counts"]
    assert isinstance(counts, dict) and counts["users"] == 5


@pytest.mark.parametrize(
    ("text", "line", "field", "says"),
    [
        pytest.param(MISSPELT, 2, "users[0]", "'displayname' was unexpected", id="schema"),
        pytest.param(
            UNKNOWN_MEMBER, 2, "teams[0]", "nobody@acme.example", id="cannot-enter-the-world"
        ),
        pytest.param("users: [\n", 2, "", "not valid YAML", id="yaml"),
    ],
)
def test_an_edit_that_cannot_load_keeps_the_world_and_says_why(tmp_path, text, line, field, says):
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    found = Watched(path)
    before = found.users()
    found.edit(text)

    outcome = found.watcher.reload(["people.yaml"])

    assert found.users() == before
    assert outcome["reloaded"] is False
    (problem,) = outcome["errors"]
    assert (Path(problem["file"]).name, problem["line"], problem["field"]) == (
        "people.yaml",
        line,
        field,
    )
    assert says in problem["message"]
    assert f"people.yaml:{line}: " in found.complaints[0] and says in found.complaints[0]
    assert found.mock.live.last_reload == {"type": "reload", **outcome}


def test_every_problem_of_every_file_is_said(tmp_path):
    first, second = tmp_path / "one.yaml", tmp_path / "two.yaml"
    first.write_text(DANA)
    second.write_text("teams:\n  - name: t\n")
    mock = PlatformMock(MockConfig(fixtures=[first, second]))
    complaints: list[str] = []
    watcher = FixtureWatcher(mock, print, complaints.append)
    first.write_text(
        "users:\n  - email: a@acme.example\n    nick: a\n  - email: b@acme.example\n    nick: b\n"
    )
    second.write_text("teams:\n  - name: t\n    size: 3\n")

    outcome = watcher.reload(["one.yaml", "two.yaml"])

    assert [(Path(p["file"]).name, p["line"]) for p in outcome["errors"]] == [
        ("one.yaml", 2),
        ("one.yaml", 4),
        ("two.yaml", 2),
    ]
    assert len(complaints[0].splitlines()) == 4  # a heading, then one line per problem


def test_a_fixed_edit_after_a_broken_one_reloads(watched):
    watched.edit(MISSPELT)
    _until(lambda: bool(watched.complaints))

    watched.edit(DANA_AND_ERIN)

    _until(lambda: "erin@acme.example" in watched.users())


def test_serve_watch_needs_a_fixture_file():
    done = subprocess.run(
        [sys.executable, "-m", "mock_server", "serve", "--port", "0", "--watch"],
        capture_output=True,
        text=True,
        timeout=budget(60),
    )

    assert done.returncode == 2
    assert "--watch follows the files of --fixtures" in done.stderr


def test_serve_watch_reloads_and_says_so_in_its_output(tmp_path):
    path = tmp_path / "people.yaml"
    path.write_text(DANA)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mock_server",
            "serve",
            "--port",
            "0",
            "--watch",
            "--fixtures",
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = printed(process).splitlines()
        assert any(line.strip().startswith("watching:") for line in banner)
        path.write_text(DANA_AND_ERIN)
        assert process.stdout is not None
        reloaded = process.stdout.readline()
        assert "people.yaml changed: the world is reloaded (5 users" in reloaded
    finally:
        process.terminate()
        process.wait(timeout=budget(15))
    assert process.returncode == 0
