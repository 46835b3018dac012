"""Recording a world through the proxy: a client's requests to a platform (here the mock's
default world) recorded as a fixture document that the mock loads, and that answers the
recorded requests as the platform did, ids and all.

One recording for the module: the requests below go through a proxy in front of a mock of
the default world; the document it writes is loaded into a mock of no other fixtures, which
is then sent the same requests with its own token for the same user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mock_server.core import escape
from mock_server.handlers import catalog
from mock_server.http.mock import MockConfig, PlatformMock
from mock_server.http.server import BackgroundServer
from mock_server.proxy.forward import BackgroundProxy, Proxy
from mock_server.proxy.recording import LEARNERS, Recorder, RecordingRefused
from mock_server.pytest_plugin import ssl_context
from mock_server.state.fixture_format import FixtureDocument
from tests.conftest import CONTROL_PLANE

SECRET_VALUES = ("sk-mock-1", "sk-mock-2", "hf-mock-1", "hunter2")


@dataclass(frozen=True)
class Request:
    name: str
    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None


def recorded_requests(store) -> list[Request]:
    """A client's read requests of the default world, each operation that reads."""
    trainer = store.deployments.application_named("trainer").id
    me = store.identity.subject_named("user", "alice@acme.example").id
    team = store.identity.subject_named("team", "ml-platform").id
    secrets = {s.key: s.id for s in store.secrets.group_named("llm-keys").secrets.values()}
    runs = f"{CONTROL_PLANE}/jobs/{trainer}/runs"
    return [
        Request("session", "GET", f"{CONTROL_PLANE}/session"),
        Request(
            "user role bindings",
            "GET",
            f"{CONTROL_PLANE}/role-bindings/generate-manifest",
            {"subjectType": "user", "subjectId": me},
        ),
        Request(
            "team role bindings",
            "GET",
            f"{CONTROL_PLANE}/role-bindings/generate-manifest",
            {"subjectType": "team", "subjectId": team},
        ),
        Request("runs page 1", "GET", runs, {"limit": 10}),
        Request("runs page 2", "GET", runs, {"limit": 10, "offset": 10}),
        Request("runs page 3", "GET", runs, {"limit": 10, "offset": 20}),
        Request("runs by status", "GET", runs, {"status": ["FAILED", "RUNNING"]}),
        Request("runs by trigger", "GET", runs, {"triggeredBy": "bob@acme.example"}),
        Request("runs by duration", "GET", runs, {"sortBy": "duration", "order": "asc"}),
        *(
            Request(
                f"deployments of {key}",
                "POST",
                f"{CONTROL_PLANE}/secrets/deployments",
                json={"secretIds": [secret]},
            )
            for key, secret in secrets.items()
        ),
        Request(
            "deployments of both",
            "POST",
            f"{CONTROL_PLANE}/secrets/deployments",
            json={"secretIds": list(secrets.values())},
        ),
        Request(
            "model response", "GET", "/gateway/responses/resp_0000000000000000000000000000demo"
        ),
        Request("token", "GET", f"{CONTROL_PLANE}/personal-access-tokens/ci"),
        Request("token again", "GET", f"{CONTROL_PLANE}/personal-access-tokens/ci"),
        Request("min cli version", "GET", f"{CONTROL_PLANE}/min-cli-version"),
    ]


def send(url: str, token: str, requests: list[Request]) -> dict[str, httpx.Response]:
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, verify=ssl_context()
    ) as client:
        return {
            r.name: client.request(r.method, r.path, params=r.params, json=r.json) for r in requests
        }


@dataclass
class Recording:
    path: Path
    text: str
    requests: list[Request]
    recorded: dict[str, httpx.Response]
    replayed: dict[str, httpx.Response]
    target: PlatformMock
    replay: PlatformMock
    tokens: list[str]


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Recording:
    path = tmp_path_factory.mktemp("recording") / "world.yaml"
    target = PlatformMock()
    requests = recorded_requests(target.store)
    with BackgroundServer(target) as served:
        token = served.coordinates.token
        assert token is not None
        recorder = Recorder()
        with BackgroundProxy(Proxy(served.url, recorder=recorder)) as proxy:
            recorded = send(proxy.url, token, requests)
    recorder.write(path)
    replay = PlatformMock(MockConfig(default_fixtures=False, fixtures=[path]))
    with BackgroundServer(replay) as served_again:
        replay_token = served_again.coordinates.token
        assert replay_token is not None
        replayed = send(served_again.url, replay_token, requests)
    issued = recorded["token"].json()["token"]
    return Recording(
        path, path.read_text(), requests, recorded, replayed, target, replay, [token, issued]
    )


REPLAYED_THE_SAME = [
    "session",
    "user role bindings",
    "team role bindings",
    "runs page 1",
    "runs page 2",
    "runs page 3",
    "runs by status",
    "runs by trigger",
    "runs by duration",
    "deployments of OPENAI_API_KEY",
    "deployments of HF_TOKEN",
    "deployments of both",
    "model response",
    "min cli version",
]


@pytest.mark.parametrize("name", REPLAYED_THE_SAME, ids=lambda name: name.replace(" ", "-"))
def test_the_recorded_world_answers_a_recorded_request_the_same(recording: Recording, name: str):
    recorded, replayed = recording.recorded[name], recording.replayed[name]
    assert (replayed.status_code, replayed.json()) == (200, recorded.json())


def test_a_recorded_token_is_found_again_with_its_record(recording: Recording):
    recorded, replayed = recording.recorded["token again"], recording.replayed["token"]
    assert (replayed.json()["data"], replayed.json()["created"]) == (
        recorded.json()["data"],
        False,
    )


def test_the_recording_loads_as_a_fixture_document_of_the_mock(recording: Recording):
    assert recording.replay.store.identity.tenant.name == "acme"


def test_the_caller_is_the_first_user_whose_token_the_mock_prints(recording: Recording):
    assert yaml.safe_load(recording.text)["users"][0]["email"] == "alice@acme.example"


def test_ids_are_kept(recording: Recording):
    trainer = recording.target.store.deployments.application_named("trainer").id
    assert recording.replay.store.deployments.application_named("trainer").id == trainer


def test_the_recording_holds_no_token(recording: Recording):
    assert [token for token in recording.tokens if token in recording.text] == []


def test_the_recording_holds_no_secret_value(recording: Recording):
    assert [value for value in SECRET_VALUES if value in recording.text] == []


def test_its_header_names_each_placeholder(recording: Recording):
    header = [line for line in recording.text.split("\n") if line.startswith("#")]
    assert any("the manifest of version 1 is a copy of a version seen" in line for line in header)


def test_what_no_answer_showed_is_not_made_up(recording: Recording):
    applications = {a["name"] for a in yaml.safe_load(recording.text)["applications"]}
    assert applications == {"trainer", "chat-api"}  # legacy-etl and reporting were never seen


# -- what writes show, and what answers prove ---------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[FixtureDocument, list[str], PlatformMock]:
    """A recording of staging, tagging and failing versions, by a caller whose role bindings
    were never asked for: the document, its notes, and the mock loaded from it."""
    target = PlatformMock()
    with BackgroundServer(target) as served:
        bob = target.store.identity.subject_named("user", "bob@acme.example")
        token = target.auth.dev_token(bob)
        recorder = Recorder()
        with (
            BackgroundProxy(Proxy(served.url, recorder=recorder)) as proxy,
            httpx.Client(
                base_url=proxy.url + CONTROL_PLANE, headers={"Authorization": f"Bearer {token}"}
            ) as api,
        ):
            ids = []
            for name in ("tokenizer", "tokenizer", "vocab"):
                manifest = {
                    "type": "artifact-version",
                    "name": name,
                    "ml_repo": "demo-repo",
                    "source": {"type": "platform", "uri": f"s3://bucket/{name}/"},
                }
                staged = api.post("/artifact-versions/stage", json={"manifest": manifest})
                ids.append(staged.json()["id"])
            first = {"artifact_version_id": ids[0], "tags": ["best"]}
            api.put("/artifact-versions/tags", json=first)
            api.put(
                "/artifact-versions/tags",
                json={"artifact_version_id": ids[1], "tags": ["best"], "force": True},
            )
            api.post("/artifact-versions/mark-stage-failure", json={"id": ids[2]})
    path = tmp_path_factory.mktemp("written") / "world.yaml"
    recorder.write(path)
    document, notes = recorder.document()
    return document, notes, PlatformMock(MockConfig(default_fixtures=False, fixtures=[path]))


def test_staged_versions_are_recorded_with_their_ids(written):
    document, _, loaded = written
    recorded = {v["id"] for v in document["artifactVersions"]}
    assert set(loaded.store.world.artifact_versions) == recorded


def test_a_moved_tag_is_recorded_on_the_version_it_moved_to(written):
    document, _, _ = written
    assert [v.get("tags", []) for v in document["artifactVersions"][:2]] == [[], ["best"]]


def test_a_failed_staging_is_recorded_failed(written):
    document, _, loaded = written
    failed = [v["id"] for v in document["artifactVersions"] if v.get("failed")]
    assert [loaded.store.world.artifact_versions[i].failed for i in failed] == [True]


def test_the_grant_a_write_proved_is_added_and_named(written):
    document, notes, _ = written
    grant = {
        "subject": "user:bob@acme.example",
        "role": "mlf-project-editor",
        "resource": "mlf-project:demo-repo",
    }
    named = any("mlf-project-editor" in note for note in notes)
    assert (grant in document["grants"], named) == (True, True)


def test_the_recording_learns_from_every_operation_its_entry_says_is_recorded():
    """A new operation of the contract is learnt from, or its catalog entry says that its
    answer shows nothing of the world (`recorded=False`): never silently left out."""
    recorded = {operation for operation, entry in catalog.PLATFORM.items() if entry.recorded}
    assert recorded == set(LEARNERS)


# -- what a recording writes is what was meant ----------------------------------------------------

INJECTED = "\nagents: [{name: injected}]"


def _runs_of_a_job(job: str) -> Recorder:
    """A recorder that saw the runs of a job named as no fixture can name it (left out, and
    said so in a note that quotes its id and name)."""
    recorder = Recorder()
    run = {
        "id": "r-1", "name": "r", "status": "RUNNING", "createdAt": 1700000000000,
        "deploymentVersion": 1, "applicationName": job, "command": job,
    }  # fmt: skip
    recorder.observe(
        "listJobRuns", path_params={"jobId": job}, query={}, body=None, status=200,
        answer={"data": [run]}, caller=None,
    )  # fmt: skip
    return recorder


@pytest.mark.parametrize(
    "separator",
    [
        pytest.param("\u2028", id="line-separator"),
        pytest.param("\u2029", id="paragraph-separator"),
        pytest.param("\x85", id="next-line"),
    ],
)
def test_a_note_quoting_a_separator_stays_a_comment(tmp_path, separator: str):
    job = f"j{separator}{INJECTED.strip()}"
    path = _runs_of_a_job(job).write(tmp_path / "world.yaml")
    text = path.read_text()
    assert "agents" not in yaml.safe_load(text)
    assert all(line.startswith("#") for line in text.split("\n") if "injected" in line)
    assert separator not in text


@pytest.mark.parametrize(
    ("job", "refused"),
    [
        pytest.param(f"j{INJECTED}", r"read back as YAML \(line 5\)", id="not-yaml"),
        pytest.param("j\nother: x #", r"the world recorded \(sections other\)", id="other-yaml"),
    ],
)
def test_a_recording_that_would_not_read_back_as_meant_is_refused(
    tmp_path, monkeypatch, job: str, refused: str
):
    # As if a note were written unescaped: its line feed would start a line of YAML.
    monkeypatch.setattr(escape, "text", lambda value: str(value))
    target = tmp_path / "world.yaml"
    target.write_text("kept: as it was\n")
    with pytest.raises(RecordingRefused, match=refused):
        _runs_of_a_job(job).write(target)
    assert target.read_text() == "kept: as it was\n"
