"""Pydantic validation errors -> problems at file:line:column, in the test file's own terms.

`validation_problems` finds where each error is in the file (`sparring.loaders._places`)
and writes one plain sentence per error, e.g.
`unknown key 'persna' in scenarios[0] (simulated scenario); did you mean 'persona'?`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from sparring import scenario as sc
from sparring.errors import ConfigError
from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders._places import (
    CHECKS,
    SCENARIOS,
    TARGETS,
    Place,
    allowed_keys,
    closest,
    describe,
    family_of,
    place_of,
    why_kind,
    yaml_path,
)

MAX_SHOWN = 20
"""At most this many problems are listed in one error; the rest are counted."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a test file: where (1-based line/column, when known) and what."""

    path: str
    line: int | None
    column: int | None
    message: str

    def render(self) -> str:
        """`path:line:column: message`, leaving out what is unknown."""
        return str(ConfigError(self.message, path=self.path, line=self.line, column=self.column))


def config_error(problems: Sequence[Problem]) -> ConfigError:
    """One ConfigError for all `problems` (non-empty), each on its own line.

    The error's `path` / `line` / `column` are the first problem's; its text lists every
    problem as `path:line:column: message` (at most `MAX_SHOWN`, then a count of the rest).
    """
    first, rest = problems[0], list(problems[1:MAX_SHOWN])
    message = "\n".join([first.message, *(p.render() for p in rest)])
    if len(problems) > MAX_SHOWN:
        message += f"\n... and {len(problems) - MAX_SHOWN} more problems"
    return ConfigError(message, path=first.path, line=first.line, column=first.column)


def _in(loc: Loc) -> str:
    return f"in {yaml_path(loc)}" if loc else "at the top level"


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _at(data: Any, loc: Loc) -> Any:
    for seg in loc:
        data = data[seg]
    return data


def _got(value: Any) -> str:
    """The value as the reader wrote it: `text 'abc'`, `the number 3`, `a list`, ..."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"text {value[:60]!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    return "a mapping" if is_mapping(value) else type(value).__name__


# --- one message per pydantic error ------------------------------------------------------

_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
}


@dataclass(frozen=True)
class _Note:
    loc: Loc
    line: int
    column: int
    message: str
    expected: tuple[str, ...] = ()
    """For a value of the wrong type: what would fit (one per union member)."""
    got: str = ""
    hints: tuple[str, ...] = ()
    missing: str | None = None
    """For a missing key: its name."""
    suggested: str | None = None
    """For an unknown key: the key suggested instead."""


def validation_problems(
    error: ValidationError,
    *,
    doc: Document,
    path: str,
    single: bool,
    root: type[BaseModel] | None = None,
) -> list[Problem]:
    """Explain every error of `error` at its line and column in `path`.

    Args:
        error: From validating `doc.data` as a `TestFile` (or as one scenario).
        doc: The parsed document, for positions.
        path: The file, as shown to the reader.
        single: True when the document is one scenario rather than a test file.
        root: The document's model when it is neither (a library file).

    Returns:
        Problems in file order; type errors on one value (from `str | list[str]` and the
        like) are merged into one "expected text or a list" problem.
    """
    notes = [_note(e, doc, single=single, root=root) for e in error.errors(include_url=False)]
    # "unknown key 'usr'; did you mean 'user'?" already says that `user` is missing
    suggested = {(n.loc[:-1], n.suggested) for n in notes if n.suggested}
    notes = [n for n in notes if (n.loc, n.missing) not in suggested]
    problems = [Problem(path, n.line, n.column, n.message) for n in _merge(notes)]
    return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))


def _merge(notes: list[_Note]) -> list[_Note]:
    """One note per value of the wrong type, naming each alternative once.

    A type error on a value that also has errors inside it is dropped: it comes from a union
    member the value does not look like (`contains: [1, 2]` is a list, so the list's items
    are wrong, not "expected text").
    """
    notes = [n for n in notes if not (n.expected and _has_inner(n, notes))]
    out: list[_Note] = []
    for note in notes:
        same = next(
            (i for i, o in enumerate(out) if note.expected and o.expected and o.loc == note.loc),
            None,
        )
        if same is None:
            out.append(note)
            continue
        prior = out[same]
        expected = tuple(dict.fromkeys((*prior.expected, *note.expected)))
        hints = tuple(dict.fromkeys((*prior.hints, *note.hints)))
        out[same] = _Note(
            prior.loc,
            prior.line,
            prior.column,
            _type_message(prior.loc, expected, prior.got, hints),
            expected,
            prior.got,
            hints=hints,
        )
    return out


def _has_inner(note: _Note, notes: list[_Note]) -> bool:
    depth = len(note.loc)
    return any(len(o.loc) > depth and o.loc[:depth] == note.loc for o in notes)


def _type_message(loc: Loc, expected: tuple[str, ...], got: str, hints: tuple[str, ...]) -> str:
    return f"{yaml_path(loc)}: expected {' or '.join(expected)}, got {got}" + "".join(
        f"; {h}" for h in hints
    )


def _note(e: Any, doc: Document, *, single: bool, root: type[BaseModel] | None) -> _Note:
    kind, loc, value = e["type"], e["loc"], e.get("input")
    place = place_of(loc, doc.data, single=single, missing=kind == "missing", root=root)
    key_pos = doc.position(place.loc)
    if kind == "extra_forbidden":
        message, guess = _unknown_key(place, doc.data)
        return _Note(place.loc, *key_pos, message, suggested=guess)
    if kind == "missing":
        return _Note(
            place.loc, *key_pos, _missing(str(loc[-1]), place, single=single), missing=str(loc[-1])
        )
    if kind in _UNIONS:
        message, key = _union(kind, value, yaml_path(place.loc))
        return _Note(place.loc, *(doc.position((*place.loc, key)) if key else key_pos), message)
    return _value_note(e, place, doc)


def _value_note(e: Any, place: Place, doc: Document) -> _Note:
    """A value of the wrong type or out of its allowed set, pointed at the value itself."""
    kind, value, ctx = e["type"], e.get("input"), e.get("ctx", {})
    pos, where, got = doc.position(place.loc, value=True), yaml_path(place.loc), _got(value)
    if kind in _EXPECTED:
        expected = _EXPECTED[kind]
        if place.loc and place.loc[-1] == "should":
            expected = "text or a list of texts"
        hints = _type_hints(kind, value, place.loc)
        return _Note(
            place.loc,
            *pos,
            _type_message(place.loc, (expected,), got, hints),
            (expected,),
            got,
            hints=hints,
        )
    if kind in _BOUNDS or kind in _LENGTHS:
        return _Note(place.loc, *pos, f"{where}: {_out_of_range(e, place)}")
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        guess = closest(str(value), options)
        return _Note(
            place.loc,
            *pos,
            f"{where}: expected one of {', '.join(options)}, got "
            f"{got}" + (f"; did you mean {guess!r}?" if guess else ""),
        )
    if kind == "string_pattern_mismatch":
        hint = _PATTERN_HINTS.get(str(place.loc[-1]) if place.loc else "")
        return _Note(
            place.loc,
            *pos,
            f"{where}: {got} does not match the pattern "
            f"{ctx.get('pattern', '')}" + (f"; {hint}" if hint else ""),
        )
    message = re.sub(r"^(Value error|Assertion failed), ", "", e["msg"])
    if place.model is not None and kind in ("value_error", "assertion_error"):
        where += f" ({describe(place.model)})"
    return _Note(place.loc, *pos, f"{where}: {message}")


def _type_hints(kind: str, value: Any, loc: Loc) -> tuple[str, ...]:
    """How to fix a value of the wrong type: quote a number, or write a list."""
    key = loc[-1] if loc else None
    if kind == "string_type" and isinstance(value, int | float) and value == value:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        written = f'{key}: "{text}"' if isinstance(key, str) else f'"{text}"'
        return (f"quote it: {written}",)
    if kind == "list_type" and isinstance(value, str):
        name = key if isinstance(key, str) else "items"
        return (f'write a list, e.g. `{name}: ["..."]`, or one `- ...` item per line',)
    return ()


_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}
_LENGTHS = {
    "string_too_short": "characters",
    "string_too_long": "characters",
    "too_short": "items",
    "too_long": "items",
}


def _out_of_range(e: Any, place: Place) -> str:
    """`trials must be at least 1 and at most 100, got 0`, in place of pydantic's wording."""
    kind, value, ctx, field = e["type"], e.get("input"), e.get("ctx", {}), e["loc"][-1]
    key = place.loc[-1] if place.loc and isinstance(place.loc[-1], str) else "the value"
    if kind in _LENGTHS:
        unit = _LENGTHS[kind]
        if kind.endswith("too_short") and ctx.get("min_length") == 1:
            return f"{key} must not be empty; " + (
                "write the text" if unit == "characters" else "list at least one item"
            )
        limit = ctx.get("min_length", ctx.get("max_length"))
        size = len(value) if isinstance(value, str) else ctx.get("actual_length")
        word = "at least" if kind.endswith("too_short") else "at most"
        return f"{key} must have {word} {limit} {unit}, got {size}"
    limits = _field_bounds(place.parent, str(field)) or [(kind, ctx.get(_BOUNDS[kind][0]))]
    allowed = " and ".join(f"{_BOUNDS[k][1]} {_number(limit)}" for k, limit in limits)
    return f"{key} must be {allowed}, got {_got(value).removeprefix('the number ')}"


def _number(value: Any) -> str:
    """`0.0` -> `0`, `2.5` -> `2.5`: a limit as a person writes it."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _field_bounds(model: type[BaseModel] | None, field: str) -> list[tuple[str, Any]]:
    """`[(error kind, limit), ...]` for the numeric constraints of `model.field`."""
    info = model.model_fields.get(field) if model is not None else None
    if info is None:
        return []
    found: list[tuple[str, Any]] = []
    for kind, (attr, _) in _BOUNDS.items():
        for meta in info.metadata:
            limit = getattr(meta, attr, None)
            if limit is not None:
                found.append((kind, limit))
    return found


def _unknown_key(place: Place, data: Any) -> tuple[str, str | None]:
    """The message for an unknown key, and the key it suggests instead (if any)."""
    key, container, model = str(place.loc[-1]), place.loc[:-1], place.parent
    if model is None:
        return f"unknown key {key!r} {_in(container)}", None
    message = f"unknown key {key!r} {_in(container)} ({describe(model)})"
    if model is sc.TestFile and any(key in allowed_keys(m) for m in SCENARIOS.values()):
        return (
            f"{message}; `{key}` is a scenario setting: put it in each scenario under `scenarios:`",
            None,
        )
    others = [m for m in family_of(model).values() if m is not model]
    owners = [describe(m) + "s" for m in others if key in allowed_keys(m)]
    if owners:
        return (
            f"{message}; `{key}` belongs to {' and '.join(owners)}, and this is "
            f"{_a(describe(model))} because {why_kind(model, _at(data, container))}",
            None,
        )
    if guess := closest(key, allowed_keys(model)):
        return f"{message}; did you mean {guess!r}?", guess
    for other in others:
        if guess := closest(key, allowed_keys(other)):
            return f"{message}; did you mean {guess!r} (a key of {describe(other)}s)?", None
    return f"{message}; allowed keys: {', '.join(allowed_keys(model))}", None


_MISSING_HINTS: dict[tuple[Any, str], str] = {
    (sc.Criterion, "id"): "write a criterion as plain text, or as a mapping with `id:` and `text:`",
    (sc.Criterion, "text"): "write a criterion as plain text, or as a mapping with `id:` and "
    "`text:`",
    (sc.ScriptedTurn, "user"): "each turn needs the user's message as `user:`",
    (sc.ScriptedScenario, "turns"): "a scripted scenario lists its user messages under `turns:`",
    (sc.SingleTurnScenario, "prompt"): "a single-turn scenario sends its `prompt:`",
}


def _missing(key: str, place: Place, *, single: bool) -> str:
    noun = f" ({describe(place.model)})" if place.model else ""
    message = f"missing required key {key!r} {_in(place.loc)}{noun}"
    if single and not place.loc and key == "id":
        return (
            message + "; a test file holds `target:` and `scenarios:` (a list), or is one "
            "scenario with its own `id:`"
        )
    hint = _MISSING_HINTS.get((place.model, key))
    return f"{message}; {hint}" if hint else message


_UNIONS: dict[str, tuple[dict[str, type[BaseModel]], str, str]] = {
    "check_type": (CHECKS, "check", "type"),
    "scenario_kind": (SCENARIOS, "scenario", "kind"),
    "target_type": (TARGETS, "target", "type"),
}
_EXAMPLES = {
    "check": '`- contains: "refund"` or `- {type: regex, pattern: "\\\\d+"}`',
    "scenario": "`- id: refund-late-order` followed by its keys",
    "target": '`target: {url: "http://localhost:8000/chat"}`',
}


_PATTERN_HINTS = {
    "id": "use letters, digits and _ . - (scenario ids may also use : and /), no spaces",
    "ref": "write the import path as `module:attribute`, e.g. `my_agent.app:respond`",
}


def _union(kind: str, value: Any, where: str) -> tuple[str, str | None]:
    """A check, scenario or target whose type could not be told: message, key to point at."""
    family, noun, tag_key = _UNIONS[kind]
    names = ", ".join(family)
    if not is_mapping(value):
        return f"{where}: a {noun} is a mapping such as {_EXAMPLES[noun]}, got {_got(value)}", None
    if tag_key in value:
        tag = str(value[tag_key])
        guess = closest(tag, list(family))
        return (
            f"{where}: unknown {noun} {tag_key} {tag!r}; "
            + (f"did you mean {guess!r}? " if guess else "")
            + f"{noun} {tag_key}s: {names}",
            tag_key,
        )
    if family is CHECKS:
        return _untyped_check(value, where, names)
    return _untyped_target(value, where)


def _untyped_check(value: dict[str, Any], where: str, names: str) -> tuple[str, str | None]:
    present = [k for k in value if k in CHECKS]
    if len(present) > 1:
        return (
            f"{where}: one check per list item, found {' and '.join(present)}; write each "
            "as its own `- ` item",
            present[1],
        )
    for key in value:
        if guess := closest(key, list(CHECKS)):
            return f"{where}: unknown check {key!r}; did you mean {guess!r}?", key
    return (
        f"{where}: a check needs `type:` or its type as key, e.g. {_EXAMPLES['check']}; "
        f"check types: {names}",
        None,
    )


def _untyped_target(value: dict[str, Any], where: str) -> tuple[str, str | None]:
    browser = [k for k in TARGETS["browser"].model_fields if k != "type"]
    if any(k in browser for k in value):  # a website chat with a key it does not have
        key = next(k for k in value if k not in browser)
        guess = closest(key, browser)
        hint = f"did you mean {guess!r}?" if guess else f"known keys: {', '.join(browser)}"
        return f"unknown key {key!r} in {where} (browser target); {hint}", key
    for key in value:
        if guess := closest(key, ["url", "ref", "base_url", "type", "chat_url", "chat_hint"]):
            return f"unknown key {key!r} in {where} (target); did you mean {guess!r}?", key
    return (
        f"{where}: a target needs `type:` (http, openai_chat, callable), or a `url:` "
        f"(http), `ref:` (callable) or `base_url:` (openai_chat), e.g. "
        f"{_EXAMPLES['target']}; with none of them it is a website chat (`chat_url:`, "
        "`chat_hint:`)",
        None,
    )
