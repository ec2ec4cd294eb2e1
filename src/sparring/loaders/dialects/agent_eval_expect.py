"""A pytest-agent-eval turn's `expect:` and `judge:` as sparring checks, `should`s and
`tool_args_judge` rubrics (the mapping is in `sparring.loaders.dialects.agent_eval`).

Empty lists check nothing, as in pytest-agent-eval (`tool_calls_include: []`,
`reply_contains_any: []`); so does `tool_calls_ordered` without `tool_calls_include`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sparring.loaders._moves import Move
from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders.dialects._common import as_list, note, unknown_keys
from sparring.loaders.errors import Problem

DIALECT = "a pytest-agent-eval transcript"
EXPECT_KEYS = (
    "reply_contains_any",
    "reply_contains_all",
    "reply_matches_any",
    "reply_matches_all",
    "tool_calls_include",
    "tool_calls_exclude",
    "tool_calls_ordered",
    "tool_calls_args",
    "judge",
)
TOOL_ARGS_KEYS = ("tool", "args", "mode", "judge")
JUDGE_KEYS = ("rubric", "model")
_TOOL_CALLED = (
    ("tool_calls_include", "include"),
    ("tool_calls_exclude", "exclude"),
    ("tool_calls_ordered", "ordered"),
)
_Placed = tuple[dict[str, Any], list[tuple[Loc, Loc]]]
"""A check, and where its parts were written: `(source location, location in the check)`."""


@dataclass
class Reading:
    """One transcript being read: where each part went, what is wrong, what to note."""

    doc: Document
    path: str
    moves: list[Move] = field(default_factory=list[Move])
    problems: list[Problem] = field(default_factory=list[Problem])
    notes: list[tuple[Loc, str]] = field(default_factory=list[tuple[Loc, str]])
    tool_args_judge: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def unknown(self, mapping: Any, loc: Loc, known: tuple[str, ...]) -> None:
        """A problem for each key of `mapping` (at `loc`) not in `known`, with did-you-mean."""
        self.problems += unknown_keys(
            mapping, loc, known, doc=self.doc, path=self.path, dialect=DIALECT
        )

    def problem(self, loc: Loc, message: str) -> None:
        """A problem at the line of `loc`."""
        self.problems.append(Problem(self.path, *self.doc.position(loc), message))

    def emit_notes(self) -> None:
        """Warn (`DialectNote`) each note, at its line."""
        for loc, message in self.notes:
            note(message, path=self.path, line=self.doc.position(loc)[0])


def turn_expectations(turn: dict[str, Any], loc: Loc, reading: Reading) -> dict[str, Any]:
    """The `checks` and `should` of the turn at `loc`, from its `expect:` (and the `judge:`
    written on the turn itself); `judge` items of `tool_calls_args` go to
    `reading.tool_args_judge`."""
    out: dict[str, Any] = {}
    expect, at = turn.get("expect"), (*loc, "expect")
    reading.unknown(expect, at, EXPECT_KEYS)
    if is_mapping(expect):
        placed = [*_reply_checks(expect, at, reading), *_tool_called(expect, at)]
        placed += _tool_args(expect, at, reading)
        out["checks"] = [check for check, _ in placed]
        reading.moves.append((at, (*loc, "checks")))
        for k, (_, places) in enumerate(placed):
            reading.moves += [(old, (*loc, "checks", k, *sub)) for old, sub in places]
    elif expect is not None:
        reading.problem(at, "`expect:` must be a mapping, e.g. `expect: {tool_calls_include: [x]}`")
    shoulds: list[Any] = []
    for owner, where in ((expect, at), (turn, loc)):
        text = rubric(owner, where, reading) if is_mapping(owner) else None
        if text is not None:
            reading.moves.append(((*where, "judge", "rubric"), (*loc, "should", len(shoulds))))
            shoulds.append(as_should(text))
    if shoulds:
        out["should"] = shoulds
    return out


def as_should(rubric: Any) -> Any:
    """A rubric as a `should` (which completes "The message should ..."): `meet this
    rubric: <rubric>`, since rubrics are written as statements ("Reply must confirm ...")."""
    if not isinstance(rubric, str):
        return rubric  # validation says what a `should` must be
    return f"meet this rubric: {rubric.strip()}"


def rubric(owner: dict[str, Any], loc: Loc, reading: Reading) -> Any:
    """`owner["judge"]["rubric"]`, or None when there is no `judge:` (or it has no rubric:
    a problem). A `model:` is noted: sparring judges with its own judge model setting."""
    judge = owner.get("judge")
    if judge is None:
        return None
    where = (*loc, "judge")
    if not is_mapping(judge) or "rubric" not in judge:
        reading.problem(where, '`judge:` needs a `rubric:`, e.g. `judge: {rubric: "Confirms it."}`')
        return None
    reading.unknown(judge, where, JUDGE_KEYS)
    if "model" in judge:
        reading.notes.append(
            (
                (*where, "model"),
                f"judge model {judge['model']!r} is not used: sparring judges every rubric "
                "with one model, `judge_model` (else `model`) in [tool.sparring]",
            )
        )
    return judge["rubric"]


def _reply_checks(expect: dict[str, Any], at: Loc, reading: Reading) -> list[_Placed]:
    """`reply_contains_*` and `reply_matches_*`: case-insensitive, as pytest-agent-eval's."""
    out: list[_Placed] = []
    for key, match in (("reply_contains_any", "any"), ("reply_contains_all", "all")):
        value = expect.get(key)
        if value is not None and value != []:
            out.append(({"type": "contains", "value": value, "match": match}, [((*at, key), ())]))
    patterns = as_list(expect.get("reply_matches_any"))
    if patterns:
        pattern = _any_of(patterns, (*at, "reply_matches_any"), reading)
        check = {"type": "regex", "pattern": pattern, "ignore_case": True}
        out.append((check, [((*at, "reply_matches_any"), ())]))
    for k, pattern in enumerate(as_list(expect.get("reply_matches_all"))):
        check = {"type": "regex", "pattern": pattern, "ignore_case": True}
        key = (*at, "reply_matches_all")
        out.append((check, [(key, ()), ((*key, k), ())]))
    return out


def _any_of(patterns: list[Any], loc: Loc, reading: Reading) -> Any:
    r"""One regular expression matching where any of `patterns` does: a branch reset group
    `(?|(?:p)|(?x:q\n))`, so each pattern keeps its own group numbers for backreferences
    and its own leading flags (`_scoped`). A pattern that does not compile on its own is a
    problem at its line, quoting it; patterns that compile alone but not together (global
    flags in the middle of one) are a problem quoting each."""
    if len(patterns) == 1 or not all(isinstance(p, str) for p in patterns):
        return patterns[0] if len(patterns) == 1 else patterns  # validation says what is wrong
    import regex

    broken = False
    for k, pattern in enumerate(patterns):
        try:
            regex.compile(pattern)
        except regex.error as e:
            reading.problem((*loc, k), f"invalid regular expression {pattern!r}: {e}")
            broken = True
    combined = "(?|" + "|".join(_scoped(p) for p in patterns) + ")"
    if broken:  # said above, pattern by pattern
        return combined
    try:
        regex.compile(combined)
    except regex.error as e:
        quoted = ", ".join(repr(p) for p in patterns)
        reading.problem(
            loc,
            f"the patterns {quoted} each compile but not as one that matches any of them "
            f"({e}); put inline flags such as (?x) only at the start of a pattern",
        )
    return combined


_LEADING_FLAGS = re.compile(r"\(\?([a-zA-Z0-9]+)\)")


def _scoped(pattern: str) -> str:
    r"""`pattern` as a group that keeps its leading inline flags to itself: `(?x)a #note`
    becomes `(?x:a #note\n)` (the newline ends a verbose comment before the group's `)`),
    `a|b` becomes `(?:a|b)`."""
    flags = ""
    while match := _LEADING_FLAGS.match(pattern):
        flags, pattern = flags + match.group(1), pattern[match.end() :]
    return f"(?{flags}:{pattern}{chr(10) if 'x' in flags else ''})"


def _tool_called(expect: dict[str, Any], at: Loc) -> list[_Placed]:
    """`tool_calls_include` / `_exclude` / `_ordered` as one `tool_called` check; without
    `tool_calls_ordered`, a name listed twice needs one call, as in pytest-agent-eval."""
    include = as_list(expect.get("tool_calls_include"))
    exclude = as_list(expect.get("tool_calls_exclude"))
    ordered = expect.get("tool_calls_ordered", False)
    if ordered is False:
        include = [name for i, name in enumerate(include) if name not in include[:i]]
    if not (include or exclude):
        return []
    check = {"type": "tool_called", "include": include, "exclude": exclude, "ordered": ordered}
    written = [(key, name) for key, name in _TOOL_CALLED if key in expect]
    return [(check, [((*at, written[0][0]), ()), *(((*at, k), (n,)) for k, n in written)])]


def _tool_args(expect: dict[str, Any], at: Loc, reading: Reading) -> list[_Placed]:
    """Each `tool_calls_args` item: `args` (with `mode`) as a `tool_args` check, `judge` as
    a `tool_args_judge` rubric on that tool's arguments."""
    out: list[_Placed] = []
    for i, item in enumerate(as_list(expect.get("tool_calls_args"))):
        here = (*at, "tool_calls_args", i)
        if not is_mapping(item):
            out.append(({"type": "tool_args", "tool": item}, [(here, ())]))
            continue
        reading.unknown(item, here, TOOL_ARGS_KEYS)
        if item.get("mode", "subset") not in ("subset", "exact"):
            reading.problem(
                (*here, "mode"),
                f"`mode: {item['mode']}` is not a mode: write `subset` (these arguments among "
                "those sent, the default) or `exact` (these arguments and no others)",
            )
        if "args" in item:
            check = {"type": "tool_args", "match": item.get("mode", "subset")}
            check |= {k: item[k] for k in ("tool", "args") if k in item}
            out.append((check, [(here, ()), ((*here, "mode"), ("match",))]))
        if "judge" in item:
            _tool_judge(item, here, reading)
        elif "args" not in item:
            reading.problem(
                here,
                "a `tool_calls_args` item needs `args` (the arguments to find) or `judge` (a "
                'rubric on them), e.g. `{tool: create_booking, args: {time: "10am"}}`',
            )
    return out


def _tool_judge(item: dict[str, Any], here: Loc, reading: Reading) -> None:
    text = rubric(item, here, reading)
    if text is None:
        return
    j, tool = len(reading.tool_args_judge), item.get("tool")
    entry: dict[str, Any] = {"tool": tool, "rubric": text}
    if any(e["tool"] == tool for e in reading.tool_args_judge):  # verdict ids must differ
        entry["id"] = f"tool_args.{tool}.{j + 1}"
    reading.tool_args_judge.append(entry)
    reading.moves += [
        ((*here, "judge"), ("tool_args_judge", j)),
        ((*here, "tool"), ("tool_args_judge", j, "tool")),
        ((*here, "judge", "rubric"), ("tool_args_judge", j, "rubric")),
    ]
