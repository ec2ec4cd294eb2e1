"""The OpenAI chat completions answer format: what sparring reads from a response body.

Shared by the OpenAI-compatible model provider and the `openai_chat` target, which both
talk to `/chat/completions` endpoints and must survive servers that answer garbage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from sparring.transcript import JsonTooDeep, parse_json

_EXCERPT_CHARS = 4000
"""Excerpts in errors are long on purpose: callers scrub secrets first, then cut them short,
so no secret is ever half-cut here and left unrecognisable."""


def not_a_completion(where: str, detail: str) -> str:
    """The message for an answer that is not a chat completion, from `where` (name and
    shown url) and `detail` (the scrubbed, cut `MalformedCompletion` text)."""
    return (
        f"{where}: the answer is not a chat completion ({detail}); check that base_url "
        "points at an OpenAI-compatible /v1 endpoint"
    )


class MalformedCompletion(ValueError):
    """A chat completions answer that lacks what sparring reads; the text says what."""


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The parts of a chat completion that sparring reads (see `parse_chat_completion`)."""

    body: dict[str, Any]
    """The whole answer, strict JSON (`NaN` / `Infinity` kept as strings)."""
    message: dict[str, Any]
    """`choices[0].message`; its `content` is a string or null (a list of content parts
    in the answer is replaced by their joined text)."""
    usage: dict[str, Any]
    """The `usage` object, `{}` when absent or not an object."""

    @property
    def text(self) -> str:
        """The message text; a null `content` (e.g. tool calls only) is `""`."""
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    @property
    def input_tokens(self) -> int | None:
        """`usage.prompt_tokens` when it is a non-negative integer, else `None`."""
        return _token_count(self.usage.get("prompt_tokens"))

    @property
    def output_tokens(self) -> int | None:
        """`usage.completion_tokens` when it is a non-negative integer, else `None`."""
        return _token_count(self.usage.get("completion_tokens"))


def parse_chat_completion(data: bytes) -> ChatAnswer:
    """Check a chat completions answer body and pick out what sparring reads.

    Only those parts are checked, so sloppy but usable servers (no `id`, no
    `finish_reason`, no `usage`) still work.

    Raises:
        MalformedCompletion: the body is not JSON, not an object, has no `choices` list
            with a `message` object first, or its `content` is neither a string, null nor
            a list of content parts (objects with a `type`; the `text` of `type: text`
            parts is joined into the message text, other parts are ignored).
    """
    try:
        body: object = parse_json(data)
    except JsonTooDeep as e:
        raise MalformedCompletion(f"the body is {e}") from None
    except ValueError:  # UnicodeDecodeError is a ValueError too
        excerpt = data[:_EXCERPT_CHARS].decode("utf-8", errors="replace")
        raise MalformedCompletion(f"the body is not JSON: {excerpt!r}") from None
    if not isinstance(body, dict):
        raise MalformedCompletion(f"the body is {_kind(body)}, not a JSON object")
    answer = cast(dict[str, Any], body)
    message = _first_message(answer)
    content: object = message.get("content")
    if isinstance(content, list):
        message = {**message, "content": _joined_text(cast(list[object], content))}
    elif content is not None and not isinstance(content, str):
        raise MalformedCompletion(f"choices[0].message.content is {_kind(content)}, not text")
    usage: object = answer.get("usage")
    return ChatAnswer(
        answer, message, cast(dict[str, Any], usage) if isinstance(usage, dict) else {}
    )


def _joined_text(parts: list[object]) -> str:
    """The `text` of the `type: text` parts, joined; other part types are ignored.

    Raises:
        MalformedCompletion: a part is not an object with a `type`, or a text part's `text`
            is not a string.
    """
    texts: list[str] = []
    for i, part in enumerate(parts):
        kind = _field(part, "type")
        if not isinstance(kind, str):
            raise MalformedCompletion(
                "choices[0].message.content is a list, not text (nor content parts: item "
                f"{i} is {_excerpt(part)}, not an object with a `type`)"
            )
        if kind != "text":
            continue
        text = _field(part, "text")
        if not isinstance(text, str):
            raise MalformedCompletion(
                f"choices[0].message.content[{i}].text is {_kind(text)}, not text"
            )
        texts.append(text)
    return "".join(texts)


def _first_message(answer: dict[str, Any]) -> dict[str, Any]:
    choices: object = answer.get("choices")
    if not isinstance(choices, list) or not choices:
        choices = cast(object, choices)
        error: object = answer.get("error")
        if error is not None:
            raise MalformedCompletion(f"it holds an error: {_excerpt(error)}")
        raise MalformedCompletion(
            "the endpoint returned no choices"
            if choices == []
            else "no `choices` key"
            if choices is None
            else f"`choices` is {_kind(choices)}, not a list"
        )
    first: object = cast(list[object], choices)[0]
    message = _field(first, "message")
    if not isinstance(message, dict):
        raise MalformedCompletion(f"choices[0] has no `message` object: {_excerpt(first)}")
    return cast(dict[str, Any], message)


def _token_count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _field(value: object, key: str) -> object:
    return cast(dict[str, object], value).get(key) if isinstance(value, dict) else None


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string {value[:_EXCERPT_CHARS]!r}"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def _excerpt(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:_EXCERPT_CHARS]
