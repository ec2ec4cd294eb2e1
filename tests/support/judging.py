"""Helpers for fake judges: a `met` counts only when it quotes the conversation.

`agent_quote(messages)` is the first line of the last agent message in a judge prompt, what
a fake judge cites as evidence so its `met` is grounded (see README "Judging").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_OPEN = "<<<BEGIN agent message>>>\n"


def agent_quote(messages: Sequence[Mapping[str, Any]]) -> str:
    """The first line of the last agent message shown in the prompt `messages` (judge or
    `should`; the repair request included); `""` when it shows none."""
    shown = "\n".join(str(m["content"]) for m in messages if _OPEN in str(m["content"]))
    return shown.rsplit(_OPEN, 1)[1].split("\n", 1)[0] if shown else ""
