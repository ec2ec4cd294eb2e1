"""Deterministic checks: decide a `Check` from a transcript, without a model.

Which agent replies a check looks at (its scope): `check.turn` when set (1-based, negative
counts from the end), else the `turn` it is attached to (a scripted step's reply), else the
whole conversation. Within the scope: `contains` needs some reply to contain a value (with
`match: all`, every value somewhere in the scope), `not_contains` needs no reply to contain
any, `regex` needs some reply to match, `equals` and `json_schema` look at the last reply,
tool checks look at every tool call, `latency_below` at every reply with a latency.
A scope with no agent reply is `not_met`.

Author patterns run on the `regex` package (syntax of Python's `re`), which can stop a search:
a `regex` check gets `REGEX_TIMEOUT_S` seconds in all, and one that needs longer (a pattern
that backtracks catastrophically on a long reply) is `error`, so it cannot freeze the run.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, assert_never, cast

import regex

from sparring.results import Verdict, VerdictStatus
from sparring.scenario import (
    Check,
    ContainsCheck,
    EqualsCheck,
    JsonSchemaCheck,
    LatencyBelowCheck,
    NotContainsCheck,
    RegexCheck,
    ToolArgsCheck,
    ToolCalledCheck,
)
from sparring.transcript import Message, ToolCall, Transcript, content_text

_QUOTE_CHARS = 160
_AROUND_CHARS = 60

REGEX_TIMEOUT_S = 2.0
"""Seconds a `regex` check may spend searching all the replies in its scope, in total."""


@dataclass(frozen=True, slots=True)
class _Scope:
    replies: list[tuple[int, Message]]
    turn: int | None
    """The single turn looked at, or `None` for the whole conversation."""
    missing: str | None
    """Why there is nothing to look at, when `replies` is empty."""

    @property
    def turns(self) -> tuple[int, ...]:
        return tuple(sorted({t for t, _ in self.replies}))


@dataclass(frozen=True, slots=True)
class _Outcome:
    met: bool
    reason: str = ""
    evidence: tuple[str, ...] = ()
    error: bool = False
    """The check itself is broken (an invalid JSON Schema): status `error`."""


def run_check(
    check: Check, transcript: Transcript, *, check_id: str, turn: int | None = None
) -> Verdict:
    """Decide `check` on `transcript`; never raises for anything the agent said.

    Args:
        check: One check spec from the scenario.
        transcript: The conversation so far (or finished).
        check_id: The verdict's id, e.g. `check1` or `t2.check1`.
        turn: 1-based turn of the reply the check is attached to (scripted steps);
            `check.turn` overrides it; `None` (and no `check.turn`) means the whole
            conversation.

    Returns:
        A `Verdict` with `kind="check"`, status `met` / `not_met` (or `error` when the check
        itself cannot be run, e.g. an invalid JSON Schema or a `$ref` that does not resolve;
        any exception a check raises becomes that `error`), `turns` the turns looked at,
        `evidence` quoting what decided it and, on failure, a `reason` saying what was
        expected and what was there.
    """
    scope = _scope(transcript, check.turn if check.turn is not None else turn)
    outcome = (
        _Outcome(False, scope.missing) if scope.missing is not None else _safe_decide(check, scope)
    )
    status: VerdictStatus = "error" if outcome.error else "met" if outcome.met else "not_met"
    return Verdict(
        id=check_id,
        kind="check",
        description=describe(check),
        status=status,
        reason=outcome.reason,
        evidence=outcome.evidence,
        turns=scope.turns,
        turn=scope.turn,
    )


def describe(check: Check) -> str:
    """A short human phrase for a check, e.g. `contains "order number"`."""
    where = f" at turn {check.turn}" if check.turn is not None else ""
    match check:
        case ContainsCheck():
            joiner = "and" if check.match == "all" else "or"
            return f"contains {_list(_values(check.value), joiner)}{where}"
        case NotContainsCheck():
            return f"does not contain {_list(_values(check.value), 'or')}{where}"
        case RegexCheck():
            return f"matches /{check.pattern}/{'i' if check.ignore_case else ''}{where}"
        case EqualsCheck():
            return f"equals {_q(check.value)}{where}"
        case JsonSchemaCheck():
            return f"is JSON matching the schema{where}"
        case ToolCalledCheck():
            return _describe_tool_called(check) + where
        case ToolArgsCheck():
            how = "exactly" if check.match == "exact" else "at least"
            return f"calls {check.tool} with {how} {content_text(check.args)}{where}"
        case LatencyBelowCheck():
            return f"replies in under {check.ms:g} ms{where}"
        case _:
            assert_never(check)


def _describe_tool_called(check: ToolCalledCheck) -> str:
    parts: list[str] = []
    if check.include:
        parts.append(f"calls {', '.join(check.include)}" + (" in order" if check.ordered else ""))
    if check.exclude:
        parts.append(f"never calls {', '.join(check.exclude)}")
    return "; ".join(parts) or "tool calls (nothing required)"


def _safe_decide(check: Check, scope: _Scope) -> _Outcome:
    """`_decide`, with any exception turned into the check's `error` outcome."""
    try:
        return _decide(check, scope)
    except Exception as e:  # noqa: BLE001 - a broken check must not stop the other checks
        return _Outcome(False, _broken_check_reason(e), error=True)


def _broken_check_reason(error: Exception) -> str:
    from referencing.exceptions import Unresolvable

    if isinstance(error, Unresolvable):
        return (
            f"the JSON Schema has a $ref that cannot be resolved: {error}; point `$ref` "
            'at a part of the schema itself, e.g. `$ref: "#/$defs/item"`'
        )
    return (
        f"the check could not be run ({type(error).__name__}: {error}); this is a "
        "mistake in the check or a bug in sparring, not the agent's fault"
    )


def _decide(check: Check, scope: _Scope) -> _Outcome:
    match check:
        case ContainsCheck():
            return _contains(check, scope)
        case NotContainsCheck():
            return _not_contains(check, scope)
        case RegexCheck():
            return _regex(check, scope)
        case EqualsCheck():
            return _equals(check, scope)
        case JsonSchemaCheck():
            return _json_schema(check, scope)
        case ToolCalledCheck():
            return _tool_called(check, scope)
        case ToolArgsCheck():
            return _tool_args(check, scope)
        case LatencyBelowCheck():
            return _latency_below(check, scope)
        case _:
            assert_never(check)


# --- scope -------------------------------------------------------------------------------


def _scope(transcript: Transcript, turn: int | None) -> _Scope:
    replies = transcript.agent_replies()
    if turn is None:
        missing = None if replies else "the agent never replied in this conversation"
        return _Scope(replies=replies, turn=None, missing=missing)
    resolved = transcript.user_turns + 1 + turn if turn < 0 else turn
    in_turn = [(t, m) for t, m in replies if t == resolved]
    if in_turn:
        return _Scope(replies=in_turn, turn=resolved, missing=None)
    if resolved < 0 or (resolved == 0 and turn != 0):
        why = f"turn {turn} does not exist: the conversation has {transcript.user_turns} turns"
    elif resolved > transcript.user_turns:
        why = (
            f"the agent never replied at turn {resolved}: the conversation has "
            f"{transcript.user_turns} turns"
        )
    else:
        why = f"the agent never replied at turn {resolved}"
    return _Scope(replies=[], turn=resolved, missing=why)


def _where(scope: _Scope) -> str:
    if scope.turn is not None:
        return f"turn {scope.turn}"
    turns = scope.turns
    return f"turn {turns[0]}" if len(turns) == 1 else f"turns {turns[0]}-{turns[-1]}"


def _last_said(scope: _Scope) -> str:
    turn, message = scope.replies[-1]
    return f"turn {turn} said: {_q(_clip(message.content))}"


# --- text checks -------------------------------------------------------------------------


def _find(text: str, value: str, *, case_sensitive: bool) -> int:
    """Index of `value` in `text`, or -1; case-insensitive search keeps indexes exact."""
    if case_sensitive:
        return text.find(value)
    if text.isascii() and value.isascii():
        return text.lower().find(value.lower())
    match = _compiled(regex.escape(value), True).search(text)
    return match.start() if match else -1


def _first_hit(scope: _Scope, value: str, *, case_sensitive: bool) -> str | None:
    """Evidence for the first reply in scope containing `value`, or `None`."""
    for turn, message in scope.replies:
        at = _find(message.content, value, case_sensitive=case_sensitive)
        if at >= 0:
            return f"turn {turn}: {_q(_around(message.content, at, at + len(value)))}"
    return None


def _contains(check: ContainsCheck, scope: _Scope) -> _Outcome:
    values = _values(check.value)
    hits = {v: _first_hit(scope, v, case_sensitive=check.case_sensitive) for v in values}
    found = [h for h in hits.values() if h is not None]
    missing = [v for v, h in hits.items() if h is None]
    met = not missing if check.match == "all" else bool(found)
    if met:
        return _Outcome(True, evidence=tuple(found))
    wanted = _list(
        missing if check.match == "all" else values, "and" if check.match == "all" else "or"
    )
    return _Outcome(
        False, reason=f"expected {_where(scope)} to contain {wanted}; {_last_said(scope)}"
    )


def _not_contains(check: NotContainsCheck, scope: _Scope) -> _Outcome:
    hits = [
        (v, h)
        for v in _values(check.value)
        if (h := _first_hit(scope, v, case_sensitive=check.case_sensitive)) is not None
    ]
    if not hits:
        return _Outcome(True)
    value, hit = hits[0]
    return _Outcome(
        False,
        reason=f"expected no reply to contain {_q(value)}, but {hit}",
        evidence=tuple(h for _, h in hits),
    )


@lru_cache(maxsize=256)
def _compiled(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)


def _regex(check: RegexCheck, scope: _Scope) -> _Outcome:
    compiled = _compiled(check.pattern, check.ignore_case)
    deadline = time.monotonic() + REGEX_TIMEOUT_S
    for turn, message in scope.replies:
        try:
            match = compiled.search(
                message.content, timeout=max(deadline - time.monotonic(), 0.001)
            )
        except TimeoutError:
            return _Outcome(
                False,
                error=True,
                reason=(
                    f"the pattern /{check.pattern}/ took over {REGEX_TIMEOUT_S:g} s and was "
                    f"stopped "
                    f"on the {len(message.content):,}-character reply at turn {turn}; it "
                    "backtracks too much: anchor it (e.g. `^...`) and avoid nested quantifiers "
                    "such as `(x+)+`"
                ),
            )
        if match:
            excerpt = _around(message.content, match.start(), match.end())
            return _Outcome(True, evidence=(f"turn {turn}: {_q(excerpt)}",))
    return _Outcome(
        False, reason=f"expected {_where(scope)} to match /{check.pattern}/; {_last_said(scope)}"
    )


def _equals(check: EqualsCheck, scope: _Scope) -> _Outcome:
    turn, message = scope.replies[-1]
    actual, expected = message.content.strip(), check.value.strip()
    same = actual == expected if check.case_sensitive else actual.casefold() == expected.casefold()
    if same:
        return _Outcome(True, evidence=(f"turn {turn}: {_q(_clip(actual))}",))
    return _Outcome(
        False,
        reason=f"expected the reply to equal {_q(_clip(expected))}; "
        f"turn {turn} said: {_q(_clip(actual))}",
    )


# --- JSON Schema -------------------------------------------------------------------------


class _SchemaError(Exception):
    """The check's schema is not a valid JSON Schema (a test-file mistake)."""


@lru_cache(maxsize=128)
def _validator(schema_json: str) -> Any:
    from jsonschema import exceptions, validators

    schema = json.loads(schema_json)
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as e:
        raise _SchemaError(
            f"the check's JSON Schema is invalid: {e.message}; fix `schema` in the test file"
        ) from None
    return cls(schema)


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) > 6:
        body = stripped[3:-3]
        first_line, _, rest = body.partition("\n")
        return rest if first_line.strip().isalpha() or not first_line.strip() else body
    return stripped


def _json_schema(check: JsonSchemaCheck, scope: _Scope) -> _Outcome:
    try:
        validator = _validator(json.dumps(check.schema_, sort_keys=True))
    except _SchemaError as e:
        return _Outcome(False, str(e), error=True)
    turn, message = scope.replies[-1]
    try:
        value = json.loads(_strip_fence(message.content))
    except ValueError as e:
        return _Outcome(
            False,
            reason=f"expected turn {turn} to be JSON, but it does not parse "
            f"({e}); it said: {_q(_clip(message.content))}",
        )
    errors = sorted(validator.iter_errors(value), key=lambda err: list(err.absolute_path))
    if not errors:
        return _Outcome(True, evidence=(f"turn {turn}: {_q(_clip(content_text(value)))}",))
    first = errors[0]
    path = "/".join(str(p) for p in first.absolute_path) or "(root)"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return _Outcome(
        False,
        reason=f"turn {turn} is JSON but does not match the schema at "
        f"{path}: {first.message}{more}; it said: "
        f"{_q(_clip(message.content))}",
    )


# --- tools -------------------------------------------------------------------------------


def _calls(scope: _Scope) -> list[tuple[int, ToolCall]]:
    return [(turn, call) for turn, message in scope.replies for call in message.tool_calls]


def _tool_called(check: ToolCalledCheck, scope: _Scope) -> _Outcome:
    calls = _calls(scope)
    names = [call.name for _, call in calls]
    called = f"tools called in {_where(scope)}: {', '.join(names) or 'none'}"
    problems: list[str] = []
    have, want = Counter(names), Counter(check.include)  # `include: [b, b]`: b twice
    missing = [n if k == 1 else f"{n} ({k} times)" for n, k in want.items() if have[n] < k]
    if missing:
        problems.append(f"expected a call to {', '.join(missing)}")
    elif check.ordered and not _in_order(check.include, names):
        problems.append(f"expected calls to {', '.join(check.include)} in that order")
    forbidden = [n for n in check.exclude if n in names]
    if forbidden:
        problems.append(f"expected no call to {', '.join(forbidden)}")
    if problems:
        return _Outcome(False, reason=f"{'; '.join(problems)}; {called}")
    return _Outcome(True, evidence=(called,))


def _in_order(wanted: Sequence[str], names: Sequence[str]) -> bool:
    remaining = iter(names)
    return all(any(name == w for name in remaining) for w in wanted)


def _tool_args(check: ToolArgsCheck, scope: _Scope) -> _Outcome:
    matching = [(t, c) for t, c in _calls(scope) if c.name == check.tool]
    if not matching:
        names = ", ".join(c.name for _, c in _calls(scope)) or "none"
        return _Outcome(
            False,
            reason=f"expected a call to {check.tool} in {_where(scope)}; tools called: {names}",
        )
    test = _json_equal if check.match == "exact" else _is_subset
    for turn, call in matching:
        if call.arguments is not None and test(check.args, call.arguments):
            return _Outcome(True, evidence=(f"turn {turn}: {call.name} {_args_text(call)}",))
    seen = "; ".join(f"turn {t}: {_args_text(c)}" for t, c in matching[:3])
    how = "exactly" if check.match == "exact" else "arguments including"
    return _Outcome(
        False,
        reason=f"expected {check.tool} to be called with {how} "
        f"{content_text(check.args)}; it was called with {seen}",
    )


def _args_text(call: ToolCall) -> str:
    if call.arguments is None:
        return f"{_clip(call.arguments_raw)} ({call.arguments_error or 'not JSON'})"
    return _clip(content_text(call.arguments))


def _json_equal(expected: Any, actual: Any) -> bool:
    """JSON equality that keeps booleans apart from numbers (`true != 1`)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        want, got = cast(dict[str, Any], expected), cast(dict[str, Any], actual)
        return want.keys() == got.keys() and all(_json_equal(v, got[k]) for k, v in want.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return _pairwise(cast(list[Any], expected), cast(list[Any], actual), _json_equal)
    return expected == actual


def _is_subset(expected: Any, actual: Any) -> bool:
    """True when every key of `expected` is in `actual` with a matching value.

    Nested objects (also inside lists, position by position) match as subsets too.
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        want, got = cast(dict[str, Any], expected), cast(dict[str, Any], actual)
        return all(k in got and _is_subset(v, got[k]) for k, v in want.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and _pairwise(
            cast(list[Any], expected), cast(list[Any], actual), _is_subset
        )
    return _json_equal(expected, actual)


def _pairwise(expected: list[Any], actual: list[Any], test: Callable[[Any, Any], bool]) -> bool:
    return len(expected) == len(actual) and all(
        test(e, a) for e, a in zip(expected, actual, strict=True)
    )


# --- latency -----------------------------------------------------------------------------


def _latency_below(check: LatencyBelowCheck, scope: _Scope) -> _Outcome:
    timed = [(t, m.latency_ms) for t, m in scope.replies if m.latency_ms is not None]
    if not timed:
        return _Outcome(
            False,
            reason=f"no latency was recorded for {_where(scope)}, so "
            f"'under {check.ms:g} ms' cannot be shown",
        )
    slow = [(t, ms) for t, ms in timed if ms >= check.ms]
    if slow:
        listed = ", ".join(f"turn {t}: {ms:.0f} ms" for t, ms in slow[:5])
        return _Outcome(
            False, reason=f"expected every reply in under {check.ms:g} ms; slower: {listed}"
        )
    slowest = max(timed, key=lambda item: item[1])
    return _Outcome(True, evidence=(f"slowest reply: turn {slowest[0]}, {slowest[1]:.0f} ms",))


# --- text helpers ------------------------------------------------------------------------


def _values(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _list(values: Sequence[str], joiner: str = "or") -> str:
    quoted = [_q(v) for v in values]
    if len(quoted) <= 1:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} {joiner} {quoted[-1]}"


def _clip(text: str, limit: int = _QUOTE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _around(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - _AROUND_CHARS), min(len(text), end + _AROUND_CHARS)
    return ("…" if lo else "") + text[lo:hi] + ("…" if hi < len(text) else "")
