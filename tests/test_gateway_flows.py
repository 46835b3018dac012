"""The gateway as its users call it, with `openai` (3.x, this environment's): chat
completions plain and streamed, embeddings, models, and the Responses API around operation 8
(create, retrieve, list input items, delete); replies scripted from fixtures, through the
admin API and the pytest plugin, with their delays and faults; deterministic replies
otherwise.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types import CreateEmbeddingResponse, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

from mock_server.fixtures import loader as fixtures
from tests.conftest import assert_error
from tests.sdk_oracle import disagreements

CHAT = "gpt-4o-mini"
EMBEDDER = "text-embedding-3-small"
HELLO: Any = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def client(server, token) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as oai:
        yield oai


def _streamed_text(chunks: list[ChatCompletionChunk]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


# -- chat completions -----------------------------------------------------------------------


def test_chat_completion_validates_strictly_as_openai_reads_it(gateway):
    raw = gateway.post("/chat/completions", json={"model": CHAT, "messages": HELLO})
    assert raw.status_code == 200, raw.text
    assert disagreements(ChatCompletion, raw.content) == []


def test_chat_completion_without_a_script_is_the_same_twice(client):
    first = client.chat.completions.create(model=CHAT, messages=HELLO)
    second = client.chat.completions.create(model=CHAT, messages=HELLO)
    assert first.choices[0].message.content == second.choices[0].message.content
    assert first.choices[0].message.content
    assert first.id != second.id


def test_chat_completion_differs_for_another_conversation(client):
    hello = client.chat.completions.create(model=CHAT, messages=HELLO)
    other = client.chat.completions.create(
        model=CHAT, messages=[{"role": "user", "content": "Say goodbye."}]
    )
    assert hello.choices[0].message.content != other.choices[0].message.content


def test_chat_completion_is_the_same_in_another_mock_of_the_seed(client, store):
    from mock_server import MockConfig, PlatformMock

    reply = client.chat.completions.create(model=CHAT, messages=HELLO).choices[0].message
    other = PlatformMock(MockConfig(seed=store.seed))
    assert other.store.gateway.derived_text(CHAT, {"messages": HELLO}) == reply.content


def test_streamed_chat_completion_adds_up_to_the_plain_one(client):
    plain = client.chat.completions.create(model=CHAT, messages=HELLO)
    chunks = list(client.chat.completions.create(model=CHAT, messages=HELLO, stream=True))
    assert _streamed_text(chunks) == plain.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1


def test_chat_stream_is_the_chunk_sequence_ending_in_done(gateway):
    body = {"model": CHAT, "messages": HELLO, "stream": True}
    raw = gateway.post("/chat/completions", json=body)
    assert raw.headers["content-type"].startswith("text/event-stream")
    events = [e for e in raw.text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    for event in events[:-1]:
        assert event.startswith("data: ")
        assert disagreements(ChatCompletionChunk, event[6:].encode()) == []


def test_usage_counts_the_words_of_the_reply(client):
    completion = client.chat.completions.create(model=CHAT, messages=HELLO)
    usage = completion.usage
    assert usage is not None
    assert usage.completion_tokens == len(completion.choices[0].message.content.split())
    assert usage.prompt_tokens == 2  # "Say hello."
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_streamed_usage_matches_the_chunks(client):
    chunks = list(
        client.chat.completions.create(
            model=CHAT, messages=HELLO, stream=True, stream_options={"include_usage": True}
        )
    )
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None
    words = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert usage.completion_tokens == len(words)


def test_max_tokens_cuts_the_reply_with_finish_reason_length(client):
    cut = client.chat.completions.create(model=CHAT, messages=HELLO, max_tokens=2)
    assert cut.choices[0].finish_reason == "length"
    assert len(cut.choices[0].message.content.split()) == 2
    assert cut.usage is not None and cut.usage.completion_tokens == 2


def test_each_of_n_choices_carries_the_reply(client):
    completion = client.chat.completions.create(model=CHAT, messages=HELLO, n=3)
    assert [c.index for c in completion.choices] == [0, 1, 2]
    assert len({c.message.content for c in completion.choices}) == 1


@pytest.mark.platform_mock(expect_violations=True)
def test_an_unknown_model_is_openais_not_found(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gpt-nope", messages=HELLO)
    error = raised.value
    assert (error.type, error.code, error.param) == ("not_found_error", "model_not_found", "model")
    assert "gpt-nope" in error.message
    assert error.response.json()["code"] == 40420


def test_an_embedding_model_does_not_chat(client):
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=EMBEDDER, messages=HELLO)
    assert raised.value.code == "40010"


@pytest.mark.platform_mock(expect_violations=True)
def test_a_parameter_openai_does_not_take_is_400(gateway):
    body = {"model": CHAT, "messages": HELLO, "temprature": 0.5}
    assert_error(gateway.post("/chat/completions", json=body), 400, 40001)


# -- scripted replies -------------------------------------------------------------------------


def test_a_scripted_reply_answers_the_matching_input(client, platform_mock):
    platform_mock.script_reply("Paris.", input="What is the capital of France?")
    asked = [{"role": "user", "content": "What is the capital of France?"}]
    assert client.chat.completions.create(model=CHAT, messages=asked).choices[
        0
    ].message.content == ("Paris.")
    assert client.chat.completions.create(model=CHAT, messages=HELLO).choices[
        0
    ].message.content != ("Paris.")


def test_scripted_replies_come_in_order_and_the_last_stays(client, platform_mock):
    platform_mock.script_reply("one", "two", pattern=r"(?i)count")
    said = [
        client.chat.completions.create(
            model=CHAT, messages=[{"role": "user", "content": "Count with me"}]
        )
        .choices[0]
        .message.content
        for _ in range(3)
    ]
    assert said == ["one", "two", "two"]


def test_a_script_for_another_model_does_not_answer(client, platform_mock):
    platform_mock.script_reply("scripted", model="gpt-4o")
    assert client.chat.completions.create(model=CHAT, messages=HELLO).choices[
        0
    ].message.content != ("scripted")
    assert client.chat.completions.create(model="gpt-4o", messages=HELLO).choices[
        0
    ].message.content == ("scripted")


def test_a_script_matches_the_text_parts_of_the_last_user_message(client, platform_mock):
    platform_mock.script_reply("from parts", input="Hello there")
    parts = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": parts}]
    answer = client.chat.completions.create(model=CHAT, messages=messages)
    assert answer.choices[0].message.content == "from parts"


TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_a_script_asks_for_tool_calls(client, platform_mock):
    platform_mock.script_reply(
        {"toolCalls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    )
    completion = client.chat.completions.create(model=CHAT, messages=HELLO, tools=[TOOL])
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_streamed_tool_call_arguments_add_up(client, platform_mock):
    arguments = {"city": "Paris", "unit": "celsius"}
    platform_mock.script_reply({"toolCalls": [{"name": "get_weather", "arguments": arguments}]})
    chunks = list(
        client.chat.completions.create(model=CHAT, messages=HELLO, tools=[TOOL], stream=True)
    )
    calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
    assert calls[0].function is not None and calls[0].function.name == "get_weather"
    assert json.loads("".join(t.function.arguments or "" for t in calls if t.function)) == arguments
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_scripted_rate_limit_is_openais_rate_limit_error_once(client, platform_mock):
    platform_mock.script_reply({"fault": "rate-limit"}, "after the limit")
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model=CHAT, messages=HELLO)
    assert (raised.value.type, raised.value.code) == ("rate_limit_error", "rate_limit_exceeded")
    assert raised.value.response.json()["code"] == 42901
    after = client.chat.completions.create(model=CHAT, messages=HELLO)
    assert after.choices[0].message.content == "after the limit"


def test_a_scripted_drop_cuts_the_stream_after_its_chunks(client, platform_mock):
    platform_mock.script_reply(
        {"text": "one two three four five", "fault": "drop", "afterChunks": 3}
    )
    received: list[ChatCompletionChunk] = []
    stream = client.chat.completions.create(model=CHAT, messages=HELLO, stream=True)
    with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)):
        received.extend(stream)
    assert _streamed_text(received) == "one two "  # the role, then two words
    platform_mock.journal.assert_called("createChatCompletion", times=1)
    assert platform_mock.journal.last.dropped


def test_a_scripted_drop_of_a_reply_not_streamed_leaves_it_unanswered(client, platform_mock):
    platform_mock.script_reply({"fault": "drop"})
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model=CHAT, messages=HELLO)


def test_a_delayed_stream_does_not_hold_the_server(server, token, platform_mock):
    """While a stream waits between its chunks, the server answers other requests: one sent
    after the stream began is answered before the stream ends."""
    platform_mock.script_reply({"text": "a b c d", "chunkDelayMs": 250})
    order: list[str] = []
    began = threading.Event()

    def stream() -> None:
        with openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as oai:
            for chunk in oai.chat.completions.create(model=CHAT, messages=HELLO, stream=True):
                if chunk.choices and chunk.choices[0].delta.content:
                    began.set()
        order.append("stream ended")

    streaming = threading.Thread(target=stream)
    streaming.start()
    assert began.wait(60)
    with httpx.Client(
        base_url=server.gateway_url, headers={"Authorization": f"Bearer {token}"}
    ) as other:
        assert other.get("/models").status_code == 200
    order.append("other answered")
    streaming.join(60)
    assert order == ["other answered", "stream ended"]


def test_scripts_load_from_a_fixture_document(client, platform_mock):
    platform_mock.load(
        {
            "scriptedReplies": [
                {"model": CHAT, "pattern": "^Say", "replies": [{"text": "From the fixture."}]}
            ]
        }
    )
    answer = client.chat.completions.create(model=CHAT, messages=HELLO)
    assert answer.choices[0].message.content == "From the fixture."


def test_a_fixture_script_with_a_bad_pattern_names_it():
    with pytest.raises(fixtures.FixtureError, match=r"scriptedReplies\[0\]: pattern is not"):
        from tests.conftest import new_store

        store = new_store(0, fixtures.default_fixtures())
        store.load(
            fixtures.check(
                {"scriptedReplies": [{"pattern": "(", "replies": [{"text": "x"}]}]}, "doc"
            )
        )


def test_a_fixture_reply_with_text_and_tool_calls_is_refused():
    document = {"scriptedReplies": [{"replies": [{"text": "x", "toolCalls": [{"name": "f"}]}]}]}
    with pytest.raises(fixtures.FixtureError, match=r"scriptedReplies\[0\]\.replies\[0\]"):
        fixtures.check(document, "doc")


def test_the_admin_api_scripts_lists_and_clears_replies(admin, client):
    added = admin.post("/replies", json={"input": "Say hello.", "replies": [{"text": "Hi!"}]})
    assert added.status_code == 201, added.text
    assert (
        client.chat.completions.create(model=CHAT, messages=HELLO).choices[0].message.content
        == "Hi!"
    )
    listed = admin.get("/replies").json()["data"]
    assert [(s["id"], s["used"]) for s in listed] == [(added.json()["id"], 1)]
    assert admin.delete("/replies").status_code == 200
    assert admin.get("/replies").json()["data"] == []


def test_the_admin_api_refuses_a_script_the_fixture_schema_refuses(admin):
    refused = admin.post("/replies", json={"replies": [{"fault": "explode"}]})
    body = assert_error(refused, 400, 40001)
    assert "scriptedReplies[0].replies[0].fault" in body["message"]
    assert admin.get("/replies").json()["data"] == []


def test_a_reset_forgets_scripts_and_their_use(client, platform_mock, mock):
    platform_mock.script_reply("first", "second")
    client.chat.completions.create(model=CHAT, messages=HELLO)
    mock.reset()
    assert mock.store.gateway.scripts() == []


# -- embeddings -------------------------------------------------------------------------------


def test_embeddings_validate_strictly_and_have_the_models_dimension(gateway):
    raw = gateway.post("/embeddings", json={"model": EMBEDDER, "input": ["a", "b"]})
    assert raw.status_code == 200, raw.text
    assert disagreements(CreateEmbeddingResponse, raw.content) == []
    assert [len(d["embedding"]) for d in raw.json()["data"]] == [1536, 1536]


def test_embeddings_are_stable_and_distinct(client):
    first = client.embeddings.create(model=EMBEDDER, input=["the cat", "the dog"])
    again = client.embeddings.create(model=EMBEDDER, input="the cat")
    cat, dog = (d.embedding for d in first.data)
    assert again.data[0].embedding == cat
    assert cat != dog
    assert abs(sum(v * v for v in cat) - 1) < 1e-5


def test_base64_embeddings_are_the_float_ones(gateway):
    body = {"model": EMBEDDER, "input": "the cat"}
    floats = gateway.post("/embeddings", json=body).json()["data"][0]["embedding"]
    packed = gateway.post("/embeddings", json={**body, "encoding_format": "base64"})
    raw = base64.b64decode(packed.json()["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == floats


def test_embeddings_with_fewer_dimensions(client):
    short = client.embeddings.create(model=EMBEDDER, input="the cat", dimensions=8)
    assert len(short.data[0].embedding) == 8


def test_more_dimensions_than_the_model_has_is_400(client):
    with pytest.raises(openai.BadRequestError) as raised:
        client.embeddings.create(model=EMBEDDER, input="x", dimensions=4096)
    assert raised.value.param == "dimensions"


def test_a_chat_model_does_not_embed(client):
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model=CHAT, input="x")


# -- models -----------------------------------------------------------------------------------


def test_models_are_those_of_the_fixtures(client, store):
    listed = list(client.models.list())
    assert [m.id for m in listed] == [m.id for m in store.gateway.models()]
    assert {CHAT, EMBEDDER} <= {m.id for m in listed}


def test_a_model_validates_strictly(gateway):
    raw = gateway.get(f"/models/{CHAT}")
    assert disagreements(Model, raw.content) == []


@pytest.mark.platform_mock(expect_violations=True)
def test_retrieving_an_unknown_model_is_openais_not_found(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.models.retrieve("gpt-nope")
    assert raised.value.code == "model_not_found"


def test_models_declared_by_a_fixture_are_served(client, platform_mock):
    # The platform's gateway names models `provider/model`: a `/` is fine in a body.
    platform_mock.load(
        {"models": [{"id": "acme/llama-3-8b", "ownedBy": "acme"}, {"id": "llama-guard"}]}
    )
    assert client.models.retrieve("llama-guard").owned_by == "openai"
    answer = client.chat.completions.create(model="acme/llama-3-8b", messages=HELLO)
    assert answer.model == "acme/llama-3-8b"


# -- the Responses API ------------------------------------------------------------------------


def test_a_response_created_is_retrieved_by_operation_8_with_the_same_output(client):
    created = client.responses.create(model=CHAT, input="Say hello.")
    retrieved = client.responses.retrieve(created.id)
    assert retrieved == created
    assert created.output_text


def test_a_response_created_validates_strictly(gateway):
    raw = gateway.post("/responses", json={"model": CHAT, "input": "Say hello."})
    assert raw.status_code == 200, raw.text
    # `provider` and `store`: what the platform's stored responses add to OpenAI's model.
    assert disagreements(Response, raw.content, extras=frozenset({"provider", "store"})) == []


def test_a_response_has_the_reply_a_chat_completion_gets(client):
    created = client.responses.create(model=CHAT, input="Say hello.")
    again = client.responses.create(model=CHAT, input="Say hello.")
    assert created.output_text == again.output_text
    assert created.id != again.id


def test_a_streamed_create_ends_in_the_stored_response(client):
    events = list(client.responses.create(model=CHAT, input="Say hello.", stream=True))
    assert events[0].type == "response.created"
    final = events[-1]
    assert final.type == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.response.output_text
    assert client.responses.retrieve(final.response.id) == final.response


def test_input_items_list_the_input_of_a_response(client):
    created = client.responses.create(
        model=CHAT,
        instructions="Be brief.",
        input=[
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi, how can I help?"},
            {"role": "user", "content": [{"type": "input_text", "text": "Say hello."}]},
        ],
    )
    items = list(client.responses.input_items.list(created.id, order="asc"))
    assert [(i.type, i.role) for i in items] == [
        ("message", "user"),
        ("message", "assistant"),
        ("message", "user"),
    ]
    newest_first = list(client.responses.input_items.list(created.id))
    assert [i.id for i in newest_first] == [i.id for i in reversed(items)]


def test_input_items_page_with_after_and_limit(client):
    created = client.responses.create(
        model=CHAT, input=[{"role": "user", "content": str(n)} for n in range(5)]
    )
    page = client.responses.input_items.list(created.id, order="asc", limit=2)
    assert page.has_more and len(page.data) == 2
    every = list(client.responses.input_items.list(created.id, order="asc", limit=2))
    assert [i.content[0].text for i in every] == ["0", "1", "2", "3", "4"]


def test_the_default_worlds_response_lists_its_fixture_input(client):
    items = list(client.responses.input_items.list("resp_0000000000000000000000000000demo"))
    assert [i.content[0].text for i in items] == ["Say hello."]


@pytest.mark.platform_mock(expect_violations=True)
def test_a_deleted_response_is_404_in_the_right_class(client):
    created = client.responses.create(model=CHAT, input="Say hello.")
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError) as raised:
        client.responses.retrieve(created.id)
    assert (raised.value.type, raised.value.code) == ("not_found_error", "40407")
    with pytest.raises(openai.NotFoundError):
        client.responses.input_items.list(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)


@pytest.mark.platform_mock(expect_violations=True)
def test_a_response_not_stored_is_not_retrieved(client):
    created = client.responses.create(model=CHAT, input="Say hello.", store=False)
    assert created.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)


@pytest.mark.platform_mock(expect_violations=True)
def test_a_previous_response_that_does_not_exist_is_404(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.responses.create(model=CHAT, input="x", previous_response_id="resp_missing")
    assert raised.value.param == "previous_response_id"


def test_a_scripted_function_call_is_a_response_output_item(client, platform_mock):
    platform_mock.script_reply(
        {"toolCalls": [{"name": "get_weather", "arguments": '{"city":"Oslo"}'}]}
    )
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    created = client.responses.create(model=CHAT, input="Weather?", tools=[tool])
    (call,) = created.output
    assert (call.type, call.name, call.arguments) == (
        "function_call",
        "get_weather",
        '{"city":"Oslo"}',
    )
    events = list(client.responses.create(model=CHAT, input="Weather?", tools=[tool], stream=True))
    pieces = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert pieces == '{"city":"Oslo"}'


def test_a_response_cut_by_max_output_tokens_is_incomplete(client, platform_mock):
    platform_mock.script_reply("one two three four")
    created = client.responses.create(model=CHAT, input="Count.", max_output_tokens=2)
    assert created.status == "incomplete"
    assert created.output_text == "one two "
    assert created.usage is not None and created.usage.output_tokens == 2


def test_created_responses_survive_a_dump_and_load(admin, client, server, mock):
    created = client.responses.create(model=CHAT, input="Say hello.")
    dumped = admin.get("/state").json()
    assert created.id in [r["response"]["id"] for r in dumped["modelResponses"]]
    from tests.conftest import new_store

    store = new_store(0, [fixtures.check(dumped, "dump")])
    assert (
        store.gateway.response(created.id)["output"][0]["content"][0]["text"] == created.output_text
    )
    assert store.world.response_inputs[created.id] == mock.store.world.response_inputs[created.id]
    assert [m.id for m in store.gateway.models()] == [m.id for m in mock.store.gateway.models()]


def test_a_reset_forgets_created_responses(client, mock):
    created = client.responses.create(model=CHAT, input="Say hello.")
    mock.reset()
    assert created.id not in mock.store.world.model_responses


def test_a_request_holding_integers_past_64_bits_is_answered(gateway):
    """A free-form part of a request (an image part's fields) may hold any JSON number: the
    reply derived from the request reads it as it is."""
    part = {"type": "image_url", "image_url": {"url": "x", "size": 2**70}}
    messages = [{"role": "user", "content": [part]}]
    answered = gateway.post("/chat/completions", json={"model": CHAT, "messages": messages})
    assert answered.status_code == 200, answered.text
