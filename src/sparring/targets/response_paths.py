"""Response paths: where the reply (or the tool calls) is in a target's JSON answer.

Syntax (DESIGN.md section 4): `$` or empty = the whole body; `a.b`;
`choices.0.message.content` (a number indexes a list, or is a key in an object);
`data.messages[-1].text`; `["odd.key"]`; `sources[*].text` (every item, text results joined
by newlines). `false`, `0`, `""` and `null` are values, not "missing"; a missing path is a
`ResponsePathError` naming the path, the step that failed and a body excerpt.

Parsed once (`ResponsePath`), so test files can be checked when they load and targets only
walk the steps per reply.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from sparring.errors import TargetError, UserError
from sparring.transcript import content_text


class ResponsePathError(TargetError):
    """A response path does not exist in the target's reply.

    Attributes:
        path: The path as configured.
        key: The step that failed, e.g. `reply` or `[3]`.
        body_excerpt: The first 300 characters of the body, as canonical JSON.
    """

    def __init__(
        self,
        *,
        path: str,
        key: str,
        where: str,
        reason: str,
        body_excerpt: str,
        option: str = "response_path",
    ) -> None:
        self.path, self.key, self.body_excerpt = path, key, body_excerpt
        what = (
            "the list of tool calls"
            if option == "tool_calls_path"
            else "the reply ('$' takes the whole body)"
        )
        end = "" if reason.endswith(("?", ".")) else "."
        super().__init__(
            f"{option} {path!r} not found in the reply: at {where or '$'!r}, {reason}{end} "
            f"Body starts: {body_excerpt!r}. Fix `{option}` to point at {what}."
        )


class _Missing(Exception):
    def __init__(self, key: str, where: str, reason: str) -> None:
        self.key, self.where, self.reason = key, where, reason


@dataclass(frozen=True, slots=True)
class _Step:
    text: str
    key: str | None = None
    index: int | None = None
    wildcard: bool = False


_TOKEN = re.compile(r"""\.?(?:\[(?:(-?\d+)|(\*)|'([^']*)'|"([^"]*)")\]|([^.\[\]]+))""")


def _parse_path(path: str) -> tuple[_Step, ...]:
    text = path.strip()
    text = text[1:] if text.startswith("$") else text
    steps: list[_Step] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise UserError(
                f"response path {path!r} is not valid at {text[pos:]!r}: write "
                "keys and indexes like `data.items[0].text`, `a.b`, `x[*].y`"
            )
        index, star, single, double, bare = m.groups()
        if index is not None:
            steps.append(_Step(f"[{index}]", index=int(index)))
        elif star is not None or bare == "*":
            steps.append(_Step("[*]", wildcard=True))
        elif bare is not None:
            is_int = re.fullmatch(r"-?\d+", bare) is not None
            steps.append(_Step(bare, key=bare, index=int(bare) if is_int else None))
        else:
            key = single if single is not None else double or ""
            steps.append(_Step(f"[{key!r}]", key=key))
        pos = m.end()
    return tuple(steps)


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else f"a {type(value).__name__}"


def _step(value: JsonValue, step: _Step, where: str) -> JsonValue:
    if isinstance(value, dict):
        if step.key is not None and step.key in value:
            return value[step.key]
        if step.key is None:
            raise _Missing(step.text, where, f"expected a list, found {_kind(value)}")
        keys = ", ".join(list(value)[:12]) or "none"
        raise _Missing(step.text, where, f"no key {step.key!r} (keys there: {keys})")
    if isinstance(value, list):
        if step.index is None:
            raise _Missing(
                step.text, where, f"expected an object with key {step.key!r}, found a list"
            )
        if -len(value) <= step.index < len(value):
            return value[step.index]
        raise _Missing(
            step.text, where, f"index {step.index} is out of range (list of {len(value)})"
        )
    raise _Missing(step.text, where, f"cannot take {step.text!r} of {_kind(value)}")


def _walk(value: JsonValue, steps: tuple[_Step, ...], start: int, where: str) -> JsonValue:
    for i in range(start, len(steps)):
        step = steps[i]
        if step.wildcard:
            return _each(value, steps, i, where)
        value = _step(value, step, where)
        where = (
            f"{where}{step.text}"
            if step.text.startswith("[") or not where
            else f"{where}.{step.text}"
        )
    return value


def _each(value: JsonValue, steps: tuple[_Step, ...], i: int, where: str) -> JsonValue:
    if not isinstance(value, list):
        raise _Missing("[*]", where, f"expected a list, found {_kind(value)}")
    found: list[JsonValue] = []
    last: _Missing | None = None
    for item in value:
        try:
            found.append(_walk(item, steps, i + 1, f"{where}[*]"))
        except _Missing as e:
            last = e
    if last is not None and not found:
        raise last
    if found and all(isinstance(v, str) for v in found):
        return "\n".join(v for v in found if isinstance(v, str))
    return found


class ResponsePath:
    """A compiled response path (parse once per target, extract per reply).

    Syntax: `$` or empty = the whole body; `a.b`; `choices.0.message.content` (a number
    indexes a list, or is a key in an object); `data.messages[-1].text`; `["odd.key"]`;
    `sources[*].text` (every item; items lacking the rest of the path are skipped; text
    results are joined with newlines).

    Raises:
        UserError: the path does not parse.
    """

    __slots__ = ("_option", "_steps", "path")

    def __init__(self, path: str, *, option: str = "response_path") -> None:
        self.path, self._option = path, option
        self._steps = _parse_path(path)

    def extract(self, body: JsonValue, *, scrub: _Scrub | None = None) -> JsonValue:
        """The value at the path; `false`, `0`, `""` and `null` are values, not "missing".

        Args:
            body: The parsed reply body.
            scrub: Applied to the body excerpt in the error (e.g. `Secrets.scrub`).

        Raises:
            ResponsePathError: the path does not exist in `body`.
        """
        if not self._steps:
            return body
        try:
            return _walk(body, self._steps, 0, "")
        except _Missing as e:
            raise ResponsePathError(
                path=self.path,
                key=e.key,
                where=e.where,
                reason=e.reason,
                body_excerpt=_body_excerpt(body, scrub),
                option=self._option,
            ) from None

    def extract_optional(self, body: JsonValue, *, scrub: _Scrub | None = None) -> JsonValue:
        """Like `extract`, but a last key that the object simply leaves out gives `None`.

        For parts an answer may omit (`tool_calls` when no tool was called). A missing key
        that looks like a typo of a key that is there (`tool_call` next to `tool_calls`)
        still raises, so a misspelt path cannot pass for "nothing there".

        Raises:
            ResponsePathError: an earlier step is missing, or the last key is missing but
                close to one that exists.
        """
        last = self._steps[-1] if self._steps else None
        if last is None or last.key is None or last.wildcard:
            return self.extract(body, scrub=scrub)
        try:
            container = _walk(body, self._steps[:-1], 0, "")
        except _Missing:
            container = None  # an earlier step is missing: `extract` says where
        if not isinstance(container, dict) or last.key in container:
            return self.extract(body, scrub=scrub)
        lists = [str(k) for k, v in container.items() if isinstance(v, list | dict)]
        close = difflib.get_close_matches(last.key, lists, n=1)  # a count is no typo
        if not close:
            return None
        raise ResponsePathError(
            path=self.path,
            key=last.key,
            where=last.key,
            reason=f"no key {last.key!r}; did you mean {close[0]!r}?",
            body_excerpt=_body_excerpt(body, scrub),
            option=self._option,
        )


class _Scrub(Protocol):
    def __call__(self, text: str, /) -> str: ...


def _body_excerpt(body: JsonValue, scrub: _Scrub | None) -> str:
    """The body's first 300 characters as canonical JSON, scrubbed before the cut (a
    secret across the cut would otherwise leak all but its last characters)."""
    text = content_text(body)
    return (scrub(text) if scrub is not None else text)[:300]


def extract_path(body: JsonValue, path: str) -> JsonValue:
    """Extract `path` from `body` once (see `ResponsePath`; targets keep a compiled one).

    Raises:
        UserError: the path does not parse.
        ResponsePathError: the path does not exist in `body`.
    """
    return ResponsePath(path).extract(body)
