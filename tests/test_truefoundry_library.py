"""The platform's own CLI and Python library (`truefoundry`) as oracles, as the published SDK
is: `tfy login` with a user token and with a personal access token, and the library's
everyday steps (its session, job runs page by page, tags and their 409, get-or-create,
secret-group deletes) against the session's mock, each result checked; the users' whole
flows (an artifact and a model logged, read back by FQN and downloaded, a tag on the new
version, a file logged in parts and one over the byte budget; `tfy apply -f` and
`tfy delete -f` of a role binding and of a secret group, `tfy upload skill` and
`tfy apply -f` of skills, `tfy trigger job` and `tfy terminate job`); and the bodies only
the library reads, read with its own models.

The library pins `openai` below the version the other tests use, so it lives in an
environment of its own: the `library` extra of pyproject.toml, with this environment's
`truefoundry-sdk`, installed once and kept in pytest's cache directory, reused by later
sessions while the requirements and the Python stay the same (`--cache-clear` builds it
anew). The library's steps run in one process (`tests/library_client.py`, a few seconds to
import the library), in the world the first test of this module gets; each test below
checks one step. Under `-n` the module runs on one worker (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from mock_server.contract import documents as contract
from mock_server.handlers import catalog
from mock_server.pytest_plugin import MockHandle
from tests import environments
from tests.budget import budget

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
    """The `bin` folder of the library's environment, built on first use (slow the first
    time: a venv and an install of the library, about 10 s; kept by `tests/environments`)."""
    wanted = requirements()

    def build(venv: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            check=True,
            timeout=budget(300),
        )
        environments.install(venv / "bin" / "python", *wanted)

    venv = environments.kept(request.config, tmp_path_factory, "truefoundry-library", wanted, build)
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
        timeout=budget(120),
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
    "log_model",
    "tag_logged",
    "log_in_parts",
    "log_over_budget",
    "tags",
    "get_or_create",
    "secret_group_deletes",
    "cli_role_binding",
    "cli_secret_group",  # after secret_group_deletes, which deleted the group it makes again
    "cli_skills",
    "cli_jobs",
    "models",
)
# Kept here by the first test that needs it: what the library did, and what the mock saw.
_RUN: dict[str, Any] = {}


def _plan(handle: MockHandle) -> dict[str, Any]:
    store = handle.store
    examples = {}
    for operation_id, model in LIBRARY_MODELS.items():
        request = catalog.example(operation_id).request(store)
        url = f"{handle.url}{request.path}?{urlencode(request.query)}".rstrip("?")
        examples[operation_id] = (model, request.method, url, request.body)
    trainer = store.deployments.application_named("trainer")
    return {
        "steps": STEPS,
        "url": handle.url,
        "token": handle.token,
        "job_id": trainer.id,
        "job_fqn": trainer.fqn,
        "ml_repo": "demo-repo",
        "healthy_group": store.secrets.group_named("llm-keys").resource.id,
        "faulty_group": store.secrets.group_named("legacy-vault").resource.id,
        "bob": store.identity.subject_named("user", BOB).id,
        "role_binding": ROLE_BINDING,
        "secret_group": SECRET_GROUP,
        "models": examples,
    }


BOB = "bob@acme.example"
# What operation 1 generates for bob's role on the demo repo, with a role on the workspace
# added: applied, operation 1 returns it in the place of the one it generated.
BOB_ON_THE_REPO = "user-bob-acme-example-mlf-project-editor-a8ae6cfd"
ROLE_BINDING = {
    "type": "role-binding",
    "name": BOB_ON_THE_REPO,
    "subjects": [{"type": "user", "name": BOB}],
    "permissions": [
        {
            "resourceType": "mlf-project",
            "resourceFqn": "acme:demo-repo",
            "role": "mlf-project-editor",
        },
        {
            "resourceType": "workspace",
            "resourceFqn": "prod-cluster:ml-team",
            "role": "workspace-editor",
        },
    ],
}
# The default world's group of LLM keys, as `tfy apply` sends a secret group.
SECRET_GROUP = {
    "type": "secret-group",
    "name": "llm-keys",
    "integration_fqn": "acme:aws:secrets-manager",
    "secrets": [
        {"key": "OPENAI_API_KEY", "value": "sk-applied"},
        {"key": "HF_TOKEN", "value": "hf-applied"},
    ],
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
            timeout=budget(300),
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
                "versions": {
                    v.fqn: {"status": v.status, "files": sorted(v.files), "id": v.id}
                    for v in store.world.artifact_versions.values()
                },
                "sources": {
                    v.fqn: v.manifest["source"]["type"]
                    for v in store.world.artifact_versions.values()
                },
                "ids": sorted(store.world.ids),
                "role_bindings": sorted(store.world.role_bindings),
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


def test_library_logs_a_folder_as_an_artifact_and_downloads_the_same_files(library):
    found = result(library, "log_artifact")
    assert found["downloaded"] == found["logged"] and len(found["logged"]) == 3


def test_library_reads_the_logged_artifact_back_by_its_documented_fqn(library):
    found = result(library, "log_artifact")
    assert found["fqn"] == found["read_fqn"] == "artifact:acme/demo-repo/library-artifact:1"
    assert found["version"] == 1


def test_library_logs_an_artifact_through_stage_signed_urls_and_finalise(library):
    asked = [
        e["operationId"]
        for e in library["journal"]
        if e["body"] and "library-artifact" in json.dumps(e["body"])
    ]
    assert asked == ["stageArtifactVersion", "createOrUpdateArtifactVersion"]
    (write,) = [
        e for e in calls(library, "getArtifactVersionSignedUrls")
        if e["body"]["operation"] == "WRITE" and "README.md" in e["body"]["paths"]
        and e["status"] == 200
    ][:1]  # fmt: skip
    assert write["status"] == 200


def test_library_logs_a_folder_as_a_model_and_downloads_the_same_files(library):
    found = result(library, "log_model")
    assert found["downloaded"] == found["logged"]
    assert found["fqn"] == found["read_fqn"] == "model:acme/demo-repo/library-model:1"


def test_library_model_is_finalised_with_the_platforms_own_source(library):
    (finalised,) = calls(library, "createOrUpdateModelVersion")
    source = finalised["body"]["manifest"]["source"]
    assert source["type"] == "truefoundry" and source["uri"].endswith("/models/library-model/1/")
    assert library["expected"]["versions"]["model:acme/demo-repo/library-model:1"]["status"] == (
        "ready"
    )


def test_a_tag_applies_to_the_version_the_library_logged(library):
    assert result(library, "tag_logged")["tags"] == ["latest"]


def test_library_logs_a_file_in_parts_and_downloads_it_whole(library):
    found = result(library, "log_in_parts")
    assert found["parts"] == 2
    assert found["downloaded"] == found["logged"]
    (started,) = calls(library, "createArtifactVersionMultipartUpload")
    assert (started["status"], started["body"]["num_parts"]) == (200, 2)


def test_an_upload_over_the_budget_fails_the_library_with_the_mocks_413(library):
    found = result(library, "log_over_budget")
    assert found["raised"] == "MlFoundryException"
    assert "413" in found["cause_message"] and "41302" in found["cause_message"]


def test_an_upload_over_the_budget_stores_nothing_and_the_version_is_marked_failed(library):
    version = library["expected"]["versions"]["artifact:acme/demo-repo/library-huge:1"]
    assert (version["status"], version["files"]) == ("failed", [])
    (marked,) = calls(library, "markArtifactVersionStageFailure")
    assert marked["status"] == 200 and [marked["body"]["id"]] == library["expected"]["failed"]


def test_library_tags_a_version_and_gets_the_409_for_a_tag_on_another(library):
    found = result(library, "tags")
    assert found["conflict"]["raised"] == "ApiError" and found["conflict"]["status"] == 409
    applied = [
        e
        for e in calls(library, "applyArtifactVersionTags")
        if e["body"]["artifact_version_id"] in (found["first"], found["second"])
    ]
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


# -- the CLI's flows -----------------------------------------------------------------------


def _manifests_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["status"] == 200, answer
    names = [m["name"] for m in answer["body"]["data"]]
    assert len(set(names)) == len(names), names  # one manifest a name
    return {m["name"]: m for m in answer["body"]["data"]}


def test_tfy_apply_of_a_role_binding_makes_operation_1_return_it(library):
    found = result(library, "cli_role_binding")
    assert found["applied"]["status"] == 0, found["applied"]["printed"]
    assert _manifests_of(found["after_apply"])[BOB_ON_THE_REPO] == ROLE_BINDING


def test_tfy_delete_of_the_role_binding_gives_operation_1_its_own_manifest_back(library):
    found = result(library, "cli_role_binding")
    assert found["deleted"]["status"] == 0, found["deleted"]["printed"]
    manifest = _manifests_of(found["after_delete"])[BOB_ON_THE_REPO]
    assert [p["resourceType"] for p in manifest["permissions"]] == ["mlf-project"]
    assert library["expected"]["role_bindings"] == []


def test_tfy_delete_of_a_role_binding_gone_fails_with_the_mocks_404(library):
    again = result(library, "cli_role_binding")["again"]
    assert again["status"] == 1 and "No role binding named" in again["printed"]


def test_tfy_apply_of_a_secret_group_makes_its_secrets_reach_their_deployment(library):
    found = result(library, "cli_secret_group")
    assert found["applied"]["status"] == 0, found["applied"]["printed"]
    names = [d["application"]["name"] for d in found["after_apply"]["body"]["data"]]
    assert sorted(names) == ["chat-api", "trainer"]  # an env value, a mounted secret


def test_tfy_delete_of_a_secret_group_cascades_as_operation_6(library):
    found = result(library, "cli_secret_group")
    assert found["deleted"]["status"] == 0, found["deleted"]["printed"]
    assert found["after_delete"]["body"]["data"] == []
    assert not set(found["secret_ids"]) & set(library["expected"]["ids"])
    assert library["expected"]["groups"] == []


def test_tfy_delete_of_a_secret_group_gone_fails_with_the_mocks_404(library):
    again = result(library, "cli_secret_group")["again"]
    assert again["status"] == 1 and "No secret group named 'llm-keys'" in again["printed"]


def test_tfy_upload_skill_stages_uploads_and_finalises_the_skill(library):
    found = result(library, "cli_skills")
    assert found["uploaded"]["status"] == 0, found["uploaded"]["printed"]
    version = library["expected"]["versions"]["agent-skill:acme/demo-repo/summarise-ticket:1"]
    assert version["status"] == "ready"
    assert version["files"] == [
        ".truefoundry/skill.tar",
        "summarise-ticket/SKILL.md",
        "summarise-ticket/examples/one.md",
    ]


def test_tfy_upload_skill_stages_with_the_sdks_inline_source(library):
    staged = [
        e["body"]["manifest"]["source"]["type"]
        for e in calls(library, "stageArtifactVersion")
        if e["body"]["manifest"]["type"] == "agent-skill"
    ]
    assert staged == ["inline", "inline"]


def test_tfy_apply_of_a_skill_from_its_folder_makes_the_next_version(library):
    found = result(library, "cli_skills")
    assert found["applied_local"]["status"] == 0, found["applied_local"]["printed"]
    fqn = "agent-skill:acme/demo-repo/summarise-ticket:2"
    assert library["expected"]["versions"][fqn]["status"] == "ready"
    assert library["expected"]["sources"][fqn] == "blob-storage"


def test_tfy_apply_of_an_inline_skill_makes_a_version_ready_at_once(library):
    found = result(library, "cli_skills")
    assert found["applied_inline"]["status"] == 0, found["applied_inline"]["printed"]
    fqn = "agent-skill:acme/demo-repo/greet:1"
    assert library["expected"]["versions"][fqn] == {
        **library["expected"]["versions"][fqn],
        "status": "ready",
        "files": [],
    }
    assert library["expected"]["sources"][fqn] == "inline"


def test_tfy_trigger_job_makes_a_run_operation_7_lists_first(library):
    found = result(library, "cli_jobs")
    assert found["triggered"]["status"] == 0, found["triggered"]["printed"]
    (first,) = found["first"]
    assert first["name"] in found["triggered"]["printed"]
    assert (first["status"], first["triggeredBy"]) == ("SCHEDULED", ALICE)


def test_tfy_terminate_job_asks_the_run_to_terminate(library):
    found = result(library, "cli_jobs")
    assert found["terminated"]["status"] == 0, found["terminated"]["printed"]
    assert '"jobRunStatus": "TERMINATION_REQUESTED"' in found["terminated"]["printed"]


def test_the_terminated_run_moves_to_terminated_through_operation_7s_filters(library):
    found = result(library, "cli_jobs")
    name = found["first"][0]["name"]
    assert [[run["name"] for run in listed] for listed in found["after"]] == [[name], [name]]
    assert found["after"][1][0]["exitCode"] == 143


def test_tfy_terminate_of_an_ended_run_fails_with_the_mocks_409(library):
    again = result(library, "cli_jobs")["again"]
    assert again["status"] == 1 and "TERMINATED" in again["printed"]
