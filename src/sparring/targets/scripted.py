"""`ScriptedTarget`: a fake agent whose replies are written in advance, for tests.

Public API: use it in your own tests to run sparring without a real agent, like
`ScriptedModel` for models.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import anyio

from sparring.errors import TargetError
from sparring.targets.base import StatelessSession
from sparring.transcript import Message, Transcript

ReplyValue = str | Message
Reply = ReplyValue | Exception | Callable[[Transcript], ReplyValue | Awaitable[ReplyValue]]


class ScriptedTarget:
    """Replies from a list, in order; records every transcript it is sent.

    By default (`order="per_session"`) every session (conversation, trial) starts again at
    the first reply, so each trial of a scenario sees the same agent whatever the
    concurrency. With `order="overall"` the replies are consumed in call order across all
    sessions (one shared script).

    Args:
        replies: For each call: a `str` or `Message` is the reply, an `Exception` is raised
            (e.g. `TargetError("down")`), a function `f(transcript) -> str | Message` (sync
            or async) computes it. Running out raises `TargetError`.
        name: Shown in reports.
        latency_seconds: Sleep before each reply; also recorded as `latency_ms` (so reports
            are deterministic) unless a `Message` reply carries its own.
        order: `per_session` or `overall` (see above).

    Attributes:
        seen: Every transcript received, in call order.
        sessions_opened: Sessions started so far; `sessions_closed`: ended so far.
    """

    def __init__(
        self,
        replies: Sequence[Reply],
        *,
        name: str = "scripted",
        latency_seconds: float = 0.0,
        order: Literal["per_session", "overall"] = "per_session",
    ) -> None:
        self.name = name
        self.replies = list(replies)
        self.latency_seconds = latency_seconds
        self.order = order
        self.seen: list[Transcript] = []
        self.sessions_opened = 0
        self.sessions_closed = 0
        self._calls = 0

    async def open_session(self) -> ScriptedSession:
        """Start a conversation."""
        self.sessions_opened += 1
        return ScriptedSession(self)

    async def aclose(self) -> None:
        """Nothing to release."""

    async def respond(self, session: ScriptedSession, transcript: Transcript) -> Message:
        """The next scripted reply for `session` (see the class docstring for the order).

        Raises:
            TargetError: no reply left.
            Exception: the scripted exception at this position.
        """
        index = self._calls if self.order == "overall" else session.calls
        self._calls += 1
        session.calls += 1
        self.seen.append(transcript)
        if self.latency_seconds:
            await anyio.sleep(self.latency_seconds)
        if index >= len(self.replies):
            raise TargetError(
                f"{self.name}: no scripted reply left for call {index + 1}; "
                f"it was given {len(self.replies)}"
            )
        reply = self.replies[index]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(transcript)
            if isinstance(reply, Awaitable):
                reply = await reply
        latency_ms = self.latency_seconds * 1000
        if isinstance(reply, Message):
            update = {"role": "agent"} | (
                {} if reply.latency_ms is not None else {"latency_ms": latency_ms}
            )
            return reply.model_copy(update=update)
        return Message(role="agent", content=reply, latency_ms=latency_ms)


class ScriptedSession(StatelessSession):
    """One conversation with a `ScriptedTarget`; `calls` counts its replies."""

    def __init__(self, target: ScriptedTarget) -> None:
        self._target = target
        self.calls = 0
        self.closed = False

    async def send(self, transcript: Transcript, /) -> Message:
        """Return the next scripted reply (see `ScriptedTarget`)."""
        return await self._target.respond(self, transcript)

    async def close(self) -> None:
        """Mark the session closed."""
        if not self.closed:
            self.closed = True
            self._target.sessions_closed += 1
