"""The platform's own CLI and Python library (`truefoundry`) as oracles, as the published SDK
is: `tfy login` with a user token and with a personal access token, and the library's
everyday steps (its session, job runs page by page, logging an artifact up to the upload,
tags and their 409, get-or-create, secret-group deletes) against the session's mock, each
result checked; and the bodies only the library reads, read with its own models.

The library pins `openai` below the version the other tests use, so it lives in an
environment of its own: the `library` extra of pyproject.toml, with this environment's
`truefoundry-sdk`, installed once and kept in pytest's cache directory, reused by later
sessions while the requirements and the Python stay the same (`--cache-clear` builds it
anew). The library's steps run in one process (`tests/library_client.py`, a few seconds to
import the library), in the world the first test of this module gets; each test below
checks one step. Under `-n` the module runs on one worker (tests/conftest.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from mock_server.contract import documents as contract
from mock_server.handlers import catalog
from mock_server.pytest_plugin import MockHandle

# Logging an artifact asks the mock for upload URLs (`POST .../signed-urls`), an operation it
# does not serve: the library's request breaks the contract, as the test expects.
pytestmark = pytest.mark.platform_mock(expect_violations=True)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "library_client.py"
ALICE = "alice@acme.example"
# The operations only the library reads: their catalog entries name its models.
LIBRARY_MODELS = {
    op: entry.client_model
    for op, entry in catalog.PLATFORM.items()
    if entry.client_model.startswith("truefoundry.")
}


def requirements() -> list[str]:
    """What the library's environment installs: pyproject's `library` extra, and the SDK
    version the rest of the suite uses (the library takes any from 0.6.0)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [
        *project["optional-dependencies"]["library"],
        f"truefoundry-sdk=={version('truefoundry-sdk')}",
    ]


@pytest.fixture(scope="module")
def library_bin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` folder of the library's environment, built on first use."""
    wanted = requirements()
    key = hashlib.sha256(json.dumps([wanted, sys.version]).encode()).hexdigest()[:16]
    cache = getattr(request.config, "cache", None)
    root = cache.mkdir("truefoundry-library") if cache else tmp_path_factory.mktemp("library")
    venv = root / key
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session may be building it
        if not (venv / "complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
            done = subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *wanted],
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            (venv / "complete").write_text("\n".join(wanted))
    return venv / "bin"


def library_env(home: Path, **variables: str) -> dict[str, str]:
    """The environment of a library process: its own home (where `tfy login` writes its
    credentials), no credentials of the caller's, and `variables`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("TFY_", "PLATFORM_MOCK"))}
    return {**kept, "HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200", **variables}


# -- tfy login --------------------------------------------------------------------------------


def tfy_login(library_bin: Path, home: Path, url: str, key: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(library_bin / "tfy"), "login", "--host", url, "--api-key", key],
        capture_output=True,
        text=True,
        timeout=120,
        env=library_env(home),
        cwd=home,
    )


def test_tfy_login_with_a_user_token_shows_the_user(library_bin, platform_mock, tmp_path):
    done = tfy_login(library_bin, tmp_path, platform_mock.url, platform_mock.token)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Successfully logged in to '{platform_mock.url}' as '{ALICE}'" in done.stdout


def test_tfy_login_with_a_personal_access_token_shows_its_owner(
    library_bin, platform_mock, tmp_path
):
    issued = platform_mock.client().get("/personal-access-tokens/laptop").json()["token"]
    done = tfy_login(library_bin, tmp_path, platform_mock.url, issued)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Successfully logged in to '{platform_mock.url}' as '{ALICE}'" in done.stdout


# -- the library's steps, run once in one process ---------------------------------------------

STEPS = (
    "session",
    "session_endpoint",
    "bootstrap",
    "job_runs",
    "log_artifact",
    "tags",
    "get_or_create",
    "secret_group_deletes",
    "models",
)
# Kept here by the first test that needs it: what the library did, and what the mock saw.
_RUN: dict[str, Any] = {}


def _plan(handle: MockHandle) -> dict[str, Any]:
    store = handle.store
    example_urls = {}
    for operation_id, model in LIBRARY_MODELS.items():
        request = catalog.example(operation_id).request(store)
        query = "&".join(f"{k}={v}" for k, v in request.query.items())
        example_urls[operation_id] = (model, f"{handle.url}{request.path}?{query}".rstrip("?"))
    return {
        "steps": STEPS,
        "url": handle.url,
        "token": handle.token,
        "job_id": store.deployments.application_named("trainer").id,
        "ml_repo": "demo-repo",
        "healthy_group": store.secrets.group_named("llm-keys").resource.id,
        "faulty_group": store.secrets.group_named("legacy-vault").resource.id,
        "models": example_urls,
    }


@pytest.fixture
def library(library_bin: Path, platform_mock: MockHandle, tmp_path_factory) -> dict[str, Any]:
    """What the library's steps gave (`results`), the journal of what the mock saw meanwhile
    (`journal`), and the world's facts the tests compare with (`expected`)."""
    if not _RUN:
        handle = platform_mock
        store = handle.store
        trainer = store.deployments.application_named("trainer").id
        expected_runs = store.jobs.list_runs(
            store.identity.default_user().caller(),
            trainer,
            limit=1000,
            offset=0,
            search_prefix=None,
            sort_by="startTime",
            order="desc",
            triggered_by=None,
            status=None,
            version_numbers=None,
        ).items
        home = tmp_path_factory.mktemp("library-home")
        plan = home / "plan.json"
        plan.write_text(json.dumps(_plan(handle)))
        done = subprocess.run(
            [str(library_bin / "python"), str(SCRIPT), str(plan)],
            capture_output=True,
            text=True,
            timeout=300,
            env=library_env(home, TFY_HOST=handle.url, TFY_API_KEY=handle.token),
            cwd=home,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        _RUN.update(
            results=json.loads(done.stdout.strip().splitlines()[-1]),
            journal=[entry.to_dict() for entry in handle.journal.calls()],
            expected={
                "runs": [run.name for run in expected_runs],
                "failed": sorted(v.id for v in store.world.artifact_versions.values() if v.failed),
                "groups": sorted(store.world.secret_groups),
            },
        )
    return _RUN


def result(library: dict[str, Any], step: str) -> Any:
    found = library["results"][step]
    assert not (isinstance(found, dict) and "traceback" in found), found.get("traceback")
    return found


def calls(library: dict[str, Any], operation_id: str | None) -> list[dict[str, Any]]:
    return [e for e in library["journal"] if e["operationId"] == operation_id]


def test_library_session_shows_the_user_and_the_tenant(library):
    assert result(library, "session") == {
        "user_id": ALICE,
        "email": ALICE,
        "tenant_name": "acme",
    }


def test_library_reads_the_session_endpoint_as_the_same_user(library):
    assert result(library, "session_endpoint") == result(library, "session")


def test_library_bootstrap_finds_the_tenant_and_the_mock_as_its_auth_server(library, server):
    found = result(library, "bootstrap")
    assert found["tenant"] == {"tenant_name": "acme", "auth_server_url": server.url}
    assert found["config"]["use_sfy_server_auth_apis"] is False
    for operation_id in ("getMinCliVersion", "getTenantId"):
        asked = calls(library, operation_id)
        assert asked and {e["status"] for e in asked} == {200}


def test_library_pages_every_run_of_the_job_newest_first(library):
    pages = result(library, "job_runs")
    assert pages[-1] == [] and all(len(page) == 10 for page in pages[:-2])
    assert [run["name"] for page in pages for run in page] == library["expected"]["runs"]


def test_library_reads_run_versions_and_times_as_integers(library):
    run = result(library, "job_runs")[0][0]
    assert type(run["deploymentVersion"]) is int and type(run["createdAt"]) is int


def test_library_log_artifact_stages_then_fails_at_the_upload_and_marks_the_version_failed(
    library,
):
    outcome = result(library, "log_artifact")
    assert (outcome["raised"], outcome["cause"]) == ("MlFoundryException", "ApiError")
    (staged,) = [
        e
        for e in calls(library, "stageArtifactVersion")
        if e["body"]["manifest"]["name"] == "library-artifact"
    ]
    assert staged["status"] == 200
    upload = [e for e in calls(library, None) if e["path"].endswith("/signed-urls")]
    assert [e["status"] for e in upload] == [404]  # the mock serves no uploads
    (marked,) = calls(library, "markArtifactVersionStageFailure")
    assert marked["status"] == 200
    assert [marked["body"]["id"]] == library["expected"]["failed"]


def test_library_tags_a_version_and_gets_the_409_for_a_tag_on_another(library):
    found = result(library, "tags")
    assert found["conflict"]["raised"] == "ApiError" and found["conflict"]["status"] == 409
    applied = calls(library, "applyArtifactVersionTags")
    # The SDK under the library retries a 409, as it does a 408, a 429 and a 5xx.
    assert applied[0]["body"]["artifact_version_id"] == found["first"]
    assert applied[0]["status"] == 200
    assert {(e["body"]["artifact_version_id"], e["status"]) for e in applied[1:]} == {
        (found["second"], 409)
    }


def test_library_get_or_create_returns_the_same_token_and_it_opens_a_session(library):
    found = result(library, "get_or_create")
    assert (found["first"]["created"], found["again"]["created"]) == (True, False)
    assert found["again"]["token"] == found["first"]["token"]
    assert found["user"] == {"user_id": ALICE, "email": ALICE, "tenant_name": "acme"}


def test_library_deletes_secret_groups_with_the_documented_errors(library):
    found = result(library, "secret_group_deletes")
    assert (found["deleted"], found["forced"]) == ({}, {})
    assert (found["again"]["raised"], found["again"]["status"]) == ("NotFoundError", 404)
    assert found["faulty"]["status"] == 424
    assert library["expected"]["groups"] == []


@pytest.mark.parametrize("operation_id", sorted(LIBRARY_MODELS))
def test_library_model_reads_the_body_strictly(library, operation_id):
    found = result(library, "models")[operation_id]
    assert found == {"status": 200, "disagreements": []}


def test_every_operation_only_the_library_reads_is_an_operation_of_the_contract():
    assert set(LIBRARY_MODELS) <= set(contract.operations())
