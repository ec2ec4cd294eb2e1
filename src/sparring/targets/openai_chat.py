"""`OpenAIChatTarget`: an agent behind an OpenAI-compatible chat completions endpoint.

Stateless: each turn sends the whole conversation as `messages` (the spec's
`system_prompt` first), user messages as `user`, agent messages as `assistant` with their
tool calls. Since the endpoint's own tool calls are not executed by sparring, each one is
followed by a `tool` message carrying the recorded result (or a note that none exists), as
the chat completions API requires.
"""

from __future__ import annotations

import time
from typing import Any, cast

import anyio
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from sparring.errors import TargetError, TargetTimeout, UserError
from sparring.scenario import OpenAIChatTargetSpec
from sparring.secrets import Secrets
from sparring.targets.templates import fill_text
from sparring.transcript import Message, ToolCall, Transcript, content_text

_DEFAULT_API_KEY = OpenAIChatTargetSpec.model_fields["api_key"].default
_NO_KEY = "not-needed"
_NO_RESULT = "(no tool result: sparring does not run the agent's tools)"


class OpenAIChatTarget:
    """Target for `type: openai_chat` (see `OpenAIChatTargetSpec`).

    Args:
        spec: base_url, model, api_key / headers (may use `{{secrets.NAME}}`), system prompt,
            temperature, `timeout_s` (limit for one reply, retries included).
        secrets: Fills the placeholders; its values are scrubbed from error messages.
        max_retries: SDK retries of 408/409/429/5xx and connection errors within `timeout_s`.

    Raises:
        UserError: a secret used by `api_key` or `headers` is not set (the default
            `{{secrets.OPENAI_API_KEY}}` instead falls back to a dummy key, for local servers).
    """

    def __init__(self, spec: OpenAIChatTargetSpec, *, secrets: Secrets,
                 max_retries: int = 2) -> None:
        self.spec, self._secrets = spec, secrets
        self.name = f"openai_chat:{spec.model}"
        headers = {k: self._fill(v) for k, v in spec.headers.items()}
        try:
            api_key = self._fill(spec.api_key)
        except UserError:
            if spec.api_key != _DEFAULT_API_KEY:
                raise
            api_key = _NO_KEY
        self._client = AsyncOpenAI(base_url=spec.base_url, api_key=api_key or _NO_KEY,
                                   default_headers=headers, timeout=spec.timeout_s,
                                   max_retries=max_retries)

    def _fill(self, text: str) -> str:
        return fill_text(text, message="", history=[], secrets=self._secrets)

    async def open_session(self) -> OpenAIChatSession:
        """Start a conversation (no server-side state)."""
        return OpenAIChatSession(self)

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()

    async def reply(self, transcript: Transcript) -> Message:
        """Send the conversation; return the agent's reply (see `TargetSession.send`)."""
        kwargs: dict[str, Any] = {}
        if self.spec.temperature is not None:
            kwargs["temperature"] = self.spec.temperature
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.spec.timeout_s):
                response = cast(ChatCompletion, await self._client.chat.completions.create(
                    model=self.spec.model, messages=self.messages(transcript), **kwargs))
        except (TimeoutError, openai.APITimeoutError):
            raise TargetTimeout(target=self.name, timeout_seconds=self.spec.timeout_s) from None
        except openai.OpenAIError as e:
            raise self._error(e) from None
        latency_ms = (time.perf_counter() - started) * 1000
        return self._message(response, latency_ms)

    def messages(self, transcript: Transcript) -> list[Any]:
        """The chat completions `messages` for `transcript`."""
        out: list[dict[str, Any]] = []
        if self.spec.system_prompt:
            out.append({"role": "system", "content": self.spec.system_prompt})
        for m in transcript.messages:
            if m.role == "user" or m.role == "system":
                out.append({"role": m.role, "content": m.content})
            elif m.role == "agent":
                out.extend(_assistant(m, len(out)))
        return out

    def _message(self, response: ChatCompletion, latency_ms: float) -> Message:
        if not response.choices:
            raise TargetError(f"{self.spec.base_url} returned no choices for model "
                              f"{self.spec.model!r}; is it a chat completions endpoint?")
        choice = response.choices[0].message
        usage = response.usage
        return Message(
            role="agent", content=choice.content or "",
            tool_calls=tuple(_tool_call(c) for c in choice.tool_calls or ()),
            latency_ms=latency_ms, raw=response.model_dump(mode="json", exclude_unset=True),
            input_tokens=usage.prompt_tokens if usage is not None else None,
            output_tokens=usage.completion_tokens if usage is not None else None)

    def _error(self, e: openai.OpenAIError) -> TargetError:
        where = f"{self.name} at {self.spec.base_url}"
        if isinstance(e, openai.APIConnectionError):
            text = (f"{where}: could not connect ({e}); check base_url and that the agent's "
                    "server is running")
            return TargetError(self._secrets.scrub(text))
        if isinstance(e, openai.APIStatusError):
            hint = {401: "check api_key (e.g. {{secrets.OPENAI_API_KEY}})",
                    404: "check base_url (ends in /v1) and the model name"}.get(
                        e.status_code, "check the endpoint's logs")
            text = f"{where} answered HTTP {e.status_code}: {e.message[:300]}; {hint}"
            return TargetError(self._secrets.scrub(text), status=e.status_code)
        return TargetError(self._secrets.scrub(f"{where}: {e}"))


class OpenAIChatSession:
    """One conversation with an `OpenAIChatTarget`; stateless, so it only forwards."""

    def __init__(self, target: OpenAIChatTarget) -> None:
        self._target = target

    async def send(self, transcript: Transcript, /) -> Message:
        """Send the whole conversation; return the agent's reply."""
        return await self._target.reply(transcript)

    async def close(self) -> None:
        """Nothing to release."""


def _assistant(message: Message, position: int) -> list[dict[str, Any]]:
    if not message.tool_calls:
        return [{"role": "assistant", "content": message.content}]
    ids = [c.id or f"call_{position}_{i}" for i, c in enumerate(message.tool_calls)]
    calls = [{"id": i, "type": "function",
              "function": {"name": c.name, "arguments": c.arguments_raw}}
             for i, c in zip(ids, message.tool_calls, strict=True)]
    out: list[dict[str, Any]] = [
        {"role": "assistant", "content": message.content or None, "tool_calls": calls}]
    for i, c in zip(ids, message.tool_calls, strict=True):
        result = _NO_RESULT if c.result is None else content_text(c.result)
        out.append({"role": "tool", "tool_call_id": i, "content": result})
    return out


def _tool_call(call: Any) -> ToolCall:
    function = getattr(call, "function", None)
    if function is not None:
        return ToolCall.from_arguments(function.name, function.arguments, id=call.id)
    custom = getattr(call, "custom", None)
    if custom is not None:  # free-text custom tool: input kept as a string
        return ToolCall(name=custom.name, arguments_raw=custom.input, arguments=custom.input,
                        id=call.id)
    return ToolCall(name=str(getattr(call, "type", "unknown")), id=getattr(call, "id", None))
