"""The gateway with the clients its users run, unchanged: `openai` 2.x (what the platform's
library and many applications pin), LangChain's `ChatOpenAI` and the platform's gateway SDK
(`truefoundry-gateway-sdk`). `openai` 3.x, this environment's, is in
`tests/test_gateway_flows.py` and `tests/test_gateway_errors.py`.

`openai` 2.x cannot share this environment with 3.x: its steps run in the platform library's
environment (`truefoundry` pins `openai` 2.x), the one tests/test_truefoundry_library.py builds
and keeps in pytest's cache, in one process (`tests/gateway_client.py`), in the world the first
test of the module gets; each test below checks one step.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from truefoundry_gateway_sdk import TrueFoundryGateway
from truefoundry_gateway_sdk.errors import NotFoundError, UnauthorizedError

from mock_server.pytest_plugin import MockHandle
from tests.budget import budget
from tests.test_truefoundry_library import library_bin, library_env  # noqa: F401  (a fixture)

# Its steps ask what the mock lacks (a route, a model), as each test expects.
pytestmark = pytest.mark.platform_mock(expect_violations=True)

SCRIPT = Path(__file__).resolve().parent / "gateway_client.py"
CAPITAL = "What is the capital of France?"
_RUN: dict[str, Any] = {}


def _openai2(bin_dir: Path, handle: MockHandle, tmp_path: Path) -> dict[str, Any]:
    """What `openai` 2.x did, step by step (run once, in the first test's world)."""
    if not _RUN:
        handle.script_reply("Paris.", input=CAPITAL)
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"gateway_url": handle.gateway_url, "token": handle.token}))
        done = subprocess.run(
            [str(bin_dir / "python"), str(SCRIPT), str(plan)],
            capture_output=True,
            text=True,
            timeout=budget(300),
            env=library_env(tmp_path),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        _RUN.update(json.loads(done.stdout))
    return _RUN


@pytest.fixture
def openai2(library_bin, platform_mock, tmp_path) -> dict[str, Any]:  # noqa: F811
    return _openai2(library_bin, platform_mock, tmp_path)


def test_openai2_is_a_2x_release(openai2):
    assert openai2["version"].startswith("2.")


def test_openai2_chat_completion_is_the_same_twice(openai2):
    first, second = openai2["chat"]
    assert first and first == second


def test_openai2_streamed_chat_adds_up_with_its_usage(openai2):
    streamed = openai2["chat_stream"]
    assert streamed["text"] == openai2["chat"][0]
    assert streamed["completion_tokens"] == len(streamed["text"].split())


def test_openai2_gets_the_scripted_reply(openai2):
    assert openai2["scripted"] == "Paris."


def test_openai2_base64_embeddings_are_stable_and_distinct(openai2):
    assert openai2["embeddings"] == {"dimension": 1536, "stable": True, "distinct": True}


def test_openai2_lists_the_models(openai2):
    assert {"gpt-4o-mini", "text-embedding-3-small"} <= set(openai2["models"])


def test_openai2_unknown_model_is_its_not_found_error(openai2):
    raised = openai2["unknown_model"]
    assert (raised["raised"], raised["type"], raised["code"]) == (
        "NotFoundError",
        "not_found_error",
        "model_not_found",
    )
    assert json.loads(raised["body"])["code"] == 40420  # the platform's, in the same body


def test_openai2_response_created_retrieved_listed_deleted_then_404(openai2):
    flow = openai2["response_flow"]
    assert flow["same"] and flow["text"] and flow["items"] == 1
    assert (flow["gone"]["raised"], flow["gone"]["code"]) == ("NotFoundError", "40407")
    # `openai` 2.x shows the whole body as its message, as it does with OpenAI's own errors.
    assert flow["gone"]["message"].startswith("Error code: 404 - {")
    assert "No model response with id" in flow["gone"]["message"]


def test_openai2_bad_key_is_its_authentication_error(openai2):
    raised = openai2["bad_key"]
    assert (raised["raised"], raised["type"], raised["code"]) == (
        "AuthenticationError",
        "authentication_error",
        "invalid_api_key",
    )


def test_openai2_include_it_does_not_define_is_its_bad_request_error(openai2):
    raised = openai2["bad_include"]
    assert (raised["raised"], raised["type"], raised["code"]) == (
        "BadRequestError",
        "invalid_request_error",
        "40001",
    )


# -- LangChain's ChatOpenAI -------------------------------------------------------------------


@pytest.fixture
def chat(platform_mock) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=platform_mock.gateway_url,
        api_key=platform_mock.token,
        max_retries=0,
        http_client=platform_mock.http_client(),
    )


def test_langchain_invoke_is_the_same_twice(chat):
    first, second = chat.invoke("Say hello."), chat.invoke("Say hello.")
    assert isinstance(first, AIMessage) and first.content
    assert first.content == second.content


def test_langchain_stream_adds_up_to_the_invoked_reply(chat):
    streamed = "".join(str(chunk.content) for chunk in chat.stream("Say hello."))
    assert streamed == chat.invoke("Say hello.").content


def test_langchain_gets_the_scripted_reply(chat, platform_mock):
    platform_mock.script_reply("Paris.", input=CAPITAL)
    assert chat.invoke(CAPITAL).content == "Paris."


def test_langchain_reads_scripted_tool_calls(chat, platform_mock):
    platform_mock.script_reply(
        {"toolCalls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    )

    def get_weather(city: str) -> str:
        """The weather of a city."""
        return "sunny"

    answer = chat.bind_tools([get_weather]).invoke("Weather in Paris?")
    assert [(c["name"], c["args"]) for c in answer.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]


def test_langchain_reports_usage_consistent_with_the_reply(chat):
    answer = chat.invoke("Say hello.")
    usage = answer.usage_metadata
    assert usage is not None
    assert usage["output_tokens"] == len(str(answer.content).split())


def test_langchain_unknown_model_raises_openais_not_found(platform_mock):
    unknown = ChatOpenAI(
        model="gpt-nope",
        base_url=platform_mock.gateway_url,
        api_key=platform_mock.token,
        max_retries=0,
        http_client=platform_mock.http_client(),
    )
    with pytest.raises(openai.NotFoundError) as raised:
        unknown.invoke("Say hello.")
    assert raised.value.code == "model_not_found"


# -- the platform's gateway SDK ---------------------------------------------------------------


@pytest.fixture
def gateway_sdk(platform_mock) -> Iterator[TrueFoundryGateway]:
    yield TrueFoundryGateway(
        base_url=platform_mock.gateway_url,
        api_key=platform_mock.token,
        httpx_client=platform_mock.http_client(timeout=budget(60), follow_redirects=True),
    )


def test_gateway_sdk_raises_its_not_found_error(gateway_sdk):
    with pytest.raises(NotFoundError) as raised:
        gateway_sdk.private.agents.sessions.get("session-missing")
    error = raised.value.body.error
    assert (error.type, error.code) == ("not_found_error", "40401")
    assert raised.value.body.code == 40401  # the platform's


def test_gateway_sdk_raises_its_unauthorized_error_for_a_bad_key(platform_mock):
    stranger = TrueFoundryGateway(
        base_url=platform_mock.gateway_url,
        api_key="sk-not-ours",
        httpx_client=platform_mock.http_client(timeout=budget(60), follow_redirects=True),
    )
    with pytest.raises(UnauthorizedError) as raised:
        stranger.private.agents.sessions.get("session-missing")
    assert (raised.value.body.error.type, raised.value.body.error.code) == (
        "authentication_error",
        "invalid_api_key",
    )
