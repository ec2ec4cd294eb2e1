"""pytest-agent-eval YAML transcripts, read as sparring scripted scenarios.

A transcript is recognised by its shape: a top-level `turns:` list whose turns use `expect:`,
`judge:` or `audio:` (or a top-level `runs:` / `judge:`), and no `scenarios:` or `kind:`.
It becomes one scripted scenario::

    id: booking                    ->  id: booking
    runs: 3                        ->  trials: 3
    threshold / tags               ->  the same
    turns[n].user / .audio         ->  turns[n].user / .audio (a WAV for a voice target)
    turns[n].expect                ->  turns[n].checks:
      reply_contains_any: [a, b]         {contains: [a, b]}            (any of them)
      reply_matches_all: [p, q]          {regex: p}, {regex: q}        (all of them)
      tool_calls_include / _exclude      {tool_called: {include, exclude, ordered}}
      ordered: true
      tool_call_args: {tool, args}       {tool_args: {tool, args, match}}
    turns[n].judge.rubric          ->  turns[n].should (judged on that reply)
    judge.rubric                   ->  criteria (judged on the whole conversation)

`[tool.agent_eval]` in the nearest pyproject.toml gives `threshold` and `runs` to
transcripts without them (its `model` and `yaml_dirs` are read with the settings), with a
note to move them to `[tool.sparring]`. pytest-agent-eval takes the agent from a pytest
fixture, so the target comes from the transcript's own `target:` or from `target` in
`[tool.agent_eval]` (a sparring target spec, e.g. `{type = "callable", ref = "app:agent"}`).
A turn's `audio:` is kept: a voice target (`type: voice`) plays it instead of the text.
"""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path
from typing import Any, cast

from sparring.loaders._moves import Move, moved
from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders.dialects._common import as_list, unknown_keys
from sparring.loaders.errors import Problem

DIALECT = "a pytest-agent-eval transcript"
TOP_KEYS = ("id", "threshold", "runs", "tags", "turns", "judge", "description", "target")
TURN_KEYS = ("user", "audio", "expect", "judge")
EXPECT_KEYS = (
    "reply_contains_any",
    "reply_matches_all",
    "tool_calls_include",
    "tool_calls_exclude",
    "ordered",
    "tool_call_args",
)
_TOOL_CALLED = ("tool_calls_include", "tool_calls_exclude", "ordered")


class AgentEvalSettingsNote(UserWarning):
    """`[tool.agent_eval]` settings were used; the note says where they go in sparring."""


def recognises(data: dict[str, Any]) -> bool:
    """Whether a top-level mapping is a pytest-agent-eval transcript (see the module doc)."""
    if "scenarios" in data or "kind" in data or not isinstance(data.get("turns"), list):
        return False
    turns = cast(list[Any], data["turns"])
    marked = any(is_mapping(t) and t.keys() & {"expect", "judge", "audio"} for t in turns)
    return marked or "runs" in data or is_mapping(data.get("judge"))


def to_native(doc: Document, *, path: str) -> tuple[Document, list[Problem]]:
    """The transcript in `doc` as one native scripted scenario (positions kept).

    Returns:
        The native document, or the problems: unknown keys (with did-you-mean), a
        `judge:` without `rubric`, no target anywhere.
    """
    data: dict[str, Any] = doc.data
    problems = unknown_keys(data, (), TOP_KEYS, doc=doc, path=path, dialect=DIALECT)
    native: dict[str, Any] = {
        k: data[k] for k in ("id", "threshold", "tags", "description") if k in data
    }
    moves: list[Move] = [((k,), (k,)) for k in native]
    settings = _settings(path)
    _defaults(native, data, settings, moves)
    target = data.get("target", settings.table.get("target"))
    if target is None:
        problems.append(Problem(path, *doc.position(()), _NO_TARGET))
    else:
        native["target"] = target
        moves.append((("target",), ("target",)))
    turns: list[Any] = []
    for n, turn in enumerate(as_list(data.get("turns"))):
        native_turn, trouble = _turn(turn, ("turns", n), doc=doc, path=path, moves=moves)
        turns.append(native_turn)
        problems += trouble
    native["turns"] = turns
    rubric, trouble = _rubric(data, (), doc=doc, path=path)
    problems += trouble
    if rubric is not None:
        native["criteria"] = [rubric]
        moves.append((("judge", "rubric"), ("criteria", 0)))
    if problems:
        return doc, problems
    settings.note()
    return moved(doc, native, moves), []


_NO_TARGET = (
    "this pytest-agent-eval transcript has no target (pytest-agent-eval takes the agent from "
    "the `llm_eval_agent` fixture); give sparring one for all transcripts in pyproject.toml, "
    'e.g. `target = {type = "callable", ref = "my_app:agent"}` under [tool.agent_eval], or '
    'add `target: {url: "http://localhost:8000/chat"}` to this file'
)


def _defaults(
    native: dict[str, Any], data: dict[str, Any], settings: _Settings, moves: list[Move]
) -> None:
    """`runs` as `trials`, then the `[tool.agent_eval]` defaults for what the file lacks."""
    if "runs" in data:
        native["trials"] = data["runs"]
        moves.append((("runs",), ("trials",)))
    elif "runs" in settings.table:
        native["trials"] = settings.use("runs")
    if "threshold" not in native and "threshold" in settings.table:
        native["threshold"] = settings.use("threshold")


def _turn(
    turn: Any, loc: Loc, *, doc: Document, path: str, moves: list[Move]
) -> tuple[Any, list[Problem]]:
    if not is_mapping(turn):
        return turn, []  # validation says what a turn must be
    problems = unknown_keys(turn, loc, TURN_KEYS, doc=doc, path=path, dialect=DIALECT)
    native: dict[str, Any] = {k: turn[k] for k in ("user", "audio") if k in turn}
    moves.append((loc, loc))
    expect = turn.get("expect")
    problems += unknown_keys(
        expect, (*loc, "expect"), EXPECT_KEYS, doc=doc, path=path, dialect=DIALECT
    )
    if is_mapping(expect):
        native["checks"] = _checks(expect, loc, moves)
    rubric, trouble = _rubric(turn, loc, doc=doc, path=path)
    problems += trouble
    if rubric is not None:
        native["should"] = [rubric]
        moves.append(((*loc, "judge", "rubric"), (*loc, "should", 0)))
    return native, problems


def _checks(expect: dict[str, Any], loc: Loc, moves: list[Move]) -> list[dict[str, Any]]:
    """The sparring checks of one `expect:` mapping, each placed at the key it came from."""
    checks: list[tuple[str, dict[str, Any]]] = []
    if "reply_contains_any" in expect:
        value = expect["reply_contains_any"]
        checks.append(("reply_contains_any", {"type": "contains", "value": value, "match": "any"}))
    for pattern in as_list(expect.get("reply_matches_all")):
        checks.append(("reply_matches_all", {"type": "regex", "pattern": pattern}))
    if expect.keys() & set(_TOOL_CALLED):
        called: dict[str, Any] = {"type": "tool_called"}
        for key, field in zip(_TOOL_CALLED, ("include", "exclude", "ordered"), strict=True):
            if key in expect:
                called[field] = as_list(expect[key]) if field != "ordered" else expect[key]
        first = next(k for k in _TOOL_CALLED if k in expect)
        checks.append((first, called))
    for args in as_list(expect.get("tool_call_args")):
        body = dict(args) if is_mapping(args) else {"tool": args}
        checks.append(("tool_call_args", {"type": "tool_args", **body}))
    for k, (key, _) in enumerate(checks):
        moves.append(((*loc, "expect", key), (*loc, "checks", k)))
    moves.append(((*loc, "expect"), (*loc, "checks")))
    return [check for _, check in checks]


def _rubric(
    owner: dict[str, Any], loc: Loc, *, doc: Document, path: str
) -> tuple[Any, list[Problem]]:
    """`owner["judge"]["rubric"]`, or None when there is no `judge:`."""
    judge = owner.get("judge")
    if judge is None:
        return None, []
    if not is_mapping(judge) or "rubric" not in judge:
        return None, [
            Problem(
                path,
                *doc.position((*loc, "judge")),
                '`judge:` needs a `rubric:`, e.g. `judge: {rubric: "Confirms the booking."}`',
            )
        ]
    extra = unknown_keys(judge, (*loc, "judge"), ("rubric",), doc=doc, path=path, dialect=DIALECT)
    return judge["rubric"], extra


class _Settings:
    """`[tool.agent_eval]` of the nearest pyproject.toml, and whether any of it was used."""

    def __init__(self, table: dict[str, Any], pyproject: Path | None, line: int) -> None:
        self.table, self.pyproject, self.line = table, pyproject, line
        self.used = bool(table.keys() & {"model", "yaml_dirs", "target"})

    def use(self, key: str) -> Any:
        self.used = True
        return self.table[key]

    def note(self) -> None:
        """Warn once per pyproject.toml that `[tool.agent_eval]` settings were used."""
        if not (self.used and self.pyproject):
            return
        keys = ", ".join(k for k in ("model", "threshold", "runs", "yaml_dirs") if k in self.table)
        warnings.warn_explicit(
            f"[tool.agent_eval] settings are used ({keys or 'target'}); in sparring, `model` and "
            "`yaml_dirs` belong in [tool.sparring], and `threshold` and `runs` (as `trials`) "
            "on each scenario or as `sparring run --trials N`; [tool.sparring] wins where "
            "both are set",
            AgentEvalSettingsNote,
            str(self.pyproject),
            self.line,
            registry=_NOTED,
        )


_NOTED: dict[Any, Any] = {}


def _settings(test_file: str) -> _Settings:
    """`[tool.agent_eval]` of the pyproject.toml nearest `test_file`, up to the project root."""
    start = Path(test_file).parent.resolve() if test_file != "<text>" else Path.cwd()
    for directory in (start, *start.parents):
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                text = pyproject.read_text(encoding="utf-8")
                tool: Any = tomllib.loads(text).get("tool", {})
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return _Settings({}, None, 1)  # sparring's settings loading says what is wrong
            table: Any = (
                cast(dict[str, Any], tool).get("agent_eval") if isinstance(tool, dict) else None
            )
            if isinstance(table, dict):
                line = next(
                    (n for n, t in enumerate(text.splitlines(), 1) if "[tool.agent_eval" in t), 1
                )
                return _Settings(cast(dict[str, Any], table), pyproject, line)
        if (directory / ".git").exists():
            break
    return _Settings({}, None, 1)
