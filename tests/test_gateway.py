"""Operation 8, GET {gateway}/responses/{id}: OpenAI-compatible stored responses and errors.

Checked with the real `openai` client and with raw HTTP, each stored response validating
strictly as `openai.types.responses.Response`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from mock_server.handlers import gateway as handlers
from tests.conftest import assert_error
from tests.sdk_oracle import disagreements

# The two responses the default fixtures name, with their stored text (fixtures/default.yaml).
DEMO_ID = "resp_0000000000000000000000000000demo"
INCOMPLETE_ID = "resp_00000000000000000000000incomplete"
FIXTURE_TEXTS = {
    DEMO_ID: "Hello! This is a stored response from the platform mock.",
    INCOMPLETE_ID: "This answer was cut off because it reached max_output_tokens",
}
GENERATED = 3  # `- generate: 3` in the default fixtures

# Fields the source document marks required on a model response.
SOURCE_REQUIRED = {
    "id",
    "object",
    "created_at",
    "status",
    "max_output_tokens",
    "model",
    "output",
    "parallel_tool_calls",
    "previous_response_id",
    "reasoning",
    "service_tier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_p",
    "truncation",
    "usage",
    "metadata",
    "provider",
}


@pytest.fixture
def client(server, token) -> Iterator[openai.OpenAI]:
    """The real OpenAI client pointed at the gateway, authenticated as the default user."""
    with openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as oai:
        yield oai


def _generated_ids(store) -> list[str]:
    return [rid for rid in store.world.model_responses if rid not in FIXTURE_TEXTS]


def _stored_text(stored: dict) -> str:
    return "".join(
        part["text"]
        for item in stored["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )


# Every response of the default fixtures: the two named ones, and the generated ones by
# position (their ids come from the seed, so they are looked up in the store).
DEFAULT_RESPONSES = [
    pytest.param(DEMO_ID, id="demo"),
    pytest.param(INCOMPLETE_ID, id="incomplete"),
    *[pytest.param(index, id=f"generated-{index + 1}") for index in range(GENERATED)],
]


def _resolve(store, which: str | int) -> str:
    if isinstance(which, int):
        generated = _generated_ids(store)
        assert len(generated) == GENERATED
        return generated[which]
    assert which in store.world.model_responses
    return which


# --- retrieval -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response_id",
    [pytest.param(DEMO_ID, id="demo"), pytest.param(INCOMPLETE_ID, id="incomplete")],
)
def test_openai_client_retrieves_the_stored_text(client, response_id):
    response = client.responses.retrieve(response_id)
    assert isinstance(response, Response)
    assert response.id == response_id
    assert response.output_text == FIXTURE_TEXTS[response_id]


def test_openai_client_retrieves_generated_responses_with_their_stored_text(client, store):
    generated = _generated_ids(store)
    assert len(generated) == GENERATED
    for response_id in generated:
        stored = store.world.model_responses[response_id]
        response = client.responses.retrieve(response_id)
        assert response.id == response_id
        assert response.output_text == _stored_text(stored) != ""


def test_incomplete_response_says_why_it_was_cut_off(client):
    response = client.responses.retrieve(INCOMPLETE_ID)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


@pytest.mark.parametrize("which", DEFAULT_RESPONSES)
def test_default_response_validates_strictly_as_openai_response(gateway, store, which):
    response_id = _resolve(store, which)
    raw = gateway.get(f"/responses/{response_id}")
    assert raw.status_code == 200, raw.text
    assert raw.headers["content-type"] == "application/json"
    validated = Response.model_validate(raw.json(), strict=True)
    assert validated.id == response_id
    assert validated.object == "response"


def test_every_stored_response_validates_strictly_as_openai_response(gateway, store):
    response_ids = list(store.world.model_responses)
    assert len(response_ids) == len(FIXTURE_TEXTS) + GENERATED
    for response_id in response_ids:
        raw = gateway.get(f"/responses/{response_id}")
        assert raw.status_code == 200, (response_id, raw.text)
        Response.model_validate(raw.json(), strict=True)


@pytest.mark.parametrize("which", DEFAULT_RESPONSES)
def test_response_is_the_stored_object_unchanged(gateway, store, which):
    response_id = _resolve(store, which)
    body = gateway.get(f"/responses/{response_id}").json()
    assert body == store.world.model_responses[response_id]


def test_response_carries_every_field_the_source_requires(gateway):
    body = gateway.get(f"/responses/{DEMO_ID}").json()
    assert not SOURCE_REQUIRED - set(body), SOURCE_REQUIRED - set(body)
    assert isinstance(body["provider"], str) and body["provider"]
    assert isinstance(body["metadata"], dict)


def test_personal_access_token_authenticates_on_the_gateway(api, server):
    issued = api.get("/personal-access-tokens/gateway-ci").json()
    with openai.OpenAI(base_url=server.gateway_url, api_key=issued["token"], max_retries=0) as oai:
        assert oai.responses.retrieve(DEMO_ID).id == DEMO_ID


# --- errors ----------------------------------------------------------------------------------


def test_unknown_response_id_is_404(gateway, store):
    assert "resp_does_not_exist" not in store.world.model_responses
    body = assert_error(gateway.get("/responses/resp_does_not_exist"), 404, 40407)
    assert "resp_does_not_exist" in body["message"]


def test_openai_client_raises_not_found_for_unknown_id(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.responses.retrieve("resp_does_not_exist")
    assert raised.value.status_code == 404
    assert (raised.value.type, raised.value.code) == ("not_found_error", "40407")
    assert raised.value.response.json()["code"] == 40407  # the platform's, in the same body


def test_metadata_header_with_a_json_object_is_accepted(gateway):
    plain = gateway.get(f"/responses/{DEMO_ID}")
    with_metadata = gateway.get(
        f"/responses/{DEMO_ID}", headers={"x-platform-metadata": '{"team": "ml", "env": "dev"}'}
    )
    assert with_metadata.status_code == 200, with_metadata.text
    assert with_metadata.json() == plain.json()


@pytest.mark.parametrize(
    "header",
    [
        pytest.param("[1]", id="json-array"),
        pytest.param('"text"', id="json-string"),
        pytest.param("not json", id="not-json"),
        pytest.param("null", id="json-null"),
        pytest.param("42", id="json-number"),
        pytest.param("[" * 1000, id="nested-a-thousand-deep"),
        pytest.param('{"a": NaN}', id="nan"),
        pytest.param('{"a": 1e400}', id="number-out-of-range"),
        pytest.param('{"a": 1, "a": 2}', id="duplicate-key"),
        pytest.param('{"a": "\\udfff"}', id="lone-surrogate"),
    ],
)
def test_metadata_header_that_is_not_a_json_object_is_400(gateway, header):
    response = gateway.get(f"/responses/{DEMO_ID}", headers={"x-platform-metadata": header})
    body = assert_error(response, 400, 40004)
    assert [(d["location"], d["field"]) for d in body["details"]] == [
        ("header", "x-platform-metadata")
    ]


@pytest.mark.platform_mock(expect_violations=True)
def test_missing_token_is_401(anonymous, server):
    assert_error(anonymous.get(f"{server.gateway_url}/responses/{DEMO_ID}"), 401, 40101)


@pytest.mark.platform_mock(expect_violations=True)
def test_openai_client_with_a_bad_token_raises_authentication_error(platform_mock, server):
    with (
        openai.OpenAI(base_url=server.gateway_url, api_key="not-a-jwt", max_retries=0) as oai,
        pytest.raises(openai.AuthenticationError) as raised,
    ):
        oai.responses.retrieve(DEMO_ID)
    assert raised.value.status_code == 401


@pytest.mark.platform_mock(expect_violations=True)
def test_unknown_gateway_path_is_404_with_the_error_body(gateway):
    body = assert_error(gateway.get("/no-such-thing"), 404, 40401)
    assert "/no-such-thing" in body["message"]


@pytest.mark.platform_mock(expect_violations=True)
def test_unsupported_method_is_405_with_the_error_body(gateway):
    assert_error(gateway.put(f"/responses/{DEMO_ID}"), 405, 40501)


# -- what `openai`'s retrieve sends: include, include_obfuscation, starting_after, stream ------


def test_openai_client_retrieve_with_include_and_obfuscation_gets_the_same_response(
    client, gateway
):
    plain = Response.model_validate(gateway.get(f"/responses/{DEMO_ID}").json())
    included = client.responses.retrieve(
        DEMO_ID,
        include=["message.output_text.logprobs", "reasoning.encrypted_content"],
        include_obfuscation=False,
        starting_after=3,
    )
    assert included == plain


@pytest.mark.parametrize("key", [pytest.param("include", id="repeated"), "include[]"])
def test_include_is_taken_under_either_key(gateway, key):
    included = ["message.output_text.logprobs", "reasoning.encrypted_content"]
    response = gateway.get(f"/responses/{DEMO_ID}", params={key: included})
    assert response.status_code == 200, response.text


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize("key", [pytest.param("include", id="repeated"), "include[]"])
def test_include_openai_does_not_define_is_400_naming_it(gateway, key):
    response = gateway.get(
        f"/responses/{DEMO_ID}", params={key: ["message.output_text.logprobs", "bogus.value"]}
    )
    body = assert_error(response, 400, 40001)
    assert body["error"]["param"] == f"{key}[1]"
    assert body["error"]["type"] == "invalid_request_error"


@pytest.mark.platform_mock(expect_violations=True)
def test_openai_client_raises_bad_request_for_an_include_it_does_not_define(client):
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.retrieve(DEMO_ID, include=["bogus.value"])
    assert (raised.value.type, raised.value.code) == ("invalid_request_error", "40001")
    assert "bogus.value" in raised.value.message


def _events(client: openai.OpenAI, response_id: str, **options) -> list:
    return list(client.responses.retrieve(response_id, stream=True, **options))


def test_openai_stream_ends_in_the_same_response(client):
    events = _events(client, DEMO_ID)
    assert events[-1].type == "response.completed"
    assert events[-1].response == client.responses.retrieve(DEMO_ID)


def test_openai_stream_deltas_add_up_to_the_stored_text(client):
    deltas = [e.delta for e in _events(client, DEMO_ID) if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == FIXTURE_TEXTS[DEMO_ID]


def test_openai_stream_is_numbered_from_0_in_the_order_openai_streams_it(client):
    events = _events(client, DEMO_ID)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[0].response.status == "in_progress" and events[0].response.output == []


def test_incomplete_response_stream_ends_with_response_incomplete(client):
    events = _events(client, INCOMPLETE_ID)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


@pytest.mark.parametrize(
    ("status", "last"),
    [
        pytest.param("failed", "response.failed", id="failed"),
        pytest.param("cancelled", "response.failed", id="cancelled"),
        pytest.param("in_progress", "response.in_progress", id="in-progress"),
    ],
)
def test_stream_of_a_response_not_completed_ends_with_its_event(client, store, status, last):
    stored = store.gateway.add_response(status=status)
    events = _events(client, stored["id"])
    assert (events[-1].type, events[-1].response.status) == (last, status)
    assert events[-1].response == client.responses.retrieve(stored["id"])


def test_stream_of_a_queued_response_is_one_queued_event(client, store):
    stored = store.gateway.add_response(status="queued")
    (event,) = _events(client, stored["id"])
    assert (event.type, event.sequence_number, event.response.id) == (
        "response.queued",
        0,
        stored["id"],
    )


def test_starting_after_streams_only_the_later_events(client):
    every = _events(client, DEMO_ID)
    later = _events(client, DEMO_ID, starting_after=5)
    assert [e.sequence_number for e in later] == list(range(6, len(every)))
    assert later == every[6:]


def test_starting_after_the_last_event_streams_nothing(client):
    last = _events(client, DEMO_ID)[-1].sequence_number
    assert _events(client, DEMO_ID, starting_after=last) == []


def test_stream_is_server_sent_events_naming_each_events_type(gateway):
    response = gateway.get(f"/responses/{DEMO_ID}", params={"stream": "true"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = response.text.strip("\n").split("\n\n")
    for block in blocks:
        event_line, data_line = block.split("\n")
        assert (
            event_line.removeprefix("event: ")
            == json.loads(data_line.removeprefix("data: "))["type"]
        )
    assert "[DONE]" not in response.text


# The two fields of a stored response the openai package does not declare (the source
# document requires them; OpenAI-compatible clients keep them), inside an event.
STREAM_EXTRAS = frozenset({"response.provider", "response.store"})


def test_stream_events_validate_strictly_as_openai_stream_events(gateway, store):
    for response_id in store.world.model_responses:
        text = gateway.get(f"/responses/{response_id}", params={"stream": "true"}).text
        for block in text.strip("\n").split("\n\n"):
            data = block.split("\n")[1].removeprefix("data: ")
            assert disagreements(ResponseStreamEvent, data, extras=STREAM_EXTRAS) == [], data


def test_stream_is_the_same_bytes_every_time(gateway):
    params = {"stream": "true"}
    first = gateway.get(f"/responses/{DEMO_ID}", params=params).content
    assert gateway.get(f"/responses/{DEMO_ID}", params=params).content == first


def test_stream_of_an_unknown_id_is_the_404_error_body(gateway):
    response = gateway.get("/responses/resp_nope", params={"stream": "true"})
    assert_error(response, 404, 40407)


@pytest.mark.platform_mock(expect_violations=True)
@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"stream": "yes"}, id="stream-not-boolean"),
        pytest.param({"starting_after": "-1"}, id="starting-after-negative"),
        pytest.param({"starting_after": "one"}, id="starting-after-not-integer"),
        pytest.param({"include_obfuscation": "maybe"}, id="obfuscation-not-boolean"),
        pytest.param({"include": ""}, id="include-empty"),
    ],
)
def test_a_retrieve_parameter_that_breaks_the_contract_is_400(gateway, params):
    response = gateway.get(f"/responses/{DEMO_ID}", params=params)
    body = assert_error(response, 400, 40001)
    (name,) = params
    assert {d["field"].removesuffix("[0]") for d in body["details"]} == {name}


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(
            {"type": "response.created", "sequence_number": 0, "output_index": 0},
            id="breaks-its-schema",
        ),
        pytest.param({"type": "response.done", "sequence_number": 0}, id="unknown-type"),
    ],
)
def test_a_streamed_event_that_breaks_the_contract_is_the_mocks_own_500(
    gateway, monkeypatch, event
):
    # Response validation reads every event the mock sends, as it reads a JSON body.
    monkeypatch.setattr(
        handlers, "response_events", lambda response: [{**event, "response": response}]
    )
    response = gateway.get(f"/responses/{DEMO_ID}", params={"stream": "true"})
    assert_error(response, 500, 50001)


def test_a_tools_integer_past_64_bits_is_echoed_back_not_a_500(gateway):
    big = 2**75  # JSON has no bound; orjson, which writes the answers, stops at 64 bits
    tool = {"type": "function", "name": "f", "parameters": {"type": "object", "maximum": big}}
    answer = gateway.post(
        "/responses", json={"model": "gpt-4o-mini", "input": "hi", "tools": [tool]}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["tools"][0]["parameters"]["maximum"] == big
