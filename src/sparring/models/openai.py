"""`OpenAIModel`: any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM, ...).

A leaf provider: only `sparring.models.registry` imports it, so the openai SDK is loaded
only when such a model is used. Retries (429 honouring `Retry-After` / `retry-after-ms`,
408/409/5xx, timeouts and connection errors, capped exponential backoff with jitter) are
the SDK's own; what is left after them becomes a `ModelError` that says what to do. A
failed call fails alone: the next one is sent as if nothing happened.

Connections: models of one event loop that reach the same endpoint with the same key share
one SDK client (`sparring.models._openai_clients`), on the SDK's aiohttp transport (about
half the CPU per call of its default httpx one; importing the SDK then takes about 0.08 s
more, as it imports aiohttp).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any, cast

import openai

from sparring.errors import ModelError
from sparring.models._openai_clients import SharedClient
from sparring.models._requests import requests_sent
from sparring.models._retries import retries_text
from sparring.models.base import ChatMessage, Completion
from sparring.models.chat_completion import (
    MalformedCompletion,
    not_a_completion,
    parse_chat_completion,
)
from sparring.secrets import Scrubber, mask_url, url_credentials

log = logging.getLogger("sparring.models")
"""Where a model says that it changed how it asks (once per model and run)."""

_EXCERPT_CHARS = 300
_FORMAT_WORDS = (
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "json_object",
    "structured output",
    "json mode",
)
"""An error naming one of these is about the answer format the request asked for."""
_NOT_A_FORMAT_REFUSAL = frozenset({401, 403, 404, 408, 409, 429})


class OpenAIModel:
    """A model behind an OpenAI-compatible `/chat/completions` endpoint.

    Safe for concurrent `complete` calls. Error messages show `base_url` with its userinfo
    and query masked (`http://***@host:8999/v1?***`) and never contain the API key or the
    URL's credentials (values of 4 characters or more: see
    `sparring.secrets.MIN_SCRUB_CHARS`).

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
        self._client = SharedClient(
            name=name,
            api_key=api_key,
            base_url=base_url,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )
        self.name, self.model = name, model
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.base_url = self._client.base_url
        self._shown_url = mask_url(self.base_url)
        self._scrubber = Scrubber([self._client.api_key, *url_credentials(self.base_url)])
        self.native_json_schema = True
        """False once the endpoint refused `response_format`; instructions are used then."""
        self._native_answered = False
        """True once the endpoint answered a `response_format` request."""

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """One chat completion; with `json_schema`, ask for JSON matching it; `seed` is sent.

        Native structured output (`response_format: json_schema`, non-strict) is tried
        first; once the endpoint refuses it (an error that names the response format, with
        any status: llama-cpp-python answers 500), the schema goes into the system prompt
        for the rest of this model's life, and a warning says so once (logger
        `sparring.models`). Callers still parse the text (see `sparring.models.structured`).

        Returns:
            The answer; `requests` counts every request sent for it (retries and the
            refused request included).

        Raises:
            ModelError: the call failed after the SDK's retries, the model refused, or the
                answer is not a chat completion (HTML, not JSON, no `choices`, no `message`,
                non-text `content`); the message says what to do, `requests` how many
                requests were sent. Usage numbers that are not non-negative integers are
                recorded as `None`, not an error.
        """
        with requests_sent() as sent:
            try:
                answer = await self._answer(messages, temperature, json_schema, schema_name, seed)
            except openai.OpenAIError as e:
                raise self._error(e, requests=sent.count) from e
            except ModelError as e:
                e.requests = sent.count
                raise
            return Completion(
                text=answer.text,
                input_tokens=answer.input_tokens,
                output_tokens=answer.output_tokens,
                requests=sent.count,
            )

    async def _answer(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        seed: int | None,
    ) -> Completion:
        if json_schema is not None and self.native_json_schema:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": json_schema, "strict": False},
            }
            try:
                return await self._native(messages, temperature, response_format, seed)
            except openai.APIStatusError as e:
                if not _refuses_response_format(e):
                    raise
                self._fall_back(e)
        if json_schema is not None:
            messages = with_schema_instructions(messages, json_schema)
        return await self._create(messages, temperature, None, seed)

    async def _native(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        response_format: dict[str, Any],
        seed: int | None,
    ) -> Completion:
        """Until the endpoint has answered one request with `response_format`, its first
        try goes out without the SDK's retries, so a refusal is seen at once (not after
        retrying llama-cpp-python's 500 with backoff); any other failure worth retrying is
        then sent again with the retries as usual.

        Raises:
            openai.OpenAIError: as `_create`.
        """
        if not self._native_answered:
            try:
                answer = await self._create(messages, temperature, response_format, seed, retries=0)
            except openai.APIStatusError as e:
                if _refuses_response_format(e) or not _worth_retrying(e):
                    raise
            except openai.APIConnectionError:
                pass
            else:
                self._native_answered = True
                return answer
        answer = await self._create(messages, temperature, response_format, seed)
        self._native_answered = True
        return answer

    def _fall_back(self, e: openai.APIStatusError) -> None:
        """Ask by instructions from now on; say so the first time only."""
        if not self.native_json_schema:
            return
        self.native_json_schema = False
        detail = self._scrubber.excerpt(_detail(e), 200)
        log.warning(
            "sparring: %s at %s refused `response_format: json_schema` (HTTP %s: %s); "
            "asking for JSON by instructions in the prompt for the rest of the run",
            self.name,
            self._shown_url,
            e.status_code,
            detail,
        )

    async def _create(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        response_format: dict[str, Any] | None,
        seed: int | None,
        *,
        retries: int | None = None,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
        }
        if seed is not None:
            body["seed"] = seed
        if response_format is not None:
            body["response_format"] = response_format
        data = await self._client.post(body, retries=retries)
        try:
            answer = parse_chat_completion(data)
        except MalformedCompletion as e:
            raise ModelError(
                not_a_completion(
                    f"{self.name} at {self._shown_url}", self._scrubber.excerpt(str(e), 300)
                )
            ) from None
        refusal = answer.message.get("refusal")
        if answer.message.get("content") is None and isinstance(refusal, str) and refusal:
            raise ModelError(f"{self.name} refused to answer: {self._scrubber.scrub(refusal)}")
        return Completion(
            text=answer.text, input_tokens=answer.input_tokens, output_tokens=answer.output_tokens
        )

    def _error(self, e: openai.OpenAIError, *, requests: int) -> ModelError:
        where = f"{self.name} at {self._shown_url}"
        scrub = self._scrubber.scrub
        if not isinstance(e, openai.APIError):
            return ModelError(f"{where}: {scrub(str(e))}", requests=requests)
        answered = e.response.headers if isinstance(e, openai.APIStatusError) else None
        tries = retries_text(e.request.headers, answered, max_retries=self.max_retries)
        if isinstance(e, openai.APITimeoutError) and _timed_out(e):
            return ModelError(
                f"{where}: no answer within {self.timeout_s:g} s {tries}; raise "
                "`model_timeout_s` in sparring.toml (or SPARRING_MODEL_TIMEOUT_S) "
                "or check that the server is not overloaded",
                requests=requests,
            )
        if isinstance(e, openai.APIConnectionError):
            hint = (
                f"start Ollama (`ollama serve`, then `ollama pull {self.model}`)"
                if ":11434" in self.base_url
                else "check --base-url and that the server runs"
            )
            return ModelError(
                f"{where}: could not connect {tries}; {hint} ({scrub(_cause_text(e))})",
                requests=requests,
            )
        if isinstance(e, openai.APIStatusError):
            detail = self._scrubber.excerpt(_detail(e), _EXCERPT_CHARS)
            return ModelError(
                f"{where}: HTTP {e.status_code}: {detail}. "
                + _status_hint(e.status_code, self.model, tries),
                requests=requests,
            )
        return ModelError(f"{where}: {scrub(str(e))}", requests=requests)

    async def aclose(self) -> None:
        """Let go of the shared SDK client; the last model using it closes its connections."""
        await self._client.aclose()


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


def _causes(e: BaseException) -> Iterator[BaseException]:
    """The exceptions under `e` (`__cause__`, else `__context__`), nearest first."""
    seen = {id(e)}
    cause = e.__cause__ or e.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _aiohttp_error(e: BaseException) -> BaseException | None:
    return next((c for c in _causes(e) if type(c).__module__.startswith("aiohttp")), None)


def _timed_out(e: openai.APITimeoutError) -> bool:
    """False when the SDK's aiohttp transport reported a connection error (refused, reset,
    closed) as a timeout, as it does for every aiohttp connection error."""
    underneath = _aiohttp_error(e)
    return underneath is None or isinstance(underneath, TimeoutError)


def _cause_text(e: openai.APIConnectionError) -> str:
    """What went wrong underneath the SDK's generic "Connection error."."""
    underneath = _aiohttp_error(e)
    return str(underneath) if underneath is not None and str(underneath) else str(e)


def _worth_retrying(e: openai.APIStatusError) -> bool:
    """Whether the SDK would retry this answer (its rules, Retry-After limits aside)."""
    told = e.response.headers.get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return e.status_code in (408, 409, 429) or e.status_code >= 500


def _refuses_response_format(e: openai.APIStatusError) -> bool:
    """Whether the endpoint refused the request's `response_format`, judged by what its
    error says: servers answer such requests with 400, 422, 501 or even 500
    (llama-cpp-python's request validation error), never with an auth, 404 or rate-limit
    status."""
    if e.status_code in _NOT_A_FORMAT_REFUSAL:
        return False
    text = f"{e.message} {e.body}".lower()
    return any(word in text for word in _FORMAT_WORDS)


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
