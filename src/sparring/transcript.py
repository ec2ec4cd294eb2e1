"""The conversation record: Message, ToolCall, Transcript (frozen, JSON-serialisable).

Turn numbers are 1-based and count user messages: the user's first message and the agent's
reply to it are both turn 1.

Also what every model that ends up in a report shares: `Record` (each string made valid
Unicode as it comes in) and `parse_json` (JSON from a target or model, its depth limited to
what a report can hold).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

Role = Literal["user", "agent", "system", "tool"]
MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects accepted in JSON a target or model sends."""


class JsonTooDeep(ValueError):
    """JSON nested deeper than `MAX_JSON_DEPTH` (no report could hold it)."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")


def parse_json(text: str | bytes) -> JsonValue:
    """`json.loads` (of text, or UTF-8 bytes) that keeps `NaN`, `Infinity` and `-Infinity`
    as strings (so a report holding the value stays strict JSON) and refuses nesting deeper
    than `MAX_JSON_DEPTH`.

    Raises:
        JsonTooDeep: nested deeper than `MAX_JSON_DEPTH` (check it before ValueError).
        ValueError: not JSON (`json.JSONDecodeError`, or `UnicodeDecodeError` for bytes).
    """
    try:
        value: JsonValue = json.loads(text, parse_constant=str)
    except RecursionError:
        raise JsonTooDeep() from None
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = list(cast(dict[str, Any], item).values())
        if isinstance(item, list):
            if depth > MAX_JSON_DEPTH:
                raise JsonTooDeep()
            pending.extend((child, depth + 1) for child in cast(list[Any], item))
    return value


def valid_text(text: str) -> str:
    """`text` with each lone UTF-16 surrogate (which no UTF-8 file or terminal can hold)
    replaced by one U+FFFD, and a high and low surrogate side by side joined into the
    character they encode; `text` itself when it has none."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_unicode(value: Any) -> Any:
    """`value` with `valid_text` applied to every string in it, keys included, through
    dicts, lists and tuples; anything else as it is."""
    return _clean_strings(value, None)


class Record(BaseModel):
    """Base of the models that end up in reports (transcripts, results): every string given
    to them, from an agent, a model, a test file or a Python test, is made valid Unicode
    (`valid_unicode`) when the model is built, so no report writer or console can fail on
    it. Nested models are repaired when they are built themselves."""

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        try:
            return valid_unicode(data)
        except RecursionError:  # pydantic refuses such nesting anyway: say why
            raise ValueError("the value is nested too deeply to keep in a report") from None


class ToolCall(Record):
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
                parsed: JsonValue = parse_json(arguments) if arguments.strip() else {}
            except ValueError as e:
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


class StatusEvent(Record):
    """A state the agent reported while it worked on a reply: an A2A task state
    (`working`, `input-required`, `completed`, ...), a Parlant status (`acknowledged`,
    `processing`, `typing`, `ready`), or a framework's progress event.

    `at_ms` is milliseconds since the user message was sent, when known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: str
    detail: str = ""
    at_ms: float | None = None


class Attachment(Record):
    """A file sent with a user message (`files:` in a test): an image, a PDF, a text file.

    `data` is the file's bytes base64-encoded (standard alphabet, padded); `size` is the
    byte count before encoding; `text` is the file's text for text files (UTF-8, decoded
    with replacement), shown to the judge and the simulated user, else `None`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    mime_type: str
    size: int
    data: str = ""
    text: str | None = None


class Message(Record):
    """One message in a conversation.

    `latency_ms` is the target's reply time in milliseconds (agent messages only); `raw` is
    the payload the target sent, for reports. When the agent answered one user message with
    several separate messages (a preamble, then the answer), `content` is them joined by
    newlines and `parts` holds each one; otherwise `parts` is empty. `status_events` are the
    states reported while the reply was produced; `input_tokens` / `output_tokens` are the
    target's own token counts where it reports them. `files` are the attachments sent with a
    user message; `audio_ms` / `first_audio_ms` are, for a voice target, the length of the
    spoken reply and the time from the end of the user's audio to the reply's first audio,
    in milliseconds. `audio` is, on a user message, the WAV file (absolute path) a voice
    target plays for it (a scripted turn's `audio:`, or its WAV made by `sparring
    synthesize`); without one a voice target speaks `content` with its speech provider.
    Text targets ignore it.
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
    files: tuple[Attachment, ...] = ()
    audio_ms: float | None = None
    first_audio_ms: float | None = None
    audio: str | None = None


class Transcript(Record):
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
    payload, attached files' text and data) with secret values masked (DESIGN.md section
    5) and lone UTF-16 surrogates replaced, so every report stays valid UTF-8. Only string
    values change, never the structure, and the message is returned as is when nothing
    changed.

    Each string is scrubbed on its own, never a JSON dump of the message: a dump escapes
    every string once more, so a secret the agent sent already escaped would be missed."""
    data = message.model_dump()
    clean = _clean_strings(data, scrub)
    clean["files"] = tuple(
        _clean_file(f, raw, scrub) for f, raw in zip(clean["files"], data["files"], strict=True)
    )
    return message if clean == data else Message.model_validate(clean)


def _clean_file(
    clean: dict[str, Any], raw: dict[str, Any], scrub: Callable[[str], str] | None
) -> dict[str, Any]:
    """An attachment's `data` masked like text: decoded (UTF-8, other bytes kept as they
    are), scrubbed, encoded again, `size` following; data that is not base64 is masked as
    the text it is."""
    try:
        data = base64.b64decode(raw["data"], validate=True)
    except ValueError:  # binascii.Error: `clean` holds it scrubbed as text
        return clean
    clean["data"] = raw["data"]
    text = data.decode("utf-8", "surrogateescape")
    masked = scrub(text) if scrub is not None else text
    if masked != text:
        data = masked.encode("utf-8", "surrogateescape")
        clean["data"], clean["size"] = base64.b64encode(data).decode("ascii"), len(data)
    return clean


def _clean_strings(value: Any, scrub: Callable[[str], str] | None) -> Any:
    if isinstance(value, str):
        value = valid_text(value)
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
