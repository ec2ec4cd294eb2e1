"""`ReplayTarget`: a Target (sparring.targets.base) whose sessions are answered from the
agent's cassette, or recorded into it, or both (`sparring.runner.replay`).

A `send` is keyed by the masked transcript sent, a `preload` by the masked history given.
A replayed session opens no connection to the agent until a request misses; it then opens
one, gives it the conversation so far (`preload`) and stays live for the rest of the
conversation, so a stateful agent (A2A, Parlant) never answers from a history it lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparring.errors import TargetError
from sparring.runner.replay_cassettes import Tape, TrialKey, request_key
from sparring.targets.base import Target, TargetSession
from sparring.transcript import Message, Transcript, sanitized


class ReplayTarget:
    """`inner`, its replies played from `tape` where recorded (see the module).

    Args:
        inner: The live target; its owner (the target pool) closes it.
        tape: The agent's cassettes and whether a miss is an error.
        scrub: Masks secrets in what is keyed and recorded.
    """

    def __init__(self, inner: Target, tape: Tape, *, scrub: Callable[[str], str]) -> None:
        self.name = inner.name
        self._inner, self._tape, self._scrub = inner, tape, scrub

    @property
    def spec(self) -> object:
        """The spec the live target was built from, where it keeps one (http, a2a)."""
        return getattr(self._inner, "spec", None)

    async def open_session(self) -> ReplaySession:
        """Start a conversation: a live one at once when the agent is not replayed."""
        session = ReplaySession(self._inner, self._tape, scrub=self._scrub)
        if self._tape.source is None:
            await session.go_live(Transcript())
        return session

    async def aclose(self) -> None:
        """Nothing to release: the live target's owner closes it."""


class Unbuilt:
    """Stands for a target that could not be built (`error` says why) in a replay: only a
    request the cassette lacks needs it, and fails with that reason."""

    def __init__(self, name: str, error: str) -> None:
        self.name, self.error = name, error

    async def open_session(self) -> TargetSession:
        """Fail: there is no live agent.

        Raises:
            TargetError: naming the target and why it could not be built.
        """
        raise TargetError(f"the live target {self.name} could not be built: {self.error}")

    async def aclose(self) -> None:
        """Nothing to release."""


class ReplaySession:
    """One conversation of a `ReplayTarget`."""

    def __init__(self, inner: Target, tape: Tape, *, scrub: Callable[[str], str]) -> None:
        self._inner, self._tape, self._scrub = inner, tape, scrub
        self._live: TargetSession | None = None

    async def go_live(self, history: Transcript) -> None:
        """Open the live session and give it `history` (when it has messages)."""
        self._live = await self._inner.open_session()
        if history.messages:
            await self._live.preload(history)

    async def send(self, transcript: Transcript, /) -> Message:
        """The recorded reply to `transcript`, else the live agent's (recorded when
        recording).

        Raises:
            TargetError: the recorded exchange failed (as recorded), a miss under `strict`
                (naming the turn), or the live agent failed.
        """
        key = request_key({"send": self._masked(transcript)})
        at, seq, entry = self._tape.ask(key, replay=self._live is None)
        last = transcript.messages[-1] if transcript.messages else Message(role="user", content="")
        said = self._scrub(last.content)
        request: dict[str, Any] = {"turn": transcript.user_turns, "user": said}
        if entry is not None:
            self._tape.keep_replayed(at, seq, entry)
            return _replayed_reply(entry)
        if self._live is None:
            what = f"turn {transcript.user_turns} (the user says {_excerpt(said)})"
            self._check_strict(key, at, what)
            await self.go_live(Transcript(messages=transcript.messages[:-1]))
        assert self._live is not None
        try:
            reply = await self._live.send(transcript)
        except TargetError as e:
            self._keep_error(key, at, seq, request, e)
            raise
        record = sanitized(reply, self._scrub).model_dump(mode="json")
        self._tape.keep(key, at, seq, self._entry(request, reply=record))
        return reply

    async def preload(self, history: Transcript, /) -> Transcript:
        """The recorded history the agent had after this preload, else the live one's.

        Raises:
            TargetError: as `send`.
        """
        key = request_key({"preload": self._masked(history)})
        at, seq, entry = self._tape.ask(key, replay=self._live is None)
        request: dict[str, Any] = {"preload": len(history.messages)}
        if entry is not None:
            self._tape.keep_replayed(at, seq, entry)
            return _replayed_history(entry)
        if self._live is None:
            self._check_strict(
                key, at, f"the preloaded history of {len(history.messages)} messages"
            )
            self._live = await self._inner.open_session()
        try:
            had = await self._live.preload(history)
        except TargetError as e:
            self._keep_error(key, at, seq, request, e)
            raise
        kept = [sanitized(m, self._scrub).model_dump(mode="json") for m in had.messages]
        self._tape.keep(key, at, seq, self._entry(request, history=kept))
        return had

    async def close(self) -> None:
        """End the live conversation, if one was opened."""
        if self._live is not None:
            await self._live.close()

    def _masked(self, transcript: Transcript) -> list[Any]:
        return [sanitized(m, self._scrub).model_dump(mode="json") for m in transcript.messages]

    def _check_strict(self, key: str, at: TrialKey | None, what: str) -> None:
        """Raise the miss when the agent is replayed strictly.

        Raises:
            TargetError: the miss, naming the role, the trial and `what` was asked.
        """
        if self._tape.strict:
            raise TargetError(self._tape.miss(key, at, what))

    def _entry(self, request: dict[str, Any], **answer: Any) -> dict[str, Any]:
        return {"target": self._inner.name, "request": request, **answer}

    def _keep_error(
        self, key: str, at: TrialKey | None, seq: int, request: dict[str, Any], e: TargetError
    ) -> None:
        error = {"message": self._scrub(str(e)), "status": e.status}
        self._tape.keep(key, at, seq, self._entry(request, error=error))


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 120 else flat[:117] + "...")


def _raise_recorded(entry: dict[str, Any]) -> None:
    """Raise the error `entry` recorded, if it recorded one.

    Raises:
        TargetError: with the recorded message and HTTP status.
    """
    error = entry.get("error")
    if isinstance(error, dict):
        message, status = error.get("message"), error.get("status")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        raise TargetError(str(message), status=status if isinstance(status, int) else None)  # pyright: ignore[reportUnknownArgumentType]


def _damaged(entry: dict[str, Any], field: str, problem: object) -> TargetError:
    return TargetError(
        f"replay: the recorded agent {field} for request {str(entry.get('key'))[:12]} cannot be "
        f"read ({problem}); the cassette is damaged, record it again"
    )


def _replayed_reply(entry: dict[str, Any]) -> Message:
    """The agent's recorded reply.

    Raises:
        TargetError: the recorded error, or an entry that holds no reply.
    """
    _raise_recorded(entry)
    try:
        return Message.model_validate(entry.get("reply"))
    except ValueError as e:
        raise _damaged(entry, "reply", e) from None


def _replayed_history(entry: dict[str, Any]) -> Transcript:
    """The history the agent had after a recorded preload.

    Raises:
        TargetError: the recorded error, or an entry that holds no history.
    """
    _raise_recorded(entry)
    try:
        return Transcript.model_validate({"messages": entry.get("history")})
    except ValueError as e:
        raise _damaged(entry, "history", e) from None
