"""Looking into response bodies (`sparring doctor`): the texts that may be the agent's reply
and the lists that look like tool calls, each with the response path that reads it.
"""

from __future__ import annotations

import json
import re

from pydantic import JsonValue

from sparring.cli.doctor.records import Exchange
from sparring.targets.response_paths import ResponsePath, ResponsePathError

EXCERPT_CHARS = 300
"""Characters of a body quoted in a finding."""
_REPLY_KEYS = (
    "reply",
    "response",
    "answer",
    "output",
    "text",
    "content",
    "message",
    "completion",
    "generated_text",
    "result",
)
_NOT_REPLIES = frozenset(
    {
        "assistant",
        "user",
        "system",
        "agent",
        "tool",
        "bot",
        "stop",
        "completed",
        "ok",
        "success",
        "true",
        "false",
        "null",
    }
)
_MAX_NODES = 5000
"""Values of a body looked at for tool-call lists."""
_ID_LIKE = re.compile(r"^(?=\S*\d)[\w\-:.+/]+$")
"""One token with a digit in it (an id, a date, a version): not a reply."""


def reply_candidates(body: JsonValue, *, message: str = "") -> list[tuple[str, str]]:
    """The non-empty strings in `body` that may be the agent's reply, best first, as
    `(response path, value)`; every path extracts its value again (`ResponsePath`).

    Left out: the user's own `message` echoed back, roles and states (`assistant`,
    `completed`, ...) and single tokens with a digit (ids, dates). Ranked by a reply-like key
    (`reply`, `answer`, `content`, ...) at the end of the path, then texts of several words,
    then length.
    """
    found = [
        (p, v)
        for p, v in string_leaves(body)
        if v.strip()
        and v.strip() != message.strip()
        and v.strip().lower() not in _NOT_REPLIES
        and not _ID_LIKE.match(v.strip())
    ]

    def rank(item: tuple[str, str]) -> tuple[int, int, int]:
        last = re.split(r"[.\[]", item[0])[-1].strip("]'\"").lower()
        return (0 if last in _REPLY_KEYS else 1, 0 if " " in item[1].strip() else 1, -len(item[1]))

    ranked = sorted(found, key=rank)
    return [(p, v) for p, v in ranked if _extracts(p, body, v)]


def string_leaves(body: JsonValue, path: str = "") -> list[tuple[str, str]]:
    """Every string in `body` with its response path, in document order (at most 200).

    Keys that are plain words are written `a.b`; others `["odd key"]`; list items `[0]`.
    """
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, JsonValue]] = [(path, body)]
    while stack and len(out) < 200:
        where, value = stack.pop()
        if isinstance(value, str):
            out.append((where or "$", value))
        elif isinstance(value, dict):
            stack += [(_key_path(where, k), v) for k, v in reversed(list(value.items()))]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
    return out


def tool_call_paths(body: JsonValue) -> list[str]:
    """Response paths of the lists in `body` whose items all look like tool calls, in
    document order (outer lists before the lists inside them; at most `_MAX_NODES` values
    looked at). A tool call is an object with a string `name` and `arguments` (or `args` /
    `input`), or OpenAI's `{function: {name, arguments}}`: what `tool_calls_path` reads.
    Every path reads its list back (`ResponsePath`)."""
    found: list[str] = []
    stack: list[tuple[str, JsonValue]] = [("", body)]
    visited = 0
    while stack and visited < _MAX_NODES:
        where, value = stack.pop()
        visited += 1
        if isinstance(value, list):
            if value and all(_looks_like_call(v) for v in value) and _extracts(where, body, value):
                found.append(where or "$")
                continue
            stack += [(f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
        elif isinstance(value, dict):
            stack += [(_key_path(where, k), v) for k, v in reversed(list(value.items()))]
    return found


def _looks_like_call(item: JsonValue) -> bool:
    if not isinstance(item, dict):
        return False
    function = item.get("function")
    source = function if isinstance(function, dict) else item
    return isinstance(source.get("name"), str) and any(
        k in source for k in ("arguments", "args", "input")
    )


def _key_path(where: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][\w-]*", key):
        return f"{where}.{key}" if where else key
    return f"{where}[{json.dumps(key)}]"


def _extracts(path: str, body: JsonValue, value: JsonValue) -> bool:
    try:
        return ResponsePath(path or "$").extract(body) == value
    except ResponsePathError:
        return False


def json_body(exchange: Exchange | None) -> JsonValue:
    """The response body parsed as JSON; for a server-sent event stream, its first JSON
    event; `None` when there is none."""
    documents = json_documents(exchange)
    return documents[0] if documents else None


def json_documents(exchange: Exchange | None) -> list[JsonValue]:
    """The JSON in the response body: the body itself, or each JSON event of a server-sent
    event stream, in order (`[]` for none)."""
    if exchange is None:
        return []
    texts = [exchange.response_body]
    if exchange.media_type == "text/event-stream":
        texts = [
            line[5:].strip()
            for line in exchange.response_body.splitlines()
            if line.startswith("data:")
        ]
    documents: list[JsonValue] = []
    for text in texts:
        try:
            documents.append(json.loads(text, parse_constant=str))
        except (ValueError, RecursionError):
            continue
    return documents


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` with its whitespace runs made single spaces, cut to `limit` characters (then
    ending `...`)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
