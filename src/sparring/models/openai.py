"""`OpenAIModel`: any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM, ...).

A leaf provider: only `sparring.models.registry` imports it, so the openai SDK is loaded
only when such a model is used. Retries (429 honouring `Retry-After` / `retry-after-ms`,
408/409/5xx, timeouts and connection errors, capped exponential backoff with jitter) are
the SDK's own; what is left after them becomes a `ModelError` that says what to do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, cast

import openai
from openai import AsyncOpenAI

from sparring.errors import ModelError, UserError
from sparring.models._retries import retries_text
from sparring.models.base import ChatMessage, Completion
from sparring.models.chat_completion import (
    MalformedCompletion,
    not_a_completion,
    parse_chat_completion,
)
from sparring.secrets import Scrubber, mask_url, url_credentials

_EXCERPT_CHARS = 300
_REJECTION_HINTS = (
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "structured output",
    "json mode",
)


class OpenAIModel:
    """A model behind an OpenAI-compatible `/chat/completions` endpoint.

    One SDK client per instance, shared by all concurrent `complete` calls. Error messages
    show `base_url` with its userinfo and query masked (`http://***@host:8999/v1?***`) and
    never contain the API key or the URL's credentials (values of 4 characters or more:
    see `sparring.secrets.MIN_SCRUB_CHARS`).

    Args:
        name: The spec shown in reports, e.g. `openai:gpt-4o-mini`.
        model: The model name sent to the endpoint, e.g. `gpt-4o-mini` or `qwen2.5:7b`.
        base_url: Endpoint root ending in `/v1`; `None` means OpenAI (or `OPENAI_BASE_URL`).
        api_key: Bearer key; `None` reads `OPENAI_API_KEY`.
        timeout_s: Limit for one HTTP attempt, in seconds.
        max_retries: Retries after the first attempt, for 408/409/429/5xx, timeouts and
            connection errors.

    Raises:
        UserError: no API key given and `OPENAI_API_KEY` unset.
    """

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120,
        max_retries: int = 4,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise UserError(
                f"model {name!r} needs an API key: export OPENAI_API_KEY=... or "
                "set SPARRING_API_KEY (local servers accept any non-empty key)"
            )
        self.name, self.model = name, model
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self._client = AsyncOpenAI(
            api_key=key, base_url=base_url, timeout=timeout_s, max_retries=max_retries
        )
        url = self._client.base_url  # the SDK adds a trailing "/" to the path: drop it
        self.base_url = str(url.copy_with(path=url.path.rstrip("/") or "/")).rstrip("/")
        self._shown_url = mask_url(self.base_url)
        self._scrubber = Scrubber([key, *url_credentials(self.base_url)])
        self.native_json_schema = True
        self._unreachable: ModelError | None = None
        """Set once the endpoint could not be reached even after retries: later calls fail
        at once with the same error instead of each waiting through its own retries."""
        """False once the endpoint rejected `response_format`; instructions are used then."""

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
    ) -> Completion:
        """One chat completion; with `json_schema`, ask for JSON matching it.

        Native structured output (`response_format: json_schema`, non-strict) is tried
        first; if the endpoint rejects it, the schema goes into the system prompt from then
        on. Callers still parse the text (see `sparring.models.structured`).

        Raises:
            ModelError: the call failed after the SDK's retries, the model refused, or the
                answer is not a chat completion (HTML, not JSON, no `choices`, no `message`,
                non-text `content`); the message says what to do. Usage numbers that are not
                non-negative integers are recorded as `None`, not an error.
        """
        if self._unreachable is not None:
            raise self._unreachable
        try:
            if json_schema is not None and self.native_json_schema:
                response_format = {
                    "type": "json_schema",
                    "json_schema": {"name": schema_name, "schema": json_schema, "strict": False},
                }
                try:
                    return await self._create(messages, temperature, response_format)
                except openai.APIStatusError as e:
                    if not _rejects_response_format(e):
                        raise
                    self.native_json_schema = False
            if json_schema is not None:
                messages = with_schema_instructions(messages, json_schema)
            return await self._create(messages, temperature, None)
        except openai.OpenAIError as e:
            error = self._error(e)
            if isinstance(e, openai.APIConnectionError) and not isinstance(
                e, openai.APITimeoutError
            ):
                self._unreachable = error
            raise error from e

    async def _create(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        response_format: dict[str, Any] | None,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
        }
        if response_format is not None:
            body["response_format"] = response_format
        # The SDK's documented generic `post` (for "undocumented endpoints") keeps its retries,
        # auth and error mapping but skips the per-call recursive transform of typed params,
        # which costs ~2 ms of CPU per call with a judge schema (bench/run_bench.py --http).
        # The body comes back as bytes and is checked here: the SDK would build a
        # ChatCompletion from anything without validating it.
        data = await self._client.post("/chat/completions", body=body, cast_to=bytes)
        try:
            return self._completion(data)
        except MalformedCompletion as e:
            raise ModelError(
                not_a_completion(
                    f"{self.name} at {self._shown_url}", self._scrubber.excerpt(str(e), 300)
                )
            ) from None

    def _completion(self, data: bytes) -> Completion:
        answer = parse_chat_completion(data)
        refusal = answer.message.get("refusal")
        if answer.message.get("content") is None and isinstance(refusal, str) and refusal:
            raise ModelError(f"{self.name} refused to answer: {self._scrubber.scrub(refusal)}")
        return Completion(
            text=answer.text, input_tokens=answer.input_tokens, output_tokens=answer.output_tokens
        )

    def _error(self, e: openai.OpenAIError) -> ModelError:
        where = f"{self.name} at {self._shown_url}"
        scrub = self._scrubber.scrub
        if not isinstance(e, openai.APIError):
            return ModelError(f"{where}: {scrub(str(e))}")
        answered = e.response.headers if isinstance(e, openai.APIStatusError) else None
        tries = retries_text(e.request.headers, answered, max_retries=self.max_retries)
        if isinstance(e, openai.APITimeoutError):
            return ModelError(
                f"{where}: no answer within {self.timeout_s:g} s {tries}; raise "
                "`model_timeout_s` in sparring.toml (or SPARRING_MODEL_TIMEOUT_S) "
                "or check that the server is not overloaded"
            )
        if isinstance(e, openai.APIConnectionError):
            hint = (
                f"start Ollama (`ollama serve`, then `ollama pull {self.model}`)"
                if ":11434" in self.base_url
                else "check --base-url and that the server runs"
            )
            return ModelError(f"{where}: could not connect {tries}; {hint} ({scrub(str(e))})")
        if isinstance(e, openai.APIStatusError):
            detail = self._scrubber.excerpt(_detail(e), _EXCERPT_CHARS)
            return ModelError(
                f"{where}: HTTP {e.status_code}: {detail}. "
                + _status_hint(e.status_code, self.model, tries)
            )
        return ModelError(f"{where}: {scrub(str(e))}")

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()


def _status_hint(status: int, model: str, tries: str) -> str:
    if status == 401:
        return (
            "The API key was rejected: set OPENAI_API_KEY (or the provider's key) or pass api_key"
        )
    if status == 403:
        return f"The API key has no access to model {model!r}; check the key's permissions"
    if status == 404:
        return (
            f"Check the model name {model!r} (for Ollama: `ollama list`) and that "
            "base_url ends in /v1"
        )
    if status == 429:
        return f"Rate limited {tries}; lower the concurrency or wait and rerun"
    if status >= 500:
        return f"The server failed {tries}; check its logs or try again later"
    return "Check the model settings and the request the endpoint expects"


def _detail(e: openai.APIStatusError) -> str:
    """The endpoint's error message, whole (the caller scrubs, then cuts)."""
    body = cast(Any, e.body)
    if isinstance(body, dict) and isinstance(message := cast(Any, body).get("message"), str):
        return message
    return e.message


def _rejects_response_format(e: openai.APIStatusError) -> bool:
    if e.status_code not in (400, 422, 501):
        return False
    text = f"{e.message} {e.body}".lower()
    return any(hint in text for hint in _REJECTION_HINTS)


def with_schema_instructions(
    messages: Sequence[ChatMessage],
    json_schema: dict[str, Any],
) -> list[ChatMessage]:
    """Return `messages` with the JSON answer format spelled out in the system prompt.

    Used when the endpoint has no native structured output: the schema is appended to the
    first system message (or sent as a new first system message).
    """
    instructions = (
        "Answer with one JSON object only: no prose, no code fences. It must match "
        "this JSON Schema:\n" + json.dumps(json_schema, separators=(",", ":"))
    )
    out = list(messages)
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{instructions}"}
    else:
        out.insert(0, {"role": "system", "content": instructions})
    return out
