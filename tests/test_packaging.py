"""The built wheel: it carries the contract, the fixtures and the live view's page, and serves
from a fresh environment."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import environments
from tests.budget import budget
from tests.test_cli import SERVE_OUTPUT, printed

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built each session (a few seconds: the build is what is checked)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=budget(300),
    )
    (built,) = out.glob("platform_mock-*.whl")
    return built


def wheel_contents(wheel: Path) -> str:
    """The SHA-256 of what the wheel holds, names and bytes (not its archive's timestamps)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            digest.update(name.encode() + b"\0" + archive.read(name) + b"\0")
    return digest.hexdigest()


@pytest.fixture(scope="module")
def installed(
    wheel: Path, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A fresh virtual environment with only the wheel and its dependencies (slow the first
    time: the web stack installed, about 10 s; kept by `tests/environments` while the
    wheel holds the same files)."""

    def build(folder: Path) -> None:
        venv.create(folder / "venv")
        environments.install(folder / "venv/bin/python", str(wheel))

    inputs = {"wheel": wheel.name, "contents": wheel_contents(wheel)}
    folder = environments.kept(request.config, tmp_path_factory, "wheel-installed", inputs, build)
    return folder / "venv"


@pytest.mark.parametrize(
    "member",
    [
        "mock_server/shipped/spec/control-plane.yaml",
        "mock_server/shipped/spec/gateway.yaml",
        "mock_server/shipped/fixtures/default.yaml",
        "mock_server/fixtures/schema.yaml",
        "mock_server/view/static/index.html",
        "mock_server/view/static/view.js",
        "mock_server/view/static/view.css",
        "mock_server/view/static/icon.svg",
    ],
)
def test_wheel_carries_the_contract_fixtures_and_the_live_view(wheel, member):
    assert member in zipfile.ZipFile(wheel).namelist()


def test_wheel_declares_the_console_script(wheel):
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
    assert "platform-mock = mock_server.__main__:main" in archive.read(entry_points).decode()


@contextlib.contextmanager
def installed_serving(installed: Path, cwd: Path) -> Iterator[str]:
    """`platform-mock serve --port 0` of the installed wheel, run from `cwd`: what it printed
    before it was ready."""
    process = subprocess.Popen(
        [str(installed / "bin/platform-mock"), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    try:
        yield printed(process)
    finally:
        process.terminate()
        process.wait(timeout=budget(15))


def test_installed_command_serves_with_the_printed_token(installed, tmp_path):
    # Run from an empty folder so nothing of the source checkout can be picked up.
    with installed_serving(installed, tmp_path) as banner:
        match = SERVE_OUTPUT.search(banner)
        assert match, banner
        response = httpx.get(
            match["control"] + "/personal-access-tokens/ci",
            headers={"Authorization": f"Bearer {match['token']}"},
        )
        assert response.status_code == 200
        assert response.json()["created"] is True


@pytest.mark.platform_mock(expect_violations=True)  # its error checks break it on purpose
def test_installed_command_checks_a_platform_for_drift(installed, server, mock, tmp_path):
    # The wheel's own dependencies carry the drift check's client (httpx).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PLATFORM_"))}
    done = subprocess.run(
        [str(installed / "bin/platform-mock"), "drift", "--target", server.url],
        env={**env, "TFY_API_KEY": mock.auth.dev_token()},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=budget(120),
    )
    assert (done.returncode, "drift check PASSED" in done.stderr) == (0, True), done.stderr


def test_installed_command_serves_the_live_view_from_the_wheel(installed, tmp_path):
    with installed_serving(installed, tmp_path) as banner:
        (view,) = [line.split()[2] for line in banner.splitlines() if "live view:" in line]
        response = httpx.get(view + "/view.js")
        assert response.status_code == 200
        assert response.text == (ROOT / "mock_server/view/static/view.js").read_text()
