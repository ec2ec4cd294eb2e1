"""Structured output on top of any `Model`: JSON by schema, read as a whole, one repair.

`complete_json` asks the model for JSON matching a schema and reads the answer by
`parse_json_loosely`: the whole answer, or the one top-level JSON object in it (code fences
and prose around it are dropped); an object nested in other text, an answer holding several
objects, or one inside a `<think>` block left open, is never read. The caller's functions
screen the JSON's source text (say, for JSON someone else wrote) and validate the value; on
failure the model is asked once more with the bad answer and a format reminder. A second
failure raises `ModelOutputError`, which callers record as `error` (fail closed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from pydantic import ValidationError

from sparring.errors import ModelError, ModelOutputError
from sparring.models.base import ChatMessage, Completion, Model
from sparring.models.pricing import call_cost_usd
from sparring.results import Usage

T = TypeVar("T")

MAX_DEPTH = 32
"""Deepest nesting of objects and arrays an answer may have; sparring's schemas need 4."""
_STRUCTURE = re.compile(r'[{}\[\]"\\]')


def parse_json_loosely(text: str) -> Any:
    """The JSON value a model answered, read as a whole; fail closed on anything else.

    Read, in order: the whole text; the text after a leading `<think>...</think>` block;
    else the one top-level JSON object in the text, with the prose and code fences around
    it dropped. It must parse as a whole: an object found inside other text (within
    brackets, or within braces that do not parse) is never read, and text holding several
    top-level objects (say an agent reply the answer quotes, besides the answer) is
    rejected rather than guessed at. A `<think>` block never closed before the object (a
    reasoning model cut off by its token limit) holds no answer, whatever JSON it quotes. Within the
    value, a key given twice, or in two letter cases, with different values is rejected.

    Raises:
        ValueError: no JSON, an unclosed `<think>` block, several top-level objects, one
            that does not parse, a key given twice, or nesting deeper than `MAX_DEPTH`;
            the message says which and how to answer instead.
    """
    return read_json_loosely(text)[0]


def read_json_loosely(text: str) -> tuple[Any, str]:
    """`parse_json_loosely(text)` and the source text of the JSON it read (stripped).

    Raises:
        ValueError: as `parse_json_loosely`.
    """
    whole = text.strip()
    if not whole:
        raise ValueError("the answer was empty")
    body = _without_leading_think(whole)
    if not body:
        raise ValueError("the answer held only a <think> block, no JSON")
    for candidate in dict.fromkeys((whole, body)):
        try:
            return _loads(candidate), candidate
        except _Unreadable as e:
            raise ValueError(str(e)) from None
        except ValueError:
            pass
    return _one_object(body)


class _Unreadable(ValueError):
    """JSON that parses but may not be read: a key given twice, or nesting too deep."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice, or in two letter cases, with different values
    fails: plain `json` keeps the last one, which could turn a `not_met` into `met`."""
    out: dict[str, Any] = {}
    folded: dict[str, Any] = {}
    for key, value in pairs:
        if folded.get(key.casefold(), value) != value:
            raise _Unreadable(
                f"the answer gives key {key!r} twice (or in two letter cases) with different "
                "values, so which one counts is unclear; give every key once"
            )
        out[key] = folded[key.casefold()] = value
    return out


def _loads(text: str) -> Any:
    """`json.loads` with `_object`; nesting deeper than `MAX_DEPTH` fails (`_Unreadable`)."""
    try:
        value = json.loads(text, object_pairs_hook=_object)
    except RecursionError:  # far deeper than MAX_DEPTH
        raise _Unreadable(_TOO_DEEP) from None
    if _too_deep(value):
        raise _Unreadable(_TOO_DEEP)
    return value


_TOO_DEEP = (
    f"the answer nests JSON more than {MAX_DEPTH} levels deep; answer with the flat object "
    "the schema asks for"
)


def _too_deep(value: Any) -> bool:
    """Whether objects and arrays nest more than `MAX_DEPTH` levels in `value`."""
    level: list[Any] = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_DEPTH):  # `level`: the objects and arrays one level further in
        level = [
            child
            for v in level
            for child in (cast(dict[str, Any], v).values() if isinstance(v, dict) else v)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True


_UNCLOSED_THINK = (
    "the answer opened a <think> block and never closed it (cut off?), so it holds no "
    "answer; close </think> and then give the JSON object"
)


def _without_leading_think(text: str) -> str:
    """`text` (stripped) after a leading `<think>...</think>` block; `text` itself if none.

    Raises:
        ValueError: the `<think>` block is never closed, so no answer follows it.
    """
    if not text.startswith("<think>"):
        return text
    end = text.find("</think>")
    if end == -1:
        raise ValueError(_UNCLOSED_THINK)
    return text[end + len("</think>") :].strip()


def _one_object(text: str) -> tuple[Any, str]:
    """The one top-level JSON object in prose, parsed as a whole (`_top_level_values`),
    and its source text."""
    spans = _top_level_values(text)
    if not spans:
        raise ValueError("the answer contained no JSON object")
    if len(spans) > 1:
        raise ValueError(
            f"the answer holds {len(spans)} JSON objects (or lists of them), so which one is "
            "the answer is unclear; reply with exactly one JSON object and do not quote any "
            "other JSON"
        )
    start, end = spans[0]
    if text.rfind("<think>", 0, start) > text.rfind("</think>", 0, start):
        raise ValueError(_UNCLOSED_THINK)
    try:
        return _loads(text[start:end]), text[start:end]
    except _Unreadable as e:
        raise ValueError(str(e)) from None
    except ValueError as e:
        raise ValueError(f"the JSON object in the answer does not parse: {e}") from None


def _top_level_values(text: str) -> list[tuple[int, int]]:
    """`(start, end)` of every `{...}`, and every `[...]` holding a `{`, that is outside
    any other brackets or braces (JSON strings inside them skipped); one left open runs to
    the end of the text. Text between them (prose, code fence lines) is not looked at."""
    spans: list[tuple[int, int]] = []
    stack: list[str] = []
    start, index, in_string = 0, 0, False
    while (found := _STRUCTURE.search(text, index)) is not None:
        char, index = found.group(), found.end()
        if in_string:
            index += char == "\\"
            in_string = char != '"'
        elif char in "{[":
            start = found.start() if not stack else start
            stack.append(char)
        elif char in "}]":
            if stack and stack[-1] == ("{" if char == "}" else "["):
                stack.pop()
                if not stack:
                    spans.append((start, index))
        else:
            in_string = bool(stack) and char == '"'
    if stack:
        spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a] == "{" or "{" in text[a:b]]


def json_objects_in(text: str) -> list[dict[str, Any]]:
    """Every JSON object written anywhere in `text`: top-level ones, those nested in them,
    those inside brackets or braces that do not parse as a whole, and those escaped in JSON
    strings, down to `MAX_DEPTH` levels of text; in no set order."""
    found: list[dict[str, Any]] = []
    pending: list[tuple[str, int]] = [(text, 0)]
    while pending:
        chunk, level = pending.pop()
        if level > MAX_DEPTH:
            continue
        for start, end in _top_level_values(chunk):
            try:
                values: list[Any] = [json.loads(chunk[start:end])]
            except (ValueError, RecursionError):
                pending.append((chunk[start + 1 : end], level + 1))
                continue
            while values:
                value = values.pop()
                if isinstance(value, dict):
                    found.append(cast(dict[str, Any], value))
                    values += cast(dict[str, Any], value).values()
                elif isinstance(value, list):
                    values += cast(list[Any], value)
                elif isinstance(value, str) and "{" in value:
                    pending.append((value, level + 1))
    return found


def describe_problem(error: ValueError) -> str:
    """A short, model-readable account of why an answer was rejected."""
    if isinstance(error, ValidationError):
        parts: list[str] = []
        for item in error.errors(include_url=False)[:5]:
            where = ".".join(str(p) for p in item["loc"]) or "(top level)"
            parts.append(f"{where}: {item['msg']}")
        return "; ".join(parts)
    return str(error)[:500]


async def complete_json(
    model: Model,
    messages: Sequence[ChatMessage],
    *,
    schema: dict[str, Any],
    validate: Callable[[Any], T],
    schema_name: str = "answer",
    temperature: float,
    seed: int | None = None,
    usage: Usage | None = None,
    screen: Callable[[str, Any], None] | None = None,
) -> T:
    """Ask `model` for JSON matching `schema`; return `validate(parsed)`.

    Args:
        model: Any `Model`; it is asked for native structured output where it has it.
        messages: The prompt, OpenAI chat shape.
        schema: JSON Schema of the answer (sent to the model, not checked here).
        validate: Turns the parsed JSON into `T`; raises `ValueError` (pydantic's
            `ValidationError` is one) when the shape is wrong.
        schema_name: Name of the schema for the endpoint (letters, digits, `_`, `-`).
        temperature: Sampling temperature.
        seed: Sent to the model (`Model.complete`) when given, for repeatable answers.
        usage: When given, each call made is added to it: tokens, and cost in USD by
            `sparring.models.pricing` (unknown prices count as `unpriced_calls`).
        screen: Called with the answer JSON's source text and value before `validate`;
            raises `ValueError` to reject it (say, JSON copied from the conversation).

    Returns:
        The validated value. At most two model calls are made.

    Raises:
        ModelOutputError: both answers were unparseable or invalid (`raw` = the last one).
        ModelError: a model call failed.
    """
    call = _Call(model, schema, schema_name, temperature, seed, usage)
    read = _Read(validate, screen)
    first = await call(messages)
    try:
        return read(first.text)
    except ValueError as e:
        problem = describe_problem(e)
    reminder = (
        f"Your answer could not be used: {problem}. Reply again with only one JSON "
        "object matching this JSON Schema, no prose and no code fences:\n"
        + json.dumps(schema, separators=(",", ":"))
    )
    repair: list[ChatMessage] = [
        *messages,
        {"role": "assistant", "content": first.text or "(empty answer)"},
        {"role": "user", "content": reminder},
    ]
    second = await call(repair)
    try:
        return read(second.text)
    except ValueError as e:
        raise ModelOutputError(
            f"{model.name} gave no valid {schema_name!r} JSON in two tries: {describe_problem(e)}",
            raw=second.text,
        ) from e


@dataclass(frozen=True, slots=True)
class _Read(Generic[T]):
    """An answer's text -> `validate(value)`, after `screen(source, value)`."""

    validate: Callable[[Any], T]
    screen: Callable[[str, Any], None] | None

    def __call__(self, text: str) -> T:
        value, source = read_json_loosely(text)
        if self.screen is not None:
            self.screen(source, value)
        return self.validate(value)


@dataclass(frozen=True, slots=True)
class _Call:
    """One model call of `complete_json`, its usage added to `usage`."""

    model: Model
    schema: dict[str, Any]
    schema_name: str
    temperature: float
    seed: int | None
    usage: Usage | None

    async def __call__(self, messages: Sequence[ChatMessage]) -> Completion:
        model = self.model
        # `seed` only when there is one: models written before it existed keep working
        seed: dict[str, Any] = {} if self.seed is None else {"seed": self.seed}
        try:
            completion = await model.complete(
                messages,
                temperature=self.temperature,
                json_schema=self.schema,
                schema_name=self.schema_name,
                **seed,
            )
        except ModelError as e:
            self._count_unanswered(e.requests)
            raise
        if self.usage is not None and completion.requests:  # 0: a stored answer, no call
            self.usage.add_call(
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
                cost_usd=call_cost_usd(
                    model.name,
                    input_tokens=completion.input_tokens,
                    output_tokens=completion.output_tokens,
                ),
            )
        self._count_unanswered(completion.requests - 1)
        return completion

    def _count_unanswered(self, requests: int) -> None:
        """Count requests sent without an answer (failed, retried or refused) as model
        calls that cost nothing."""
        if self.usage is None:
            return
        for _ in range(requests):
            self.usage.add_call(input_tokens=None, output_tokens=None, cost_usd=0.0)
