"""Where a verdict's evidence sits in its transcript, for reports that mark it.

A judge quotes the conversation as evidence, but not always to the letter: it may change
the case or the spacing, or wrap a check's quote in words of its own (`turn 1: "It
shipped."`). `evidence_spans` finds each quote in the messages of the turns the verdict
cites (in every message when it cites none, or the quote is not there), tolerating case and
whitespace, and falling back to the text between quotation marks. `marked_pieces` cuts a
message into pieces, each with the verdicts whose evidence covers it, so overlapping
evidence of several verdicts stays correct.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sparring.results import Verdict
from sparring.transcript import Message

MIN_QUOTE_CHARS = 3
"""Shorter quotes (or parts between quotation marks) are not searched: they would mark
words all over the transcript."""
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")


@dataclass(frozen=True)
class Span:
    """Characters `start` to `end` (exclusive) of message `message` (index into the
    transcript's messages) are evidence."""

    message: int
    start: int
    end: int


def message_turns(messages: Sequence[Message]) -> list[int]:
    """The 1-based turn of each message (a user message opens a turn; anything before the
    first user message is turn 0)."""
    turns: list[int] = []
    turn = 0
    for message in messages:
        if message.role == "user":
            turn += 1
        turns.append(turn)
    return turns


def evidence_spans(verdict: Verdict, messages: Sequence[Message]) -> list[Span]:
    """Every place a quote of `verdict.evidence` appears in `messages`.

    Each quote is looked for in the messages of the turns the verdict cites (`turns`, or
    its own `turn`), then, when not found there, in every message; first as written, then
    ignoring case and whitespace, then each part of it between quotation marks.

    Returns:
        Spans in the order found; empty when no quote appears (the judge misquoted).
    """
    turns = message_turns(messages)
    cited = set(verdict.turns or (() if verdict.turn is None else (verdict.turn,)))
    near = [i for i, t in enumerate(turns) if t in cited]
    spans: list[Span] = []
    for quote in verdict.evidence:
        for pattern in _patterns(quote):
            found = _search(pattern, messages, near) or _search(
                pattern, messages, range(len(messages))
            )
            if found:
                spans.extend(found)
                break
    return spans


def _patterns(quote: str) -> list[re.Pattern[str]]:
    """The ways `quote` is searched for, in order (see `evidence_spans`)."""
    parts = [quote.strip().strip("\"'“”‘’").strip()]
    parts += [next(g for g in m.groups() if g) for m in _QUOTED.finditer(quote)]
    out: list[re.Pattern[str]] = []
    for part in parts:
        words = part.split()
        if len(part) >= MIN_QUOTE_CHARS and words:
            out.append(re.compile(re.escape(part)))
            out.append(re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE))
    return out


def _search(
    pattern: re.Pattern[str], messages: Sequence[Message], indexes: Sequence[int]
) -> list[Span]:
    return [
        Span(i, m.start(), m.end()) for i in indexes for m in pattern.finditer(messages[i].content)
    ]


def marked_pieces(text: str, marks: Sequence[tuple[int, int, str]]) -> list[tuple[str, list[str]]]:
    """`text` cut at every mark boundary: `(piece, keys)` in order, `keys` being the keys of
    the marks `(start, end, key)` covering the piece (empty for unmarked text; each key
    once, in the order the marks were given). The pieces joined are `text`."""
    cuts = sorted({0, len(text), *(p for start, end, _ in marks for p in (start, end))})
    pieces: list[tuple[str, list[str]]] = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        keys = list(dict.fromkeys(k for s, e, k in marks if s <= start and end <= e))
        if pieces and pieces[-1][1] == keys:
            pieces[-1] = (pieces[-1][0] + text[start:end], keys)
        else:
            pieces.append((text[start:end], keys))
    return pieces
