"""The gateway's world: its models, stored model responses (shaped as OpenAI Responses API
objects) with their input items, the replies scripted for them, and the rules that answer a
model: a scripted reply when a script matches, else one derived from the seed and the request.

Replies are text or tool calls. A script names a model (or any), the input it matches (the
last user message's text, exactly or by a pattern) and its replies in order; once they are
used, its last one stays. A reply may ask for a delay per streamed chunk and a fault (a 429,
or a stream dropped after some chunks), which the handlers deliver.
"""

from __future__ import annotations

import array
import base64
import copy
import functools
import hashlib
import json
import math
import random
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, cast

import orjson
import regex

from mock_server.contract import documents as contract
from mock_server.contract.validation import (
    CompiledSchema,
    ResponseValidator,
    compiled,
    summary,
    violations,
)
from mock_server.core import errors
from mock_server.core.jsonvalue import JsonList, JsonObject, JsonValue
from mock_server.state import fixture_format
from mock_server.state.area import Area, locked

RESPONSE_STATUSES = ("completed", "failed", "in_progress", "incomplete", "queued", "cancelled")
MODEL_KINDS = ("chat", "embedding")
DEFAULT_DIMENSIONS = 1536
FAULTS = ("rate-limit", "drop")
# A pattern is matched against a client's text with a bound in time: no text holds the loop.
PATTERN_SECONDS = 0.05
# The words a reply derived from the seed is made of: fixed here, so that no library's
# update changes the replies a seed gives.
WORDS = [
    "the",
    "model",
    "answers",
    "every",
    "question",
    "with",
    "care",
    "and",
    "a",
    "little",
    "patience",
    "while",
    "the",
    "gateway",
    "keeps",
    "each",
    "request",
    "and",
    "reply",
    "in",
    "order",
    "so",
    "that",
    "a",
    "test",
    "can",
    "read",
    "them",
    "again",
    "later",
    "responses",
    "stream",
    "word",
    "by",
    "word",
    "through",
    "the",
    "mock",
    "until",
    "the",
    "last",
    "chunk",
    "arrives",
    "and",
    "tools",
    "are",
    "called",
    "only",
    "when",
    "a",
    "script",
    "asks",
    "for",
    "them",
    "clearly",
    "and",
    "deterministically",
    "a",
    "seed",
    "decides",
    "which",
    "sentence",
    "comes",
    "next",
    "for",
    "the",
    "same",
    "request",
    "on",
    "every",
    "run",
]


class ModelNotFound(errors.PlatformError):
    status, code = 404, 40420
    condition = "model not found (gateway)"
    openai_code = "model_not_found"
    default_message = "The model does not exist or you do not have access to it"


class ModelCannotServe(errors.PlatformError):
    status, code = 400, 40010
    condition = "the model cannot serve the request (embeddings of a chat model, or the reverse)"
    default_message = "The model cannot serve this kind of request"


class RateLimited(errors.PlatformError):
    status, code = 429, 42901
    condition = "rate limit reached (gateway: a scripted reply or an injected fault)"
    openai_code = "rate_limit_exceeded"
    default_message = "Rate limit reached for requests; retry later"


# -- the records of the gateway, as OpenAI's Responses API writes them (`spec/gateway.yaml`) --


class ContentPart(TypedDict):
    """A part of a message's content: `input_text`, or `output_text` with its annotations."""

    type: str
    text: str
    annotations: NotRequired[JsonList]


class ResponseItem(TypedDict):
    """An item of a response's input or output: a message (`role`, `content`), a function
    call (`call_id`, `name`, `arguments`) or a function call's output (`call_id`, `output`)."""

    id: str
    type: str
    status: str
    role: NotRequired[str]
    content: NotRequired[list[ContentPart]]
    call_id: NotRequired[str]
    name: NotRequired[str]
    arguments: NotRequired[str]
    output: NotRequired[str]


class ResponseError(TypedDict):
    code: str
    message: str


class IncompleteDetails(TypedDict):
    reason: str


class InputTokensDetails(TypedDict):
    cached_tokens: int
    cache_write_tokens: int


class OutputTokensDetails(TypedDict):
    reasoning_tokens: int


class ResponseUsage(TypedDict):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ModelResponse(TypedDict):
    """A model response as OpenAI's `Response`, with the platform's `provider`; what a client
    chose and the mock only echoes (reasoning, text format, tools) is JSON carried unread."""

    id: str
    object: Literal["response"]
    created_at: int
    status: str
    error: ResponseError | None
    incomplete_details: IncompleteDetails | None
    instructions: str | None
    max_output_tokens: int | None
    model: str
    output: list[ResponseItem]
    parallel_tool_calls: bool
    previous_response_id: str | None
    reasoning: JsonObject
    service_tier: str
    store: bool
    temperature: float
    text: JsonObject
    tool_choice: JsonValue
    tools: JsonList
    top_p: float
    truncation: str
    usage: ResponseUsage
    user: str | None
    metadata: dict[str, str]
    provider: str


class InputPart(TypedDict, total=False):
    """A part of an input message's content, as a create request gives it."""

    type: str
    text: str


class InputItem(TypedDict, total=False):
    """An item of a create request's input: a message (its `type` may be left out), a
    function call or a function call's output."""

    id: str
    type: str
    role: str
    content: str | list[InputPart]
    call_id: str
    name: str
    arguments: str
    output: str


class ResponseRequest(TypedDict, total=False):
    """A `createModelResponse` body (its nulls dropped): the fields the mock reads, and
    what it echoes into the response as JSON carried unread."""

    model: str
    input: str | list[InputItem]
    instructions: str
    max_output_tokens: int
    parallel_tool_calls: bool
    previous_response_id: str
    reasoning: JsonObject
    service_tier: str
    store: bool
    stream: bool
    temperature: float
    text: JsonObject
    tool_choice: JsonValue
    tools: JsonList
    top_p: float
    truncation: str
    user: str
    metadata: dict[str, str]


class ToolCallRecord(TypedDict):
    name: str
    arguments: str


class ReplyRecord(TypedDict, total=False):
    """A scripted reply as the fixture document writes it."""

    text: str
    toolCalls: list[ToolCallRecord]
    chunkDelayMs: int
    fault: str
    afterChunks: int


class GivenToolCall(TypedDict):
    """A tool call as a fixture or the admin API gives it: its arguments as JSON text, or
    as the JSON value itself."""

    name: str
    arguments: NotRequired[JsonValue]


class GivenReply(TypedDict, total=False):
    text: str
    toolCalls: list[GivenToolCall]
    chunkDelayMs: int
    fault: str
    afterChunks: int


class ScriptMatch(TypedDict, total=False):
    """What a script matches: a model, and an input exactly or by a pattern."""

    model: str
    input: str
    pattern: str


class ScriptRecord(TypedDict):
    """A script as the fixture document writes it."""

    id: str
    model: NotRequired[str]
    input: NotRequired[str]
    pattern: NotRequired[str]
    replies: list[ReplyRecord]


class GivenScript(TypedDict):
    """A script as a fixture or the admin API gives it (its id may be left to the mock)."""

    id: NotRequired[str]
    model: NotRequired[str]
    input: NotRequired[str]
    pattern: NotRequired[str]
    replies: list[GivenReply]


class ShownScript(ScriptRecord):
    """A script as the admin API shows it: every reply, and how many times it answered."""

    used: int


def stored(response: ModelResponse) -> JsonObject:
    """A response as the world holds it: the JSON a fixture document writes."""
    # A TypedDict is not a dict of JSON values to mypy, though every value of one is JSON.
    return cast(JsonObject, response)


def as_response(held: JsonObject) -> ModelResponse:
    """A response the world holds, as its record: every one was checked against the
    contract's `ModelResponse` (a fixture's by its loader) or built here."""
    return cast(ModelResponse, held)


def stored_items(items: list[ResponseItem]) -> list[JsonObject]:
    """A response's input items as the world holds them: the JSON a fixture document writes."""
    return cast(list[JsonObject], items)


def as_items(held: list[JsonObject]) -> list[ResponseItem]:
    """A response's input items the world holds, as records (built here, or a fixture's
    checked against the contract by its loader)."""
    return cast(list[ResponseItem], held)


@dataclass(frozen=True)
class Model:
    """A model the gateway serves: chat models answer chat completions and responses,
    embedding models embeddings of their fixed dimension."""

    id: str
    kind: str = "chat"
    dimensions: int = DEFAULT_DIMENSIONS
    owned_by: str = "openai"
    created: int = 0

    def record(self) -> fixture_format.ModelRecord:
        """As the fixture document writes it (a dict, as the live view shows records)."""
        return {
            **fixture_format.model(
                self.id,
                self.kind,
                owned_by=self.owned_by,
                dimensions=self.dimensions if self.kind == "embedding" else None,
                created=self.created,
            )
        }


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the wire carries it


@dataclass(frozen=True)
class Reply:
    """What a model answers: text, or tool calls; how slowly it streams; and a fault."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    chunk_delay_ms: int = 0
    fault: str | None = None  # "rate-limit" or "drop"
    after_chunks: int = 1  # a dropped stream: the chunks sent before it drops
    script: str | None = None  # the id of the script that gave it

    def record(self) -> ReplyRecord:
        """As the fixture document writes it."""
        written: ReplyRecord = {}
        if self.text is not None:
            written["text"] = self.text
        if self.tool_calls:
            written["toolCalls"] = [
                {"name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        if self.chunk_delay_ms:
            written["chunkDelayMs"] = self.chunk_delay_ms
        if self.fault:
            written["fault"] = self.fault
            if self.fault == "drop":
                written["afterChunks"] = self.after_chunks
        return written


@dataclass
class Script:
    """Replies scripted for a model (None: any) and an input (exact text, or a pattern
    searched in it; neither: any input), in order; the last one stays once used."""

    id: str
    replies: list[Reply]
    model: str | None = None
    input: str | None = None
    pattern: str | None = None
    used: int = 0

    def matches(self, model: str, text: str) -> bool:
        if self.model is not None and self.model != model:
            return False
        if self.input is not None and self.input != text:
            return False
        if self.pattern is not None:
            try:
                return (
                    compiled_pattern(self.pattern).search(text, timeout=PATTERN_SECONDS) is not None
                )
            except TimeoutError:
                return False
        return True

    def take(self) -> Reply:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply

    def record(self) -> ScriptRecord:
        """As the fixture document writes it: the replies not yet used (the last one stays)."""
        matched: ScriptMatch = {}
        if self.model is not None:
            matched["model"] = self.model
        if self.input is not None:
            matched["input"] = self.input
        if self.pattern is not None:
            matched["pattern"] = self.pattern
        left = self.replies[min(self.used, len(self.replies) - 1) :]
        return {"id": self.id, **matched, "replies": [reply.record() for reply in left]}

    def shown(self) -> ShownScript:
        """As the admin API shows it: with how many times it answered."""
        return {**self.record(), "replies": [r.record() for r in self.replies], "used": self.used}


@functools.lru_cache(maxsize=256)
def compiled_pattern(pattern: str) -> regex.Pattern[str]:
    """A script's pattern, compiled once (`regex`: its searches take a timeout)."""
    return regex.compile(pattern)


def pattern_problem(pattern: str) -> str | None:
    """Why a script's pattern is not one, if it is not."""
    try:
        compiled_pattern(pattern)
    except regex.error as exc:
        return f"is not a regular expression: {exc}"
    return None


def reply_from(record: GivenReply) -> Reply:
    """A reply as a fixture (or the admin API) writes it, checked by the fixture schema."""
    calls = tuple(
        ToolCall(
            call["name"],
            arguments
            if isinstance(arguments := call.get("arguments", {}), str)
            else orjson.dumps(arguments).decode(),
        )
        for call in record.get("toolCalls", [])
    )
    return Reply(
        text=record.get("text"),
        tool_calls=calls,
        chunk_delay_ms=record.get("chunkDelayMs", 0),
        fault=record.get("fault"),
        after_chunks=record.get("afterChunks", 1),
    )


def _json(value: object) -> str:
    """A JSON value as canonical text (keys sorted): any value a request may hold, integers
    past 64 bits included."""
    return json.dumps(value, sort_keys=True)


def words(text: str) -> int:
    """How many tokens a text counts for: its words, the pieces a stream sends."""
    return len(text.split())


def _digest(*parts: object) -> bytes:
    return hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=16).digest()


class Gateway(Area):
    """Models, model responses by id with their input items, and scripted replies."""

    # -- models --------------------------------------------------------------------------
    @locked
    def add_model(
        self,
        model_id: str,
        kind: str = "chat",
        dimensions: int = DEFAULT_DIMENSIONS,
        owned_by: str = "openai",
        created: int | None = None,
    ) -> Model:
        if kind not in MODEL_KINDS:
            raise ValueError(f"unknown model type {kind!r}")
        if model_id in self.world.models:
            raise ValueError(f"model {model_id!r} is declared twice")
        when = int(self.sources.clock.now().timestamp()) if created is None else created
        model = Model(model_id, kind, dimensions, owned_by, when)
        self.world.models[model_id] = model
        return model

    @locked
    def models(self) -> list[Model]:
        return list(self.world.models.values())

    @locked
    def model(self, model_id: str, kind: str | None = None) -> Model:
        """The model by id (404 in OpenAI's words); of the given kind, else 400."""
        found: Model | None = self.world.models.get(model_id)
        if found is None:
            raise ModelNotFound(
                f"The model `{model_id}` does not exist or you do not have access to it.",
                details=[{"location": "body", "field": "model", "message": "names no model"}],
            )
        if kind is not None and found.kind != kind:
            raise ModelCannotServe(
                f"The model `{model_id}` is a {found.kind} model: it does not serve "
                f"{'embeddings' if kind == 'embedding' else 'chat completions or responses'}",
                details=[
                    {"location": "body", "field": "model", "message": f"is a {found.kind} model"}
                ],
            )
        return found

    # -- replies ---------------------------------------------------------------------------
    @locked
    def add_script(self, given: JsonObject) -> Script:
        """A script as a fixture writes it (checked by the fixture schema)."""
        # Checked against the fixture schema's script by the fixture reader: a GivenScript.
        record = cast(GivenScript, given)
        pattern = record.get("pattern")
        if pattern is not None and pattern_problem(pattern):
            raise ValueError(f"pattern {pattern_problem(pattern)}")
        script_id = self.claim_id(
            "a scripted reply", record.get("id"), lambda: self.sources.new_id("script")
        )
        script = Script(
            script_id,
            [reply_from(reply) for reply in record["replies"]],
            model=record.get("model"),
            input=record.get("input"),
            pattern=pattern,
        )
        self.world.scripts[script_id] = script
        return script

    @locked
    def scripts(self) -> list[Script]:
        return list(self.world.scripts.values())

    @locked
    def clear_scripts(self) -> int:
        gone = list(self.world.scripts)
        self.world.scripts.clear()
        self.release_ids(*gone)
        return len(gone)

    @locked
    def reply(self, model: str, text: str, request: object) -> Reply:
        """What the model answers the request whose matched text (its last user message) is
        `text`: the next reply of the first script that matches, else a reply derived from
        the seed, the model and the whole request (`request`, as JSON-ready data)."""
        for script in self.world.scripts.values():
            if script.matches(model, text):
                taken = script.take()
                return Reply(
                    taken.text if taken.text is not None or taken.tool_calls else None,
                    taken.tool_calls,
                    taken.chunk_delay_ms,
                    taken.fault,
                    taken.after_chunks,
                    script.id,
                )
        return Reply(self.derived_text(model, request))

    def derived_text(self, model: str, request: object) -> str:
        """A reply of one to three sentences that only the seed, the model and the request
        decide: the same request gets the same reply, in any world of the seed."""
        rng = random.Random(_digest(self.sources.seed, model, _json(request)))
        sentences = []
        for _ in range(rng.randint(1, 3)):
            chosen = [rng.choice(WORDS) for _ in range(rng.randint(5, 12))]
            sentences.append(" ".join(chosen).capitalize() + ".")
        return " ".join(sentences)

    # -- embeddings ------------------------------------------------------------------------
    def embedding(self, model: Model, text: str, dimensions: int | None = None) -> list[float]:
        """The unit vector of a text: of the model's dimension (or fewer, as asked), the same
        for the same text, model and seed, and another for another text. Each value is a
        float32, so that the base64 form and the list of floats say the same."""
        size = dimensions or model.dimensions
        seed = _digest(self.sources.seed, model.id, text)
        drawn = array.array("i")  # uniform in [-1, 1): cheap, and no less distinct
        drawn.frombytes(hashlib.shake_256(seed).digest(4 * size))
        vector = [value / 2147483648.0 for value in drawn]
        norm = math.sqrt(math.fsum(v * v for v in vector)) or 1.0
        packed = struct.pack(f"<{size}f", *(v / norm for v in vector))
        return list(struct.unpack(f"<{size}f", packed))

    @staticmethod
    def base64_embedding(vector: list[float]) -> str:
        """A vector as `encoding_format: base64` sends it: float32, little-endian."""
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()

    # -- model responses -------------------------------------------------------------------
    def openai_id(self, prefix: str, holder: str) -> str:
        """A fresh id of the seed for an entity of the gateway, in OpenAI's form."""
        return self.claim_id(holder, None, lambda: f"{prefix}_{self.sources.hex(32)}")

    @locked
    def add_response(
        self,
        *,
        response_id: str | None = None,
        model: str = "gpt-4o-mini",
        provider: str = "openai",
        status: str = "completed",
        text: str | None = None,
        instructions: str | None = None,
        user: str | None = None,
        metadata: dict[str, str] | None = None,
        max_output_tokens: int | None = None,
        temperature: float = 1.0,
        previous_response_id: str | None = None,
        input_text: str | None = None,
    ) -> ModelResponse:
        """Store a response; what is not given is filled in realistically from the seed."""
        if status not in RESPONSE_STATUSES:
            raise ValueError(f"unknown response status {status!r}")
        faker, rng = self.sources.faker, self.sources.random
        response_id = self.claim_id(
            "a model response", response_id, lambda: f"resp_{self.sources.hex(32)}"
        )
        has_output = status in ("completed", "incomplete")
        text = text if text is not None else (faker.paragraph(nb_sentences=3) if has_output else "")
        input_tokens = rng.randint(12, 400)
        output_tokens = max(1, round(len(text.split()) * 1.3)) if has_output else 0
        if status == "incomplete" and max_output_tokens is None:
            max_output_tokens = output_tokens
        output: list[ResponseItem] = (
            [
                {
                    "id": f"msg_{self.sources.hex(32)}",
                    "type": "message",
                    "status": "completed" if status == "completed" else "incomplete",
                    "role": "assistant",
                    "content": [{"type": "output_text", "annotations": [], "text": text}],
                }
            ]
            if has_output
            else []
        )
        response: ModelResponse = {
            "id": response_id,
            "object": "response",
            "created_at": int(self.sources.clock.now().timestamp()),
            "status": status,
            "error": (
                {"code": "server_error", "message": "The model provider failed to answer"}
                if status == "failed"
                else None
            ),
            "incomplete_details": {"reason": "max_output_tokens"}
            if status == "incomplete"
            else None,
            "instructions": instructions,
            "max_output_tokens": max_output_tokens,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": previous_response_id,
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "store": True,
            "temperature": temperature,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
            "user": user,
            "metadata": metadata or {},
            "provider": provider,
        }
        self.world.model_responses[response_id] = stored(response)
        if input_text is not None:
            self.world.response_inputs[response_id] = stored_items(
                self.input_items_of(response_id, input_text)
            )
        return response

    @staticmethod
    def _item_id(prefix: str, response_id: str, index: int) -> str:
        # From the response's id, not the seed's stream: an input given to a fixture's
        # response changes no other id of the world.
        return f"{prefix}_{_digest(response_id, index).hex()}"

    def _user_message(self, item_id: str, text: str) -> ResponseItem:
        return {
            "id": item_id,
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_text", "text": text}],
        }

    @locked
    def add_stored(self, response: JsonObject, inputs: Iterable[JsonObject] = ()) -> JsonObject:
        """Store a complete response object as given (checked by the fixture loader or the
        handler), with its input items."""
        response_id = as_response(response)["id"]
        self.claim_id("a model response", response_id)
        self.world.model_responses[response_id] = copy.deepcopy(response)
        items = copy.deepcopy(list(inputs))
        if items:
            self.world.response_inputs[response_id] = items
        return response

    @locked
    def create_response(
        self,
        request: ResponseRequest,
        build: Callable[[str, list[ResponseItem]], ModelResponse],
    ) -> ModelResponse:
        """A response made for a request: `build(id, input items)` writes it (the handler's
        rendering); stored unless the request says `store: false`. A previous response it
        names must exist."""
        previous = request.get("previous_response_id")
        if previous is not None and previous not in self.world.model_responses:
            raise errors.ModelResponseNotFound(
                f"Previous response with id {previous!r} not found.",
                details=[
                    {
                        "location": "body",
                        "field": "previous_response_id",
                        "message": "names no response",
                    }
                ],
            )
        self.store.tick()
        response_id = self.openai_id("resp", "a model response")
        items = self.input_items_of(response_id, request.get("input"))
        response = build(response_id, items)
        if response["store"]:
            self.world.model_responses[response_id] = stored(response)
            self.world.response_inputs[response_id] = stored_items(items)
        else:
            self.release_ids(response_id)
        return response

    def input_items_of(
        self, response_id: str, given: str | list[InputItem] | None
    ) -> list[ResponseItem]:
        """The input of a create request as the items `input_items` lists, each with an id."""
        if given is None:
            return []
        if isinstance(given, str):
            return [self._user_message(self._item_id("msg", response_id, 0), given)]
        items: list[ResponseItem] = []
        for index, item in enumerate(given):
            kind = item.get("type") or "message"  # a message may leave its type out
            if kind == "message":
                content = item["content"]
                role = item["role"]
                part_type = "output_text" if role == "assistant" else "input_text"
                parts: list[ContentPart] = (
                    [{"type": part_type, "text": content}]
                    if isinstance(content, str)
                    else [{"type": p["type"], "text": p["text"]} for p in content]
                )
                if role == "assistant":
                    parts = [{**p, "annotations": []} for p in parts]
                items.append(
                    {
                        "id": item.get("id") or self._item_id("msg", response_id, index),
                        "type": "message",
                        "role": role,
                        "status": "completed",
                        "content": parts,
                    }
                )
            elif kind == "function_call":
                items.append(
                    {
                        "id": item.get("id") or self._item_id("fc", response_id, index),
                        "type": "function_call",
                        "call_id": item["call_id"],
                        "name": item["name"],
                        "arguments": item["arguments"],
                        "status": "completed",
                    }
                )
            else:  # function_call_output
                items.append(
                    {
                        "id": item.get("id") or self._item_id("fco", response_id, index),
                        "type": "function_call_output",
                        "call_id": item["call_id"],
                        "output": item["output"],
                        "status": "completed",
                    }
                )
        return items

    @locked
    def response(self, response_id: str) -> ModelResponse:
        response = self.world.model_responses.get(response_id)
        if response is None:
            raise errors.ModelResponseNotFound(f"No model response with id {response_id!r}")
        return as_response(response)

    @locked
    def delete_response(self, response_id: str) -> None:
        self.response(response_id)  # 404 for one the world does not hold
        del self.world.model_responses[response_id]
        self.world.response_inputs.pop(response_id, None)
        self.release_ids(response_id)
        self.store.tick()

    @locked
    def input_items(
        self, response_id: str, *, after: str | None, limit: int, order: str
    ) -> tuple[list[ResponseItem], bool]:
        """A page of a response's input items in the order asked (`desc`: last first),
        after the item `after` (an id the list does not hold: from the start), and whether
        more follow."""
        self.response(response_id)
        items = list(as_items(self.world.response_inputs.get(response_id, [])))
        if order == "desc":
            items.reverse()
        ids = [item["id"] for item in items]
        start = ids.index(after) + 1 if after in ids else 0
        page = items[start : start + limit]
        return copy.deepcopy(page), start + limit < len(items)

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "models": self.load_model,
            "modelResponses": self.load_response,
            "scriptedReplies": self.load_script,
        }

    # -- fixtures: this area's sections, read and written side by side -------------------
    def load_script(self, record: JsonObject) -> None:
        self.add_script(record)

    def load_model(self, m: fixture_format.ModelRecord) -> None:
        self.add_model(
            m["id"],
            m.get("type", "chat"),
            m.get("dimensions", DEFAULT_DIMENSIONS),
            m.get("ownedBy", "openai"),
            m.get("created"),
        )

    def load_response(
        self,
        r: fixture_format.ModelResponseRecord
        | fixture_format.GeneratedRecord
        | fixture_format.DescribedResponseRecord,
    ) -> None:
        if "response" in r:
            problems = violations(response_schema(), r["response"], "response")
            if problems:
                raise ValueError(summary(problems))
            self.add_stored(r["response"], r.get("input", []))
            return
        if "generate" in r:
            for _ in range(r["generate"]):
                self.add_response()
            return
        self.add_response(
            response_id=r["id"],
            model=r.get("model", "gpt-4o-mini"),
            provider=r.get("provider", "openai"),
            status=r.get("status", "completed"),
            text=r.get("text"),
            instructions=r.get("instructions"),
            user=r.get("user"),
            metadata=r.get("metadata"),
            max_output_tokens=r.get("maxOutputTokens"),
            temperature=r.get("temperature", 1.0),
            previous_response_id=r.get("previousResponseId"),
            input_text=r.get("input"),
        )

    def dump(self) -> fixture_format.FixtureDocument:
        """This area's fixture sections: `models`, `modelResponses` (each response complete,
        with its input items) and `scriptedReplies` (the replies not yet used)."""
        world = self.world
        responses = [
            fixture_format.model_response(
                copy.deepcopy(response), copy.deepcopy(world.response_inputs.get(response_id, []))
            )
            for response_id, response in world.model_responses.items()
        ]
        return {
            "models": [model.record() for model in world.models.values()],
            "modelResponses": responses,
            "scriptedReplies": [script.record() for script in world.scripts.values()],
        }


def response_schema() -> CompiledSchema:
    """The gateway contract's ModelResponse schema, for complete responses in fixtures."""
    schema = contract.component(contract.GATEWAY_SPEC, "ModelResponse")
    return compiled(schema, ResponseValidator)
