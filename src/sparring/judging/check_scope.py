"""What a check looks at and what it found: the replies in its scope, its outcome, and
the quoting that every check's reason and evidence share."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sparring.transcript import Message, Transcript

_QUOTE_CHARS = 160
_AROUND_CHARS = 60


@dataclass(frozen=True, slots=True)
class Scope:
    """The agent replies a check looks at, as `(turn, message)`, in order."""

    replies: list[tuple[int, Message]]
    turn: int | None
    """The single turn looked at, or `None` for the whole conversation."""
    missing: str | None
    """Why there is nothing to look at, when `replies` is empty."""

    @property
    def turns(self) -> tuple[int, ...]:
        """The turns of the replies looked at, sorted, each once."""
        return tuple(sorted({t for t, _ in self.replies}))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a check decided: met or not, why, and the quotes that decided it."""

    met: bool
    reason: str = ""
    evidence: tuple[str, ...] = ()
    error: bool = False
    """The check itself is broken (an invalid JSON Schema): status `error`."""


def scope_of(transcript: Transcript, turn: int | None) -> Scope:
    """The agent replies at `turn` (1-based; negative counts from the end), or every reply
    when `turn` is `None`; an empty scope says why in `missing`."""
    replies = transcript.agent_replies()
    if turn is None:
        missing = None if replies else "the agent never replied in this conversation"
        return Scope(replies=replies, turn=None, missing=missing)
    resolved = transcript.user_turns + 1 + turn if turn < 0 else turn
    in_turn = [(t, m) for t, m in replies if t == resolved]
    if in_turn:
        return Scope(replies=in_turn, turn=resolved, missing=None)
    if resolved < 0 or (resolved == 0 and turn != 0):
        why = f"turn {turn} does not exist: the conversation has {transcript.user_turns} turns"
    elif resolved > transcript.user_turns:
        why = (
            f"the agent never replied at turn {resolved}: the conversation has "
            f"{transcript.user_turns} turns"
        )
    else:
        why = f"the agent never replied at turn {resolved}"
    return Scope(replies=[], turn=resolved, missing=why)


def scope_text(scope: Scope) -> str:
    """`turn 2` or `turns 1-3`: the scope as a reason names it."""
    if scope.turn is not None:
        return f"turn {scope.turn}"
    turns = scope.turns
    return f"turn {turns[0]}" if len(turns) == 1 else f"turns {turns[0]}-{turns[-1]}"


def last_said(scope: Scope) -> str:
    """`turn 3 said: "..."`: the last reply in scope, clipped."""
    turn, message = scope.replies[-1]
    return f"turn {turn} said: {quoted(clip(message.content))}"


def quoted(text: str) -> str:
    """`text` in double quotes, escaped as JSON (non-ASCII kept)."""
    return json.dumps(text, ensure_ascii=False)


def quoted_list(values: Sequence[str], joiner: str) -> str:
    """`"a"`, `"a" or "b"`, `"a", "b" or "c"`: values quoted, the last one after `joiner`."""
    return plain_list([quoted(v) for v in values], joiner)


def plain_list(values: Sequence[object], joiner: str) -> str:
    """`a`, `a or b`, `a, b or c`: values as they are, unquoted (`""` for none)."""
    shown = [str(v) for v in values]
    if len(shown) <= 1:
        return "".join(shown)
    return f"{', '.join(shown[:-1])} {joiner} {shown[-1]}"


def clip(text: str, limit: int = _QUOTE_CHARS) -> str:
    """`text` cut to `limit` characters, with `…` when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def around(text: str, start: int, end: int) -> str:
    """`text[start:end]` with up to `_AROUND_CHARS` characters either side, `…` where cut."""
    lo, hi = max(0, start - _AROUND_CHARS), min(len(text), end + _AROUND_CHARS)
    return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")
