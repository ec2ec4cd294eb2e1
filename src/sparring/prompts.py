"""Render a Transcript as prompt text for sparring's own models (judge, simulated user).

Every message is fenced between labelled delimiter lines, and delimiter text inside a
message is neutralised, so a reply that imitates the prompt's format stays data (DESIGN.md
section 5). Messages are numbered by turn (1-based, counting user messages; an agent greeting
before the first user message is turn 0), cut to a per-message limit, and kept within a
total: the judge sees the start and the end with a marker for the left-out middle, the
simulated user sees the most recent messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from sparring.transcript import Message, Transcript, content_text

Scrub = Callable[[str], str]
"""Removes secrets from text before a model sees it."""

EMPTY_REPLY = "(empty reply)"
FENCE_OPEN = "<<<BEGIN"
FENCE_CLOSE = "<<<END"
_DELIMITER = re.compile(r"<{3,}|>{3,}")
_TOOL_ARGS_CHARS = 300


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of a conversation sparring's models see, in characters.

    The judge sees at most `judge_chars_per_message` of each message and
    `judge_chars_total` in all (the middle of a long chat is left out); the simulated user
    sees the most recent `user_chars_total` characters, at most `user_chars_per_message`
    per message.
    """

    judge_chars_per_message: int = 1500
    judge_chars_total: int = 16000
    user_chars_per_message: int = 2000
    user_chars_total: int = 12000

    def __post_init__(self) -> None:
        """Reject limits below one character."""
        for name in (
            "judge_chars_per_message",
            "judge_chars_total",
            "user_chars_per_message",
            "user_chars_total",
        ):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"Limits.{name} must be at least 1 character, got {getattr(self, name)}"
                )


DEFAULT_LIMITS = Limits()
"""The limits DESIGN.md section 3 gives (1,500 / 16,000 judge; 2,000 / 12,000 user)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    turn: int
    role: str
    text: str


def neutralise(text: str) -> str:
    """Replace runs of `<<<` / `>>>` so text cannot open or close a message fence."""
    return _DELIMITER.sub(lambda m: ("‹" if m.group()[0] == "<" else "›") * len(m.group()), text)


def cut(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters, with a marker saying how many were cut.

    Text that fits is returned unchanged.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"


def message_text(message: Message, *, scrub: Scrub | None = None) -> str:
    """The text a model is shown for one message: content plus its tool calls and files.

    An agent message with no content and no tool calls is `(empty reply)`; content that is a
    JSON object or array is shown as canonical JSON; tool calls are listed as
    `(tool call) name {arguments}`; files as `(attached file) name (type, N bytes)`, then
    the text of each text file after `(text of name)`, so a long text cut at the message's
    limit never hides the other files' names. `scrub` runs over the result.
    """
    content = _canonical(message.content)
    lines = [content] if content.strip() else []
    for call in message.tool_calls:
        arguments = cut(_arguments(call.arguments, call.arguments_raw), _TOOL_ARGS_CHARS)
        lines.append(f"(tool call) {call.name} {arguments}")
    lines += [f"(attached file) {f.name} ({f.mime_type}, {f.size:,} bytes)" for f in message.files]
    lines += [f"(text of {f.name})\n{f.text}" for f in message.files if f.text is not None]
    if not lines:
        lines = [EMPTY_REPLY if message.role == "agent" else "(empty message)"]
    text = "\n".join(lines)
    return scrub(text) if scrub is not None else text


@dataclass(frozen=True, slots=True)
class JudgeView:
    """What the judge is shown: `text`, and the turns whose agent reply is in it."""

    text: str
    reply_turns: tuple[int, ...]


def judge_view(
    transcript: Transcript,
    *,
    limits: Limits = DEFAULT_LIMITS,
    scrub: Scrub | None = None,
    keep_turns: Collection[int] = (),
) -> JudgeView:
    """The transcript as the judge sees it: fenced, numbered messages.

    Each message is cut to `limits.judge_chars_per_message`. When the whole is over
    `limits.judge_chars_total`, the first and last messages and every message of
    `keep_turns` (the turns `should` assertions are about) are kept, then as many as fit
    from both ends; a marker line such as `[... 7 messages left out (turns 3-6) ...]`
    stands for each run left out. A kept turn can take the view over the total.
    """
    entries = _entries(transcript, scrub=scrub, per_message=limits.judge_chars_per_message)
    if not entries:
        return JudgeView("(the conversation is empty)", ())
    blocks = [_block(e, {"user": "user", "agent": "agent"}) for e in entries]
    kept = set(range(len(blocks)))
    if _size(blocks) > limits.judge_chars_total:
        pinned = {0, len(blocks) - 1} | {i for i, e in enumerate(entries) if e.turn in keep_turns}
        kept = _fill(blocks, pinned, budget=limits.judge_chars_total - 80)
    parts: list[str] = []
    gap: list[_Entry] = []
    for i, (entry, block) in enumerate(zip(entries, blocks, strict=True)):
        if i not in kept:
            gap.append(entry)
            continue
        if gap:
            parts.append(
                f"[... {len(gap)} messages left out ({_turn_span(gap)}) to keep this short ...]"
            )
            gap = []
        parts.append(block)
    shown = sorted({e.turn for i, e in enumerate(entries) if i in kept and e.role == "agent"})
    return JudgeView("\n\n".join(parts), tuple(shown))


def render_for_user(
    transcript: Transcript, *, limits: Limits = DEFAULT_LIMITS, scrub: Scrub | None = None
) -> str:
    """The transcript as the simulated user sees it: the most recent fenced messages.

    The user's own messages are labelled `you`, the agent's `assistant`. Each message is cut
    to `limits.user_chars_per_message`; messages are taken from the end while they fit in
    `limits.user_chars_total` (the last one always), with a marker for the earlier ones.
    """
    entries = _entries(transcript, scrub=scrub, per_message=limits.user_chars_per_message)
    if not entries:
        return "(the conversation has not started)"
    blocks = [_block(e, {"user": "you", "agent": "assistant"}) for e in entries]
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):
        if kept and used + len(block) + 2 > limits.user_chars_total:
            break
        kept.append(block)
        used += len(block) + 2
    kept.reverse()
    if len(kept) < len(blocks):
        kept.insert(0, f"[... {len(blocks) - len(kept)} earlier messages not shown ...]")
    return "\n\n".join(kept)


def _entries(transcript: Transcript, *, scrub: Scrub | None, per_message: int) -> list[_Entry]:
    out: list[_Entry] = []
    turn = 0
    for message in transcript.messages:
        if message.role == "user":
            turn += 1
        text = cut(message_text(message, scrub=scrub), per_message)
        out.append(_Entry(turn=turn, role=message.role, text=neutralise(text)))
    return out


def _block(entry: _Entry, labels: dict[str, str]) -> str:
    label = labels.get(entry.role, entry.role)
    return (
        f"[turn {entry.turn}] {label}:\n{FENCE_OPEN} {label} message>>>\n{entry.text}\n"
        f"{FENCE_CLOSE} {label} message>>>"
    )


def _size(blocks: list[str]) -> int:
    return sum(len(b) + 2 for b in blocks)


def _fill(blocks: list[str], pinned: set[int], *, budget: int) -> set[int]:
    """`pinned` plus as many other blocks as fit in `budget`, taken alternately from the
    start and the end, so the middle of a long chat is what is left out."""
    kept = set(pinned)
    used = sum(len(blocks[i]) + 2 for i in kept)
    order = [i for i in range(len(blocks)) if i not in kept]
    take_head, stuck = False, 0
    while order and stuck < 2:
        index = order[0] if take_head else order[-1]
        size = len(blocks[index]) + 2
        if used + size <= budget:
            kept.add(index)
            order.remove(index)
            used += size
            stuck = 0
        else:
            stuck += 1
        take_head = not take_head
    return kept


def _turn_span(entries: list[_Entry]) -> str:
    first, last = entries[0].turn, entries[-1].turn
    return f"turn {first}" if first == last else f"turns {first}-{last}"


def _canonical(content: str) -> str:
    stripped = content.strip()
    if not stripped or stripped[0] not in "{[":
        return content
    try:
        return content_text(json.loads(stripped))
    except ValueError:
        return content


def _arguments(arguments: object, raw: str) -> str:
    if arguments is None:
        return raw
    return content_text(arguments)
