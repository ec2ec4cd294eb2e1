"""What every scenario kind shares: thresholds, criteria, scripted turns, `ScenarioBase`."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    TypeAdapter,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from sparring.scenario.checks import Check, expand_check_shorthand, is_raw_list
from sparring.scenario.evaluations import Evaluation, ToolArgsJudge
from sparring.target_specs import (
    FROZEN,
    TargetSpec,
    is_raw_mapping,
)


def parse_threshold(value: Any) -> float:
    """Read a pass-rate threshold as a fraction in (0, 1].

    `0.8`, `"80%"` and `80` all mean 0.8 (DESIGN.md section 1). A number above 1 without `%`
    is read as percent only from 10 to 100; whole numbers such as `8` are ambiguous (0.8 or
    8%?), and others such as `1.5` get "did you mean '1.5%' (0.015) or 1.0?". Zero (`0`,
    `"0%"`) is refused: it would pass even when every trial fails.

    Raises:
        ValueError: not a number, zero, out of range, or ambiguous (with a "did you mean"
            hint).
    """
    fraction = _fraction(value)
    if fraction == 0:
        raise ValueError(
            "a threshold of 0 passes even when every trial fails; did you mean 1 (every "
            "trial must pass, the default) or a pass rate such as 0.8 (80%)?"
        )
    return fraction


def _fraction(value: Any) -> float:
    """`value` as a fraction in [0, 1]; see `parse_threshold`."""
    if isinstance(value, bool):
        raise ValueError("threshold must be a number such as 0.8 or '80%', not a boolean")
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            try:
                percent = float(text[:-1])
            except ValueError:
                raise ValueError(f"threshold {value!r} is not a percentage like '80%'") from None
            if not 0 <= percent <= 100:
                raise ValueError(f"threshold {value!r} is out of range: {_RANGE}")
            return percent / 100
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"threshold {value!r} is not a number like 0.8 or '80%'") from None
    if not isinstance(value, int | float):
        raise ValueError(f"threshold must be a number such as 0.8 or '80%', got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float (10**400)
        raise ValueError(f"threshold is a number far out of range: {_RANGE}") from None
    if 0 <= number <= 1:
        return number
    if 1 < number < 10 and number.is_integer():
        raise ValueError(
            f"threshold {value} is ambiguous: did you mean {number / 10:g} ({number * 10:g}%)? "
            f"Write a fraction (0.8) or a percentage ('80%' or 80; for {value}% write "
            f"'{value}%')"
        )
    if 1 < number < 10:  # 1.5 is neither a fraction nor a percent without `%`
        raise ValueError(
            f"threshold {value} is above 1: did you mean '{number:g}%' ({number / 100:g}) or "
            "1.0 (100%)? Write a fraction (0.8) or a percentage ('80%' or 80)"
        )
    if 10 <= number <= 100:
        return number / 100
    raise ValueError(f"threshold {value} is out of range: {_RANGE}")


_RANGE = "use a fraction above 0 up to 1 (0.8) or a percent above 0 up to 100 ('80%' or 80)"
"""What a threshold may be; 0 is refused too (`parse_threshold`)."""


Threshold = Annotated[float, Field(gt=0, le=1)]


class TrialRange(BaseModel):
    """Adaptive trials, `trials: {min: 3, max: 30}`: at least `min` trials, then more only
    while the 95% Wilson interval of the pass rate still straddles the threshold, at most
    `max`; the scenario is `undecided` when `max` leaves it straddling. At a threshold of 1
    every trial must pass: it fails at the first failed trial, passes once `max` passed."""

    model_config = FROZEN
    min: int = Field(default=3, ge=1, le=1000)
    max: int = Field(default=30, ge=1, le=1000)

    @model_validator(mode="after")
    def _ordered(self) -> TrialRange:
        if self.min > self.max:
            raise ValueError(f"trials min ({self.min}) must not be above max ({self.max})")
        return self

    def __str__(self) -> str:
        return f"{self.min}-{self.max} adaptive"


TrialCount = Annotated[int, Field(ge=1, le=100)]
_TRIAL_COUNT: TypeAdapter[int] = TypeAdapter(int)


# --- criteria and turns ----------------------------------------------------------------


class Criterion(BaseModel):
    """A statement the judge decides for the whole conversation.

    `kind: success` must hold ("The assistant offers a refund"); `kind: restriction` names
    something that must not happen and is met when it did not happen.
    """

    model_config = FROZEN
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=64)
    text: str = Field(min_length=1, max_length=500)
    kind: Literal["success", "restriction"] = "success"

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, id_: str) -> str:
        if _RESERVED_SHOULD.fullmatch(id_):
            raise ValueError(f"id {id_!r} is reserved for should assertions; pick another id")
        if _RESERVED_CHECK.fullmatch(id_):
            raise ValueError(f"id {id_!r} is reserved for checks; pick another id")
        return id_


EMPTY_REPLY_ID = "empty_reply"
"""Verdict id of the built-in check that fails a trial with an empty agent reply."""
# verdict ids sparring gives `should` assertions and checks (scenario-level and per turn)
_RESERVED_SHOULD = re.compile(r"t\d+\.should\d+")
_RESERVED_CHECK = re.compile(rf"(t\d+\.)?check\d+|{EMPTY_REPLY_ID}")


def _criteria_list(values: Any, *, prefix: str, kind: str) -> Any:
    if not is_raw_list(values):
        return values
    out: list[Any] = []
    for i, v in enumerate(values, start=1):
        if isinstance(v, str):
            out.append({"id": f"{prefix}{i}", "text": v, "kind": kind})
        elif is_raw_mapping(v) and "kind" not in v:
            out.append({**v, "kind": kind})
        else:
            out.append(v)
    return out


def _condition_text(text: str) -> str:
    """A `should` condition, refused when empty or whitespace-only (it asks nothing)."""
    if not text.strip():
        raise ValueError(
            "a `should` is empty; write what the reply should do, e.g. 'greet the customer', "
            "or remove it"
        )
    return text


ConditionText = Annotated[str, AfterValidator(_condition_text)]
"""A `should` condition: a verb phrase completing "The message should ...", not blank."""


class ScriptedTurn(BaseModel):
    """One step of a script: exactly one of
    - `user`: a written user message sent to the agent, with checks and `should`s on its reply;
    - `agent`: a written agent message put into the history (say, an opening line before a
      simulated user speaks); the target gets it as part of the history it is sent;
    - `simulate: N`: the scenario's simulated user (`persona`, `goal`) writes the next N
      messages, or fewer when it is done; checks and `should`s look at the last reply.
    """

    model_config = FROZEN
    user: str | None = None
    agent: str | None = None
    simulate: int | None = Field(default=None, ge=1, le=50)
    files: list[str] = Field(default_factory=list[str])
    """Paths of files sent with this message (relative to the test file when loaded)."""
    audio: str | None = None
    """A WAV the agent hears instead of the text (voice targets; relative to the test file)."""
    checks: list[Check] = Field(default_factory=list[Check])
    should: list[ConditionText] = Field(default_factory=list[ConditionText])
    """Verb phrases completing "The message should ...", judged on this reply."""

    @field_validator("should", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("checks", mode="before")
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return [expand_check_shorthand(c) for c in v] if is_raw_list(v) else v

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptedTurn:
        given = [k for k in ("user", "agent", "simulate") if getattr(self, k) is not None]
        if len(given) != 1:
            found = f"it has {' and '.join(given)}" if given else "it has none"
            raise ValueError(
                "a turn is exactly one of `user: TEXT` (a message sent to the agent), "
                "`agent: TEXT` (a written agent message for the history) or `simulate: N` "
                f"(N messages by the simulated user); {found}"
            )
        if self.agent is not None and (self.checks or self.should or self.files or self.audio):
            raise ValueError(
                "an `agent:` turn is written history: it takes no checks, should, files or "
                "audio; put them on the `user:` turn whose reply they look at"
            )
        if self.simulate is not None and (self.files or self.audio):
            raise ValueError("a `simulate:` turn's messages are written by the model: no files")
        return self

    @property
    def user_messages(self) -> int:
        """User messages this step sends at most: 1, 0 (`agent`), or N (`simulate: N`)."""
        if self.simulate is not None:
            return self.simulate
        return 0 if self.agent is not None else 1

    @field_validator("checks")
    @classmethod
    def _not_the_end(cls, checks: list[Check]) -> list[Check]:
        if any(c.type == "end_reason" for c in checks):
            raise ValueError(
                "an end_reason check looks at how the conversation ended, which a turn's "
                "reply cannot know; move it to the scenario's `checks:`"
            )
        return checks


# --- scenarios -------------------------------------------------------------------------


class ScenarioBase(BaseModel):
    """The keys every scenario kind takes: id, name, description, target, criteria,
    restrictions, checks, trials, threshold, timeout, tags and labels."""

    model_config = FROZEN
    id: str = Field(pattern=r"^[A-Za-z0-9_.:/-]+(\[[A-Za-z0-9_.:/-]+\])?$", max_length=128)
    """Letters, digits, `_ . : / -`; a scenario of a data row ends in `[row-id]`."""
    name: str | None = None
    description: str | None = None
    """What is being tested; the judge reads it as context."""
    target: TargetSpec | None = None
    """Overrides the file's target."""
    criteria: list[Criterion] = Field(default_factory=list[Criterion])
    restrictions: list[Criterion] = Field(default_factory=list[Criterion])
    checks: list[Check] = Field(default_factory=list[Check])
    """Checks over the whole conversation (or the turn each names)."""
    trials: TrialCount | TrialRange = 1
    """A fixed count, or `{min, max}` for adaptive trials (`TrialRange`)."""
    threshold: Threshold = 1.0
    timeout_s: float = Field(default=600, gt=0)
    """Conversation timeout in seconds."""
    tags: list[str] = Field(default_factory=list)
    category: str | None = None
    topic: str | None = None
    behavior: str | None = None
    """Labels kept in the results and reports (as written by `sparring generate`)."""
    allow_empty_replies: bool = False
    """Let an empty (or whitespace-only) agent reply pass; by default one fails the trial."""
    judge_after_failed_checks: bool = False
    """Judge criteria and `should`s even when a check already failed the trial."""
    require_evidence: bool = True
    """A judge's `met` for a success criterion or `should` must quote the conversation."""
    evaluations: list[Evaluation | str] = Field(default_factory=list[Evaluation | str])
    """Evaluations scoring each trial: inline, or by name (the loader replaces each name
    with its definition from an evaluations file, and adds those attached to the scenario's
    simulated user), so after loading every item is an `Evaluation`."""
    tool_args_judge: list[ToolArgsJudge] = Field(default_factory=list[ToolArgsJudge])
    """Rubrics judged on a tool call's arguments (one mapping or a list)."""
    explain_failures: bool | None = None
    """One more model call per failed trial explains why; `None` follows the settings."""
    source: SkipJsonSchema[str | None] = None
    """`file:line` the scenario came from; set by the loader."""

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, v: Any) -> float:
        return parse_threshold(v)

    @field_validator("trials", mode="wrap")
    @classmethod
    def _trials(cls, v: Any, handler: ValidatorFunctionWrapHandler) -> int | TrialRange:
        """A mapping is a `TrialRange`, anything else a count: errors name one of them."""
        if isinstance(v, dict):
            return TrialRange.model_validate(v)
        if isinstance(v, TrialRange):
            return v
        count = _TRIAL_COUNT.validate_python(v)
        if not 1 <= count <= 100:
            raise ValueError(f"trials must be at least 1 and at most 100, got {count}")
        return count

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria(cls, v: Any) -> Any:
        return _criteria_list(v, prefix="c", kind="success")

    @field_validator("restrictions", mode="before")
    @classmethod
    def _restrictions(cls, v: Any) -> Any:
        return _criteria_list(v, prefix="r", kind="restriction")

    @field_validator("checks", mode="before")
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return [expand_check_shorthand(c) for c in v] if is_raw_list(v) else v

    @field_validator("tool_args_judge", mode="before")
    @classmethod
    def _one_or_many_rubrics(cls, v: Any) -> Any:
        return [v] if is_raw_mapping(v) else v

    @property
    def defined_evaluations(self) -> list[Evaluation]:
        """The evaluations given inline or resolved by the loader (names left unresolved,
        as in a scenario built by hand without a loader, are not included)."""
        return [e for e in self.evaluations if isinstance(e, Evaluation)]

    @model_validator(mode="after")
    def _unique_criterion_ids(self) -> ScenarioBase:
        ids = [c.id for c in self.all_criteria]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"criterion ids must be unique; repeated: {', '.join(dupes)}")
        return self

    def _check_turns_within(self, limit: int, what: str) -> None:
        """Reject a scenario-level check whose `turn` (or -turn) is above `limit`."""
        for k, check in enumerate(self.checks):
            if check.turn is not None and abs(check.turn) > limit:
                raise ValueError(f"checks[{k}] looks at turn {check.turn}, but {what}")

    @property
    def all_criteria(self) -> list[Criterion]:
        """Success criteria then restrictions, as the judge grades them."""
        return [*self.criteria, *self.restrictions]

    @property
    def display_name(self) -> str:
        """`name` if given, else `id`."""
        return self.name or self.id
