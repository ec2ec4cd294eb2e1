"""Deterministic checks: decide a `Check` from a transcript, without a model.

Which agent replies a check looks at (its scope): `check.turn` when set (1-based, negative
counts from the end), else the `turn` it is attached to (a scripted step's reply), else the
whole conversation. Within the scope: `contains` needs some reply to contain a value (with
`match: all`, every value somewhere in the scope), `not_contains` needs no reply to contain
any (unless `case_sensitive`, after NFKC, case folding and dropping invisible characters),
`regex` needs some reply to match and `not_regex` none, `equals` and `json_schema` look at
the last reply, tool checks look at every tool call, `latency_below` at every reply with a
latency. A scope with no agent reply is `not_met`. `end_reason` looks at no reply: at how
the conversation ended. `empty_reply_verdict` is the built-in check that no reply was empty.

Checks read what the agent really said (secrets included): the runner masks their verdicts
before it keeps them. The tool checks live in `tool_checks`; the scope and the quoting all
checks share, in `check_scope`.

Author patterns run on the `regex` package (syntax of Python's `re`), which can stop a search:
a `regex` check gets `REGEX_TIMEOUT_S` seconds in all, and one that needs longer (a pattern
that backtracks catastrophically on a long reply) is `error`, so it cannot freeze the run.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, assert_never

import regex

from sparring.judging.check_scope import (
    Outcome,
    Scope,
    around,
    clip,
    last_said,
    plain_list,
    quoted,
    quoted_list,
    scope_of,
    scope_text,
)
from sparring.judging.pii import kinds_text, not_pii
from sparring.judging.text_folding import folded
from sparring.judging.tool_checks import describe_tool_called, tool_args, tool_called
from sparring.results import Verdict, VerdictStatus
from sparring.scenario import (
    EMPTY_REPLY_ID,
    Check,
    ContainsCheck,
    EndReasonCheck,
    EqualsCheck,
    JsonSchemaCheck,
    LatencyBelowCheck,
    LookIn,
    NotContainsCheck,
    NotPiiCheck,
    NotRegexCheck,
    RegexCheck,
    ToolArgsCheck,
    ToolCalledCheck,
)
from sparring.transcript import JsonTooDeep, Transcript, content_text, parse_json

REGEX_TIMEOUT_S = 2.0
"""Seconds a `regex` check may spend searching all the replies in its scope, in total."""


def run_check(
    check: Check,
    transcript: Transcript,
    *,
    check_id: str,
    turn: int | None = None,
    end_reason: str | None = None,
) -> Verdict:
    """Decide `check` on `transcript`; never raises for anything the agent said.

    Args:
        check: One check spec from the scenario.
        transcript: The conversation so far (or finished), as the agent really said it:
            the verdict quotes it, so mask secrets in the verdict before keeping it.
        check_id: The verdict's id, e.g. `check1` or `t2.check1`.
        turn: 1-based turn of the reply the check is attached to (scripted steps);
            `check.turn` overrides it; `None` (and no `check.turn`) means the whole
            conversation.
        end_reason: Why the conversation ended (`goal_achieved`, ...), once it has; an
            `end_reason` check without one is `error`.

    Returns:
        A `Verdict` with `kind="check"`, status `met` / `not_met` (or `error` when the check
        itself cannot be run, e.g. an invalid JSON Schema or a `$ref` that does not resolve;
        any exception a check raises becomes that `error`), `turns` the turns looked at,
        `evidence` quoting what decided it and, on failure, a `reason` saying what was
        expected and what was there.
    """
    if isinstance(check, EndReasonCheck):  # how it ended, not what a reply said
        scope = Scope(replies=[], turn=None, missing=None)
    else:
        scope = scope_of(transcript, check.turn if check.turn is not None else turn)
    outcome = (
        Outcome(False, scope.missing)
        if scope.missing is not None
        else _safe_decide(check, scope, end_reason)
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


def is_blank(text: str) -> bool:
    """True when `text` shows nothing: empty, or only whitespace and invisible format
    characters (zero-width space, byte order mark, ...)."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def empty_reply_verdict(transcript: Transcript) -> Verdict | None:
    """The built-in check that an agent reply is never empty (`EMPTY_REPLY_ID`).

    A turn counts as empty when every agent message in it `is_blank` (a reply of tool
    calls only shows the user nothing too; a `null` reply arrives as empty text).

    Returns:
        `None` when every reply has text; else a `not_met` verdict whose reason names the
        empty turns ("the agent sent no reply at turn 2"), `turns` those turns and `turn`
        the turn when there is one.
    """
    shown: dict[int, bool] = {}
    for turn, message in transcript.agent_replies():
        shown[turn] = shown.get(turn, False) or not is_blank(message.content)
    empty = tuple(t for t, has_text in shown.items() if not has_text)
    if not empty:
        return None
    at = f"turn {empty[0]}" if len(empty) == 1 else f"turns {plain_list(empty, 'and')}"
    return Verdict(
        id=EMPTY_REPLY_ID,
        kind="check",
        description="the agent replies at every turn",
        status="not_met",
        reason=f"the agent sent no reply at {at}; if an empty reply is fine in this "
        "scenario, set `allow_empty_replies: true`",
        turns=empty,
        turn=empty[0] if len(empty) == 1 else None,
    )


def describe(check: Check) -> str:
    """A short human phrase for a check, e.g. `contains "order number"`."""
    where = f" at turn {check.turn}" if check.turn is not None else ""
    match check:
        case ContainsCheck():
            joiner = "and" if check.match == "all" else "or"
            return f"contains {quoted_list(_values(check.value), joiner)}{where}"
        case NotContainsCheck():
            return f"does not contain {quoted_list(_values(check.value), 'or')}{where}"
        case RegexCheck():
            return f"matches {_slashed(check)}{where}"
        case NotRegexCheck():
            return f"does not match {_slashed(check)}{where}"
        case NotPiiCheck():
            return f"holds no {kinds_text(check.kinds)}{where}"
        case EqualsCheck():
            return f"equals {quoted(check.value)}{where}"
        case JsonSchemaCheck():
            return f"is JSON matching the schema{where}"
        case ToolCalledCheck():
            return describe_tool_called(check) + where
        case ToolArgsCheck():
            how = "exactly" if check.match == "exact" else "at least"
            return f"calls {check.tool} with {how} {content_text(check.args)}{where}"
        case LatencyBelowCheck():
            return f"replies in under {check.ms:g} ms{where}"
        case EndReasonCheck():
            return f"the conversation ends with {plain_list(check.value, 'or')}"
        case _:
            assert_never(check)


def _safe_decide(check: Check, scope: Scope, end_reason: str | None) -> Outcome:
    """`_decide`, with any exception turned into the check's `error` outcome."""
    try:
        return _decide(check, scope, end_reason)
    except Exception as e:  # noqa: BLE001 - a broken check must not stop the other checks
        return Outcome(False, _broken_check_reason(e), error=True)


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


def _decide(check: Check, scope: Scope, end_reason: str | None) -> Outcome:
    match check:
        case ContainsCheck():
            return _contains(check, scope)
        case NotContainsCheck():
            return _not_contains(check, scope)
        case RegexCheck():
            return _regex(check, scope)
        case NotRegexCheck():
            return _not_regex(check, scope)
        case NotPiiCheck():
            return not_pii(check, _places(scope, check.look_in))
        case EqualsCheck():
            return _equals(check, scope)
        case JsonSchemaCheck():
            return _json_schema(check, scope)
        case ToolCalledCheck():
            return tool_called(check, scope)
        case ToolArgsCheck():
            return tool_args(check, scope)
        case LatencyBelowCheck():
            return _latency_below(check, scope)
        case EndReasonCheck():
            return _end_reason(check, end_reason)
        case _:
            assert_never(check)


# --- text checks -------------------------------------------------------------------------


def _find(text: str, value: str, *, case_sensitive: bool) -> tuple[int, int] | None:
    """`(start, end)` of `value` in `text`, or `None`. Without `case_sensitive`, both are
    compared `folded` (so `re\u00adfund`, `r\u200befund` and `Ｒｅｆｕｎｄ` hold "refund",
    and "STRASSE" holds "straße"); the span is still `text`'s own."""
    if not case_sensitive and text.isascii() and value.isascii():
        at = text.lower().find(value.lower())
        return None if at < 0 else (at, at + len(value))
    needle = "" if case_sensitive else folded(value)[0]
    if not needle:  # case-sensitive, or a value of invisible characters only
        at = text.find(value)
        return None if at < 0 else (at, at + len(value))
    haystack, starts, ends = folded(text)
    at = haystack.find(needle)
    return None if at < 0 else (starts[at], ends[at + len(needle) - 1])


def _places(scope: Scope, look_in: LookIn) -> Iterator[tuple[str, str]]:
    """`(where, text)` for each text the check reads in scope, in order: each reply's text
    (`where` = "turn N"), and/or the arguments of its tool calls as sent and as parsed
    ("turn N, NAME arguments"), per `look_in`."""
    for turn, message in scope.replies:
        if look_in != "tool_args":
            yield f"turn {turn}", message.content
        if look_in == "text":
            continue
        for call in message.tool_calls:
            parsed = (
                "" if call.arguments is None else json.dumps(call.arguments, ensure_ascii=False)
            )
            yield f"turn {turn}, {call.name} arguments", f"{call.arguments_raw}\n{parsed}"


def _first_hit(
    scope: Scope, value: str, *, case_sensitive: bool, look_in: LookIn = "text"
) -> str | None:
    """Evidence for the first text in scope containing `value`, or `None`."""
    for where, text in _places(scope, look_in):
        span = _find(text, value, case_sensitive=case_sensitive)
        if span is not None:
            return f"{where}: {quoted(around(text, *span))}"
    return None


def _contains(check: ContainsCheck, scope: Scope) -> Outcome:
    values = _values(check.value)
    hits = {
        v: _first_hit(scope, v, case_sensitive=check.case_sensitive, look_in=check.look_in)
        for v in values
    }
    found = [h for h in hits.values() if h is not None]
    missing = [v for v, h in hits.items() if h is None]
    met = not missing if check.match == "all" else bool(found)
    if met:
        return Outcome(True, evidence=tuple(found))
    wanted = quoted_list(
        missing if check.match == "all" else values, "and" if check.match == "all" else "or"
    )
    return Outcome(
        False, reason=f"expected {scope_text(scope)} to contain {wanted}; {last_said(scope)}"
    )


def _not_contains(check: NotContainsCheck, scope: Scope) -> Outcome:
    hits = [
        (v, h)
        for v in _values(check.value)
        if (h := _first_hit(scope, v, case_sensitive=check.case_sensitive, look_in=check.look_in))
        is not None
    ]
    if not hits:
        return Outcome(True)
    value, hit = hits[0]
    return Outcome(
        False,
        reason=f"expected no reply to contain {quoted(value)}, but {hit}",
        evidence=tuple(h for _, h in hits),
    )


def _slashed(check: RegexCheck | NotRegexCheck) -> str:
    """`/pattern/`, or `/pattern/i` with `ignore_case`: a pattern as every line shows it."""
    return f"/{check.pattern}/{'i' if check.ignore_case else ''}"


@lru_cache(maxsize=256)
def _compiled(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)


class _TooSlow(Exception):
    """A pattern's search ran out of `REGEX_TIMEOUT_S` on the text at `where`."""

    def __init__(self, where: str, length: int) -> None:
        self.where, self.length = where, length


def _matches(check: RegexCheck | NotRegexCheck, scope: Scope) -> Iterator[str]:
    """Evidence for each reply in scope the pattern matches, in order; all the searches
    share one `REGEX_TIMEOUT_S` budget.

    Raises:
        _TooSlow: the budget ran out.
    """
    compiled = _compiled(check.pattern, check.ignore_case)
    deadline = time.monotonic() + REGEX_TIMEOUT_S
    for where, text in _places(scope, check.look_in):
        try:
            match = compiled.search(text, timeout=max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            raise _TooSlow(where, len(text)) from None
        if match:
            yield f"{where}: {quoted(around(text, match.start(), match.end()))}"


def _what(where: str) -> str:
    """`reply at turn 2`, or `tool arguments at turn 2, NAME arguments`."""
    return f"tool arguments at {where}" if where.endswith(" arguments") else f"reply at {where}"


def _too_slow(check: RegexCheck | NotRegexCheck, stopped: _TooSlow) -> Outcome:
    return Outcome(
        False,
        error=True,
        reason=(
            f"the pattern {_slashed(check)} took over {REGEX_TIMEOUT_S:g} s and was stopped "
            f"on the {stopped.length:,}-character {_what(stopped.where)}; it "
            "backtracks too much: anchor it (e.g. `^...`) and avoid nested quantifiers "
            "such as `(x+)+`"
        ),
    )


def _regex(check: RegexCheck, scope: Scope) -> Outcome:
    try:
        hit = next(_matches(check, scope), None)
    except _TooSlow as e:
        return _too_slow(check, e)
    if hit is not None:
        return Outcome(True, evidence=(hit,))
    return Outcome(
        False, reason=f"expected {scope_text(scope)} to match {_slashed(check)}; {last_said(scope)}"
    )


def _not_regex(check: NotRegexCheck, scope: Scope) -> Outcome:
    try:
        hits = tuple(_matches(check, scope))
    except _TooSlow as e:
        return _too_slow(check, e)
    if not hits:
        return Outcome(True)
    return Outcome(
        False,
        reason=f"expected no reply in {scope_text(scope)} to match {_slashed(check)}, "
        f"but {hits[0]}",
        evidence=hits,
    )


def _equals(check: EqualsCheck, scope: Scope) -> Outcome:
    turn, message = scope.replies[-1]
    actual, expected = message.content.strip(), check.value.strip()
    same = actual == expected if check.case_sensitive else actual.casefold() == expected.casefold()
    if same:
        return Outcome(True, evidence=(f"turn {turn}: {quoted(clip(actual))}",))
    return Outcome(
        False,
        reason=f"expected the reply to equal {quoted(clip(expected))}; "
        f"turn {turn} said: {quoted(clip(actual))}",
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


def _json_schema(check: JsonSchemaCheck, scope: Scope) -> Outcome:
    try:
        validator = _validator(json.dumps(check.schema_, sort_keys=True))
    except _SchemaError as e:
        return Outcome(False, str(e), error=True)
    turn, message = scope.replies[-1]
    try:
        value = parse_json(_strip_fence(message.content))
    except JsonTooDeep as e:  # the agent's failure, not the check's
        return Outcome(
            False,
            reason=f"expected turn {turn} to be JSON the schema can check, but it is {e}; "
            f"it said: {quoted(clip(message.content))}",
        )
    except ValueError as e:
        return Outcome(
            False,
            reason=f"expected turn {turn} to be JSON, but it does not parse "
            f"({e}); it said: {quoted(clip(message.content))}",
        )
    errors = sorted(validator.iter_errors(value), key=lambda err: list(err.absolute_path))
    if not errors:
        return Outcome(True, evidence=(f"turn {turn}: {quoted(clip(content_text(value)))}",))
    first = errors[0]
    path = "/".join(str(p) for p in first.absolute_path) or "(root)"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return Outcome(
        False,
        reason=f"turn {turn} is JSON but does not match the schema at "
        f"{path}: {first.message}{more}; it said: "
        f"{quoted(clip(message.content))}",
    )


# --- latency -----------------------------------------------------------------------------


def _latency_below(check: LatencyBelowCheck, scope: Scope) -> Outcome:
    timed = [(t, m.latency_ms) for t, m in scope.replies if m.latency_ms is not None]
    if not timed:
        return Outcome(
            False,
            reason=f"no latency was recorded for {scope_text(scope)}, so "
            f"'under {check.ms:g} ms' cannot be shown",
        )
    slow = [(t, ms) for t, ms in timed if ms >= check.ms]
    if slow:
        listed = ", ".join(f"turn {t}: {ms:.0f} ms" for t, ms in slow[:5])
        return Outcome(
            False, reason=f"expected every reply in under {check.ms:g} ms; slower: {listed}"
        )
    slowest = max(timed, key=lambda item: item[1])
    return Outcome(True, evidence=(f"slowest reply: turn {slowest[0]}, {slowest[1]:.0f} ms",))


# --- text helpers ------------------------------------------------------------------------


def _values(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


# --- end reason --------------------------------------------------------------------------


def _end_reason(check: EndReasonCheck, end_reason: str | None) -> Outcome:
    wanted = plain_list(check.value, "or")
    if end_reason is None:
        return Outcome(
            False,
            error=True,
            reason="how the conversation ended is known only once it is over, so an "
            "end_reason check belongs in a test file scenario's `checks:`",
        )
    if end_reason in check.value:
        return Outcome(True, evidence=(f"the conversation ended with {end_reason}",))
    return Outcome(
        False, reason=f"expected the conversation to end with {wanted}; it ended with {end_reason}"
    )
