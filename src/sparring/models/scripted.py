"""`ScriptedModel`: a model whose answers are written in advance, for tests and benchmarks.

Public API: use it in your own tests to run sparring without a real LLM.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import anyio

from sparring.errors import ModelError
from sparring.models.base import ChatMessage, Completion

Answer = str | dict[str, Any] | Exception
Handler = Callable[[Sequence[ChatMessage], dict[str, Any] | None], Answer | Awaitable[Answer]]


class ScriptedModel:
    """Answers from a list (in call order) or from a function of the prompt.

    Args:
        answers: Returned in order, one per call; a dict is sent as JSON text, an exception
            is raised. Running out raises `ModelError`.
        handler: Called as `handler(messages, json_schema)` instead of `answers`; may be
            async and may return the same kinds of value.
        latency_seconds: Sleep before each answer, to simulate a slow endpoint.
        name: The spec shown in reports.

    `calls` keeps every prompt received, as `(messages, json_schema)`, and `seeds` the
    `seed` of each call.
    """

    def __init__(
        self,
        answers: Sequence[Answer] = (),
        *,
        handler: Handler | None = None,
        latency_seconds: float = 0.0,
        name: str = "scripted",
    ) -> None:
        self.name = name
        self._answers = list(answers)
        self._handler = handler
        self._latency_seconds = latency_seconds
        self.calls: list[tuple[Sequence[ChatMessage], dict[str, Any] | None]] = []
        self.seeds: list[int | None] = []

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """Return the next scripted answer as a Completion (see class docstring)."""
        index = len(self.calls)
        self.calls.append((messages, json_schema))
        self.seeds.append(seed)
        if self._latency_seconds:
            await anyio.sleep(self._latency_seconds)
        if self._handler is not None:
            answer = self._handler(messages, json_schema)
            if isinstance(answer, Awaitable):
                answer = await answer
        elif index < len(self._answers):
            answer = self._answers[index]
        else:
            raise ModelError(
                f"{self.name}: no scripted answer left for call {index + 1}; "
                f"it was given {len(self._answers)}"
            )
        if isinstance(answer, Exception):
            raise answer
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Completion(text=text, input_tokens=0, output_tokens=0)

    async def aclose(self) -> None:
        """Nothing to release."""


def example_for_schema(schema: dict[str, Any], *, text: str = "ok") -> Any:
    """A value that satisfies a simple JSON Schema: the first `enum` value, `text` for
    strings, `False`, `1`, arrays of one such item, and objects with every property filled.

    Use it as `ScriptedModel(handler=lambda messages, schema: example_for_schema(schema))`
    for a model that always answers in the requested shape (the simulated user never stops
    early, and the judge finds every criterion met, quoting `text` as its evidence: pass
    something the agent says, since a `met` that quotes nothing the conversation contains
    counts as `error`).
    """
    if "enum" in schema:
        return schema["enum"][0]
    kind: Any = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast(list[str], kind) if k != "null"), "null")
    if kind == "object":
        return {
            name: example_for_schema(sub, text=text)
            for name, sub in schema.get("properties", {}).items()
        }
    if kind == "array":
        return [example_for_schema(schema.get("items", {}), text=text)]
    examples: dict[str, Any] = {
        "string": text,
        "boolean": False,
        "integer": 1,
        "number": 1,
        "null": None,
    }
    return examples.get(kind, text)
