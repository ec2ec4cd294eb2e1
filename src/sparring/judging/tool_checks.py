"""Tool checks: `tool_called` (include / exclude / ordered) and `tool_args` (subset /
exact), on the tool calls of the replies in a check's scope."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, cast

from sparring.judging.check_scope import Outcome, Scope, clip, scope_text
from sparring.scenario import ToolArgsCheck, ToolCalledCheck
from sparring.transcript import ToolCall, Transcript, content_text


def describe_tool_called(check: ToolCalledCheck) -> str:
    """`calls a, b in order; never calls c`: a `tool_called` check in words."""
    parts: list[str] = []
    if check.include:
        parts.append(f"calls {', '.join(check.include)}" + (" in order" if check.ordered else ""))
    if check.exclude:
        parts.append(f"never calls {', '.join(check.exclude)}")
    return "; ".join(parts) or "tool calls (nothing required)"


def _calls(scope: Scope) -> list[tuple[int, ToolCall]]:
    return [(turn, call) for turn, message in scope.replies for call in message.tool_calls]


def tool_called(check: ToolCalledCheck, scope: Scope) -> Outcome:
    """Met when every `include` name was called (as often as listed, in order when
    `ordered`) and no `exclude` name was."""
    calls = _calls(scope)
    names = [call.name for _, call in calls]
    called = f"tools called in {scope_text(scope)}: {', '.join(names) or 'none'}"
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
        return Outcome(False, reason=f"{'; '.join(problems)}; {called}")
    return Outcome(True, evidence=(called,))


def _in_order(wanted: Sequence[str], names: Sequence[str]) -> bool:
    remaining = iter(names)
    return all(any(name == w for name in remaining) for w in wanted)


def tool_args(check: ToolArgsCheck, scope: Scope) -> Outcome:
    """Met when some call of `check.tool` had `check.args` (a subset of its parsed
    arguments, or exactly them); a tool never called, or called only with arguments that
    did not parse, is not met."""
    matching = [(t, c) for t, c in _calls(scope) if c.name == check.tool]
    if not matching:
        names = ", ".join(c.name for _, c in _calls(scope)) or "none"
        return Outcome(
            False,
            reason=f"expected a call to {check.tool} in {scope_text(scope)}; tools called: {names}",
        )
    test = _json_equal if check.match == "exact" else _is_subset
    for turn, call in matching:
        if call.arguments is not None and test(check.args, call.arguments):
            return Outcome(True, evidence=(f"turn {turn}: {call.name} {_args_text(call)}",))
    seen = _calls_text(matching)
    how = "exactly" if check.match == "exact" else "arguments including"
    return Outcome(
        False,
        reason=f"expected {check.tool} to be called with {how} "
        f"{content_text(check.args)}; it was called with {seen}",
    )


def _calls_text(calls: list[tuple[int, ToolCall]]) -> str:
    """The first three `(turn, call)`: `{"n": 1} at turn 2; {"n": 3} at turn 4`."""
    return "; ".join(f"{_args_text(c)} at turn {t}" for t, c in calls[:3])


def _args_text(call: ToolCall) -> str:
    if call.arguments is None:
        return f"{clip(call.arguments_raw)} ({call.arguments_error or 'not JSON'})"
    return clip(content_text(call.arguments))


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


def parsed_calls(transcript: Transcript, tool: str) -> tuple[tuple[int, ...], str | None]:
    """The first stage of a `tool_args_judge`, without a model: the turns where the agent
    called `tool` with arguments that parse as JSON, and `None`; or `()` and why the
    rubric cannot be judged (never called, or only with arguments that did not parse)."""
    calls = [(t, c) for t, m in transcript.agent_replies() for c in m.tool_calls]
    matching = [(t, c) for t, c in calls if c.name == tool]
    if not matching:
        names = ", ".join(dict.fromkeys(c.name for _, c in calls)) or "none"
        return (), f"the agent never called {tool}; tools called: {names}"
    turns = tuple(dict.fromkeys(t for t, c in matching if c.arguments is not None))
    if not turns:
        return (), f"no call to {tool} had arguments that parse as JSON: {_calls_text(matching)}"
    return turns, None
