"""Files sent to the demo agent: `{name, mime_type, data}` entries (base64 data) in a
history message's `files`, as sparring's callable and http targets send them.

The agent reads text files (their text counts as part of the message: a receipt's order
number is understood) and says honestly that it cannot read anything else (images, PDFs).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, cast


def unread_note(message: Mapping[str, Any]) -> str:
    """What the agent says about files sent with the current message it cannot read."""
    _, unread = file_texts(message)
    if not unread:
        return ""
    names = ", ".join(unread)
    return (
        f"I can only read text files, not images or other documents, so I couldn't look at "
        f"{names}. "
    )


def _files(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    files: object = message.get("files")
    items = cast(list[object], files) if isinstance(files, list) else []
    return [cast(Mapping[str, Any], f) for f in items if isinstance(f, Mapping)]


def file_texts(message: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The texts of the message's files the agent can read (`text/*` whose `data`, base64,
    is UTF-8), and the names of those it cannot (images, PDFs, anything else)."""
    texts: list[str] = []
    unread: list[str] = []
    for f in _files(message):
        text = _decoded(f) if str(f.get("mime_type", "")).startswith("text/") else None
        if text is None:
            unread.append(str(f.get("name") or "the file"))
        else:
            texts.append(text)
    return texts, unread


def _decoded(file: Mapping[str, Any]) -> str | None:
    try:
        return base64.b64decode(str(file.get("data", "")), validate=True).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return None
