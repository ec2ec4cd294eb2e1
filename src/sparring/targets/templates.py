"""Request templates for HTTP-style targets (DESIGN.md sections 4, 5), and reading tool
calls out of their answers (response paths: `sparring.targets.response_paths`).

Templates are filled on the parsed JSON, so quotes and newlines in a message never break a
body. Placeholders: `{{input}}` / `{{message}}` (the message being sent), `{{history}}`
(earlier turns as `[{"role": "user" | "assistant", "content": str}]`, a user message sent
with files also holding them as `"files"`), `{{files}}` (the files sent with the message,
`[{"name": str, "mime_type": str, "data": base64 str}]`, `[]` for none) and
`{{secrets.NAME}}`.
A string that is exactly one placeholder takes the value's own type (so `"{{history}}"`
becomes a JSON array); inside a longer string non-text values are JSON-encoded. Unknown
placeholders are left as typed. Only the template is scanned: inserted values are never
rescanned, so a reply that contains `{{secrets.X}}` stays literal text. Object keys are
not filled.

Templates are compiled once per target (`compile_body`, `TextTemplate`); filling walks only
the parts that hold placeholders.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NotRequired, Protocol, TypedDict, cast
from urllib.parse import quote

from pydantic import JsonValue

from sparring.errors import TargetError
from sparring.secrets import Secrets
from sparring.targets.attachments import FileEntry, file_entries
from sparring.transcript import Message, ToolCall, Transcript, content_text


class HistoryEntry(TypedDict):
    """One message of a conversation as targets are given it."""

    role: str
    """`user` or `assistant`."""
    content: str
    files: NotRequired[list[FileEntry]]
    """The files sent with a user message (`{name, mime_type, data}`, base64 data); only
    present when there are some."""


History = list[HistoryEntry]
_NAMES = ("input", "message", "history", "files")
_PLACEHOLDER = re.compile(
    r"\{\{\s*(input|message|history|files|secrets\.[A-Za-z_][A-Za-z0-9_]*)\s*\}\}"
)
_ANY_PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")


# --- filling ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Context:
    message: str
    history: History
    secrets: Secrets
    files: list[FileEntry]

    def value(self, name: str) -> JsonValue:
        if name == "input" or name == "message":
            return self.message
        if name == "history":
            return self.history  # type: ignore[return-value]  # a list of JSON objects
        if name == "files":
            return self.files  # type: ignore[return-value]  # list[dict[str, str]] is JSON
        return self.secrets.get(name[8:])  # "secrets.NAME"

    def text(self, name: str) -> str:
        value = self.value(name)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class _Node(Protocol):
    def fill(self, ctx: _Context) -> JsonValue: ...


@dataclass(frozen=True, slots=True)
class _Const:
    value: JsonValue

    def fill(self, ctx: _Context) -> JsonValue:
        return self.value


@dataclass(frozen=True, slots=True)
class _One:
    name: str

    def fill(self, ctx: _Context) -> JsonValue:
        return ctx.value(self.name)


@dataclass(frozen=True, slots=True)
class _Dict:
    items: tuple[tuple[str, _Node], ...]

    def fill(self, ctx: _Context) -> JsonValue:
        return {key: node.fill(ctx) for key, node in self.items}


@dataclass(frozen=True, slots=True)
class _List:
    items: tuple[_Node, ...]

    def fill(self, ctx: _Context) -> JsonValue:
        return [node.fill(ctx) for node in self.items]


class TextTemplate:
    """A string with placeholders, filled as text (non-text values JSON-encoded).

    Args:
        text: The template as the test author wrote it.
        url: Percent-encode values inserted after the first `?` (the query string), so a
            message with `&` or `#` stays one parameter. Values before `?` (a base URL or
            path held in a secret) are inserted as they are.
    """

    __slots__ = ("_parts", "text")

    def __init__(self, text: str, *, url: bool = False) -> None:
        self.text = text
        parts: list[tuple[str, bool, bool]] = []  # (literal or name, is_name, encode)
        pos, in_query = 0, False
        for match in _PLACEHOLDER.finditer(text):
            literal = text[pos : match.start()]
            in_query = in_query or (url and "?" in literal)
            parts.append((literal, False, False))
            parts.append((match.group(1), True, in_query))
            pos = match.end()
        parts.append((text[pos:], False, False))
        self._parts = tuple(p for p in parts if p[0] or p[1])

    @property
    def has_placeholders(self) -> bool:
        """True when filling can change the text."""
        return any(is_name for _, is_name, _ in self._parts)

    def fill(
        self,
        *,
        message: str,
        history: History,
        secrets: Secrets,
        files: list[FileEntry] | None = None,
    ) -> str:
        """The text with placeholders replaced (see module docstring)."""
        return self._fill(_Context(message, history, secrets, files or []))

    def _fill(self, ctx: _Context) -> str:
        if not self.has_placeholders:
            return self.text
        out: list[str] = []
        for part, is_name, encode in self._parts:
            if not is_name:
                out.append(part)
            else:
                value = ctx.text(part)
                out.append(quote(value, safe="") if encode else value)
        return "".join(out)


@dataclass(frozen=True, slots=True)
class _Text:
    template: TextTemplate

    def fill(self, ctx: _Context) -> JsonValue:
        return self.template._fill(ctx)  # pyright: ignore[reportPrivateUsage]


def _compile(value: JsonValue) -> _Node:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return _One(whole.group(1))
        return _Text(TextTemplate(value)) if _PLACEHOLDER.search(value) else _Const(value)
    if isinstance(value, dict):
        items = tuple((k, _compile(v)) for k, v in value.items())
        if all(isinstance(node, _Const) for _, node in items):
            return _Const(value)
        return _Dict(items)
    if isinstance(value, list):
        nodes = tuple(_compile(v) for v in value)
        return _Const(value) if all(isinstance(n, _Const) for n in nodes) else _List(nodes)
    return _Const(value)


class JsonTemplate:
    """A parsed JSON template, compiled once; `fill` returns a new JSON value per call.

    Constant parts of the template are shared between results: do not mutate them.
    """

    __slots__ = ("_root",)

    def __init__(self, template: JsonValue) -> None:
        self._root = _compile(template)

    def fill(
        self,
        *,
        message: str,
        history: History,
        secrets: Secrets,
        files: list[FileEntry] | None = None,
    ) -> JsonValue:
        """The template with placeholders replaced (see module docstring); `files` fills
        `{{files}}` (`[]` when `None`)."""
        return self._root.fill(_Context(message, history, secrets, files or []))


def compile_body(template: JsonValue) -> JsonTemplate | TextTemplate:
    """Compile a `body_template`: JSON values, or a string holding a JSON object/array, give
    a `JsonTemplate`; any other string is a raw text body (`TextTemplate`)."""
    if isinstance(template, str):
        try:
            parsed = json.loads(template)
        except ValueError:
            return TextTemplate(template)
        if not isinstance(parsed, dict | list):
            return TextTemplate(template)
        return JsonTemplate(parsed)  # type: ignore[arg-type]  # json.loads gives JSON
    return JsonTemplate(template)


def fill_template(
    template: JsonValue,
    *,
    message: str,
    history: History,
    secrets: Secrets,
    files: list[FileEntry] | None = None,
) -> JsonValue:
    """Fill a JSON template once (compiles it each call; targets keep a `JsonTemplate`).

    Raises:
        UserError: a `{{secrets.NAME}}` that is not set.
    """
    return JsonTemplate(template).fill(
        message=message, history=history, secrets=secrets, files=files
    )


def fill_text(
    text: str, *, message: str, history: History, secrets: Secrets, url: bool = False
) -> str:
    """Fill a text template once, e.g. a url or header value (see `TextTemplate`).

    Raises:
        UserError: a `{{secrets.NAME}}` that is not set.
    """
    return TextTemplate(text, url=url).fill(message=message, history=history, secrets=secrets)


def placeholder_names(template: JsonValue) -> set[str]:
    """Every placeholder anywhere in a template (keys excluded), as written inside the
    braces without spaces: `input`, `message`, `history`, `files`, `secrets.NAME`."""
    return _matches(_PLACEHOLDER, template)


def misspelt_placeholders(template: JsonValue) -> list[str]:
    """Placeholders that look like typos of a known one, each with the fix, e.g.
    `{{secret.KEY}} (did you mean {{secrets.KEY}}?)`.

    Other unknown placeholders are sent as typed (a template may hold literal braces).
    """
    out: list[str] = []
    for name in sorted(_matches(_ANY_PLACEHOLDER, template)):
        head, dot, rest = name.partition(".")
        if name in _NAMES or (head == "secrets" and rest):
            continue
        if dot and difflib.get_close_matches(head, ["secrets"], n=1, cutoff=0.7):
            out.append(f"{{{{{name}}}}} (did you mean {{{{secrets.{rest}}}}}?)")
        elif not dot and (
            close := difflib.get_close_matches(name.lower(), list(_NAMES), n=1, cutoff=0.7)
        ):
            out.append(f"{{{{{name}}}}} (did you mean {{{{{close[0]}}}}}?)")
    return out


def _matches(pattern: re.Pattern[str], template: JsonValue) -> set[str]:
    """Group 1 of every match of `pattern` in the strings of a template (keys excluded)."""
    if isinstance(template, str):
        return {m.group(1) for m in pattern.finditer(template)}
    if isinstance(template, dict):
        return {n for v in template.values() for n in _matches(pattern, v)}
    if isinstance(template, list):
        return {n for v in template for n in _matches(pattern, v)}
    return set()


def secret_names(template: JsonValue) -> set[str]:
    """Names of the `{{secrets.NAME}}` placeholders anywhere in a template (keys excluded)."""
    return {n[8:] for n in placeholder_names(template) if n.startswith("secrets.")}


def chat_history(messages: Iterable[Message]) -> History:
    """User and agent messages as `[{"role": "user" | "assistant", "content": str}]`, a
    message's files as `"files"` (`file_entries`) when it has some; system and tool messages
    are left out."""
    out: History = []
    for m in messages:
        if m.role == "user" or m.role == "agent":
            entry: HistoryEntry = {
                "role": "user" if m.role == "user" else "assistant",
                "content": m.content,
            }
            if m.files:
                entry["files"] = file_entries(m.files)
            out.append(entry)
    return out


def last_user_message(transcript: Transcript) -> tuple[str, History]:
    """The transcript's last message (which must be the user's) and the history before it.

    Raises:
        ValueError: the transcript is empty or does not end with a user message (a bug in
            the caller, not in the target).
    """
    messages = transcript.messages
    if not messages or messages[-1].role != "user":
        raise ValueError("a target session is sent a transcript ending with a user message")
    return messages[-1].content, chat_history(messages[:-1])


def tool_calls_from(value: object, *, where: str) -> tuple[ToolCall, ...]:
    """Tool calls from `[{name, arguments}]` (arguments an object or a JSON string).

    Also accepted: OpenAI's `{id, function: {name, arguments}}` items, `args` or `input`
    instead of `arguments`, `ToolCall` objects, a single item, and `null` (no calls).

    Args:
        value: The extracted list.
        where: Where it came from, for the error, e.g. "tool_calls_path 'calls'".

    Raises:
        TargetError: an item is not an object with a string `name`.
    """
    if value is None:
        return ()
    items = list(cast(Sequence[object], value)) if isinstance(value, list | tuple) else [value]
    return tuple(_tool_call(item, number, where) for number, item in enumerate(items, 1))


def _as_object(value: object) -> dict[str, object] | None:
    return cast(dict[str, object], value) if isinstance(value, dict) else None


def _tool_call(item: object, number: int, where: str) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    outer = _as_object(item)
    source = (_as_object(outer.get("function")) or outer) if outer is not None else None
    name = source.get("name") if source is not None else None
    if outer is None or source is None or not isinstance(name, str):
        raise TargetError(
            f"{where}: tool call {number} is not an object with a `name`: "
            f"{_excerpt(item)!r}; expected items like "
            '{"name": "lookup", "arguments": {"id": 1}}'
        )
    args = next((source[k] for k in ("arguments", "args", "input") if k in source), None)
    call_id = outer.get("id")
    return ToolCall.from_arguments(
        name,
        args,
        id=call_id if isinstance(call_id, str) else None,
        result=cast(JsonValue, outer.get("result")),
    )


def _excerpt(value: object, limit: int = 200) -> str:
    try:
        return content_text(value)[:limit]
    except (TypeError, ValueError):  # not JSON-serialisable
        return repr(value)[:limit]


def render_reply(value: JsonValue) -> str:
    """Reply text of an extracted value: strings as is, `null` as empty, else JSON text."""
    if isinstance(value, str):
        return value
    return "" if value is None else content_text(value)


__all__ = [
    "History",
    "HistoryEntry",
    "JsonTemplate",
    "TextTemplate",
    "chat_history",
    "compile_body",
    "fill_template",
    "fill_text",
    "last_user_message",
    "placeholder_names",
    "render_reply",
    "secret_names",
    "tool_calls_from",
]
