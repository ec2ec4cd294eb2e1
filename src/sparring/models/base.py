"""The `Model` protocol: one chat completion in, text (and token counts) out.

Providers are leaves resolved by string spec in `registry` (`openai:`, `ollama:`,
`openai-compatible:`); `scripted.ScriptedModel` is built directly, in tests.
Structured output (JSON by schema, tolerant parsing, one repair retry) is built on top of
`Model.complete` in `structured`, so every provider gets it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable


class ChatMessage(TypedDict):
    """One prompt message, in the OpenAI chat shape."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's answer: its text and the token counts the provider reported (or `None`)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    requests: int = 1
    """Requests sent for this answer: retries and requests the endpoint refused count too;
    0 for an answer no request was sent for (replayed, or a stored user turn), which usage
    does not count as a model call."""


@runtime_checkable
class Model(Protocol):
    """An LLM sparring uses as simulated user or judge.

    `complete` must be safe to call concurrently. When `json_schema` is given the provider
    should ask the endpoint for JSON matching it (native structured output where supported);
    callers still parse and validate the text themselves. `seed` is sent where the
    provider accepts one (OpenAI-compatible endpoints, local GGUF models), for repeatable
    answers; a provider that cannot send it ignores it and says so with a class attribute
    `sends_seed = False` (see `sends_seed`). Transport errors raise
    `sparring.errors.ModelError` after the provider's own retries.
    """

    name: str
    """The spec it was made from, e.g. `openai:gpt-4o-mini`."""

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """One chat completion; with `json_schema`, structured output under `schema_name`;
        with `seed`, sampled repeatably where the provider can."""
        ...

    async def aclose(self) -> None:
        """Release connections; the model is not used afterwards."""
        ...


def sends_seed(model: object) -> bool:
    """Whether `model` passes `complete(seed=...)` on to its endpoint: true unless its class
    says `sends_seed = False` (Anthropic's API takes no seed)."""
    return bool(getattr(model, "sends_seed", True))
