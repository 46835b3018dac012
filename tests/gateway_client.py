"""Runs in the platform library's own environment, whose `openai` is the 2.x the platform's
library pins (tests/test_truefoundry_library.py builds it), not in the test suite's: what
`openai` 2.x does against a live mock's gateway, step by step, printed as one JSON object.

`python gateway_client.py PLAN` reads the plan (JSON: the gateway's URL, a user token) and
prints `{step: result}`, where a step that raised gives `{"raised": class, ...}` with what
the exception says (`type`, `code`, `param`, `status`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

STEPS: dict[str, Callable[[openai.OpenAI], Any]] = {}
HELLO: Any = [{"role": "user", "content": "Say hello."}]
SCRIPTED: Any = [{"role": "user", "content": "What is the capital of France?"}]


def step(function: Callable[[openai.OpenAI], Any]) -> Callable[[openai.OpenAI], Any]:
    STEPS[function.__name__] = function
    return function


def _raised(exc: BaseException) -> dict[str, Any]:
    return {
        "raised": type(exc).__name__,
        "status": getattr(exc, "status_code", None),
        "type": getattr(exc, "type", None),
        "code": getattr(exc, "code", None),
        "param": getattr(exc, "param", None),
        "message": str(getattr(exc, "message", exc))[:500],
        "body": getattr(getattr(exc, "response", None), "text", None),
    }


@step
def version(client: openai.OpenAI) -> Any:
    return openai.__version__


@step
def chat(client: openai.OpenAI) -> Any:
    first = client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    second = client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    return [first.choices[0].message.content, second.choices[0].message.content]


@step
def chat_stream(client: openai.OpenAI) -> Any:
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = chunks[-1].usage
    return {"text": text, "completion_tokens": usage.completion_tokens if usage else None}


@step
def scripted(client: openai.OpenAI) -> Any:
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=SCRIPTED)
    return answer.choices[0].message.content


@step
def embeddings(client: openai.OpenAI) -> Any:
    # `openai` 2.x asks for base64 by default and decodes it.
    found = client.embeddings.create(model="text-embedding-3-small", input=["cat", "dog", "cat"])
    cat, dog, again = (d.embedding for d in found.data)
    return {"dimension": len(cat), "stable": cat == again, "distinct": cat != dog}


@step
def models(client: openai.OpenAI) -> Any:
    return [m.id for m in client.models.list()]


@step
def unknown_model(client: openai.OpenAI) -> Any:
    try:
        client.chat.completions.create(model="gpt-nope", messages=HELLO)
    except openai.APIStatusError as exc:
        return _raised(exc)
    return None


@step
def response_flow(client: openai.OpenAI) -> Any:
    created = client.responses.create(model="gpt-4o-mini", input="Say hello.")
    retrieved = client.responses.retrieve(created.id)
    items = [item.id for item in client.responses.input_items.list(created.id)]
    client.responses.delete(created.id)
    try:
        client.responses.retrieve(created.id)
        gone: Any = None
    except openai.APIStatusError as exc:
        gone = _raised(exc)
    return {
        "same": retrieved.model_dump() == created.model_dump(),
        "text": created.output_text,
        "items": len(items),
        "gone": gone,
    }


@step
def bad_include(client: openai.OpenAI) -> Any:
    try:
        bogus: Any = ["bogus.value"]
        client.responses.retrieve("resp_0000000000000000000000000000demo", include=bogus)
    except openai.APIStatusError as exc:
        return _raised(exc)
    return None


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    results: dict[str, Any] = {}
    client = openai.OpenAI(base_url=plan["gateway_url"], api_key=plan["token"], max_retries=0)
    for name, run in STEPS.items():
        try:
            results[name] = run(client)
        except Exception as exc:  # reported, for the test of that step to show
            results[name] = {"failed": repr(exc)[:1000]}
    stranger = openai.OpenAI(base_url=plan["gateway_url"], api_key="sk-not-ours", max_retries=0)
    try:
        stranger.models.list()
        results["bad_key"] = None
    except openai.APIStatusError as exc:
        results["bad_key"] = _raised(exc)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
