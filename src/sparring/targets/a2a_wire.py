"""What an A2A agent answered, in sparring's terms (`sparring.targets.a2a`; extra `a2a`).

`Answer` folds the a2a-sdk client's events for one user message (a non-streaming reply is one
event: the task or a direct message; a stream is a task, status and artifact updates) into
the task as the agent holds it, and checks that the agent answered.

The reply is what the agent produced in this turn: a continued (`input-required`) task keeps
every artifact of every turn, and a non-streaming answer is that whole task (the a2a-sdk's
`TaskManager` never clears artifacts; A2A marks no turn on them). So a turn's artifacts are
found by comparing with the task as the previous answer left it (`ArtifactParts`): an
artifact with a new id is the turn's; one whose earlier parts are still its first parts
contributes the parts added since; one whose parts changed (replaced in place, same id,
`append` false) is the turn's whole; in a stream, an artifact created or replaced by an
update of this stream is the turn's whole. The text is those artifacts followed by the
task's status message (text parts joined as they are, since streamed chunks are separate
parts; data parts as canonical JSON and files as a `[file ...]` marker, on lines of their
own); when there are several, each is also kept in `Message.parts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from a2a.types.a2a_pb2 import (
    Artifact,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
)
from a2a.types.a2a_pb2 import Message as A2AMessage
from google.protobuf.json_format import MessageToDict
from pydantic import JsonValue

from sparring.errors import TargetError
from sparring.secrets import Secrets
from sparring.transcript import Message, StatusEvent, ToolCall, content_text

_EXCERPT_CHARS = 300
ArtifactParts = dict[str, tuple[bytes, ...]]
"""A task's artifacts as the agent holds them: artifact id -> its parts, serialized."""

_ENDED = {
    TaskState.TASK_STATE_FAILED: "the agent failed on its side; see its logs",
    TaskState.TASK_STATE_REJECTED: "the agent refused the request",
    TaskState.TASK_STATE_CANCELED: "the task was canceled before it finished",
    TaskState.TASK_STATE_AUTH_REQUIRED: (
        "the agent needs credentials for this request; give "
        "them in `headers` (e.g. Authorization: Bearer "
        "{{secrets.AGENT_TOKEN}})"
    ),
}
_ANSWERED = (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_INPUT_REQUIRED)


class Answer:
    """The agent's answer to one user message, folded from the SDK's events (see the
    module docstring).

    Attributes:
        task: The task as the agent holds it, as far as the events told (`None` for a
            direct message).
        direct: The agent's direct message (no task), if it sent one.
        events: Every task state seen, with the status message and the time.
        fresh: Ids of artifacts created or replaced by an update of this answer.
        latency_ms: From sending to the last event, in milliseconds (set by the sender).
        tool_calls: Read by the sender at its `tool_calls_path`.
    """

    def __init__(self) -> None:
        self.task: Task | None = None
        self.direct: A2AMessage | None = None
        self.events: list[StatusEvent] = []
        self.fresh: set[str] = set()
        self.latency_ms: float | None = None
        self.tool_calls: tuple[ToolCall, ...] = ()

    def add(self, event: StreamResponse, *, at_ms: float) -> None:
        """Fold in one event: a task, a status or artifact update, or a direct message."""
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.direct = event.message
        elif kind == "task":
            self.task = Task()
            self.task.CopyFrom(event.task)
            self._status(self.task.status, at_ms)
        elif kind == "status_update":
            update = event.status_update
            task = self._task(update.task_id, update.context_id)
            task.status.CopyFrom(update.status)
            if update.HasField("metadata"):
                task.metadata.MergeFrom(update.metadata)
            self._status(update.status, at_ms)
        elif kind == "artifact_update":
            update = event.artifact_update
            task = self._task(update.task_id, update.context_id)
            if _merge_artifact(task, update):
                self.fresh.add(update.artifact.artifact_id)

    def _task(self, task_id: str, context_id: str) -> Task:
        if self.task is None:
            self.task = Task(id=task_id, context_id=context_id)
        return self.task

    def _status(self, status: TaskStatus, at_ms: float) -> None:
        self.events.append(
            StatusEvent(
                state=_state_name(status.state), detail=_text(status.message.parts), at_ms=at_ms
            )
        )

    @property
    def context_id(self) -> str:
        """The context the agent answered in (`""` if it named none)."""
        source = self.task or self.direct
        return source.context_id if source is not None else ""

    @property
    def task_id(self) -> str:
        """The task the agent answered with (`""` for a direct message)."""
        return self.task.id if self.task is not None else ""

    def artifacts(self) -> ArtifactParts:
        """The task's artifacts after this answer (none for a direct message)."""
        if self.task is None:
            return {}
        return {a.artifact_id: _serialized(a.parts) for a in self.task.artifacts}

    @property
    def pending_task_id(self) -> str:
        """The task the next message continues: this one when it waits for input."""
        task = self.task
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            return task.id
        return ""

    def check(self, endpoint: str, secrets: Secrets) -> None:
        """Raise unless the agent answered: a direct message, or a task that completed or
        waits for input.

        Raises:
            TargetError: no task nor message; a task failed, rejected, canceled, needing
                auth, or still submitted / working when the answer ended.
        """
        if self.direct is not None:
            return
        if self.task is None:
            raise TargetError(
                f"{endpoint} answered with neither a task nor a message; check "
                "that the agent speaks the protocol version its card says"
            )
        status = self.task.status
        state, said = _state_name(status.state), _text(status.message.parts)
        said = secrets.excerpt(said, _EXCERPT_CHARS) if said else "(no message)"
        if status.state in _ENDED:
            raise TargetError(
                f"{endpoint}: the agent's task ended in state {state!r} with "
                f"message {said!r}; {_ENDED[status.state]}"
            )
        if status.state not in _ANSWERED:
            raise TargetError(
                f"{endpoint}: the answer ended with the task still in state "
                f"{state!r} (message {said!r}); sparring waits for "
                "'completed' or 'input-required'. The agent may have stopped "
                "mid-task or answered before finishing; check its logs"
            )

    def raw(self) -> dict[str, JsonValue]:
        """The direct message, or else the task, as A2A 1.0 JSON (call after `check`)."""
        source = self.direct if self.direct is not None else self.task
        assert source is not None
        return MessageToDict(source)

    def message(self, *, earlier: ArtifactParts) -> Message:
        """The reply as a sparring agent `Message` (call after `check`).

        Args:
            earlier: The task's artifacts as the previous answer left them, when this
                answer continues the same task; `{}` otherwise.
        """
        if self.direct is not None:
            pieces = [_text(self.direct.parts)]
        else:
            assert self.task is not None
            pieces = [_text(self._turn_parts(a, earlier)) for a in self.task.artifacts]
            pieces.append(_text(self.task.status.message.parts))
        pieces = [p for p in pieces if p]
        return Message(
            role="agent",
            content="\n".join(pieces),
            parts=tuple(pieces) if len(pieces) > 1 else (),
            raw=self.raw(),
            tool_calls=self.tool_calls,
            latency_ms=self.latency_ms,
            status_events=tuple(self.events),
        )

    def _turn_parts(self, artifact: Artifact, earlier: ArtifactParts) -> Sequence[Part]:
        """The parts of `artifact` this turn produced (see the module docstring)."""
        if artifact.artifact_id in self.fresh:
            return artifact.parts
        before = earlier.get(artifact.artifact_id, ())
        if _serialized(artifact.parts)[: len(before)] == before:
            return artifact.parts[len(before) :]
        return artifact.parts


def _serialized(parts: Iterable[Part]) -> tuple[bytes, ...]:
    return tuple(p.SerializeToString(deterministic=True) for p in parts)


def _merge_artifact(task: Task, update: TaskArtifactUpdateEvent) -> bool:
    """Add a streamed artifact chunk as the agent's own task store does: its parts appended
    to the artifact with its id, or the artifact replaced or added. Returns whether the
    artifact was added or replaced (all of it comes from this update)."""
    new = update.artifact
    old = next((a for a in task.artifacts if a.artifact_id == new.artifact_id), None)
    if old is None:
        task.artifacts.add().CopyFrom(new)
    elif update.append:
        old.parts.extend(new.parts)
        return False
    else:
        old.CopyFrom(new)
    return True


def _text(parts: Sequence[Part]) -> str:
    """Parts as text: runs of text parts joined as they are (streamed chunks are separate
    parts), data parts as canonical JSON and files as `[file ...]` markers on lines of
    their own."""
    lines: list[str] = []
    after_text = False
    for part in parts:
        is_text = part.WhichOneof("content") == "text"
        if is_text and after_text:
            lines[-1] += part.text
        else:
            lines.append(_part_text(part))
        after_text = is_text
    return "\n".join(lines)


def _part_text(part: Part) -> str:
    kind = part.WhichOneof("content")
    if kind == "text":
        return part.text
    if kind == "data":
        return content_text(whole_numbers(MessageToDict(part)["data"]))
    media = part.media_type or "unknown type"
    if kind == "url":
        return f"[file {part.filename or part.url} ({media}): {part.url}]"
    if kind == "raw":
        return f"[file {part.filename or '(unnamed)'} ({media}), {len(part.raw)} bytes]"
    return ""


def whole_numbers(value: JsonValue) -> JsonValue:
    """JSON from a protobuf `Value`, whose numbers are all doubles, with whole numbers as
    integers again (`10234.0` -> `10234`), as the agent most likely sent them."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    return value


def _state_name(state: TaskState) -> str:
    """`TASK_STATE_INPUT_REQUIRED` -> `input-required` (the names of the A2A spec)."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")
