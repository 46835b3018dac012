"""Gateway errors in both dialects: the platform's fields and OpenAI's `error` object in one
body, so that `openai` raises its own exception classes with `.type`, `.param` and a string
`.code`, while the platform's integer `code` stays in the body.

The other clients (`openai` 2.x, LangChain, the platform's gateway SDK) are checked in
`tests/test_gateway_clients.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from mock_server.contract import validation
from tests.conftest import assert_error

DEMO_ID = "resp_0000000000000000000000000000demo"

pytestmark = pytest.mark.platform_mock(expect_violations=True)


@pytest.fixture
def client(server, token) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.gateway_url, api_key=token, max_retries=0) as oai:
        yield oai


@pytest.fixture
def stranger(server) -> Iterator[openai.OpenAI]:
    """`openai` with a key the mock never issued."""
    with openai.OpenAI(base_url=server.gateway_url, api_key="sk-not-ours", max_retries=0) as oai:
        yield oai


def test_not_found_carries_both_dialects(gateway):
    body = assert_error(gateway.get("/responses/resp_missing"), 404, 40407)
    assert body["error"] == {
        "message": body["message"],
        "type": "not_found_error",
        "param": None,
        "code": "40407",
    }


def test_a_violation_names_its_parameter_in_param(gateway):
    response = gateway.get(f"/responses/{DEMO_ID}", params={"starting_after": -1})
    body = assert_error(response, 400, 40001)
    assert body["error"]["param"] == "starting_after"


def test_control_plane_errors_stay_in_the_platform_dialect(api):
    response = api.get("/jobs/no-such-job/runs")
    assert "error" not in assert_error(response, 404, 40406)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/no-such-thing", id="unknown-path"),
        pytest.param("/v1/chat/completions", id="with-a-version-segment"),
        pytest.param("", id="the-prefix-itself"),
    ],
)
def test_a_path_the_gateway_lacks_is_401_without_a_good_token(anonymous, server, path):
    body = assert_error(anonymous.get(server.gateway_url + path), 401, 40101)
    assert body["error"]["type"] == "authentication_error"


def test_a_path_the_gateway_lacks_is_404_with_a_good_token(gateway):
    body = assert_error(gateway.get("/no-such-thing"), 404, 40401)
    assert body["error"]["type"] == "not_found_error"


def test_openai_not_found_error_with_type_and_string_code(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.responses.retrieve("resp_missing")
    error = raised.value
    assert (error.type, error.code, error.param) == ("not_found_error", "40407", None)
    assert error.message == "Error code: 404 - No model response with id 'resp_missing'"
    assert error.response.json()["code"] == 40407


def test_openai_authentication_error_with_type_and_string_code(stranger):
    with pytest.raises(openai.AuthenticationError) as raised:
        stranger.responses.retrieve(DEMO_ID)
    assert (raised.value.type, raised.value.code) == ("authentication_error", "invalid_api_key")
    assert raised.value.response.json()["code"] == 40102


def test_openai_bad_request_error_with_type_param_and_string_code(client):
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.retrieve(DEMO_ID, starting_after=-1)
    error = raised.value
    assert (error.type, error.code, error.param) == (
        "invalid_request_error",
        "40001",
        "starting_after",
    )


@pytest.mark.parametrize(
    ("request_kwargs", "status", "code"),
    [
        pytest.param({"params": {"q": "x" * 17_000}}, 414, 41401, id="target-too-long"),
        pytest.param({"headers": {f"x-h{n}": "v" for n in range(120)}}, 431, 43101, id="headers"),
    ],
)
def test_a_request_past_the_limits_is_refused_in_both_dialects(
    gateway, request_kwargs, status, code
):
    # Refused outermost, before routing: the refusal still speaks OpenAI's dialect on the
    # gateway, for `openai` to raise its own exception class.
    body = assert_error(gateway.get("/models", **request_kwargs), status, code)
    assert body["error"]["code"] == str(code)


def test_a_body_of_many_nested_lists_is_refused_in_a_short_answer(gateway):
    inputs = [[-1] * 650] * 500  # wrong under every branch of the input's oneOf
    response = gateway.post(
        "/embeddings", json={"model": "text-embedding-3-small", "input": inputs}
    )
    body = assert_error(response, 400, 40001)
    assert len(response.content) < 2_000
    assert body["details"][0]["field"] == "input"


NATURAL = {"type": "integer", "minimum": 0}


def explained_copy(schema: dict, value: Any) -> tuple[list, Any]:
    """The violations of a value under a schema, and the copy of it that was explained."""
    compiled = validation.CompiledSchema(schema, validation.RequestValidator)
    explained = []
    explainer = compiled.explainer

    class Recording:
        def iter_errors(self, value):
            explained.append(value)
            return explainer.iter_errors(value)

    compiled.explainer = Recording()
    found = validation.ruled_violations(compiled, value, "body")
    assert len(explained) == 1
    return found, explained[0]


def test_a_value_of_many_nested_lists_is_explained_from_its_first_values_only():
    # Each list cut alone, 500 lists of 650 numbers stayed 325,000 values: seconds of the
    # event loop to explain under a oneOf. What is explained holds the first values only.
    lists_of_naturals = {"type": "array", "items": {"type": "array", "items": NATURAL}}
    schema = {"oneOf": [{"type": "string"}, lists_of_naturals]}
    found, explained = explained_copy(schema, [[-1] * 650] * 500)
    assert found
    assert not validation._more_values_than(explained, validation.MAX_EXPLAINED_VALUES)


def test_an_object_of_many_fields_is_explained_from_its_first_fields_only():
    # 125,000 fields took 0.8 s to explain (under a oneOf, once a branch), each field
    # reported with its own sorted list of the allowed ones; the answer lists the first 100.
    closed = {"type": "object", "properties": {"name": {}}, "additionalProperties": False}
    fields = {f"field-{n:06}": 0 for n in range(20_000)}
    found, explained = explained_copy(closed, fields)
    assert len(explained) == validation.MAX_EXPLAINED_VALUES
    assert len(found) == validation.MAX_DETAILS
    assert found[0][1]["field"] == "field-000000"


def test_a_huge_violating_value_is_refused_in_a_short_answer(gateway):
    # Explained whole, 100,000 items under a oneOf answered 1.5 MB after seconds of the
    # event loop; past 3,000 values the explanation is of the value's first values, cut short.
    inputs = ["x"] * 100_000
    response = gateway.post(
        "/embeddings", json={"model": "text-embedding-3-small", "input": inputs}
    )
    body = assert_error(response, 400, 40001)
    assert len(response.content) < 2_000
    assert body["details"][0]["field"] == "input"


def test_a_huge_value_wrong_past_its_first_values_is_not_said_to_break_what_it_keeps(gateway):
    # The cut that explains a huge value ends its room on a valid `logit_bias` of 3,000
    # entries; the `messages` after it were cut to [] and explained as "should be
    # non-empty", a violation the request does not have (and the error's `param`).
    body = {
        "model": "gpt-4o-mini",
        "logit_bias": {str(token): 1 for token in range(3000)},
        "messages": [{"role": "user", "content": "hi"}],
        "n": -1,
    }
    response = gateway.post("/chat/completions", json=body)
    found = assert_error(response, 400, 40001)
    assert "messages" not in [detail["field"] for detail in found["details"]]
