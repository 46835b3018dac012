"""The gateway's records in the world as every other record is: a response created, its input
items, the models and the scripts are dumped, loaded back, reset, recorded from a platform's
answers, and shown by the live view."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from mock_server.fixtures import loader as fixtures
from mock_server.proxy.recording import Recorder
from tests.conftest import new_store

CHAT = "gpt-4o-mini"


@pytest.fixture
def client(server, token) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as oai:
        yield oai


def test_a_dump_holds_the_models_responses_inputs_and_scripts(admin, client, platform_mock):
    platform_mock.script_reply("first", "second", input="Count.")
    created = client.responses.create(model=CHAT, input="Count.")
    assert created.output_text == "first"
    dumped = admin.get("/state").json()
    assert [m["id"] for m in dumped["models"]][:2] == ["gpt-4o-mini", "gpt-4o"]
    (written,) = [r for r in dumped["modelResponses"] if r["response"]["id"] == created.id]
    assert [item["content"][0]["text"] for item in written["input"]] == ["Count."]
    # The script as it stands: its used reply gone, the last one staying.
    assert [s["replies"] for s in dumped["scriptedReplies"]] == [[{"text": "second"}]]


def test_a_dump_loaded_again_answers_the_same(admin, gateway, platform_mock):
    platform_mock.script_reply("first", "second", input="Count.")
    created = gateway.post("/responses", json={"model": CHAT, "input": "Count."}).json()
    store = new_store(0, [fixtures.check(admin.get("/state").json(), "dump")])
    assert store.gateway.response(created["id"]) == created
    page, more = store.gateway.input_items(created["id"], after=None, limit=20, order="asc")
    assert [i["content"][0]["text"] for i in page] == ["Count."] and not more
    assert store.gateway.reply(CHAT, "Count.", {}).text == "second"


def test_a_reset_restores_the_scripts_of_the_fixtures_unused(mock):
    document = {"scriptedReplies": [{"input": "x", "replies": [{"text": "a"}, {"text": "b"}]}]}
    store = new_store(0, [*fixtures.default_fixtures(), fixtures.check(document, "doc")])
    assert store.gateway.reply(CHAT, "x", {}).text == "a"
    store.reset()
    assert store.gateway.reply(CHAT, "x", {}).text == "a"


def test_a_model_declared_twice_names_its_record():
    document = {"models": [{"id": "gpt-4o-mini"}]}
    with pytest.raises(fixtures.FixtureError, match=r"models\[0\]: model 'gpt-4o-mini'"):
        new_store(0, [*fixtures.default_fixtures(), fixtures.check(document, "doc")])


def test_the_live_view_lists_models_and_scripts(admin, platform_mock):
    platform_mock.script_reply("Paris.", input="capital?")
    counts = admin.get("/world").json()["counts"]
    assert counts["models"] == 3 and counts["scriptedReplies"] == 1
    models = admin.get("/records", params={"kind": "models", "q": "embedding"}).json()
    assert [r["id"] for r in models["data"]] == ["text-embedding-3-small"]
    scripts = admin.get("/records", params={"kind": "scriptedReplies"}).json()["data"]
    assert json.loads(scripts[0]["record"])["replies"] == [{"text": "Paris."}]


def test_the_live_view_shows_a_responses_input(admin, client):
    created = client.responses.create(model=CHAT, input="Say hello.")
    found = admin.get("/records", params={"kind": "modelResponses", "q": created.id}).json()
    (record,) = found["data"]
    assert json.loads(record["record"])["input"][0]["content"][0]["text"] == "Say hello."


def _observe(recorder: Recorder, operation_id: str, answer, **request) -> None:
    recorder.observe(
        operation_id,
        path_params=request.get("path_params", {}),
        query=request.get("query", {}),
        body=request.get("body"),
        status=200,
        answer=answer,
        caller=None,
    )


def test_a_recording_learns_the_gateways_records_and_loads(gateway):
    recorder = Recorder()
    created = gateway.post("/responses", json={"model": CHAT, "input": "Say hello."}).json()
    _observe(recorder, "createModelResponse", created)
    items = gateway.get(f"/responses/{created['id']}/input_items").json()
    _observe(recorder, "listModelResponseInputItems", items, path_params={"id": created["id"]})
    _observe(recorder, "listModels", gateway.get("/models").json())
    body = {"model": "text-embedding-3-small", "input": "x", "encoding_format": "base64"}
    _observe(recorder, "createEmbedding", gateway.post("/embeddings", json=body).json(), body=body)
    document, _ = recorder.document()
    assert document["modelResponses"][0]["input"] == items["data"]
    embedder = [m for m in document["models"] if m["id"] == "text-embedding-3-small"]
    assert embedder[0]["type"] == "embedding" and embedder[0]["dimensions"] == 1536
    store = new_store(0, [fixtures.check(document, "recorded")])
    assert store.gateway.response(created["id"]) == created
    assert store.gateway.model("text-embedding-3-small", "embedding").dimensions == 1536


def test_a_recording_forgets_a_response_deleted(client):
    recorder = Recorder()
    created = client.responses.create(model=CHAT, input="Say hello.")
    _observe(recorder, "createModelResponse", created.model_dump(mode="json"))
    _observe(recorder, "deleteModelResponse", None, path_params={"id": created.id})
    assert "modelResponses" not in recorder.document()[0]
