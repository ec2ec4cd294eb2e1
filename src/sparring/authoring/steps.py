"""Written conversations for Python tests: `CustomerMessage`, `AgentMessage` (with `should`
and `checks` for `unfold`), `InteractionBuilder` (history for `Session.add_events`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sparring.errors import UserError
from sparring.judging.should import ConditionGrammarWarning, condition_problem
from sparring.scenario import Check, expand_check_shorthand
from sparring.targets.attachments import read_attachment
from sparring.transcript import Message, Transcript


@dataclass(frozen=True, slots=True)
class CustomerMessage:
    """A user message in a written conversation (`unfold`, `InteractionBuilder`), with the
    files at the paths `files` (relative to the current directory) sent with it."""

    text: str
    files: Sequence[str | Path] = ()

    def message(self) -> Message:
        """The user `Message`, its files read.

        Raises:
            UserError: a file is missing, unreadable or too large.
        """
        return Message(
            role="user", content=self.text, files=tuple(read_attachment(f) for f in self.files)
        )


@dataclass(frozen=True, slots=True, init=False)
class AgentMessage:
    """An agent message in a written conversation.

    `text` is what the agent is taken to have said when later steps are tested. With
    `should` (a verb phrase, or a list of them) or `checks` (sparring check specs: `Check`
    models or shorthand dicts like `{"contains": "refund"}`), `unfold` tests the agent's live
    reply at this point; without them the step is history only.

    Raises:
        UserError: a check spec is invalid (the message says which and why).
    """

    text: str
    should: tuple[str, ...]
    checks: tuple[Check, ...]

    def __init__(
        self,
        text: str,
        *,
        should: str | Sequence[str] = (),
        checks: Sequence[Check | Mapping[str, Any]] = (),
    ) -> None:
        conditions = (should,) if isinstance(should, str) else tuple(should)
        for condition in conditions:
            warn_condition(condition, stacklevel=3)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "should", conditions)
        object.__setattr__(self, "checks", tuple(parse_check(c) for c in checks))

    @property
    def asserts(self) -> bool:
        """Whether `unfold` tests this step (it has `should` or `checks`)."""
        return bool(self.should or self.checks)


Step = CustomerMessage | AgentMessage


class InteractionBuilder:
    """Builds a written conversation step by step, for `Session.add_events`.

    `InteractionBuilder().step(CustomerMessage("Hi")).step(AgentMessage("Hello!")).build()`
    """

    def __init__(self) -> None:
        self._steps: list[Step] = []

    def step(self, step: Step) -> InteractionBuilder:
        """Append one message; returns the builder, so calls chain."""
        if not isinstance(step, CustomerMessage | AgentMessage):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"InteractionBuilder.step takes a CustomerMessage or an "
                f"AgentMessage, got {type(step).__name__}"
            )
        self._steps.append(step)
        return self

    def build(self) -> tuple[Step, ...]:
        """The steps so far, in order."""
        return tuple(self._steps)


_CHECK = TypeAdapter[Check](Check)


def parse_check(spec: Check | Mapping[str, Any]) -> Check:
    """A check spec as a `Check` model; shorthand like `{"contains": "x"}` is expanded.

    Raises:
        UserError: the spec is not a valid check.
    """
    try:
        return _CHECK.validate_python(
            expand_check_shorthand(dict(spec)) if isinstance(spec, Mapping) else spec
        )
    except ValidationError as e:
        raise UserError(
            f"invalid check {spec!r}: {validation_summary(e, skip=0)}; write it like "
            '{"contains": "refund"} or {"tool_called": ["lookup_order"]}'
        ) from None


def warn_condition(condition: str, *, stacklevel: int) -> None:
    """Warn (`ConditionGrammarWarning`) when `condition` is not a verb phrase.

    Raises:
        UserError: `condition` is empty or whitespace-only (it asks nothing).
    """
    problem = condition_problem(condition)
    if not condition.strip():
        raise UserError(f"should({condition!r}): {problem}")
    if problem is not None:
        warnings.warn(problem, ConditionGrammarWarning, stacklevel=stacklevel + 1)


def transcript_of(steps: Sequence[Step]) -> Transcript:
    """The conversation the steps write: customer steps as user messages, agent steps as
    assistant messages, in order."""
    return Transcript(
        messages=tuple(
            s.message() if isinstance(s, CustomerMessage) else Message(role="agent", content=s.text)
            for s in steps
        )
    )


def validation_summary(error: ValidationError, *, skip: int = 1) -> str:
    """The first validation problems on one line; `skip` drops a union tag from paths."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc'][skip:]) or 'value'}: {err['msg']}"
        for err in error.errors(include_url=False)[:3]
    )
