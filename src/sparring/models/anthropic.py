"""`AnthropicModel`: Claude through the Anthropic Messages API (`anthropic:NAME`).

A leaf provider: only `sparring.models.registry` imports it, so the anthropic SDK (extra
`anthropic`) is loaded only when such a model is used. Retries (429 honouring
`retry-after`, 408/409/5xx and 529 overloaded, timeouts, connection errors) are the SDK's
own; what is left after them becomes a `ModelError` that says what to do.

Structured output: the schema goes out as native structured output
(`output_config.format = json_schema`); a model or endpoint that rejects it is asked
through a forced tool whose `input_schema` is the schema instead (from then on), and the
tool's input comes back as the answer's JSON text.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any, cast

from sparring.errors import ModelError, UserError
from sparring.models._requests import count_request, requests_sent
from sparring.models._retries import retries_text
from sparring.models.base import ChatMessage, Completion
from sparring.secrets import Scrubber, mask_url, url_credentials
from sparring.transcript import parse_json

try:
    import anthropic
    from anthropic import AsyncAnthropic
except ImportError as e:  # pragma: no cover - the dev environment has the extra
    raise UserError(
        'the Anthropic provider (anthropic:NAME) needs its extra: pip install "sparring[anthropic]"'
    ) from e

DEFAULT_MAX_TOKENS = 4096
_EXCERPT_CHARS = 300
_REJECTION_HINTS = (
    "output_config",
    "output_format",
    "output format",
    "structured output",
    "json_schema",
    "json schema",
)


class AnthropicModel:
    """A Claude model behind the Anthropic Messages API (`POST /v1/messages`).

    One SDK client per instance, shared by all concurrent `complete` calls. System messages
    go into `system=`; temperatures above 1 (Anthropic's maximum) are sent as 1. Error
    messages never contain the API key or credentials in `base_url`.

    Args:
        name: The spec shown in reports, e.g. `anthropic:claude-sonnet-4-5`.
        model: The model name sent to the API, e.g. `claude-sonnet-4-5`.
        base_url: API root without `/v1` (the SDK adds it); `None` means Anthropic (or
            `ANTHROPIC_BASE_URL`).
        api_key: `x-api-key`; `None` reads `ANTHROPIC_API_KEY`.
        timeout_s: Limit for one HTTP attempt, in seconds.
        max_retries: Retries after the first attempt, for 408/409/429/5xx/529, timeouts and
            connection errors.
        max_tokens: Most tokens one answer may have (the API requires a limit).

    Raises:
        UserError: no API key given and `ANTHROPIC_API_KEY` unset.
    """

    sends_seed = False
    """The Messages API takes no `seed` (`sparring.models.base.sends_seed`)."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120,
        max_retries: int = 4,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise UserError(
                f"model {name!r} needs an Anthropic API key: export "
                "ANTHROPIC_API_KEY=sk-ant-... (or SPARRING_API_KEY, or api_key in "
                "sparring.toml)"
            )
        self.name, self.model, self.max_tokens = name, model, max_tokens
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self._client = AsyncAnthropic(
            api_key=key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=max_retries,
            http_client=anthropic.DefaultAsyncHttpxClient(
                timeout=timeout_s, event_hooks={"request": [count_request]}
            ),
        )
        self.base_url = str(self._client.base_url).rstrip("/")
        self._shown_url = mask_url(self.base_url)
        self._scrubber = Scrubber([key, *url_credentials(self.base_url)])
        self.native_json_schema = True
        """False once the API rejected `output_config`; a forced tool is used then."""

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """One Messages API call; with `json_schema`, ask for JSON matching it (`seed` is
        not sent: the API has none, see `sends_seed`).

        Returns:
            The answer's text (with a schema: the JSON text), the token counts of `usage`
            (`None` when missing or not non-negative integers), and the requests sent
            (retries and a refused `output_config` included).

        Raises:
            ModelError: the call failed after the SDK's retries, the model refused or
                answered with a tool call instead of text, or the answer is not a Messages
                API answer; the message says what to do, `requests` how many were sent.
        """
        with requests_sent() as sent:
            try:
                answer = await self._answer(messages, temperature, json_schema, schema_name)
            except ModelError as e:
                e.requests = sent.count
                raise
            return dataclasses.replace(answer, requests=sent.count)

    async def _answer(
        self,
        messages: Sequence[ChatMessage],
        temperature: float,
        json_schema: dict[str, Any] | None,
        schema_name: str,
    ) -> Completion:
        body = self._body(messages, temperature)
        try:
            if json_schema is not None and self.native_json_schema:
                native = {
                    **body,
                    "output_config": {"format": {"type": "json_schema", "schema": json_schema}},
                }
                try:
                    return await self._create(native, tool=None)
                except anthropic.APIStatusError as e:
                    if not _rejects_output_config(e):
                        raise
                    self.native_json_schema = False
            if json_schema is not None:
                body["tools"] = [
                    {
                        "name": schema_name,
                        "input_schema": json_schema,
                        "description": "Give your answer by calling this tool.",
                    }
                ]
                body["tool_choice"] = {"type": "tool", "name": schema_name}
                return await self._create(body, tool=schema_name)
            return await self._create(body, tool=None)
        except anthropic.AnthropicError as e:  # fails alone: the next call is sent
            raise self._error(e) from e

    def _body(self, messages: Sequence[ChatMessage], temperature: float) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": min(temperature, 1.0),
            "messages": [
                {"role": m["role"], "content": m["content"]}
                for m in messages
                if m["role"] != "system"
            ],
        }
        if system:
            body["system"] = system
        return body

    async def _create(self, body: dict[str, Any], *, tool: str | None) -> Completion:
        # The SDK's generic `post` keeps its retries, auth and error mapping; the body comes
        # back as bytes and is checked here (the typed call would not validate it).
        data = await self._client.post("/v1/messages", body=body, cast_to=bytes)
        try:
            answer = parse_json(data)
        except ValueError:  # not JSON, not UTF-8, or nested too deeply (JsonTooDeep)
            answer = None
        if not isinstance(answer, dict) or not isinstance(
            content := cast(dict[str, Any], answer).get("content"), list
        ):
            excerpt = self._scrubber.excerpt(data.decode("utf-8", "replace"), _EXCERPT_CHARS)
            raise ModelError(
                f"{self._where}: the answer is not a Messages API answer (no "
                f"`content` list; it starts {excerpt!r}); check that base_url "
                "points at the Anthropic API root, without /v1"
            )
        answer = cast(dict[str, Any], answer)
        if answer.get("stop_reason") == "refusal":
            raise ModelError(f"{self.name} refused to answer (stop_reason `refusal`)")
        blocks = [cast(dict[str, Any], b) for b in cast(list[Any], content) if isinstance(b, dict)]
        text = _text(blocks, tool=tool)
        if not text.strip() and (
            used := [str(b.get("name")) for b in blocks if b.get("type") == "tool_use"]
        ):
            raise ModelError(
                f"{self._where} answered with a tool_use block ({', '.join(used)}) "
                "instead of text, so there is no answer to read; sparring offers "
                "the model no such tool, so check whether a proxy or gateway at "
                "base_url adds tools to the request"
            )
        usage: Any = answer.get("usage")
        usage = cast(dict[str, Any], usage) if isinstance(usage, dict) else {}
        return Completion(
            text=text,
            input_tokens=_tokens(usage.get("input_tokens")),
            output_tokens=_tokens(usage.get("output_tokens")),
        )

    @property
    def _where(self) -> str:
        return f"{self.name} at {self._shown_url}"

    def _error(self, e: anthropic.AnthropicError) -> ModelError:
        if not isinstance(e, anthropic.APIError):
            return ModelError(f"{self._where}: {self._scrubber.scrub(str(e))}")
        answered = e.response.headers if isinstance(e, anthropic.APIStatusError) else None
        tries = retries_text(e.request.headers, answered, max_retries=self.max_retries)
        if isinstance(e, anthropic.APITimeoutError):
            return ModelError(
                f"{self._where}: no answer within {self.timeout_s:g} s {tries}; "
                "raise `model_timeout_s` in sparring.toml (or "
                "SPARRING_MODEL_TIMEOUT_S) or try again later"
            )
        if isinstance(e, anthropic.APIConnectionError):
            return ModelError(
                f"{self._where}: could not connect {tries}; check the network "
                f"and base_url ({self._scrubber.scrub(str(e))})"
            )
        if isinstance(e, anthropic.APIStatusError):
            detail = self._scrubber.excerpt(_detail(e), _EXCERPT_CHARS)
            return ModelError(
                f"{self._where}: HTTP {e.status_code}: {detail}. "
                + _status_hint(e.status_code, self.model, tries)
            )
        return ModelError(f"{self._where}: {self._scrubber.scrub(str(e))}")

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()


def _text(blocks: list[dict[str, Any]], *, tool: str | None) -> str:
    """The answer: the forced tool's input as JSON text, else the text blocks joined."""
    if tool is not None:
        for block in blocks:
            if block.get("type") == "tool_use" and block.get("name") == tool:
                return json.dumps(block.get("input"), ensure_ascii=False)
    return "".join(
        b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _tokens(value: object) -> int | None:
    """A token count from `usage`: a non-negative integer, else `None`."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _detail(e: anthropic.APIStatusError) -> str:
    """The API's error message (`{"error": {"message": ...}}`), whole; else the SDK's."""
    body: Any = e.body
    if isinstance(body, dict):
        error: Any = cast(dict[str, Any], body).get("error")
        if isinstance(error, dict):
            message: Any = cast(dict[str, Any], error).get("message")
            if isinstance(message, str):
                return message
    return e.message


def _status_hint(status: int, model: str, tries: str) -> str:
    if status == 401:
        return "The API key was rejected: set ANTHROPIC_API_KEY or pass api_key"
    if status == 403:
        return f"The API key has no access to model {model!r}; check the key's permissions"
    if status == 404:
        return (
            f"Check the model name {model!r} (e.g. claude-sonnet-4-5; see "
            "https://docs.anthropic.com/en/docs/about-claude/models) and base_url"
        )
    if status == 429:
        return f"Rate limited {tries}; lower --parallel or wait and rerun"
    if status >= 500:
        return (
            f"The API failed or was overloaded {tries}; try again later "
            "(https://status.anthropic.com)"
        )
    return "Check the model settings (temperature 0-1, max_tokens) and the request"


def _rejects_output_config(e: anthropic.APIStatusError) -> bool:
    if e.status_code != 400:
        return False
    text = f"{e.message} {e.body}".lower()
    return any(hint in text for hint in _REJECTION_HINTS)
