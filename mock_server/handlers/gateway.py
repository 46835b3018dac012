"""Handlers of the gateway (`spec/gateway.yaml`), as OpenAI's API answers them: model
responses (created, retrieved as JSON or as the server-sent events of their stream, listed
with their input items, deleted), chat completions, embeddings and models; with the rendering
of each of their records to the wire, beside its handler.

A model's reply is the state's (`state.gateway`): scripted, or derived from the seed and the
request. A scripted reply's fault is delivered here: a 429 raised, a delay per event and a
dropped stream handed to the HTTP layer as the answer's pace.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal, NotRequired, TypedDict, TypeVar, cast

from mock_server.contract.validation import read_json
from mock_server.core import errors, wire
from mock_server.core.jsonvalue import JsonList, JsonValue
from mock_server.handlers.context import Answer, current, store
from mock_server.handlers.operation import Example, operation
from mock_server.services.exchange import Pace
from mock_server.state.gateway import (
    ContentPart,
    InputItem,
    InputPart,
    Model,
    ModelCannotServe,
    ModelNotFound,
    ModelResponse,
    RateLimited,
    Reply,
    ResponseItem,
    ResponseRequest,
    ToolCall,
)

# The pieces a text is streamed in: each word with the white space after it (and any white
# space it starts with), so that the deltas add up to the text. A token is such a piece.
_WORD = re.compile(r"\s*\S+\s*|\s+")
ARGUMENT_PIECE = 8  # characters of a function call's arguments per streamed piece
# The event that ends a stream, by the stored response's status. OpenAI has no event for a
# cancelled response: it ends as a failed one does (its `status` says `cancelled`).
_LAST_EVENT = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
    "cancelled": "response.failed",
    "in_progress": "response.in_progress",
}
FINGERPRINT = "fp_platform_mock"


# -- the records of the wire, as OpenAI's API writes them (`spec/gateway.yaml`) ----------------


class DeletedResponse(TypedDict):
    id: str
    object: Literal["response"]
    deleted: bool


class InputItemList(TypedDict):
    object: Literal["list"]
    data: list[ResponseItem]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ResponseEvent(TypedDict, total=False):
    """A server-sent event of a response's stream: its `type` says which of the others it
    carries."""

    type: str
    sequence_number: int
    response: ModelResponse
    output_index: int
    item_id: str
    item: ResponseItem
    content_index: int
    part: ContentPart
    delta: str
    logprobs: JsonList
    annotation_index: int
    annotation: JsonValue
    text: str
    arguments: str


class ChatMessage(TypedDict, total=False):
    """A message of a chat completion request: the mock reads its role and its text."""

    role: str
    content: str | list[InputPart] | None


class StreamOptions(TypedDict, total=False):
    include_usage: bool


class ChatRequest(TypedDict, total=False):
    """A `createChatCompletion` body (its nulls dropped): the fields the mock reads."""

    model: str
    messages: list[ChatMessage]
    max_completion_tokens: int
    max_tokens: int
    n: int
    stream: bool
    stream_options: StreamOptions


class CalledFunction(TypedDict, total=False):
    name: str
    arguments: str


class ChatToolCall(TypedDict):
    """A tool call of a chat completion's message; in a chunk, its `index` and pieces."""

    index: NotRequired[int]
    id: NotRequired[str]
    type: NotRequired[Literal["function"]]
    function: CalledFunction


class CompletionMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    refusal: None
    annotations: JsonList
    tool_calls: NotRequired[list[ChatToolCall]]


class CompletionChoice(TypedDict):
    index: int
    message: CompletionMessage
    finish_reason: str
    logprobs: None


class PromptTokensDetails(TypedDict):
    cached_tokens: int
    audio_tokens: int


class CompletionTokensDetails(TypedDict):
    reasoning_tokens: int
    audio_tokens: int
    accepted_prediction_tokens: int
    rejected_prediction_tokens: int


class CompletionUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class ChatHead(TypedDict):
    id: str
    created: int
    model: str


class ChatCompletion(ChatHead):
    object: Literal["chat.completion"]
    choices: list[CompletionChoice]
    usage: CompletionUsage
    system_fingerprint: str
    service_tier: str


class ChunkDelta(TypedDict, total=False):
    role: Literal["assistant"]
    content: str | None
    tool_calls: list[ChatToolCall]


class ChunkChoice(TypedDict):
    index: int
    delta: ChunkDelta
    finish_reason: str | None
    logprobs: None


class ChunkHead(ChatHead):
    object: Literal["chat.completion.chunk"]
    system_fingerprint: str
    service_tier: str


class ChatCompletionChunk(ChunkHead):
    choices: list[ChunkChoice]


class UsageChunk(ChatCompletionChunk):
    """The last chunk of a stream that asked for the usage: no choices, and the usage."""

    usage: CompletionUsage


class EmbeddingRequest(TypedDict, total=False):
    """A `createEmbedding` body (its nulls dropped): a text, texts, tokens or lists of them."""

    model: str
    input: str | list[str] | list[int] | list[list[int]]
    dimensions: int
    encoding_format: str


class Embedding(TypedDict):
    object: Literal["embedding"]
    index: int
    embedding: list[float] | str  # floats, or their float32 bytes in base64


class EmbeddingUsage(TypedDict):
    prompt_tokens: int
    total_tokens: int


class EmbeddingList(TypedDict):
    object: Literal["list"]
    data: list[Embedding]
    model: str
    usage: EmbeddingUsage


class ModelObject(TypedDict):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(TypedDict):
    object: Literal["list"]
    data: list[ModelObject]


Body = TypeVar("Body", ResponseRequest, ChatRequest, EmbeddingRequest)
Record = TypeVar("Record", ModelResponse, ChatCompletion)


def _pieces(text: str) -> list[str]:
    return _WORD.findall(text)


def _argument_pieces(arguments: str) -> list[str]:
    return [arguments[i : i + ARGUMENT_PIECE] for i in range(0, len(arguments), ARGUMENT_PIECE)]


def _derived_id(prefix: str, *parts: object) -> str:
    """An id derived from its owner's (a call of a completion): no draw of the seed's."""
    digest = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=16)
    return f"{prefix}_{digest.hexdigest()}"


def _text(content: str | Sequence[InputPart | ContentPart] | None) -> str:
    """The text of a message's content: a string, or the text of its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text") or ""
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text")
        )
    return ""


def _tokens(text: str) -> int:
    return len(_pieces(text))


def _paced(reply: Reply, streamed: bool) -> Pace | None:
    """How a reply's answer goes out: its delay per event, and where a dropped one stops
    (not streamed: before anything is sent)."""
    drop = None if reply.fault != "drop" else (reply.after_chunks if streamed else 0)
    if not reply.chunk_delay_ms and drop is None:
        return None
    return Pace(reply.chunk_delay_ms / 1000 if streamed else 0.0, drop)


def _refused(reply: Reply) -> None:
    if reply.fault == "rate-limit":
        raise RateLimited("Rate limit reached for requests (a scripted reply's fault); retry later")


def _given(body: Body) -> Body:
    """The body without its nulls: an optional parameter sent as null (as OpenAI's clients
    send what their caller left unset) is one not sent."""
    # The same record less some of its keys: every key of a body's record is optional.
    return cast(Body, {key: value for key, value in body.items() if value is not None})


def _json_answer(body: Record, pace: Pace | None) -> Record | Answer:
    if pace is None:
        return body.copy()
    return Answer(wire.json_bytes(body) + b"\n", "application/json", pace=pace)


# -- model responses: retrieve (operation 8), create, delete, input items ---------------------


@operation(
    "getModelResponse",
    Example("GET", "/responses/{id}", params={"id": "resp_0000000000000000000000000000demo"}),
    {400: errors.InvalidMetadataHeader, 404: errors.ModelResponseNotFound},
)
def get_response(
    id_: str,
    *,
    stream: bool,  # Connexion fills in the spec's default
    starting_after: int | None = None,
    include: list[str] | None = None,  # nothing stored is includable: read, and left alone
    include_obfuscation: bool | None = None,  # the stream never pads its events
) -> ModelResponse | Answer:
    """The mock checks `x-platform-metadata` is a JSON object and otherwise ignores it."""
    metadata = current().headers.get("x-platform-metadata")
    if metadata is not None:
        try:  # read as strictly as a request body
            parsed = read_json(metadata)
            reason = None if isinstance(parsed, dict) else "is JSON but not an object"
        except ValueError as exc:
            reason = f"is not valid JSON: {exc}"
        if reason is not None:
            raise errors.InvalidMetadataHeader(
                f"x-platform-metadata must be a JSON object encoded as a string; it {reason}",
                details=[{"location": "header", "field": "x-platform-metadata", "message": reason}],
            )
    response = store().gateway.response(id_)
    if not stream:
        return response
    after = -1 if starting_after is None else starting_after
    return _response_stream(e for e in response_events(response) if e["sequence_number"] > after)


@operation(
    "createModelResponse",
    Example("POST", "/responses", body={"model": "gpt-4o-mini"}),
    {400: ModelCannotServe, 404: ModelNotFound, 429: RateLimited},
    read_only=False,  # its body is checked as `Response` in tests/test_gateway_flows.py
)
def create_response(body: ResponseRequest) -> ModelResponse | Answer:
    body = _given(body)
    gateway = store().gateway
    model = gateway.model(body["model"], "chat")
    given = body.get("input")
    messages: list[InputItem] = (
        [{"role": "user", "content": given}] if isinstance(given, str) else given or []
    )
    asked = next(
        (_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
    )
    reply = gateway.reply(
        model.id, asked, {"input": given, "instructions": body.get("instructions")}
    )
    _refused(reply)
    created = int(gateway.sources.clock.now().timestamp())
    response = gateway.create_response(
        body, lambda rid, items: new_response(rid, body, model, reply, items, created)
    )
    streamed = bool(body.get("stream"))
    if not streamed:
        return _json_answer(response, _paced(reply, streamed=False))
    return _response_stream(response_events(response), _paced(reply, streamed=True))


def new_response(
    response_id: str,
    request: ResponseRequest,
    model: Model,
    reply: Reply,
    items: list[ResponseItem],
    created: int,
) -> ModelResponse:
    """A response made for a create request, as OpenAI's `Response`."""
    bound = request.get("max_output_tokens")
    incomplete = False
    output: list[ResponseItem]
    if reply.tool_calls:
        output = [
            _function_call(response_id, index, call) for index, call in enumerate(reply.tool_calls)
        ]
        used = sum(1 + len(_argument_pieces(call.arguments)) for call in reply.tool_calls)
    else:
        pieces = _pieces(reply.text or "")
        if bound is not None and len(pieces) > bound:
            pieces, incomplete = pieces[:bound], True
        used = len(pieces)
        output = [
            {
                "id": _derived_id("msg", response_id, "output"),
                "type": "message",
                "status": "incomplete" if incomplete else "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": "".join(pieces)}],
            }
        ]
    read = _tokens(request.get("instructions") or "") + sum(
        _tokens(_text(item.get("content"))) + _tokens(item.get("output", "") or "")
        for item in items
    )
    tier = request.get("service_tier")
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": bound,
        "model": model.id,
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "service_tier": "default" if tier in (None, "auto") else tier,
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": request.get("text") or {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": request.get("truncation") or "disabled",
        "usage": {
            "input_tokens": read,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": used,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": read + used,
        },
        "user": request.get("user"),
        "metadata": request.get("metadata") or {},
        "provider": model.owned_by,
    }


def _function_call(response_id: str, index: int, call: ToolCall) -> ResponseItem:
    return {
        "id": _derived_id("fc", response_id, index),
        "type": "function_call",
        "call_id": _derived_id("call", response_id, index),
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }


@operation(
    "deleteModelResponse",
    Example("DELETE", "/responses/{id}", params={"id": "resp_0000000000000000000000000000demo"}),
    {404: errors.ModelResponseNotFound},
)
def delete_response(id_: str) -> DeletedResponse:
    store().gateway.delete_response(id_)
    return {"id": id_, "object": "response", "deleted": True}


@operation(
    "listModelResponseInputItems",
    Example(
        "GET",
        "/responses/{id}/input_items",
        params={"id": "resp_0000000000000000000000000000demo"},
    ),
    {404: errors.ModelResponseNotFound},
    client_model="openai.types.responses.response_item_list:ResponseItemList",
)
def list_input_items(
    id_: str,
    *,
    limit: int,  # Connexion fills in the spec's defaults
    order: str,
    after: str | None = None,
    include: list[str] | None = None,  # nothing stored is includable: read, and left alone
) -> InputItemList:
    page, more = store().gateway.input_items(id_, after=after, limit=limit, order=order)
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": more,
    }


def response_events(response: ModelResponse) -> list[ResponseEvent]:
    """The server-sent events of a response's generation, as OpenAI streams them, numbered
    from 0; the last carries the response itself."""
    if response["status"] == "queued":
        steps: Iterable[ResponseEvent] = [{"type": "response.queued", "response": response}]
    else:
        steps = _generation(response)
    return [
        {"type": step.pop("type"), "sequence_number": n, **step} for n, step in enumerate(steps)
    ]


def _generation(response: ModelResponse) -> Iterator[ResponseEvent]:
    started: ModelResponse = {
        **response,
        "status": "in_progress",
        "output": [],
        "error": None,
        "incomplete_details": None,
    }
    yield {"type": "response.created", "response": started}
    yield {"type": "response.in_progress", "response": started}
    for output_index, item in enumerate(response["output"]):
        if item["type"] == "function_call":
            yield from _function_call_events(output_index, item)
            continue
        at: ResponseEvent = {"item_id": item["id"], "output_index": output_index}
        begun: ResponseItem = {**item, "status": "in_progress", "content": []}
        yield {"type": "response.output_item.added", "output_index": output_index, "item": begun}
        for content_index, part in enumerate(item["content"]):
            here: ResponseEvent = {**at, "content_index": content_index}
            empty: ContentPart = {**part, "annotations": [], "text": ""}
            yield {"type": "response.content_part.added", **here, "part": empty}
            for word in _pieces(part["text"]):
                yield {"type": "response.output_text.delta", **here, "delta": word, "logprobs": []}
            for index, annotation in enumerate(part["annotations"]):
                yield {
                    "type": "response.output_text.annotation.added",
                    **here,
                    "annotation_index": index,
                    "annotation": annotation,
                }
            yield {
                "type": "response.output_text.done",
                **here,
                "text": part["text"],
                "logprobs": [],
            }
            yield {"type": "response.content_part.done", **here, "part": part}
        yield {"type": "response.output_item.done", "output_index": output_index, "item": item}
    yield {"type": _LAST_EVENT[response["status"]], "response": response}


def _function_call_events(output_index: int, item: ResponseItem) -> Iterator[ResponseEvent]:
    at: ResponseEvent = {"item_id": item["id"], "output_index": output_index}
    begun: ResponseItem = {**item, "status": "in_progress", "arguments": ""}
    yield {"type": "response.output_item.added", "output_index": output_index, "item": begun}
    for piece in _argument_pieces(item["arguments"]):
        yield {"type": "response.function_call_arguments.delta", **at, "delta": piece}
    yield {"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]}
    yield {"type": "response.output_item.done", "output_index": output_index, "item": item}


def _response_stream(events: Iterable[ResponseEvent], pace: Pace | None = None) -> Answer:
    return Answer(
        b"".join(
            b"event: " + event["type"].encode() + b"\ndata: " + wire.json_bytes(event) + b"\n\n"
            for event in events
        ),
        "text/event-stream",
        {"Cache-Control": "no-cache"},
        pace,
    )


# -- chat completions -----------------------------------------------------------------------


@operation(
    "createChatCompletion",
    Example(
        "POST",
        "/chat/completions",
        body={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello."}]},
    ),
    {400: ModelCannotServe, 404: ModelNotFound, 429: RateLimited},
    client_model="openai.types.chat:ChatCompletion",
    read_only=False,
    recorded=False,
)
def create_chat_completion(body: ChatRequest) -> ChatCompletion | Answer:
    """Every one of the `n` choices carries the same reply."""
    body = _given(body)
    gateway = store().gateway
    model = gateway.model(body["model"], "chat")
    messages = body["messages"]
    asked = next((_text(m.get("content")) for m in reversed(messages) if m["role"] == "user"), "")
    reply = gateway.reply(model.id, asked, {"messages": messages})
    _refused(reply)
    completion = ChatReply(
        id=f"chatcmpl-{gateway.sources.hex(32)}",
        created=int(gateway.sources.clock.now().timestamp()),
        model=model.id,
        reply=reply,
        bound=body.get("max_completion_tokens") or body.get("max_tokens"),
        prompt_tokens=sum(_tokens(_text(m.get("content"))) for m in messages),
        choices=body.get("n") or 1,
    )
    streamed = bool(body.get("stream"))
    if not streamed:
        return _json_answer(completion.whole(), _paced(reply, streamed=False))
    usage = bool((body.get("stream_options") or {}).get("include_usage"))
    chunks = b"".join(
        b"data: " + wire.json_bytes(chunk) + b"\n\n" for chunk in completion.chunks(usage)
    )
    return Answer(
        chunks + b"data: [DONE]\n\n",
        "text/event-stream",
        {"Cache-Control": "no-cache"},
        _paced(reply, streamed=True),
    )


class ChatReply:
    """A reply rendered as OpenAI's chat completion, whole or as its stream's chunks."""

    def __init__(
        self,
        *,
        id: str,
        created: int,
        model: str,
        reply: Reply,
        bound: int | None,
        prompt_tokens: int,
        choices: int,
    ):
        self.head: ChatHead = {"id": id, "created": created, "model": model}
        self.reply = reply
        self.choices = choices
        self.prompt_tokens = prompt_tokens
        self.calls: list[ChatToolCall] = [
            {
                "id": _derived_id("call", id, index),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
        pieces = [] if self.calls else _pieces(reply.text or "")
        self.finish = "tool_calls" if self.calls else "stop"
        if bound is not None and len(pieces) > bound:
            pieces, self.finish = pieces[:bound], "length"
        self.pieces = pieces
        self.completion_tokens = len(pieces) + sum(
            1 + len(_argument_pieces(call.arguments)) for call in reply.tool_calls
        )

    def usage(self) -> CompletionUsage:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def whole(self) -> ChatCompletion:
        message: CompletionMessage = {
            "role": "assistant",
            "content": None if self.calls else "".join(self.pieces),
            "refusal": None,
            "annotations": [],
        }
        if self.calls:
            message["tool_calls"] = self.calls
        return {
            **self.head,
            "object": "chat.completion",
            "choices": [
                {"index": index, "message": message, "finish_reason": self.finish, "logprobs": None}
                for index in range(self.choices)
            ],
            "usage": self.usage(),
            "system_fingerprint": FINGERPRINT,
            "service_tier": "default",
        }

    def chunks(self, usage: bool) -> Iterator[ChatCompletionChunk]:
        """The stream's chunks: per choice, the role, then one word per chunk (or each tool
        call's name, then its arguments in pieces), then the finish; the usage last."""
        for index in range(self.choices):
            yield self._chunk(
                index, {"role": "assistant", "content": "" if not self.calls else None}
            )
            for piece in self.pieces:
                yield self._chunk(index, {"content": piece})
            for number, call in enumerate(self.calls):
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                opened: ChatToolCall = {
                    "index": number,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
                yield self._chunk(index, {"tool_calls": [opened]})
                for piece in _argument_pieces(arguments):
                    more: ChatToolCall = {"index": number, "function": {"arguments": piece}}
                    yield self._chunk(index, {"tool_calls": [more]})
            yield self._chunk(index, {}, self.finish)
        if usage:
            last: UsageChunk = {**self._base(), "choices": [], "usage": self.usage()}
            yield last

    def _base(self) -> ChunkHead:
        return {
            **self.head,
            "object": "chat.completion.chunk",
            "system_fingerprint": FINGERPRINT,
            "service_tier": "default",
        }

    def _chunk(
        self, index: int, delta: ChunkDelta, finish: str | None = None
    ) -> ChatCompletionChunk:
        choice: ChunkChoice = {
            "index": index,
            "delta": delta,
            "finish_reason": finish,
            "logprobs": None,
        }
        return {**self._base(), "choices": [choice]}


# -- embeddings -------------------------------------------------------------------------------


@operation(
    "createEmbedding",
    Example(
        "POST",
        "/embeddings",
        body={"model": "text-embedding-3-small", "input": "The quick brown fox."},
    ),
    {400: ModelCannotServe, 404: ModelNotFound},
    client_model="openai.types:CreateEmbeddingResponse",
    read_only=False,
)
def create_embedding(body: EmbeddingRequest) -> EmbeddingList:
    body = _given(body)
    gateway = store().gateway
    model = gateway.model(body["model"], "embedding")
    dimensions = body.get("dimensions")
    if dimensions is not None and dimensions > model.dimensions:
        raise ModelCannotServe(
            f"The model `{model.id}` makes vectors of {model.dimensions} dimensions at most",
            details=[
                {
                    "location": "body",
                    "field": "dimensions",
                    "message": f"is over {model.dimensions}",
                }
            ],
        )
    given = _inputs(body["input"])
    texts = [text if isinstance(text, str) else " ".join(map(str, text)) for text in given]
    counted = sum(_tokens(t) if isinstance(t, str) else len(t) for t in given)
    base64 = body.get("encoding_format") == "base64"
    data: list[Embedding] = []
    for index, text in enumerate(texts):
        vector = gateway.embedding(model, text, dimensions)
        sent: list[float] | str = gateway.base64_embedding(vector) if base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": sent})
    return {
        "object": "list",
        "data": data,
        "model": model.id,
        "usage": {"prompt_tokens": counted, "total_tokens": counted},
    }


def _inputs(given: str | list[str] | list[int] | list[list[int]]) -> list[str | list[int]]:
    """An embeddings request's input as a list of inputs: texts, or lists of tokens."""
    if isinstance(given, str):
        return [given]
    if given and isinstance(given[0], int):  # one list of tokens
        return [[token for token in given if isinstance(token, int)]]
    return [each for each in given if not isinstance(each, int)]


# -- models ----------------------------------------------------------------------------------


def model_record(model: Model) -> ModelObject:
    return {"id": model.id, "object": "model", "created": model.created, "owned_by": model.owned_by}


@operation("listModels", Example("GET", "/models"))
def list_models() -> ModelList:
    return {"object": "list", "data": [model_record(m) for m in store().gateway.models()]}


@operation(
    "retrieveModel",
    Example("GET", "/models/{model}", params={"model": "gpt-4o-mini"}),
    {404: ModelNotFound},
    client_model="openai.types:Model",
)
def get_model(model: str) -> ModelObject:
    return model_record(store().gateway.model(model))
