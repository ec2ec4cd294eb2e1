"""Structured output on top of any `Model`: JSON by schema, tolerant parsing, one repair.

`complete_json` asks the model for JSON matching a schema, parses the answer leniently
(bare JSON, a fenced block, an object inside prose; several different objects are
ambiguous and rejected), validates it with the caller's
function, and on failure asks once more with the bad answer and a format reminder. A second
failure raises `ModelOutputError`, which callers record as `error` (fail closed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

from sparring.errors import ModelError, ModelOutputError
from sparring.models.base import ChatMessage, Completion, Model
from sparring.models.pricing import call_cost_usd
from sparring.results import Usage

T = TypeVar("T")

_MAX_OBJECT_STARTS = 200
"""How many `{` positions the prose scan tries before giving up (bounds the work)."""


def parse_json_loosely(text: str) -> Any:
    """Parse the one JSON value in a model answer; fail closed when there are several.

    Tried in order: the whole text; the text after a leading `<think>...</think>` block;
    then every JSON value of a ```` ``` ```` fenced block and every top-level JSON object
    in the prose around them. Those must agree: an answer that quotes another JSON object
    (say an agent reply that imitates a verdict) besides its own is ambiguous, so it is
    rejected rather than guessed at.

    Raises:
        ValueError: no JSON found, or several different JSON objects found; the message
            says what the text looked like.
    """
    try:
        return _parse(text)
    except _Conflict as e:
        raise ValueError(
            f"the answer gives key {e.key!r} twice, with different values, so "
            "which one counts is unclear; give every key once"
        ) from None


def _parse(text: str) -> Any:
    whole = text.strip()
    if not whole:
        raise ValueError("the answer was empty")
    try:
        return _loads(whole)
    except ValueError:
        pass
    body = _without_leading_think(whole)
    if body is not whole:
        if not body:
            raise ValueError("the answer held only a <think> block, no JSON")
        try:
            return _loads(body)
        except ValueError:
            pass
    found = _candidates(body)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError("the answer contained no parseable JSON object")
    raise ValueError(
        f"the answer holds {len(found)} different JSON objects, so which one is "
        "the answer is unclear; reply with exactly one JSON object and do not "
        "quote any other JSON"
    )


class _Conflict(Exception):
    """A JSON object gives the same key twice with different values."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            raise _Conflict(key)
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def _loads(text: str) -> Any:
    """`json.loads`, failing on a key given twice with different values (`_Conflict`):
    plain `json` keeps the last one, which could turn a judge's `not_met` into `met`."""
    return json.loads(text, object_pairs_hook=_object)


def _without_leading_think(text: str) -> str:
    """`text` (stripped) after a leading `<think>...</think>` block; `text` itself if none."""
    if not text.startswith("<think>"):
        return text
    end = text.find("</think>")
    return text if end == -1 else text[end + len("</think>") :].strip()


def _candidates(text: str) -> list[Any]:
    """Distinct JSON values: parseable fenced blocks, then top-level objects outside them.

    Raises:
        ValueError: more `{` positions than `_MAX_OBJECT_STARTS` had to be tried.
    """
    found: list[Any] = []
    blanked = text
    for start, end in _fenced_blocks(text):
        try:
            value = _loads(text[start:end])
        except ValueError:
            continue
        _add(found, value)
        blanked = blanked[:start] + " " * (end - start) + blanked[end:]
    for value in _top_level_objects(blanked):
        _add(found, value)
    return found


def _add(found: list[Any], value: Any) -> None:
    if not any(value == seen for seen in found):
        found.append(value)


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    """`(start, end)` of the contents of ```-fenced blocks, the language tag line left out."""
    out: list[tuple[int, int]] = []
    start = text.find("```")
    while start != -1:
        line_end = text.find("\n", start + 3)
        if line_end == -1:
            break
        end = text.find("```", line_end)
        if end == -1:
            out.append((line_end + 1, len(text)))
            break
        out.append((line_end + 1, end))
        start = text.find("```", end + 3)
    return out


def _top_level_objects(text: str) -> list[Any]:
    """JSON objects found scanning left to right; the scan resumes after each one found.

    Raises:
        ValueError: more `{` positions than `_MAX_OBJECT_STARTS` had to be tried.
    """
    out: list[Any] = []
    index = text.find("{")
    for _ in range(_MAX_OBJECT_STARTS):
        if index == -1:
            return out
        try:
            value, end = _DECODER.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        out.append(value)
        index = text.find("{", end)
    if index == -1:
        return out
    raise ValueError(
        "the answer has too many '{' to find its JSON object in; reply with only the JSON object"
    )


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
    usage: Usage | None = None,
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
        usage: When given, each call made is added to it: tokens, and cost in USD by
            `sparring.models.pricing` (unknown prices count as `unpriced_calls`).

    Returns:
        The validated value. At most two model calls are made.

    Raises:
        ModelOutputError: both answers were unparseable or invalid (`raw` = the last one).
        ModelError: a model call failed.
    """
    first = await _call(model, messages, schema, schema_name, temperature, usage)
    try:
        return validate(parse_json_loosely(first.text))
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
    second = await _call(model, repair, schema, schema_name, temperature, usage)
    try:
        return validate(parse_json_loosely(second.text))
    except ValueError as e:
        raise ModelOutputError(
            f"{model.name} gave no valid {schema_name!r} JSON in two tries: {describe_problem(e)}",
            raw=second.text,
        ) from e


async def _call(
    model: Model,
    messages: Sequence[ChatMessage],
    schema: dict[str, Any],
    schema_name: str,
    temperature: float,
    usage: Usage | None,
) -> Completion:
    try:
        completion = await model.complete(
            messages, temperature=temperature, json_schema=schema, schema_name=schema_name
        )
    except ModelError as e:
        _count_unanswered(usage, e.requests)
        raise
    if usage is not None:
        usage.add_call(
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost_usd=call_cost_usd(
                model.name,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
            ),
        )
    _count_unanswered(usage, completion.requests - 1)
    return completion


def _count_unanswered(usage: Usage | None, requests: int) -> None:
    """Count requests sent without an answer (failed, retried or refused) as model calls
    that cost nothing."""
    if usage is None:
        return
    for _ in range(requests):
        usage.add_call(input_tokens=None, output_tokens=None, cost_usd=0.0)
