"""The `Target` protocol: how sparring talks to the agent under test.

A target opens one session per conversation (trial); the session gets the whole transcript,
ending with the new user message, and returns the agent's reply as a `Message` with
`role="agent"`, `latency_ms`, `tool_calls` and `raw` filled in. Stateless transports return
a session that sends the history each turn; stateful ones (A2A contexts, Parlant sessions)
keep their server-side id on the session.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

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

    async def close(self) -> None:
        """End the conversation (release server-side state, if any)."""
        ...


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
