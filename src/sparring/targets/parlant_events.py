"""Reading a Parlant session's events into one turn of a reply (`sparring.targets.parlant`).

Shapes from Parlant 3.x's `EventDTO` (`api/sessions.py`): `{id, source, kind, offset,
creation_utc, trace_id, data, ...}`; a status event's `data` is `{status, data}` with the
`stage` (or an error's `exception`) in the inner `data`; a message's `data` is `{message,
participant, tags?}` (a streamed one also has `chunks`, ending with `null` once complete); a
tool event's `data` is `{tool_calls: [{tool_id, arguments, result: {data, ...}}]}`.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from pydantic import JsonValue

from sparring.errors import TargetError
from sparring.transcript import StatusEvent, ToolCall, content_text

_EXCERPT_CHARS = 300
_MAX_TRACEBACK_CHARS = 100_000
"""Longer `exception` texts are shown as they are, not parsed."""
_CUSTOMER_SOURCES = frozenset({"customer", "customer_ui", "user", "user_ui"})
PREAMBLE_TAG = "__preamble__"
"""The tag on a preamble message's `data.tags`: a short message Parlant sends while the agent
works, before its answer."""


@dataclass
class Turn:
    """The agent's answer to one customer message, built event by event.

    `sent` is the customer event's server time; `failure` is `(status, data)` of an `error`
    or `cancelled` status; `streaming` holds the offsets of messages still being streamed,
    `preambles` those of preamble messages.
    `completed`: the run's last `ready` (stage `completed`) came; `working`: a `processing`
    status came (the preamble phase is over); `maybe_over`: the latest event is a `ready`
    without stage after `working` or after an answer (a message that is no preamble): the
    end of the turn on a server that does not mark it (a preamble phase's `ready` comes
    before both).
    `ready_at` is when (`time.perf_counter()`) the turn's end was read.
    """

    sent: datetime | None
    events: dict[int, JsonValue] = field(default_factory=dict[int, JsonValue])
    texts: dict[int, str] = field(default_factory=dict[int, str])
    calls: list[ToolCall] = field(default_factory=list[ToolCall])
    statuses: list[StatusEvent] = field(default_factory=list[StatusEvent])
    streaming: set[int] = field(default_factory=set[int])
    preambles: set[int] = field(default_factory=set[int])
    completed: bool = False
    working: bool = False
    maybe_over: bool = False
    ready_at: float | None = None
    failure: tuple[str, JsonValue] | None = None

    @property
    def parts(self) -> list[str]:
        """The agent's messages, in offset order."""
        return [self.texts[k] for k in sorted(self.texts)]

    @property
    def answered(self) -> bool:
        """The agent sent a message other than a preamble."""
        return any(offset not in self.preambles for offset in self.texts)

    @property
    def over(self) -> bool:
        """The run's last `ready` came, or the turn failed."""
        return self.completed or self.failure is not None

    def add(self, event: dict[str, Any]) -> None:
        """Take in the next event of the turn (any kind; a customer's message is kept in
        `events` only)."""
        offset, kind, data = event_offset(event), event.get("kind"), event.get("data")
        self.events[offset] = cast(JsonValue, event)
        self.maybe_over = False
        if kind == "message" and event.get("source") not in _CUSTOMER_SOURCES:
            self._message(offset, data)
        elif kind == "tool":
            self.calls.extend(tool_calls(data))
        elif kind == "status" and isinstance(data, dict):
            self._status(event, cast(dict[str, Any], data))

    def _status(self, event: dict[str, Any], status: dict[str, Any]) -> None:
        state, inner = str(status.get("status", "")), status.get("data")
        self.statuses.append(
            StatusEvent(state=state, at_ms=self._at_ms(event), detail=status_detail(inner)[:200])
        )
        stage = cast(dict[str, Any], inner).get("stage") if isinstance(inner, dict) else None
        if state in ("error", "cancelled"):
            self.failure = (state, cast(JsonValue, inner))
        elif state == "processing":
            self.working = True
        elif state == "ready" and stage == "completed":
            self.completed = True
        elif state == "ready":
            self.maybe_over = self.working or self.answered

    def update(self, events: Sequence[dict[str, Any]]) -> None:
        """Replace the recorded messages with a later reading of the same events."""
        for event in events:
            offset = event_offset(event)
            if offset in self.texts:
                self.events[offset] = cast(JsonValue, event)
                self._message(offset, event.get("data"))

    def _message(self, offset: int, data: Any) -> None:
        body = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        chunks = body.get("chunks")
        text = body.get("message")
        if not text and isinstance(chunks, list):
            text = "".join(c for c in cast(list[Any], chunks) if isinstance(c, str))
        self.texts[offset] = text if isinstance(text, str) else content_text(data)
        tags = body.get("tags")
        if isinstance(tags, list) and PREAMBLE_TAG in tags:
            self.preambles.add(offset)
        if isinstance(chunks, list) and chunks and chunks[-1] is not None:
            self.streaming.add(offset)  # the stream ends with a null chunk
        else:
            self.streaming.discard(offset)

    def _at_ms(self, event: dict[str, Any]) -> float | None:
        at = event_time(event)
        if at is None or self.sent is None:
            return None
        return round((at - self.sent).total_seconds() * 1000, 3)


def event_offset(event: JsonValue) -> int:
    """An event's `offset`.

    Raises:
        TargetError: it has none (the server is not speaking Parlant's API).
    """
    offset = event.get("offset") if isinstance(event, dict) else None
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TargetError(
            f"a Parlant event has no integer `offset`: "
            f"{content_text(event)[:_EXCERPT_CHARS]!r}; check that `url` is a "
            "Parlant server"
        )
    return offset


def event_time(event: JsonValue) -> datetime | None:
    """An event's `creation_utc`, or `None` when missing or unreadable."""
    value = event.get("creation_utc") if isinstance(event, dict) else None
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def tool_calls(data: Any) -> list[ToolCall]:
    """The calls of a `tool` event: `{tool_calls: [{tool_id, arguments, result: {data}}]}`.
    The name is the tool's own name (`tool_id` is `service:name`); older servers send
    `tool_name`."""
    body = cast(dict[str, Any], data) if isinstance(data, dict) else {}
    raw_calls = body.get("tool_calls")
    calls: list[ToolCall] = []
    for item in cast(list[Any], raw_calls) if isinstance(raw_calls, list) else []:
        if not isinstance(item, dict):
            continue
        call = cast(dict[str, Any], item)
        name = str(call.get("tool_id") or call.get("tool_name") or "(unnamed tool)")
        result = call.get("result")
        if isinstance(result, dict) and "data" in result:
            result = cast(dict[str, Any], result)["data"]
        calls.append(
            ToolCall.from_arguments(
                name.rsplit(":", 1)[-1], call.get("arguments"), result=cast(JsonValue, result)
            )
        )
    return calls


def status_detail(data: Any) -> str:
    """A status event's `data` as text: its `stage`, or the gist of its `exception`."""
    if isinstance(data, dict):
        body = cast(dict[str, Any], data)
        if isinstance(body.get("exception"), str):
            return _exception_gist(body["exception"])
        for key in ("stage", "message", "detail"):
            if isinstance(body.get(key), str):
                return body[key]
    if data is None or data == {} or data == "":
        return ""
    return content_text(data)


def _exception_gist(text: str) -> str:
    """The exception line of an `error` status's `exception`, which Parlant sends as
    `pformat(traceback.format_exception(e))` (a list of strings whose last item is e.g.
    `RuntimeError: model overloaded`); any other text as it is."""
    if not text.lstrip().startswith("[") or len(text) > _MAX_TRACEBACK_CHARS:
        return text
    try:
        lines = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    if isinstance(lines, list) and lines and isinstance(last := cast(list[Any], lines)[-1], str):
        return last.strip() or text
    return text
