"""Labelled cases for `sparring calibrate`: a JSONL file, one case per line.

```json
{"id": "refund-1", "criterion": "The assistant offers a refund", "label": "met",
 "transcript": [{"role": "user", "content": "My order is late"},
                {"role": "assistant", "content": "Sorry! I can refund it."}]}
```

Keys: `transcript` (messages with `role` `user` or `agent` / `assistant`, `content`, and on
agent messages optional `tool_calls: [{name, arguments, result}]`), one of `criterion` (a
success criterion), `restriction` (what the agent must not do: `met` when it did not) and
`should` (a condition on one reply, with `turn`, default the last reply),
`label` (`met` / `not_met`), and optional `id` (default `line-N`), `criterion_id` (groups
cases into one confusion table; default the criterion's text), `description` (shown to the
judge as what is being tested) and `source` / `notes` (kept for people, not shown).
Every problem is reported at its line, all at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import ValidationError

from sparring.errors import UserError
from sparring.judging.calibration import CaseKind, Label, LabelledCase, as_label
from sparring.loaders._places import closest
from sparring.loaders.errors import Problem, config_error
from sparring.transcript import Message, ToolCall, Transcript

KEYS = (
    "id",
    "transcript",
    "criterion",
    "restriction",
    "should",
    "turn",
    "label",
    "criterion_id",
    "description",
    "source",
    "notes",
)
_ROLES: dict[str, Literal["user", "agent"]] = {
    "user": "user",
    "agent": "agent",
    "assistant": "agent",
}
_CRITERION_CHARS = 500
"""A criterion holds at most this many characters, as in a test file."""
_EXAMPLE = (
    '{"criterion": "The assistant offers a refund", "label": "met", "transcript": '
    '[{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]}'
)


class _Bad(Exception):
    """One problem with a case; the message says what and how to fix it."""


def read_labels(path: str | Path) -> list[LabelledCase]:
    """Every case of the JSONL file `path` (blank lines skipped).

    Raises:
        UserError: the file cannot be read.
        ConfigError: a line is not a valid case, or two cases share an id; every problem
            as `path:line: what; how to fix`.
    """
    shown = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is fine
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the labels file {shown!r}: {e}") from None
    cases: list[LabelledCase] = []
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = _case(line, number=number, path=shown)
        except _Bad as e:
            problems.append(Problem(shown, number, None, str(e)))
            continue
        if case.id in first:
            problems.append(
                Problem(
                    shown,
                    number,
                    None,
                    f"case id {case.id!r} is also used on line {first[case.id]}: rename one",
                )
            )
        first.setdefault(case.id, number)
        cases.append(case)
    if not cases and not problems:
        problems.append(
            Problem(shown, None, None, f"no cases; write one JSON object per line, e.g. {_EXAMPLE}")
        )
    if problems:
        raise config_error(problems)
    return cases


def _case(line: str, *, number: int, path: str) -> LabelledCase:
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as e:
        raise _Bad(
            f"not JSON ({e.msg} at column {e.colno}); write one JSON object per line"
        ) from None
    if not isinstance(data, dict):
        raise _Bad(f"expected a JSON object, e.g. {_EXAMPLE}")
    raw = cast(dict[str, Any], data)
    for key in raw:
        if key not in KEYS:
            guess = closest(key, KEYS)
            hint = f"did you mean {guess!r}?" if guess else f"keys: {', '.join(KEYS)}"
            raise _Bad(f"unknown key {key!r}; {hint}")
    kind, text = _item(raw)
    transcript = _transcript(raw.get("transcript"))
    return LabelledCase(
        id=_text(raw, "id") or f"line-{number}",
        transcript=transcript,
        kind=kind,
        text=text,
        label=_label(raw.get("label")),
        criterion_id=_text(raw, "criterion_id") or (f"should {text}" if kind == "should" else text),
        turn=_turn(raw.get("turn"), transcript) if kind == "should" else None,
        description=_text(raw, "description"),
        source=f"{path}:{number}",
    )


def _text(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise _Bad(f"`{key}` must be text, got {json.dumps(value)[:60]}")
    return value or None


_KINDS: tuple[CaseKind, ...] = ("criterion", "restriction", "should")


def _item(raw: dict[str, Any]) -> tuple[CaseKind, str]:
    """What the case judges (`criterion`, `restriction` or `should`) and its text."""
    given: list[CaseKind] = [k for k in _KINDS if k in raw.keys()]
    if len(given) != 1:
        raise _Bad(
            "give exactly one of `criterion`, `restriction` (about the whole conversation) "
            "and `should` (about one reply)" + (", not several" if given else "")
        )
    key = given[0]
    text = _text(raw, key)
    if text is None or not text.strip():
        raise _Bad(f"`{key}` is empty; write what the judge decides")
    if key != "should" and len(text) > _CRITERION_CHARS:
        raise _Bad(
            f"`{key}` has {len(text)} characters, more than a test's criterion may "
            f"({_CRITERION_CHARS}); move the background to `description`"
        )
    if key != "should" and "turn" in raw:
        raise _Bad("`turn` belongs to a `should` (the reply it is about)")
    return key, text


def _label(value: Any) -> Label:
    label = as_label(value)
    if label is not None:
        return label
    raise _Bad(f'`label` must be "met" or "not_met", got {json.dumps(value)[:60]}')


def _transcript(value: Any) -> Transcript:
    if not isinstance(value, list) or not value:
        raise _Bad('`transcript` must be a list of messages {"role": ..., "content": ...}')
    messages = [_message(m, k) for k, m in enumerate(cast(list[Any], value))]
    if not any(m.role == "user" for m in messages) or not any(m.role == "agent" for m in messages):
        raise _Bad("`transcript` needs at least one user message and one agent message")
    return Transcript(messages=tuple(messages))


def _message(value: Any, k: int) -> Message:
    where = f"transcript[{k}]"
    if not isinstance(value, dict):
        raise _Bad(f'{where} must be an object {{"role": ..., "content": ...}}')
    raw = cast(dict[str, Any], value)
    role = _ROLES.get(str(raw.get("role")))
    if role is None:
        raise _Bad(
            f"{where}: `role` must be user, agent or assistant, got {json.dumps(raw.get('role'))}"
        )
    content = raw.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _Bad(f"{where}: `content` must be text")
    unknown = sorted(set(raw) - {"role", "content", "tool_calls"})
    if unknown:
        raise _Bad(f"{where}: unknown key {unknown[0]!r}; a message has role, content, tool_calls")
    given: Any = raw.get("tool_calls") or []
    if not isinstance(given, list):
        raise _Bad(f"{where}: `tool_calls` must be a list")
    calls = cast(list[Any], given)
    if calls and role != "agent":
        raise _Bad(f"{where}: only agent messages have `tool_calls`")
    try:
        return Message(role=role, content=content, tool_calls=tuple(_call(c, where) for c in calls))
    except ValidationError as e:
        raise _Bad(f"{where}: {e.errors()[0]['msg']}") from None


def _call(value: Any, where: str) -> ToolCall:
    if not isinstance(value, dict) or not isinstance(cast(dict[str, Any], value).get("name"), str):
        raise _Bad(
            f'{where}.tool_calls: each is {{"name": ..., "arguments": {{...}}, "result": ...}}'
        )
    raw = cast(dict[str, Any], value)
    return ToolCall.from_arguments(raw["name"], raw.get("arguments"), result=raw.get("result"))


def _turn(value: Any, transcript: Transcript) -> int:
    """The `should`'s turn: as given (1 to the number of user messages), else the turn of
    the last agent reply."""
    count = transcript.user_turns
    if value is None:
        turn = 0
        last = 0
        for message in transcript.messages:
            turn += message.role == "user"
            last = turn if message.role == "agent" else last
        return max(last, 1)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= count:
        raise _Bad(
            f"`turn` must be a whole number from 1 to {count} (the user messages), got "
            f"{json.dumps(value)}"
        )
    return value
