"""The conversation record: Message, ToolCall, Transcript (frozen, JSON-serialisable).

Turn numbers are 1-based and count user messages: the user's first message and the agent's
reply to it are both turn 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, JsonValue
from pydantic_core import PydanticSerializationError

Role = Literal["user", "agent", "system", "tool"]


class ToolCall(BaseModel):
    """One tool call the agent made.

    `arguments_raw` is the arguments text exactly as the target sent it; `arguments` is its
    parsed JSON, or `None` with `arguments_error` saying why it did not parse.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments_raw: str = "{}"
    arguments: JsonValue = None
    arguments_error: str | None = None
    id: str | None = None
    result: JsonValue = None
    """What the tool returned, when the target reports it."""

    @classmethod
    def from_arguments(
        cls, name: str, arguments: Any, *, id: str | None = None, result: JsonValue = None
    ) -> ToolCall:
        """Build a ToolCall from arguments given as a JSON string, a dict, or `None`.

        A string that is not valid JSON is kept in `arguments_raw` and the parse error is
        recorded in `arguments_error`; this never raises.
        """
        if arguments is None:
            return cls(name=name, arguments_raw="{}", arguments={}, id=id, result=result)
        if isinstance(arguments, str):
            try:
                parsed: JsonValue = (
                    json.loads(arguments, parse_constant=str) if arguments.strip() else {}
                )
            except json.JSONDecodeError as e:
                return cls(
                    name=name,
                    arguments_raw=arguments,
                    arguments=None,
                    arguments_error=f"arguments are not valid JSON: {e}",
                    id=id,
                    result=result,
                )
            return cls(name=name, arguments_raw=arguments, arguments=parsed, id=id, result=result)
        raw = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return cls(name=name, arguments_raw=raw, arguments=arguments, id=id, result=result)


class StatusEvent(BaseModel):
    """A state the agent reported while it worked on a reply: an A2A task state
    (`working`, `input-required`, `completed`, ...), a Parlant status (`acknowledged`,
    `processing`, `typing`, `ready`), or a framework's progress event.

    `at_ms` is milliseconds since the user message was sent, when known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: str
    detail: str = ""
    at_ms: float | None = None


class Message(BaseModel):
    """One message in a conversation.

    `latency_ms` is the target's reply time in milliseconds (agent messages only); `raw` is
    the payload the target sent, for reports. When the agent answered one user message with
    several separate messages (a preamble, then the answer), `content` is them joined by
    newlines and `parts` holds each one; otherwise `parts` is empty. `status_events` are the
    states reported while the reply was produced; `input_tokens` / `output_tokens` are the
    target's own token counts where it reports them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    latency_ms: float | None = None
    raw: JsonValue = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    parts: tuple[str, ...] = ()
    status_events: tuple[StatusEvent, ...] = ()


class Transcript(BaseModel):
    """An ordered, immutable list of messages; `with_message` returns a new transcript."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...] = ()

    def with_message(self, message: Message) -> Transcript:
        """Return a new transcript with `message` appended."""
        return Transcript.model_construct(messages=(*self.messages, message))

    @property
    def user_turns(self) -> int:
        """Number of user messages so far."""
        return sum(1 for m in self.messages if m.role == "user")

    def agent_replies(self) -> list[tuple[int, Message]]:
        """Agent messages with their 1-based turn number, in order."""
        out: list[tuple[int, Message]] = []
        turn = 0
        for m in self.messages:
            if m.role == "user":
                turn += 1
            elif m.role == "agent":
                out.append((turn, m))
        return out

    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of every agent message, in order."""
        return [c for m in self.messages if m.role == "agent" for c in m.tool_calls]


def content_text(value: Any) -> str:
    """Render a reply value as text: strings as is, anything else as canonical JSON.

    DESIGN.md section 3: a reply that is JSON rather than text is shown as canonical JSON
    text (sorted keys, no ASCII escaping), never as a language's default object rendering.
    """
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def sanitized(message: Message, scrub: Callable[[str], str] | None) -> Message:
    """`message` made safe to keep and report: every text in it (content, tool calls, raw
    payload) with secret values masked (DESIGN.md section 5) and lone UTF-16 surrogates
    replaced, so every report stays valid UTF-8. Only string values change, never the
    structure, and the message is returned as is when nothing changed."""
    try:  # fast path: one Rust dump shows there is nothing to replace or mask
        text = message.model_dump_json()
        if scrub is None or scrub(text) == text:
            return message
    except PydanticSerializationError:
        pass  # lone surrogates: the walk below replaces them
    data = message.model_dump()
    clean = _clean_strings(data, scrub)
    return message if clean == data else Message.model_validate(clean)


def _clean_strings(value: Any, scrub: Callable[[str], str] | None) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return scrub(value) if scrub is not None else value
    if isinstance(value, dict):
        return {
            _clean_strings(k, scrub): _clean_strings(v, scrub)
            for k, v in cast(dict[Any, Any], value).items()
        }
    if isinstance(value, list):
        return [_clean_strings(v, scrub) for v in cast(list[Any], value)]
    if isinstance(value, tuple):
        return tuple(_clean_strings(v, scrub) for v in cast(tuple[Any, ...], value))
    if isinstance(value, int | float) and not isinstance(value, bool) and scrub is not None:
        text = str(value)  # a numeric secret (a PIN) echoed as a JSON number
        return value if scrub(text) == text else scrub(text)
    return value
