"""pytest-agent-eval YAML transcripts, read as sparring scripted scenarios.

A transcript is recognised by its shape: a top-level `turns:` list whose turns use `expect:`,
`judge:` or `audio:` (or a top-level `runs:` / `judge:`), and no `scenarios:` or `kind:`.
Its keys are those of pytest-agent-eval's published schema (`transcript.json`); it becomes
one scripted scenario::

    id / tags                      ->  id / tags
    threshold                      ->  threshold (default 0.8, pytest-agent-eval's)
    runs                           ->  trials
    turns[n].user                  ->  turns[n].user
    turns[n].audio                 ->  turns[n].audio for a voice target; otherwise not used
    turns[n].expect                ->  turns[n].checks (text checks ignore case, as theirs):
      reply_contains_any / _all          {contains: [a, b], match: any / all}
      reply_matches_any: [p, q]          {regex: "(?|(?:p)|(?:q))", ignore_case: true}
                                         (each keeps its leading flags: `(?x:q)`)
      reply_matches_all: [p, q]          {regex: p, ignore_case: true}, {regex: q, ...}
      tool_calls_include / _exclude      {tool_called: {include, exclude, ordered}}
        tool_calls_ordered: true
      tool_calls_args: [{tool, args, mode}]   {tool_args: {tool, args, match: mode}}
      tool_calls_args: [{tool, judge}]   tool_args_judge: {tool, rubric} (scenario level: the
                                         tool's calls in the whole conversation)
      judge: {rubric, model}             turns[n].should (judged on that reply)
    turns[n].judge.rubric          ->  turns[n].should (the turn-level spelling)
    judge.rubric                   ->  criteria (judged on the whole conversation)

A rubric ("Reply must confirm the booking.") becomes the `should` "meet this rubric: Reply
must confirm the booking.". Notes (`DialectNote`, at the line) say what is not
used: a judge's `model:` (sparring judges with its `judge_model` setting), and `audio:`
when the target is not a voice target (the `user:` text is sent instead; a voice target
plays the WAV, and a missing one is a load error naming `sparring synthesize`).

`[tool.agent_eval]` in the nearest pyproject.toml gives `threshold` and `runs` to
transcripts without them (its `model`, `judge_model`, `yaml_dirs`, `live` and `groups` are
read with the settings), with a note to move them to `[tool.sparring]`; a bad value there
is a problem at its line in pyproject.toml, not in the transcript. pytest-agent-eval
takes the agent from a pytest fixture, so the target comes from the transcript's own
`target:` or from `target` in `[tool.agent_eval]` (a sparring target spec, e.g.
`{type = "callable", ref = "app:agent"}`); `sparring synthesize` needs none, and reads a
transcript without one with its `audio:` kept.
"""

from __future__ import annotations

import re
import tomllib
import warnings
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from sparring.loaders._moves import Move, moved
from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders.audio import synthesizing
from sparring.loaders.dialects._common import DialectNote, as_list
from sparring.loaders.dialects.agent_eval_expect import Reading, turn_expectations
from sparring.loaders.dialects.agent_eval_expect import rubric as judge_rubric
from sparring.loaders.errors import Problem
from sparring.scenario import ScenarioBase

TOP_KEYS = ("id", "threshold", "runs", "tags", "turns", "judge", "description", "target")
TURN_KEYS = ("user", "audio", "expect", "judge")
DEFAULT_THRESHOLD = 0.8
"""pytest-agent-eval's pass fraction for a transcript without `threshold`."""
_SETTINGS_KEYS = ("model", "judge_model", "threshold", "runs", "yaml_dirs", "live", "groups")


class AgentEvalSettingsNote(DialectNote):
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
        `judge:` without `rubric`, a `tool_calls_args` item with neither `args` nor
        `judge`, a `reply_matches_any` pattern that does not compile, no target anywhere.
    """
    data: dict[str, Any] = doc.data
    reading = Reading(doc, path)
    reading.unknown(data, (), TOP_KEYS)
    native: dict[str, Any] = {
        k: data[k] for k in ("id", "threshold", "tags", "description") if k in data
    }
    reading.moves += [((k,), (k,)) for k in native]
    settings = _settings(path)
    _defaults(native, data, settings, reading.moves)
    target = data.get("target", settings.table.get("target"))
    if target is None and not synthesizing():  # synthesis needs no target
        reading.problem((), _NO_TARGET)
    elif target is not None:
        native["target"] = target
        reading.moves.append((("target",), ("target",)))
    voice = target is None or (is_mapping(target) and target.get("type") == "voice")
    turns = as_list(data.get("turns"))
    native["turns"] = [_turn(t, ("turns", n), reading, voice=voice) for n, t in enumerate(turns)]
    criterion = judge_rubric(data, (), reading)
    if criterion is not None:
        native["criteria"] = [criterion]
        reading.moves.append((("judge", "rubric"), ("criteria", 0)))
    if reading.tool_args_judge:
        native["tool_args_judge"] = reading.tool_args_judge
    reading.problems += settings.problems
    if reading.problems:
        return doc, reading.problems
    settings.note()
    reading.emit_notes()
    return moved(doc, native, reading.moves), []


_NO_TARGET = (
    "this pytest-agent-eval transcript has no target (pytest-agent-eval takes the agent from "
    "the `llm_eval_agent` fixture); give sparring one for all transcripts in pyproject.toml, "
    'e.g. `target = {type = "callable", ref = "my_app:agent"}` under [tool.agent_eval], or '
    'add `target: {url: "http://localhost:8000/chat"}` to this file'
)
_AUDIO_NOT_USED = (
    "`audio:` is not used: the target is not a voice target (`type: voice`), so each turn's "
    "`user:` text is sent; a voice target plays the WAV (`sparring synthesize` writes "
    "missing ones)"
)


def _defaults(
    native: dict[str, Any], data: dict[str, Any], settings: _Settings, moves: list[Move]
) -> None:
    """`runs` as `trials`, then the `[tool.agent_eval]` defaults for what the file lacks,
    then pytest-agent-eval's own default threshold."""
    if "runs" in data:
        native["trials"] = data["runs"]
        moves.append((("runs",), ("trials",)))
    elif "runs" in settings.table:
        native["trials"] = settings.use("runs")
    if "threshold" not in native:
        given = "threshold" in settings.table
        native["threshold"] = settings.use("threshold") if given else DEFAULT_THRESHOLD


def _turn(turn: Any, loc: Loc, reading: Reading, *, voice: bool) -> Any:
    """One turn as a native scripted turn; its `audio:` kept for a `voice` target only."""
    if not is_mapping(turn):
        return turn  # validation says what a turn must be
    reading.unknown(turn, loc, TURN_KEYS)
    native: dict[str, Any] = {"user": turn["user"]} if "user" in turn else {}
    reading.moves.append((loc, loc))
    if "audio" in turn and voice:
        native["audio"] = turn["audio"]
    elif "audio" in turn and not any(m == _AUDIO_NOT_USED for _, m in reading.notes):
        reading.notes.append(((*loc, "audio"), _AUDIO_NOT_USED))
    native.update(turn_expectations(turn, loc, reading))
    return native


_AS_SCENARIO = {"threshold": "threshold", "runs": "trials"}
"""`[tool.agent_eval]` keys a transcript takes, and the scenario fields they become."""


class _Settings:
    """`[tool.agent_eval]` of the nearest pyproject.toml (`lines`: its text; `line`: the
    table's header line), whether any of it was used, and what is wrong in what was."""

    def __init__(
        self, table: dict[str, Any], pyproject: Path | None, lines: list[str], line: int
    ) -> None:
        self.table, self.pyproject, self.lines, self.line = table, pyproject, lines, line
        self.used = bool(table.keys() & {*_SETTINGS_KEYS, "target"} - {"threshold", "runs"})
        self.problems: list[Problem] = []

    def use(self, key: str) -> Any:
        """The value of `key`, checked as the scenario field it becomes (`_AS_SCENARIO`):
        a bad one is a problem at its line in pyproject.toml."""
        self.used = True
        value = self.table[key]
        try:
            ScenarioBase.model_validate({"id": "agent-eval", _AS_SCENARIO[key]: value})
        except ValidationError as e:
            message = str(e.errors(include_url=False)[0]["msg"]).removeprefix("Value error, ")
            self.problems.append(
                Problem(
                    str(self.pyproject), *self._position(key), f"[tool.agent_eval] {key}: {message}"
                )
            )
        return value

    def _position(self, key: str) -> tuple[int, int | None]:
        """Line and column of `key = ...` in the table (its header line when not found)."""
        for n in range(self.line, len(self.lines)):
            text = self.lines[n].lstrip()
            if text.startswith("["):
                break
            if re.match(rf"{key}\s*=", text):
                return n + 1, len(self.lines[n]) - len(text) + 1
        return self.line, None

    def note(self) -> None:
        """Warn once per pyproject.toml that `[tool.agent_eval]` settings were used."""
        if not (self.used and self.pyproject):
            return
        keys = ", ".join(k for k in _SETTINGS_KEYS if k in self.table)
        warnings.warn_explicit(
            f"[tool.agent_eval] settings are used ({keys or 'target'}); in sparring, `model`, "
            "`judge_model`, `yaml_dirs`, `live` and `groups` (`pytest_markers` as `markers`) "
            "belong in [tool.sparring], and `threshold` and `runs` (as `trials`) on each "
            "scenario or as `sparring run --trials N`; [tool.sparring] wins where both are set",
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
                return _Settings({}, None, [], 1)  # the settings loading says what is wrong
            table: Any = (
                cast(dict[str, Any], tool).get("agent_eval") if isinstance(tool, dict) else None
            )
            if isinstance(table, dict):
                lines = text.splitlines()
                line = next((n for n, t in enumerate(lines, 1) if "[tool.agent_eval" in t), 1)
                return _Settings(cast(dict[str, Any], table), pyproject, lines, line)
        if (directory / ".git").exists():
            break
    return _Settings({}, None, [], 1)
