"""The records the users' flows make, known to the rest of the mock: a world's dump loads back
as the same world (files, applied role bindings, moving runs, applied secret groups); fixtures
that hold them are checked; the live view lists them; a recording of a platform's answers
learns them."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
import yaml

from mock_server.fixtures import loader as fixtures
from mock_server.http.mock import MockConfig, PlatformMock
from mock_server.http.server import BackgroundServer
from mock_server.proxy.forward import BackgroundProxy, Proxy
from mock_server.proxy.recording import Recorder
from mock_server.state import storage
from mock_server.state.fixture_format import FixtureDocument
from tests.conftest import CONTROL_PLANE, new_store

BINARY = bytes(range(256)) * 3


def _flows(api: httpx.Client) -> None:
    """A little of every flow: files uploaded and a version finalised, a binding and a group
    applied, a run triggered and one terminated."""
    manifest = {"type": "artifact-version", "name": "flows", "ml_repo": "demo-repo"}
    staged = api.post(
        "/artifact-versions/stage",
        json={"manifest": {**manifest, "source": {"type": "truefoundry"}}},
    ).json()
    signed = api.post(
        "/artifact-versions/signed-urls",
        json={"id": staged["id"], "paths": ["a.txt", "b/c.bin"], "operation": "WRITE"},
    ).json()["data"]
    httpx.put(signed[0]["signed_url"], content="text, été\n".encode())
    httpx.put(signed[1]["signed_url"], content=BINARY)
    source = {"type": "truefoundry", "uri": staged["storage_root"]}
    assert api.put(
        "/artifact-versions", json={"manifest": {**manifest, "source": source}}
    ).is_success
    binding = {
        "type": "role-binding",
        "name": "flows-binding",
        "subjects": [{"type": "team", "name": "ml-platform"}],
        "permissions": [{"resourceType": "tenant", "resourceFqn": "acme", "role": "tenant-viewer"}],
    }
    group = {
        "type": "secret-group",
        "name": "flows-keys",
        "integration_fqn": "acme:aws:secrets-manager",
        "secrets": [{"key": "K", "value": "v1"}],
    }
    for applied in (binding, group, {**group, "secrets": [{"key": "K", "value": "v2"}]}):
        assert api.put("/apply", json={"manifest": applied}).is_success
    api.post("/jobs/trigger", json={"deploymentId": "deployment-trainer-2"})
    api.post(
        "/jobs/terminate",
        params={"deploymentId": "deployment-trainer-2", "jobRunName": "trainer-nightly"},
    )


def _without_clock(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "clock"}


def test_a_dump_of_the_flows_world_loads_back_as_the_same_world(api, store):
    _flows(api)
    dumped = store.dump()
    loaded = new_store(0, [fixtures.check(dumped, "dump")])
    assert loaded.dump() == dumped
    version = next(v for v in loaded.world.artifact_versions.values() if "flows" in v.fqn)
    assert loaded.world.blobs[version.files["b/c.bin"].blob] == BINARY
    assert set(loaded.world.moving_runs) == set(store.world.moving_runs)


def test_a_dump_writes_text_files_as_text_and_other_files_in_base64(api, store):
    _flows(api)
    (record,) = [r for r in store.dump()["artifactVersions"] if r["manifest"]["name"] == "flows"]
    assert record["files"] == [
        {"path": "a.txt", "text": "text, été\n"},
        {"path": "b/c.bin", "base64": base64.b64encode(BINARY).decode()},
    ]


def test_a_dump_holds_no_secret_value_in_the_role_bindings_and_groups_it_adds(api, store):
    _flows(api)
    dumped = store.dump()
    assert dumped["roleBindings"][0]["name"] == "flows-binding"
    assert all(g.get("binding") is None for g in dumped["grants"])


def _document(version: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "tenant": "acme",
            "users": [{"email": "a@acme.example"}],
            "mlRepos": [{"name": "repo"}],
            "grants": [
                {
                    "subject": "user:a@acme.example",
                    "role": "tenant-admin",
                    "resource": "tenant:acme",
                }
            ],
            "artifactVersions": [
                {
                    "manifest": {
                        "type": "artifact-version",
                        "name": "x",
                        "ml_repo": "repo",
                        "source": {"type": "truefoundry"},
                    },
                    **version,
                }
            ],
        }
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        pytest.param({"staged": True, "failed": True}, "staged or failed, not both", id="both"),
        pytest.param(
            {"failed": True, "files": [{"path": "a", "text": "x"}]},
            "keeps no files",
            id="failed-with-files",
        ),
        pytest.param({"files": [{"path": "../a", "text": "x"}]}, "`..`", id="outside"),
        pytest.param({"files": [{"path": "a", "base64": "%%%"}]}, "base64", id="not-base64"),
    ],
)
def test_a_fixture_version_that_breaks_a_rule_names_its_record(version, expected, tmp_path):
    path = tmp_path / "world.yaml"
    path.write_text(_document(version))
    with pytest.raises(fixtures.FixtureError) as raised:
        new_store(0, [fixtures.load(path)])
    assert "artifactVersions[0]" in str(raised.value) or "line" in str(raised.value)
    assert expected in str(raised.value).replace("Incorrect padding", "base64")


def test_a_fixture_file_over_the_budget_is_refused_as_an_upload_is(tmp_path, monkeypatch):
    # A budget of 1 KiB for the test: a fixture of 16 MiB in base64 takes seconds to read.
    monkeypatch.setattr(storage, "FILE_BYTES", 1024)
    path = tmp_path / "world.yaml"
    big = base64.b64encode(bytes(1025)).decode()
    path.write_text(_document({"files": [{"path": "big.bin", "base64": big}]}))
    with pytest.raises(fixtures.FixtureError, match="would hold more than 1024 bytes"):
        new_store(0, [fixtures.load(path)])


def test_a_fixture_run_that_cannot_move_is_refused():
    document = fixtures.default_fixtures()[0].data
    runs = [
        {
            "status": "FINISHED",
            "createdAt": "2025-01-01T00:00:00Z",
            "durationSeconds": 1,
            "moving": True,
        }
    ]
    applications = document["applications"]
    assert isinstance(applications, list) and isinstance(applications[0], dict)
    trainer = {**applications[0], "runs": runs}
    data = {**document, "applications": [trainer]}
    with pytest.raises(fixtures.FixtureError, match="does not move"):
        new_store(0, [fixtures.check(data, "world")])


# -- the live view ----------------------------------------------------------------------------


def test_the_live_view_lists_applied_role_bindings(api, admin):
    _flows(api)
    found = admin.get("/records", params={"kind": "roleBindings"}).json()
    assert [r["title"] for r in found["data"]] == ["flows-binding"]
    assert admin.get("/world").json()["counts"]["roleBindings"] == 1


def test_the_live_view_shows_a_versions_status_and_files(api, admin):
    _flows(api)
    found = admin.get("/records", params={"kind": "artifactVersions", "q": "flows"}).json()
    (record,) = found["data"]
    shown = json.loads(record["record"])  # indented JSON text
    assert shown["status"] == "ready"
    assert [f["path"] for f in shown["files"]] == ["a.txt", "b/c.bin"]


# -- a recording -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[FixtureDocument, PlatformMock]:
    """A recording of the flows, through the proxy, and the mock loaded from it."""
    target = PlatformMock()
    with BackgroundServer(target) as served:
        recorder = Recorder()
        token = target.auth.dev_token()
        with (
            BackgroundProxy(Proxy(served.url, recorder=recorder)) as proxy,
            httpx.Client(
                base_url=proxy.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {token}"}
            ) as api,
        ):
            api.get("/jobs/app-trainer/runs")  # the runs the flows then terminate
            _flows(api)
            api.get("/model-versions")
            api.get("/apps/app-trainer")
    path = tmp_path_factory.mktemp("recorded") / "world.yaml"
    recorder.write(path)
    document, _ = recorder.document()
    return document, PlatformMock(MockConfig(default_fixtures=False, fixtures=[path]))


def test_a_recording_keeps_the_versions_it_saw_finalised(recorded):
    document, loaded = recorded
    names = {v["manifest"]["name"]: v for v in document["artifactVersions"]}
    assert "staged" not in names["flows"] and names["sentiment"]["tags"] == ["production"]
    ready = {v.fqn for v in loaded.store.world.artifact_versions.values() if v.ready}
    assert {"artifact:acme/demo-repo/flows:1", "model:acme/demo-repo/sentiment:2"} <= ready


def test_a_recording_keeps_an_applied_binding_and_group(recorded):
    document, loaded = recorded
    assert [b["name"] for b in document["roleBindings"]] == ["flows-binding"]
    group = loaded.store.secrets.group_named("flows-keys")
    assert group.integration_fqn == "acme:aws:secrets-manager"


def test_a_recording_keeps_the_runs_triggered_and_terminating(recorded):
    _, loaded = recorded
    runs = {r.name: r.status for r in loaded.store.world.job_runs["app-trainer"]}
    assert runs["trainer-nightly"] == "TERMINATION_REQUESTED"
    assert "CREATED" in runs.values()
