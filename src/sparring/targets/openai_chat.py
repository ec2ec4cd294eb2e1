"""`OpenAIChatTarget`: an agent behind an OpenAI-compatible chat completions endpoint.

Stateless: each turn sends the whole conversation as `messages` (the spec's
`system_prompt` first), user messages as `user`, agent messages as `assistant` with their
tool calls. A user message sent with files is a list of content parts: its text (if any), then per
file an `image_url` part (a data URL) for images, a `text` part holding a text file's name
and text, and a `file` part (`filename`, `file_data` data URL) for PDFs and other files.
Since the endpoint's own tool calls are not executed by sparring, each one is followed by a
`tool` message carrying the recorded result (or a note that none exists), as the chat
completions API requires.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

import anyio
import httpx
import openai
from openai import AsyncOpenAI

from sparring.errors import TARGET_TIMEOUT_HINT, TargetError, TargetTimeout, UserError
from sparring.models.chat_completion import (
    ChatAnswer,
    MalformedCompletion,
    not_a_completion,
    parse_chat_completion,
)
from sparring.secrets import Secrets, mask_url, url_credentials
from sparring.target_specs import OpenAIChatTargetSpec
from sparring.targets.attachments import data_url
from sparring.targets.base import StatelessSession
from sparring.targets.templates import fill_text
from sparring.transcript import Message, ToolCall, Transcript, content_text

_DEFAULT_API_KEY = OpenAIChatTargetSpec.model_fields["api_key"].default
_NO_KEY = "not-needed"
_NO_RESULT = "(no tool result: sparring does not run the agent's tools)"
_EXCERPT_CHARS = 300


class OpenAIChatTarget:
    """Target for `type: openai_chat` (see `OpenAIChatTargetSpec`).

    Args:
        spec: base_url, model, api_key / headers (may use `{{secrets.NAME}}`), system prompt,
            temperature, `timeout_s` (limit for one reply, retries included).
        secrets: Fills the placeholders; its values are scrubbed from error messages.
            Error messages also show `base_url` with its userinfo and query masked, and
            never the API key (even one written literally) nor the URL's credentials.
        max_retries: SDK retries of 408/409/429/5xx and connection errors within `timeout_s`.
        http_client: The HTTP client for the SDK (e.g. one that records the exchanges, as
            `sparring doctor` does); the target closes it. Default: the SDK's own.

    Raises:
        UserError: a secret used by `api_key` or `headers` is not set (the default
            `{{secrets.OPENAI_API_KEY}}` instead falls back to a dummy key, for local servers).
    """

    def __init__(
        self,
        spec: OpenAIChatTargetSpec,
        *,
        secrets: Secrets,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.spec, self._secrets = spec, secrets
        self.name = f"openai_chat:{spec.model}"
        headers = {k: self._fill(v) for k, v in spec.headers.items()}
        try:
            api_key = self._fill(spec.api_key)
        except UserError:
            if spec.api_key != _DEFAULT_API_KEY:
                raise
            api_key = _NO_KEY
        self._shown_url = mask_url(spec.base_url)
        own = [] if api_key == _NO_KEY else [api_key]
        self._scrubber = secrets.scrubber_with([*own, *url_credentials(spec.base_url)])
        self._client = AsyncOpenAI(
            base_url=spec.base_url,
            api_key=api_key or _NO_KEY,
            default_headers=headers,
            timeout=spec.timeout_s,
            max_retries=max_retries,
            http_client=cast(Any, http_client),
        )

    def _fill(self, text: str) -> str:
        return fill_text(text, message="", history=[], secrets=self._secrets)

    async def open_session(self) -> OpenAIChatSession:
        """Start a conversation (no server-side state)."""
        return OpenAIChatSession(self)

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()

    async def reply(self, transcript: Transcript) -> Message:
        """Send the conversation; return the agent's reply (see `TargetSession.send`).

        Raises:
            TargetError: HTTP error, connection error, or an answer that is not a chat
                completion (not JSON, no `choices[0].message`, non-text `content`,
                malformed tool calls); secrets are scrubbed from the message.
            TargetTimeout: no reply within `timeout_s`.
        """
        body: dict[str, Any] = {"model": self.spec.model, "messages": self.messages(transcript)}
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.spec.timeout_s):
                # bytes, checked by `parse_chat_completion`: the SDK would build a
                # ChatCompletion from any answer without validating it.
                data = await self._client.post("/chat/completions", body=body, cast_to=bytes)
        except (TimeoutError, openai.APITimeoutError):
            raise TargetTimeout(
                target=self.name, timeout_seconds=self.spec.timeout_s, hint=TARGET_TIMEOUT_HINT
            ) from None
        except openai.OpenAIError as e:
            raise self._error(e) from None
        latency_ms = (time.perf_counter() - started) * 1000
        try:
            return _message(parse_chat_completion(data), latency_ms)
        except MalformedCompletion as e:
            raise TargetError(
                not_a_completion(
                    f"{self.name} at {self._shown_url}",
                    self._scrubber.excerpt(str(e), _EXCERPT_CHARS),
                )
            ) from None

    def messages(self, transcript: Transcript) -> list[Any]:
        """The chat completions `messages` for `transcript`."""
        out: list[dict[str, Any]] = []
        if self.spec.system_prompt:
            out.append({"role": "system", "content": self.spec.system_prompt})
        for m in transcript.messages:
            if m.role == "user" and m.files:
                out.append({"role": "user", "content": content_parts(m)})
            elif m.role == "user" or m.role == "system":
                out.append({"role": m.role, "content": m.content})
            elif m.role == "agent":
                out.extend(_assistant(m, len(out)))
        return out

    def _error(self, e: openai.OpenAIError) -> TargetError:
        where = f"{self.name} at {self._shown_url}"
        if isinstance(e, openai.APIConnectionError):
            return TargetError(
                f"{where}: could not connect ({self._scrubber.scrub(str(e))}); "
                "check base_url and that the agent's server is running"
            )
        if isinstance(e, openai.APIStatusError):
            hint = {
                401: "check api_key (e.g. {{secrets.OPENAI_API_KEY}})",
                404: "check base_url (ends in /v1) and the model name",
            }.get(e.status_code, "check the endpoint's logs")
            detail = self._scrubber.excerpt(e.message, _EXCERPT_CHARS)
            return TargetError(
                f"{where} answered HTTP {e.status_code}: {detail}; {hint}", status=e.status_code
            )
        return TargetError(f"{where}: {self._scrubber.scrub(str(e))}")


class OpenAIChatSession(StatelessSession):
    """One conversation with an `OpenAIChatTarget`; stateless, so it only forwards."""

    def __init__(self, target: OpenAIChatTarget) -> None:
        self._target = target

    async def send(self, transcript: Transcript, /) -> Message:
        """Send the whole conversation; return the agent's reply."""
        return await self._target.reply(transcript)

    async def close(self) -> None:
        """Nothing to release."""


def content_parts(message: Message) -> list[dict[str, Any]]:
    """A user message with files as chat completions content parts (module docstring)."""
    parts: list[dict[str, Any]] = []
    if message.content:  # a message of files only has no empty text part
        parts.append({"type": "text", "text": message.content})
    for f in message.files:
        if f.mime_type.startswith("image/"):
            parts.append({"type": "image_url", "image_url": {"url": data_url(f)}})
        elif f.text is not None:
            parts.append({"type": "text", "text": f"File {f.name} ({f.mime_type}):\n{f.text}"})
        else:
            parts.append({"type": "file", "file": {"filename": f.name, "file_data": data_url(f)}})
    return parts


def _assistant(message: Message, position: int) -> list[dict[str, Any]]:
    if not message.tool_calls:
        return [{"role": "assistant", "content": message.content}]
    ids = [c.id or f"call_{position}_{i}" for i, c in enumerate(message.tool_calls)]
    calls = [
        {"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments_raw}}
        for i, c in zip(ids, message.tool_calls, strict=True)
    ]
    out: list[dict[str, Any]] = [
        {"role": "assistant", "content": message.content or None, "tool_calls": calls}
    ]
    for i, c in zip(ids, message.tool_calls, strict=True):
        result = _NO_RESULT if c.result is None else content_text(c.result)
        out.append({"role": "tool", "tool_call_id": i, "content": result})
    return out


def _message(answer: ChatAnswer, latency_ms: float) -> Message:
    return Message(
        role="agent",
        content=answer.text,
        tool_calls=_tool_calls(answer.message),
        latency_ms=latency_ms,
        raw=cast(Any, answer.body),
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
    )


def _tool_calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    """`message.tool_calls` (function and custom tools; arguments parsed, never raising).

    Raises:
        MalformedCompletion: `tool_calls` is not a list, or an item has no tool name.
    """
    calls: object = message.get("tool_calls")
    if calls is None:
        return ()
    if not isinstance(calls, list):
        raise MalformedCompletion("choices[0].message.tool_calls is not a list")
    return tuple(_tool_call(item, i) for i, item in enumerate(cast(list[object], calls)))


def _tool_call(item: object, index: int) -> ToolCall:
    call_id = _field(item, "id")
    call_id = call_id if isinstance(call_id, str) else None
    function, custom = _field(item, "function"), _field(item, "custom")
    name = _field(function, "name")
    if isinstance(name, str):
        return ToolCall.from_arguments(name, _field(function, "arguments"), id=call_id)
    name, text = _field(custom, "name"), _field(custom, "input")
    if isinstance(name, str):  # free-text custom tool: input kept as a string
        text = text if isinstance(text, str) else ""
        return ToolCall(name=name, arguments_raw=text, arguments=text, id=call_id)
    # Not cut here: the caller scrubs secrets from the whole text first, then cuts.
    raise MalformedCompletion(
        f"tool call {index} has no `function.name`: {json.dumps(item, default=str)}"
    )


def _field(value: object, key: str) -> object:
    return cast(dict[str, object], value).get(key) if isinstance(value, dict) else None
