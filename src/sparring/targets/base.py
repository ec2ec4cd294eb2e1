"""The `Target` protocol: how sparring talks to the agent under test.

A target opens one session per conversation (trial); the session gets the whole transcript,
ending with the new user message, and returns the agent's reply as a `Message` with
`role="agent"`, `latency_ms`, `tool_calls` and `raw` filled in. Stateless transports return
a session that sends the history each turn; stateful ones (A2A contexts, Parlant sessions)
keep their server-side id on the session.

Earlier turns the session did not take part in (unfold, `session.add_events`) are given with
`preload`: stateless transports take them as they are, because the whole transcript goes with
every `send`; stateful ones load them the way their server allows (Parlant: posted as events)
or, where it allows no such thing (A2A), replay the user messages live.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from sparring.results import Artifact
from sparring.transcript import Message, Transcript


@runtime_checkable
class TargetSession(Protocol):
    """One conversation with the target."""

    async def send(self, transcript: Transcript, /) -> Message:
        """Send the last (user) message of `transcript`; return the agent's reply.

        Raises:
            sparring.errors.TargetError: connection error, HTTP status >= 400, a response
                path that does not exist, or any other failure to get a reply.
            sparring.errors.TargetTimeout: no reply within the target's timeout.
        """
        ...

    async def preload(self, history: Transcript, /) -> Transcript:
        """Make `history` (user and agent messages, ending with either) the conversation so
        far, before the first `send`.

        Returns:
            The history the agent now has: `history` itself where it is taken as given; for
            a transport that can only replay, the replayed conversation (the agent's own
            replies in place of the written ones), so reports show what really happened.

        Raises:
            sparring.errors.TargetError: the server refused the history.
        """
        ...

    async def close(self) -> None:
        """End the conversation (release server-side state, if any)."""
        ...


@runtime_checkable
class EvidenceSession(Protocol):
    """A session that keeps evidence besides the transcript (a browser's screenshots and
    page URL) and limits its actions by the conversation's length. The runner calls `plan`
    once after opening it and `evidence` when the trial's outcome is known."""

    def plan(self, *, max_turns: int) -> None:
        """The conversation has at most `max_turns` user messages."""
        ...

    def evidence(self, *, failed: bool) -> tuple[list[Artifact], str | None]:
        """The files kept (`failed`: the trial did not pass) and the page URL, if any."""
        ...


class StatelessSession:
    """Base of sessions whose transport sends the whole transcript every turn, so earlier
    turns need no loading: `preload` returns them unchanged."""

    async def preload(self, history: Transcript, /) -> Transcript:
        """`history` unchanged: it goes with every `send`."""
        return history


@runtime_checkable
class Target(Protocol):
    """The agent under test. Shared by all conversations, so it must allow concurrent use."""

    name: str

    async def open_session(self) -> TargetSession:
        """Start a conversation."""
        ...

    async def aclose(self) -> None:
        """Release clients and connections."""
        ...
