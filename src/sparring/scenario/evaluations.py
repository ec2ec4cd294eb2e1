"""Evaluations (named scorecards of typed insights) and reusable simulated users, as specs.

An **evaluation** asks the judge to assess a conversation (`prompt`) and to return one
value per **insight**: `boolean`, `score` (0-1), `category` (one of `options`) or `text`,
each with reasoning and evidence. Insights carry a `weight` for the trial's score and an
optional pass rule (`pass_when`). A **simulated user** is a persona kept in its own file
and referenced by name from scenarios (`user: NAME`); evaluations attached to it score every
scenario that uses it. Both are graded in the trial's one judge call
(`sparring.judging.judge`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from sparring.target_specs import FROZEN

NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
"""Names of evaluations, insights and simulated users: letters, digits, `_`, `.`, `-`."""

InsightType = Literal["boolean", "score", "category", "text"]

_COMPARISON = re.compile(r"^\s*(>=|<=|>|<|==)\s*(-?\d+(?:\.\d+)?)\s*$")


def parse_comparison(rule: str) -> tuple[str, float]:
    """`">= 0.7"` -> `(">=", 0.7)`: a score insight's pass rule.

    Raises:
        ValueError: not an operator (`>=`, `<=`, `>`, `<`, `==`) followed by a number.
    """
    match = _COMPARISON.match(rule)
    if match is None:
        raise ValueError(
            f"pass_when {rule!r} is not a comparison; write e.g. '>= 0.7' "
            "(one of >=, <=, >, <, == and a number from 0 to 1)"
        )
    return match.group(1), float(match.group(2))


def comparison_problem(op: str, bound: float) -> str | None:
    """Why a score's pass rule `op bound` (`parse_comparison`) is no gate: a score is 0-1,
    so a bound outside 0-1 makes it always pass or never, as do `> 1` and `< 0`; `None`
    when some scores pass it and others do not (or `== bound` within 0-1)."""
    if 0 <= bound <= 1:
        if (op, bound) in ((">", 1), ("<", 0)):
            return f"no score (0 to 1) is {op} {bound:g}, so it can never pass"
        return None
    never = op == "==" or op.startswith(">" if bound > 1 else "<")
    outcome = "it can never pass" if never else "every score passes it"
    return f"a score is 0 to 1 and {bound:g} is not, so {outcome}"


class Insight(BaseModel):
    """One typed value an evaluation asks for.

    `type` says what the judge returns: `boolean` (true/false), `score` (a number 0-1),
    `category` (one of `options`), `text` (free text, never scored). `weight` (>= 0) is its
    share of the trial's score; `score_map` maps category options to 0-1 scores (a category
    without one does not count toward the score). `pass_when` makes the insight a gate:
    `true`/`false` for a boolean, a comparison such as `">= 0.7"` for a score, a list of
    accepted options for a category; an insight without one is reported, never gating.
    `group` names the insight group it is shown under; `featured` marks the one insight
    reports show first (at most one per evaluation).
    """

    model_config = FROZEN
    name: str = Field(pattern=NAME_PATTERN, max_length=64)
    type: InsightType
    description: str = ""
    options: list[str] = Field(default_factory=list[str])
    weight: float = Field(default=1.0, ge=0)
    score_map: dict[str, float] | None = None
    pass_when: bool | str | list[str] | None = None
    group: str | None = None
    featured: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> Insight:
        if self.type == "category" and not self.options:
            raise ValueError(f"insight {self.name!r} is a category: list its `options`")
        folded = [o.strip().casefold() for o in self.options]
        repeated = [o for i, o in enumerate(self.options) if folded[i] in folded[:i]]
        if repeated:
            raise ValueError(
                f"insight {self.name!r}: options {repeated} repeat another option (letter "
                "case and spaces aside, the judge's answer cannot tell them apart); list "
                "each option once"
            )
        if self.type != "category" and (self.options or self.score_map):
            raise ValueError(
                f"insight {self.name!r}: `options` and `score_map` belong to category insights"
            )
        for option, score in (self.score_map or {}).items():
            if option not in self.options:
                raise ValueError(
                    f"insight {self.name!r}: score_map names {option!r}: not an option"
                )
            if not 0 <= score <= 1:
                raise ValueError(f"insight {self.name!r}: score_map values are 0-1")
        self._check_pass_when()
        return self

    def _check_pass_when(self) -> None:
        rule = self.pass_when
        if rule is None:
            return
        if self.type == "text":
            raise ValueError(f"insight {self.name!r} is text: it cannot have a pass_when")
        if self.type == "boolean" and not isinstance(rule, bool):
            raise ValueError(f"insight {self.name!r}: a boolean's pass_when is true or false")
        if self.type == "score":
            if not isinstance(rule, str):
                raise ValueError(f"insight {self.name!r}: a score's pass_when is like '>= 0.7'")
            problem = comparison_problem(*parse_comparison(rule))
            if problem is not None:
                raise ValueError(
                    f"insight {self.name!r}: pass_when {rule!r}: {problem}; compare with a "
                    "number from 0 to 1, e.g. '>= 0.7'"
                )
        if self.type == "category":
            accepted = [rule] if isinstance(rule, str) else rule
            if not isinstance(accepted, list) or not accepted:
                raise ValueError(f"insight {self.name!r}: pass_when lists accepted options")
            unknown = [a for a in accepted if a not in self.options]
            if unknown:
                raise ValueError(f"insight {self.name!r}: pass_when names unknown {unknown}")

    @property
    def gating(self) -> bool:
        """Whether the insight has a pass rule (and so can fail a trial)."""
        return self.pass_when is not None


class Evaluation(BaseModel):
    """A named scorecard: `prompt` tells the judge what to assess; `insights` are the values
    it returns (names unique within the evaluation; at most one `featured`)."""

    model_config = FROZEN
    name: str = Field(pattern=NAME_PATTERN, max_length=64)
    description: str = ""
    prompt: str = Field(min_length=1, max_length=4000)
    insights: list[Insight] = Field(min_length=1, max_length=30)

    @field_validator("insights")
    @classmethod
    def _unique(cls, insights: list[Insight]) -> list[Insight]:
        names = [i.name for i in insights]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"insight names must be unique; repeated: {', '.join(duplicates)}")
        if sum(i.featured for i in insights) > 1:
            raise ValueError("at most one insight can be `featured: true`")
        return insights


class SimulatedUser(BaseModel):
    """A reusable simulated user, kept in its own file and used by name (`user: NAME`).

    `system_prompt`, when given, is the whole persona the simulator plays (the scenario's
    goal still applies); otherwise `description` (and `job_title`) describe it. `mode` is
    `voice` when it speaks through the synthesis provider (voice targets). `evaluations`
    names evaluations that score every scenario using this user.
    """

    model_config = FROZEN
    name: str = Field(pattern=NAME_PATTERN, max_length=64)
    job_title: str = ""
    description: str = ""
    system_prompt: str | None = None
    mode: Literal["text", "voice"] = "text"
    evaluations: list[str] = Field(default_factory=list[str])

    @model_validator(mode="after")
    def _something_to_play(self) -> SimulatedUser:
        if not (self.description.strip() or (self.system_prompt or "").strip()):
            raise ValueError("a simulated user needs a `description` or a `system_prompt`")
        return self


class ToolArgsJudge(BaseModel):
    """`tool_args_judge: {tool: NAME, rubric: ...}`: the agent must have called `tool` with
    arguments that parse as JSON (a deterministic check, no model), and the judge grades
    `rubric` on those arguments in the trial's one judge call (verdict id `tool_args.NAME`,
    or `id` when given)."""

    model_config = FROZEN
    tool: str = Field(min_length=1)
    rubric: str = Field(min_length=1, max_length=1000)
    id: str | None = Field(default=None, pattern=NAME_PATTERN, max_length=64)

    @property
    def verdict_id(self) -> str:
        """The id of its verdicts: `id`, else `tool_args.<tool>`."""
        return self.id or f"tool_args.{self.tool}"
