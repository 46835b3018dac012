"""Something to install: the Dockerfile, read as a container engine reads it (always) and built
and run where an engine answers, and the release workflow that builds the wheel, the sdist
and the image on a tag."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mock_server import cli
from mock_server.cli import options
from tests.budget import budget

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# How long an image may take to build, and its container to become healthy, on a busy machine.
BUILD_SECONDS, HEALTHY_SECONDS = 1800, 300


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, as (KEYWORD, arguments), continuations joined and
    comments left out."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, rest = (pending + line).strip().partition(" ")
        found.append((keyword.upper(), rest.strip()))
        pending = ""
    assert not pending, "a continuation ends the file"
    return found


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each build stage, the image's last."""
    found: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            found.append([])
        found[-1].append((keyword, rest))
    return found


def final(keyword: str) -> list[str]:
    """The arguments of each of the image's own instructions named `keyword`."""
    return [rest for found, rest in stages()[-1] if found == keyword]


def environment() -> dict[str, str]:
    """The variables the image sets (ENV NAME=VALUE ...)."""
    found: dict[str, str] = {}
    for rest in final("ENV"):
        for word in shlex.split(rest):
            name, _, value = word.partition("=")
            found[name] = value
    return found


def exec_form(rest: str) -> list[str]:
    value = json.loads(rest)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), rest
    return value


# -- the Dockerfile, read ---------------------------------------------------------------------


def test_every_stage_is_the_slim_python_the_package_requires():
    required = PYPROJECT["project"]["requires-python"]  # >=3.11
    version = re.fullmatch(r">=(\d+\.\d+)", required)
    assert version, required
    bases = [rest.split()[0] for keyword, rest in instructions() if keyword == "FROM"]
    assert bases and all(base == f"python:{version[1]}-slim" for base in bases), bases


def test_the_image_runs_as_a_user_of_its_own_not_root():
    users = final("USER")
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0") and user.isdigit(), user  # numeric: runAsNonRoot checks it
    keywords = [keyword for keyword, _ in stages()[-1]]
    assert keywords.index("USER") < keywords.index("ENTRYPOINT")


def test_the_entry_point_is_the_packages_own_command():
    (entry,) = final("ENTRYPOINT")
    assert exec_form(entry) == ["platform-mock"]
    assert PYPROJECT["project"]["scripts"]["platform-mock"] == "mock_server.__main__:main"


def served_args() -> Any:
    """What `platform-mock CMD` reads in the image: its command line and its variables."""
    (command,) = final("CMD")
    args = exec_form(command)
    name = options.command_of(args)
    parser = cli.build_parser(only=name)
    options.defaults_from_environment(parser.commands[name], environment())  # type: ignore[attr-defined]
    return parser.parse_args(args)


def test_the_image_serves_on_every_address_at_the_port_it_exposes():
    args = served_args()
    assert args.command == "serve"
    assert args.host == "0.0.0.0"
    assert final("EXPOSE") == [str(args.port)]
    assert options.refusal(args) is None


def test_the_admin_api_still_answers_only_its_own_host():
    args = served_args()
    assert args.host_check in ("admin", "all")
    assert args.allowed_host and "*" not in args.allowed_host
    # Names a page cannot make resolve to the container, at any port a mapping publishes.
    assert set(args.allowed_host) <= {"localhost", "127.0.0.1", "[::1]"}


def test_the_health_check_asks_the_admin_apis_health_on_the_served_port():
    (check,) = final("HEALTHCHECK")
    assert re.search(r"--start-period=\d+s", check) and re.search(r"--timeout=\d+s", check)
    command = exec_form(check.split(" CMD ", 1)[1])
    probe = " ".join(command)
    assert "/__admin/health" in probe and "PLATFORM_MOCK_PORT" in probe
    assert environment()["PLATFORM_MOCK_PORT"] == final("EXPOSE")[0]


def test_the_build_stage_copies_what_the_package_is_built_from():
    copied = {
        source
        for keyword, rest in stages()[0]
        if keyword == "COPY"
        for source in shlex.split(rest)[:-1]
    }
    wheel = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {"pyproject.toml", PYPROJECT["project"]["readme"], *wheel["packages"]}
    needed |= set(wheel["force-include"])
    assert needed <= copied, needed - copied
    assert all((ROOT / source).exists() for source in copied)
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert not needed & ignored


def test_the_images_command_serves_as_configured_and_passes_its_health_check(tmp_path: Path):
    """The image's command, variables and health check, run here as the engine runs them (as
    its user, whose home holds the runtime file), on a free port for the one it exposes."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("PLATFORM_MOCK_", "XDG_"))}
    env = {**kept, **environment(), "PLATFORM_MOCK_PORT": str(port), "HOME": str(tmp_path)}
    (command,) = final("CMD")
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", *exec_form(command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
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
        (check,) = final("HEALTHCHECK")
        probe_command = exec_form(check.split(" CMD ", 1)[1])
        assert probe_command[0] == "python"
        healthy = subprocess.run([sys.executable, *probe_command[1:]], env=env, timeout=budget(60))
        assert healthy.returncode == 0
        minted = subprocess.run(
            [sys.executable, "-m", "mock_server", "token", "--admin"],
            capture_output=True,
            text=True,
            env=env,
            timeout=budget(60),
        )
        assert minted.returncode == 0, minted.stderr
        assert list((tmp_path / ".local/share/platform-mock/runtime").glob("server-*.json"))
        bearer = {"Authorization": f"Bearer {minted.stdout.strip()}"}
        url = f"http://127.0.0.1:{port}/__admin/journal"
        # As a port mapping presents it (`-p 9000:8080`), and as a rebinding page would.
        mapped = httpx.get(url, headers={**bearer, "Host": "localhost:9000"}, timeout=budget(60))
        foreign = httpx.get(
            url, headers={**bearer, "Host": f"evil.example:{port}"}, timeout=budget(60)
        )
        assert (mapped.status_code, foreign.status_code) == (200, 403)
    finally:
        process.kill()
        process.wait()


# -- the release workflow, read ---------------------------------------------------------------


def workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(loaded, dict)
    return loaded


def steps(job: str) -> list[dict[str, Any]]:
    return list(workflow()["jobs"][job]["steps"])


def test_the_release_runs_on_a_version_tag_only():
    loaded = workflow()
    trigger = loaded.get("on", loaded.get(True))  # YAML 1.1 reads a bare `on` as true
    assert trigger == {"push": {"tags": ["v*"]}}


def test_the_release_checks_the_tag_and_runs_the_suite_first():
    check = " ".join(step.get("run", "") for step in steps("check"))
    assert ".ci/run" in check and 'GITHUB_REF_NAME}" = "v${version}"' in check
    jobs = workflow()["jobs"]
    assert jobs["dist"]["needs"] == "check" and jobs["image"]["needs"] == "check"


def test_the_release_builds_the_wheel_and_the_sdist_and_attaches_them():
    runs = [step.get("run", "") for step in steps("dist")]
    assert "python -m build --sdist --wheel --outdir dist ." in runs
    assert any(run.startswith('gh release create "$GITHUB_REF_NAME" dist/*') for run in runs)


def test_the_release_builds_checks_and_pushes_the_image_from_the_dockerfile():
    found = steps("image")
    builds = [step for step in found if step.get("uses", "").startswith("docker/build-push")]
    assert [build["with"]["context"] for build in builds] == [".", "."]
    assert builds[0]["with"].get("load") is True and builds[-1]["with"].get("push") is True
    checked = next(step["run"] for step in found if "docker run" in step.get("run", ""))
    assert "Health.Status" in checked and "docker exec mock platform-mock token" in checked
    assert found.index(builds[0]) < found.index(builds[-1])


def test_every_action_the_workflow_uses_is_pinned_to_a_release():
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", step["uses"]), step["uses"]


# -- the image, built and run where a container engine answers --------------------------------


def engine() -> str | None:
    """A container engine's command whose engine answers (`docker info`), or None."""
    for name in ("docker", "podman"):
        path = shutil.which(name)
        if path is None:
            continue
        try:
            answered = subprocess.run([path, "info"], capture_output=True, timeout=budget(60))
        except subprocess.TimeoutExpired:
            continue
        if answered.returncode == 0:
            return path
    return None


@pytest.fixture(scope="module")
def container() -> Iterator[tuple[str, str, int]]:
    """The image built from the Dockerfile and run with its port published on loopback: the
    engine, the container's name and the host's port."""
    found = engine()
    if found is None:
        pytest.skip("no container engine answers on this machine (`docker info` fails)")
    tag = f"platform-mock-test:{uuid.uuid4().hex[:12]}"
    name = f"platform-mock-test-{uuid.uuid4().hex[:12]}"
    subprocess.run(
        [found, "build", "-t", tag, str(ROOT)], check=True, capture_output=True,
        timeout=BUILD_SECONDS,
    )  # fmt: skip
    try:
        subprocess.run(
            [found, "run", "-d", "--name", name, "-p", "127.0.0.1::8080", tag],
            check=True,
            capture_output=True,
            timeout=budget(120),
        )
        published = subprocess.run(
            [found, "port", name, "8080/tcp"], check=True, capture_output=True, text=True
        ).stdout
        port = int(published.split()[0].rsplit(":", 1)[1])
        yield found, name, port
    finally:
        subprocess.run([found, "rm", "-f", name], capture_output=True, timeout=budget(120))
        subprocess.run([found, "rmi", "-f", tag], capture_output=True, timeout=budget(120))


def inspect(found: str, name: str, template: str) -> str:
    return subprocess.run(
        [found, "inspect", "--format", template, name],
        capture_output=True,
        text=True,
        timeout=budget(60),
    ).stdout.strip()


def test_the_image_becomes_healthy_and_serves_a_token_it_accepts(container):
    found, name, port = container
    deadline = time.monotonic() + HEALTHY_SECONDS
    while (health := inspect(found, name, "{{.State.Health.Status}}")) != "healthy":
        assert health in ("starting", ""), health
        assert time.monotonic() < deadline, "never healthy"
        time.sleep(1)
    user = subprocess.run(
        [found, "exec", name, "id", "-u"], capture_output=True, text=True, timeout=budget(60)
    )
    assert user.stdout.strip() not in ("", "0")
    minted = subprocess.run(
        [found, "exec", name, "platform-mock", "token"],
        capture_output=True,
        text=True,
        timeout=budget(60),
    )
    assert minted.returncode == 0, minted.stderr
    base = f"http://127.0.0.1:{port}"
    answer = httpx.get(
        base + "/api/svc/v1/personal-access-tokens/ci",
        headers={"Authorization": f"Bearer {minted.stdout.strip()}"},
        timeout=budget(60),
    )
    assert answer.status_code == 200
    admin = subprocess.run(
        [found, "exec", name, "platform-mock", "token", "--admin"],
        capture_output=True,
        text=True,
        timeout=budget(60),
    ).stdout.strip()
    bearer = {"Authorization": f"Bearer {admin}"}
    assert (
        httpx.get(base + "/__admin/journal", headers=bearer, timeout=budget(60)).status_code == 200
    )
    foreign = {**bearer, "Host": f"evil.example:{port}"}
    assert (
        httpx.get(base + "/__admin/journal", headers=foreign, timeout=budget(60)).status_code == 403
    )


def test_the_image_test_skips_only_when_no_engine_answers():
    """An engine found is one that answers `info`; none found means none answered, though a
    `docker` command may be there (as on a machine with the client and no engine)."""
    found = engine()
    for name in ("docker", "podman"):
        path = shutil.which(name)
        if path is not None:
            answered = subprocess.run([path, "info"], capture_output=True, timeout=budget(60))
            if answered.returncode == 0:
                assert found is not None
                return
    assert found is None
