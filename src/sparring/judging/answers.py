"""Reading a judge's answer: verdicts only from the requested schema, failing closed.

The answer is parsed as a whole (`sparring.models.structured.parse_json_loosely`); here its
top-level object is read as the schema `judge_schema` asks for: `verdicts` keyed by item id
(a missing `verdicts` is never read as the verdict map itself), each entry exactly one
`VERDICT_SCHEMA` object: a key besides its four (say `met` or `Verdict`, which could
contradict `verdict`), a value of the wrong type, or an id the answer gives twice with
different values (anywhere in it, in any letter case) is no decision. JSON the agent wrote
is never an answer, nor its `verdicts` or `insights` map or any entry of them, however the
judge quotes it or adds to it (`DecisionReader.screen`). A `met` that
quotes nothing substantial the agent said is turned into an error by the caller
(`DecisionReader.ungrounded`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

import anyio

from sparring.models.structured import json_objects_in
from sparring.prompts import DEFAULT_LIMITS, Limits, Scrub, message_text
from sparring.results import ReplyNote
from sparring.transcript import Message, Transcript

T = TypeVar("T")
_REASON_CHARS = 1000
_EVIDENCE_CHARS = 300
_EVIDENCE_ITEMS = 5
_NOTE_CHARS = 300
_FIELDS = ("reason", "evidence", "turns", "verdict")
"""The keys of a verdict entry (`VERDICT_SCHEMA`), all required, no others."""

SUBSTANTIAL = 4
"""Letters and digits a quote needs to ground a `met` (fewer: the whole agent message)."""

ECHOED = (
    "the judge's answer repeats what the agent wrote (its JSON is in an agent message or "
    "tool call of the conversation), so it is not a verdict; give your own judgement"
)
"""Why an answer whose JSON the agent wrote is refused (`DecisionReader.screen`); the
part copied follows it."""

UNVERIFIED_QUOTE = "(not found in the transcript)"
"""Put before evidence the judge quoted that the conversation does not contain."""

EVIDENCE_SCHEMA: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
"""JSON Schema of the quotes a judge gives as evidence."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["reason", "evidence", "turns", "verdict"],
    "properties": {
        "reason": {"type": "string"},
        "evidence": EVIDENCE_SCHEMA,
        "turns": {"type": "array", "items": {"type": "integer"}},
        "verdict": {"type": "string", "enum": ["met", "not_met"]},
    },
}
"""JSON Schema of one verdict in a judge answer (read by `DecisionReader`)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One verdict as the judge gave it, read and checked (`DecisionReader`)."""

    status: Literal["met", "not_met"]
    reason: str
    evidence: tuple[str, ...]
    turns: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Valued:
    """One insight value as the judge gave it (`INSIGHT_FIELDS`), read and checked:
    `value` typed by the insight's reader (`DecisionReader.valued`)."""

    value: bool | float | str
    reason: str
    evidence: tuple[str, ...]
    turns: tuple[int, ...]


INSIGHT_FIELDS = ("reasoning", "evidence", "turns", "value")
"""The keys of an insight entry in a judge answer, all required, no others."""

TypedValue = Callable[[Any], "tuple[bool | float | str, None] | tuple[None, str]"]
"""Reads an insight's raw value: `(value, None)`, or `(None, why it is not one)`."""


@dataclass(frozen=True, slots=True)
class _AgentMessage:
    """An agent message as a judge may quote it: its `_texts`, `_normalised`, and the
    letters and digits a quote of it needs (`SUBSTANTIAL`, or all of a shorter message)."""

    turn: int
    texts: tuple[str, ...]
    need: int


class DecisionReader:
    """Reads one verdict entry of a judge answer (`VERDICT_SCHEMA`), failing closed.

    Reasons are scrubbed and cut, evidence the transcript does not contain is marked
    `UNVERIFIED_QUOTE`, and cited turns the transcript does not have are dropped.

    Args:
        transcript: The conversation the judge was shown.
        scrub: Removes secrets from the judge's text.
        limits: What the judge sees of each message (`Limits.judge_chars_per_message`):
            only that much of each agent text is searched for JSON the judge may copy.
    """

    def __init__(
        self, transcript: Transcript, *, scrub: Scrub | None, limits: Limits = DEFAULT_LIMITS
    ) -> None:
        self.scrub = scrub
        said: list[str] = []
        agent: list[_AgentMessage] = []
        turn, turns = 0, set[int]()
        for message in transcript.messages:
            turn += message.role == "user"
            turns.add(turn)
            texts = _texts(message, scrub)
            said += [_normalised(t) for t in texts]
            if message.role == "agent" and texts:
                need = min(SUBSTANTIAL, _alnum(message_text(message)))
                agent.append(_AgentMessage(turn, tuple(_normalised(t) for t in texts), need))
        self.said = "\0".join(said)
        """Every text of the conversation, `_normalised`, apart (quotes do not span two)."""
        self.valid_turns = frozenset(turns)
        self.agent = tuple(agent)
        self._agent_json = _AgentJson(transcript, scrub, limits.judge_chars_per_message)

    async def prepare(self) -> None:
        """Find the JSON the agent wrote, which `screen` compares answers with, in a worker
        thread: the search never holds up the event loop, so other trials and a deadline
        around the judge call (the conversation's timeout) go on; cancelled, the search is
        abandoned (`screen` would do it again)."""
        await anyio.to_thread.run_sync(self._agent_json.objects, abandon_on_cancel=True)

    def screen(self, source: str, value: Any) -> None:
        """`screen` for `complete_json`: refuses an answer whose JSON the agent wrote: its
        `source` text (whitespace aside) in an agent message or tool call, or `value`, its
        `verdicts` or `insights` map, or any entry of them, equal to an object written there
        (quoted, echoed, fenced or escaped) or to part of one (the same keys and values,
        others left out), whatever the judge added around it.

        Raises:
            ValueError: `ECHOED`, then which part was copied.
        """
        copied = self._agent_json.copied(source, value)
        if copied is not None:
            raise ValueError(f"{ECHOED} (copied: {copied})")

    def decision(self, raw: Any) -> Decision | str:
        """The entry as a decision, or why it cannot be one (`_entry_problem`)."""
        value = _obj(raw)
        if value is None:
            return f"its entry is {_kind(raw)}, not an object"
        problem = _entry_problem(value)
        if problem is not None:
            return problem
        status = _status(value["verdict"])
        assert status is not None  # _entry_problem checked it
        return Decision(
            status,
            self.clean(value["reason"], _REASON_CHARS) or "(the judge gave no reason)",
            self._evidence(value["evidence"]),
            self._turns(value["turns"]),
        )

    def valued(self, raw: Any, typed: TypedValue) -> Valued | str:
        """An insight entry (`INSIGHT_FIELDS`) as a `Valued`, its value read by `typed`, or
        why it cannot be one (a missing or extra key, a value of the wrong type or range)."""
        entry = _obj(raw)
        if entry is None:
            return f"its entry is {_kind(raw)}, not an object"
        problem = _fields_problem(entry, INSIGHT_FIELDS, "reasoning", "value")
        if problem is not None:
            return problem
        value, why = typed(entry["value"])
        if value is None:
            return f'its "value" {why}'
        return Valued(
            value,
            self.clean(entry["reasoning"], _REASON_CHARS) or "(the judge gave no reasoning)",
            self._evidence(entry["evidence"]),
            self._turns(entry["turns"]),
        )

    def ungrounded(
        self, decision: Decision | Valued, *, turn: int | None, what: str = '"met"'
    ) -> str | None:
        """Why a `met` (or `what` else) rests on nothing the agent said; `None` when one of
        its quotes is found in an agent message or tool call (`turn`: in the agent's reply
        at that turn) and is substantial: `SUBSTANTIAL` letters and digits, or all of a
        shorter message."""
        messages = [m for m in self.agent if turn is None or m.turn == turn]
        for quote in decision.evidence:
            core = _core(quote)
            if any(_alnum(core) >= m.need and any(core in t for t in m.texts) for m in messages):
                return None
        where = (
            "any agent message or tool call"
            if turn is None
            else f"the agent's reply at turn {turn} or its tool calls"
        )
        return (
            f"the judge cited nothing from {where} (a quote needs {SUBSTANTIAL} or more "
            f"letters or digits, or all of a shorter reply), so its {what} does not count "
            f"(its reason: {decision.reason})"
        )

    def _evidence(self, quotes: list[str]) -> tuple[str, ...]:
        cleaned = [self.clean(q, _EVIDENCE_CHARS) for q in quotes]
        return tuple(
            q if _found(q, self.said) else f"{UNVERIFIED_QUOTE} {q}" for q in cleaned if q
        )[:_EVIDENCE_ITEMS]

    def _turns(self, turns: list[int]) -> tuple[int, ...]:
        return tuple(sorted({t for t in turns if t in self.valid_turns}))

    def clean(self, text: str, limit: int) -> str:
        """`text` stripped, scrubbed, and cut to `limit` characters (with `…`)."""
        text = text.strip()
        text = self.scrub(text) if self.scrub is not None else text
        return text if len(text) <= limit else text[:limit] + "…"


def _texts(message: Message, scrub: Scrub | None) -> list[str]:
    """A message's text as the transcript has it and as the judge was shown it (tool calls
    included, secrets scrubbed); nothing for a message without content or tool calls, so
    the judge's placeholder "(empty reply)" is never evidence."""
    if not message.content.strip() and not message.tool_calls:
        return []
    texts = [message.content, message_text(message)]
    texts += [c.arguments_raw for c in message.tool_calls]
    return texts + ([message_text(message, scrub=scrub)] if scrub is not None else [])


def _found(quote: str, said: str) -> bool:
    """Whether `quote` (without its quotation marks) occurs in `said` (`_normalised`)."""
    core = _core(quote)
    return any(c.isalnum() for c in core) and core in said


def _core(quote: str) -> str:
    """`quote` without its quotation marks, `_normalised`; `""` for a quote marked
    `UNVERIFIED_QUOTE`."""
    if quote.startswith(UNVERIFIED_QUOTE):
        return ""
    return _normalised(quote.strip("\"'“”‘’. …"))


def _alnum(text: str) -> int:
    """How many letters and digits `text` has."""
    return sum(c.isalnum() for c in text)


class _AgentJson:
    """What the agent wrote, as far as the judge sees it (each text cut to `chars`), to tell
    an answer or part of one copied from it (`DecisionReader.screen`). The cut bounds the
    search: at most `chars` characters per text, each scanned a bounded number of times
    (`json_objects_in`), however long the agent's reply."""

    def __init__(self, transcript: Transcript, scrub: Scrub | None, chars: int) -> None:
        agent = [m for m in transcript.messages if m.role == "agent"]
        self.texts = list(dict.fromkeys(t[:chars] for m in agent for t in _texts(m, scrub)))
        self.compact = "\0".join("".join(t.split()) for t in self.texts)
        self._objects: list[dict[str, Any]] | None = None

    def copied(self, source: str, value: Any) -> str | None:
        """Which part of the answer the agent wrote: `source` (whitespace aside) in its text,
        or a part of `value` (`_parts`) equal to an object in it, or to one with keys left
        out (`_within`); `None` when none is."""
        if "".join(source.split()) in self.compact:
            return "the whole answer"
        objects = self.objects()
        for where, part in _parts(value):
            if any(_within(part, o) for o in objects):
                return where
        return None

    def objects(self) -> list[dict[str, Any]]:
        """Every JSON object in the texts (`json_objects_in`), found once."""
        if self._objects is None:
            self._objects = [o for t in self.texts if "{" in t for o in json_objects_in(t)]
        return self._objects


def _parts(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """The parts of an answer a verdict or insight value comes from, each with where it is:
    the answer, its `verdicts` and `insights` maps, and every entry of them."""
    answer = _obj(value)
    if answer is None:
        return []
    parts = [("the whole answer", answer)]
    for name in ("verdicts", "insights"):
        section = _obj(answer.get(name))
        if section is not None:
            parts.append((f'"{name}"', section))
            parts += [
                (f'"{name}" entry {_names([key])}', entry)
                for key, raw in section.items()
                if (entry := _obj(raw)) is not None
            ]
    return parts


def _within(part: dict[str, Any], written: dict[str, Any]) -> bool:
    """Whether `part` is `written` or `written` with keys left out (an empty `part` is not:
    it holds nothing to copy)."""
    return bool(part) and all(key in written and written[key] == v for key, v in part.items())


def _normalised(text: str) -> str:
    """Lower case with runs of whitespace as one space, for finding quotes."""
    return " ".join(text.lower().split())


def _entry_problem(entry: dict[str, Any]) -> str | None:
    """Why `entry` is not one `VERDICT_SCHEMA` object: exactly its four keys, `verdict` an
    accepted spelling (`_status`), `reason` text, `evidence` a list of quotes and `turns` a
    list of integers. A key besides them (`met`, `Verdict`, `status`...) could say
    otherwise than `verdict`, so the entry is refused, not guessed at."""
    problem = _fields_problem(entry, _FIELDS, "reason", "verdict")
    if problem is None and _status(entry["verdict"]) is None:
        return f'its "verdict" is {_kind(entry["verdict"])}, not "met" or "not_met"'
    return problem


def _fields_problem(
    entry: dict[str, Any], fields: tuple[str, ...], reason: str, decision: str
) -> str | None:
    """Why `entry` does not have exactly `fields`, with `reason` text, `evidence` a list of
    quotes and `turns` a list of integers (`decision`, the key holding the judgement, is
    the caller's to read)."""
    extra = [k for k in entry if k not in fields]
    if extra:
        return (
            f"its entry has {_names(extra)} besides {', '.join(fields[:-1])} and {decision}; "
            f'say it once, in "{decision}"'
        )
    missing = [k for k in fields if k not in entry]
    if missing:
        return f"its entry has no {_names(missing)}"
    if not isinstance(entry[reason], str):
        return f'its "{reason}" is {_kind(entry[reason])}, not text'
    evidence = _arr(entry["evidence"])
    if evidence is None or not all(isinstance(q, str) for q in evidence):
        return 'its "evidence" is not a list of quotes (strings)'
    turns = _arr(entry["turns"])
    if turns is None or not all(isinstance(t, int) and not isinstance(t, bool) for t in turns):
        return 'its "turns" is not a list of turn numbers'
    return None


def _names(keys: list[str]) -> str:
    return ", ".join(json.dumps(k[:40], ensure_ascii=False) for k in keys[:5])


@dataclass(frozen=True, slots=True)
class Answer:
    """A judge answer read by `AnswerReader`."""

    decisions: dict[str, Decision]
    notes: list[ReplyNote]
    problems: dict[str, str]
    """Why the entry of an id without a decision or value could not be used (absent: no
    entry)."""
    values: dict[str, Valued] = field(default_factory=dict[str, Valued])
    """Insight values by insight id (`evaluation.insight`)."""


class AnswerReader:
    """`validate` for `complete_json`: parsed JSON -> `Answer` (schema: `judge_schema`).

    The first answer is rejected if it leaves ids out (so the one repair asks for them); the
    repaired answer (`is_repair()` true) is accepted with ids left out, which become `error`
    verdicts or insights, unless it has nothing usable at all.

    Args:
        ids: The item ids the answer must decide under `verdicts` (none: no `verdicts`).
        decisions: Reads each entry.
        reply_turns: The turns whose reply the judge notes.
        is_repair: Whether the answer being read is the repaired one.
        insights: Insight id -> how its value is typed, for the entries of `insights`
            (none: the answer has no `insights`).
    """

    def __init__(
        self,
        ids: list[str],
        *,
        decisions: DecisionReader,
        reply_turns: Sequence[int],
        is_repair: Callable[[], bool],
        insights: Mapping[str, TypedValue] | None = None,
    ) -> None:
        self.ids, self.decisions, self.reply_turns = ids, decisions, reply_turns
        self.is_repair = is_repair
        self.insights = dict(insights or {})

    def __call__(self, value: Any) -> Answer:
        """Read `value`; raises `ValueError` (saying what to fix) to ask for the repair."""
        raw = _obj(value)
        sections = ["verdicts"] * bool(self.ids) + ["insights"] * bool(self.insights)
        if raw is None:
            raise ValueError(
                f"the answer must be a JSON object with {_names([*sections, 'replies'])}"
            )
        decisions, problems = self._section(raw, "verdicts", self.ids, self._decision)
        values, value_problems = self._section(raw, "insights", list(self.insights), self._value)
        problems |= value_problems
        missing = [i for i in [*self.ids, *self.insights] if i not in decisions | values]
        if missing and (not (decisions or values) or not self.is_repair()):
            where = "insights" if all(i in self.insights for i in missing) else "verdicts"
            raise ValueError(_missing_text(missing, problems, where))
        return Answer(decisions, self._notes(raw.get("replies")), problems, values)

    def _decision(self, entry: Any, _id: str) -> Decision | str:
        return self.decisions.decision(entry)

    def _value(self, entry: Any, insight_id: str) -> Valued | str:
        return self.decisions.valued(entry, self.insights[insight_id])

    def _section(
        self,
        raw: dict[str, Any],
        name: str,
        ids: list[str],
        read: Callable[[Any, str], T | str],
    ) -> tuple[dict[str, T], dict[str, str]]:
        """The entries of `raw[name]` for `ids`, read by `read(entry, id)`, and why the
        others could not be read. `ids` empty: nothing.

        Raises:
            ValueError: `name` is missing or not an object.
        """
        if not ids:
            return {}, {}
        if name not in raw:
            keys = ", ".join(list(raw)[:8]) or "none"
            raise ValueError(
                f'the answer has no "{name}" object (its keys: {keys}): ' + _HINTS[name]
            )
        section = _obj(raw[name])
        if section is None:
            raise ValueError(f'"{name}" must be an object with one entry per id')
        twice = _given_twice(raw, section, ids)
        found: dict[str, T] = {}
        problems: dict[str, str] = {}
        for i in ids:
            got = (
                f"the answer gives {i!r} twice, with different values"
                if i in twice
                else read(section[i], i)
                if i in section
                else None
            )
            if isinstance(got, str):
                problems[i] = got
            elif got is not None:
                found[i] = got
        return found, problems

    def _notes(self, value: Any) -> list[ReplyNote]:
        notes = _obj(value) or {}
        out: list[ReplyNote] = []
        for turn in self.reply_turns:
            entry = _obj(notes.get(str(turn)))
            if entry is None:
                continue
            note = entry.get("note")
            note = self.decisions.clean(note, _NOTE_CHARS) if isinstance(note, str) else ""
            score = _score(entry.get("score"))
            if note or score is not None:
                out.append(ReplyNote(turn=turn, note=note, score=score))
        return out


_ENTRY_HINT = 'give each id an object with reason, evidence, turns and verdict ("met" or "not_met")'
_HINTS = {
    "verdicts": _ENTRY_HINT,
    "insights": "give each insight id an object with reasoning, evidence, turns and value",
}


def _given_twice(raw: dict[str, Any], section: dict[str, Any], ids: list[str]) -> set[str]:
    """The ids the answer gives a value somewhere besides `section[id]` (a key equal to the
    id in any letter case, at any depth) that differs from `section[id]`. The turn keys of
    `replies` are not ids."""
    replies = raw.get("replies")
    by_fold = {i.casefold(): i for i in ids}
    twice: set[str] = set()
    stack: list[Any] = [raw]
    while stack:
        value = stack.pop()
        stack += _arr(value) or []
        obj = _obj(value) or {}
        for key, child in obj.items():
            stack.append(child)
            i = by_fold.get(key.casefold())
            if i is None or obj is replies or (obj is section and key == i):
                continue
            if i in section and child != section[i]:
                twice.add(i)
    return twice


def _missing_text(missing: list[str], problems: dict[str, str], where: str) -> str:
    """Why the answer lacks a usable verdict or insight value for `missing` ids (first
    under `where`), for the repair or the error."""
    why = "; ".join(f"{i}: {p}" for i, p in list(problems.items())[:5])
    return (
        f'"{where}" has no valid entry for '
        + ", ".join(missing)
        + (f" ({why})" if why else "")
        + ": "
        + _HINTS[where]
    )


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value[:60], ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"the number {value}"
    return "a list" if isinstance(value, list) else "an object"


def _obj(value: Any) -> dict[str, Any] | None:
    """`value` as a JSON object, or `None` when it is not an object."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _arr(value: Any) -> list[Any] | None:
    return cast(list[Any], value) if isinstance(value, list) else None


def _status(value: Any) -> Literal["met", "not_met"] | None:
    """`met` / `not_met` in any letter case, with a space or `-` for `_`; `unmet` too."""
    if not isinstance(value, str):
        return None
    normal = value.strip().lower().replace("-", "_").replace(" ", "_")
    if normal == "met":
        return "met"
    if normal in ("not_met", "unmet"):
        return "not_met"
    return None


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= 1 else None
