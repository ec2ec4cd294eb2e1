"""Scenarios written by a model from `Source`s: the prompt, the answer's schema, and what
is kept of the answer (scenarios that pass the loader, near-duplicates dropped).

One structured-output call (plus the one repair `complete_json` allows) asks for `count`
scenarios of one kind. Each answer scenario becomes a native test-file mapping with
`category`, `topic`, `behavior`, criteria and restrictions; the caller tags it with the
file it came from (`source:FILE`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, cast

from sparring.generate.sources import Source
from sparring.models.base import Model
from sparring.models.structured import complete_json
from sparring.results import Usage

GenerateKind = Literal["simulated", "scripted", "single_turn"]
SIMILAR = 0.75
"""Word-set overlap (Jaccard) at or above which two scenarios count as near-identical."""

_STRINGS = {"type": "array", "items": {"type": "string"}}
_COMMON: dict[str, Any] = {
    "id": {"type": "string"},
    "name": {"type": "string"},
    "category": {"type": "string"},
    "topic": {"type": "string"},
    "behavior": {"type": "string"},
    "source": {"type": "string"},
    "criteria": _STRINGS,
    "restrictions": _STRINGS,
}
_BY_KIND: dict[GenerateKind, dict[str, Any]] = {
    "simulated": {
        "persona": {"type": "string"},
        "goal": {"type": "string"},
        "opening_message": {"type": ["string", "null"]},
        "max_turns": {"type": "integer"},
    },
    "scripted": {
        "turns": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["user", "should"],
                "properties": {"user": {"type": "string"}, "should": _STRINGS},
            },
        }
    },
    "single_turn": {
        "prompt": {"type": "string"},
        "expected_output": {"type": ["string", "null"]},
        "should": _STRINGS,
    },
}
_HOW: dict[GenerateKind, str] = {
    "simulated": "a simulated user: persona, goal, optional opening_message, max_turns 2-8",
    "scripted": "2-5 scripted user turns, each with `should` phrases completing "
    '"The message should ..." about the agent\'s reply',
    "single_turn": "one prompt, optional expected_output, `should` phrases completing "
    '"The message should ..."',
}


def answer_schema(kind: GenerateKind) -> dict[str, Any]:
    """The JSON Schema (strict: every key required, no others) of the model's answer:
    `{"scenarios": [...]}` with the common keys and `kind`'s own."""
    properties = {**_COMMON, **_BY_KIND[kind]}
    item = {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["scenarios"],
        "properties": {"scenarios": {"type": "array", "items": item}},
    }


def generation_prompt(sources: Sequence[Source], kind: GenerateKind, count: int) -> str:
    """The user prompt: what to write, then each source under its heading."""
    parts = [
        f"Write {count} test scenarios for a conversational AI agent, each {_HOW[kind]}. "
        "Cover different behaviours, including edge cases and the rules the agent must not "
        "break. For each: a short kebab-case id, a name, a category, a topic, the behavior "
        "tested, `source` (the file it comes from, as named below), criteria (what the "
        "agent must do, one checkable statement each) and restrictions (what it must "
        "never do). Base them only on the material below.",
    ]
    parts += [f"## {s.heading}\n{s.summary}" for s in sources]
    return "\n\n".join(parts)


async def generate_scenarios(
    model: Model,
    sources: Sequence[Source],
    *,
    kind: GenerateKind,
    count: int,
    usage: Usage | None = None,
) -> list[dict[str, Any]]:
    """Ask `model` for `count` scenarios of `kind` from `sources`.

    Returns:
        The answer's scenarios as the model wrote them (dicts matching `answer_schema`).

    Raises:
        ModelOutputError: two unusable answers. ModelError: the call failed.
    """
    messages: list[Any] = [
        {"role": "system", "content": "You write test scenarios as JSON for sparring."},
        {"role": "user", "content": generation_prompt(sources, kind, count)},
    ]
    answer = await complete_json(
        model,
        messages,
        schema=answer_schema(kind),
        validate=_scenario_list,
        schema_name="scenarios",
        temperature=0.7,
        usage=usage,
    )
    return answer


def _scenario_list(value: Any) -> list[dict[str, Any]]:
    found: Any = cast(dict[str, Any], value).get("scenarios") if isinstance(value, dict) else None
    if not isinstance(found, list):
        raise ValueError('the answer must be an object {"scenarios": [...]}')
    items = cast(list[Any], found)
    if not all(isinstance(item, dict) for item in items):
        raise ValueError("every item of `scenarios` must be an object")
    return cast(list[dict[str, Any]], items)


def native(answer: dict[str, Any], kind: GenerateKind, taken: set[str]) -> dict[str, Any]:
    """One answer scenario as a test-file mapping: a unique slug id (added to `taken`),
    `kind`, and only the keys that have a value (empty strings and lists left out)."""
    base = _slug(str(answer.get("id") or answer.get("name") or "scenario"))
    ident, n = base, 2
    while ident in taken:
        ident, n = f"{base}-{n}", n + 1
    taken.add(ident)
    out: dict[str, Any] = {"id": ident, "kind": kind}
    for key, value in answer.items():
        if key in ("id", "source") or value in (None, "", []):
            continue
        if key == "turns":
            value = [_turn(cast(dict[str, Any], t)) for t in value if isinstance(t, dict)]
        out[key] = value
    return out


def _turn(turn: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in turn.items() if v not in (None, "", [])}


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")
    return slug[:60] or "scenario"


def near_duplicate(words: set[str], seen: list[set[str]]) -> bool:
    """Whether `words` overlaps one of `seen` by `SIMILAR` or more (Jaccard)."""
    return any(len(words & other) / max(1, len(words | other)) >= SIMILAR for other in seen)


def key_words(scenario: dict[str, Any]) -> set[str]:
    """The words that say what a scenario tests: persona, goal, prompt and user turns."""
    turns: Any = scenario.get("turns") or []
    users = [
        str(cast(dict[str, Any], t).get("user", ""))
        for t in cast(list[Any], turns)
        if isinstance(t, dict)
    ]
    fields = ("persona", "goal", "opening_message", "prompt", "expected_output")
    text = " ".join([str(scenario.get(k, "")) for k in fields] + users)
    return set(re.findall(r"[a-z0-9]+", text.lower()))
