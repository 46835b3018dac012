"""Stored model responses of the gateway (operation 8), shaped as OpenAI Responses API objects."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from mock_server.contract import documents as contract
from mock_server.contract.validation import (
    CompiledSchema,
    ResponseValidator,
    compiled,
    summary,
    violations,
)
from mock_server.core import errors
from mock_server.state.area import Area, locked

RESPONSE_STATUSES = ("completed", "failed", "in_progress", "incomplete", "queued", "cancelled")


class Gateway(Area):
    """Model responses by id."""

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
    ) -> dict[str, Any]:
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
        output = (
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
        response = {
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
        self.world.model_responses[response_id] = response
        return response

    @locked
    def add_stored(self, response: dict[str, Any]) -> dict[str, Any]:
        """Store a complete response object as given (checked by the fixture loader)."""
        self.claim_id("a model response", response["id"])
        self.world.model_responses[response["id"]] = copy.deepcopy(response)
        return response

    @locked
    def response(self, response_id: str) -> dict[str, Any]:
        response = self.world.model_responses.get(response_id)
        if response is None:
            raise errors.ModelResponseNotFound(f"No model response with id {response_id!r}")
        return response

    def loaders(self) -> dict[str, Callable[[Any], None]]:
        return {
            "modelResponses": self.load_response,
        }

    # -- fixtures: this area's section, read and written side by side -------------------
    def load_response(self, r: dict[str, Any]) -> None:
        if "response" in r:
            problems = violations(response_schema(), r["response"], "response")
            if problems:
                raise ValueError(summary(problems))
            self.add_stored(r["response"])
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
        )

    def dump(self) -> dict[str, Any]:
        """This area's fixture section, `modelResponses`: each response complete."""
        responses = self.world.model_responses.values()
        return {"modelResponses": [{"response": copy.deepcopy(r)} for r in responses]}


def response_schema() -> CompiledSchema:
    """The gateway contract's ModelResponse schema, for complete responses in fixtures."""
    schema = contract.component(contract.GATEWAY_SPEC, "ModelResponse")
    return compiled(schema, ResponseValidator)
