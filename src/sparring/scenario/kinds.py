"""What a test says: targets, scenarios (simulated, scripted, single-turn), criteria, checks.

These pydantic models are the test-file schema: the YAML loader validates against them and
`sparring schema` prints their JSON Schema. All are frozen and reject unknown keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from sparring.scenario.base import (
    ConditionText,
    Criterion,
    ScenarioBase,
    ScriptedTurn,
)
from sparring.scenario.checks import Check
from sparring.scenario.evaluations import NAME_PATTERN, SimulatedUser
from sparring.scenario.red_team import RedTeamScenario
from sparring.target_specs import (
    FROZEN,
    A2ATargetSpec,
    HttpTargetSpec,
    TargetSpec,
    is_raw_mapping,
)

GOAL_CRITERION_ID = "goal"
"""Id of the criterion a simulated scenario with nothing else to check is judged on."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SimulatedScenario(ScenarioBase):
    """A simulated user (persona + goal, played by a model) talks to the target."""

    kind: Literal["simulated"] = "simulated"
    persona: str = "A typical first-time user of this product."
    user: str | None = Field(default=None, pattern=NAME_PATTERN, max_length=64)
    """A reusable simulated user by name (from a simulated-users file); its system prompt
    or description replaces `persona` and its evaluations are added."""
    simulated_user: SkipJsonSchema[SimulatedUser | None] = None
    """The simulated user `user` names, resolved by the loader."""
    goal: str | None = None
    """What the user wants; defaults to `description`."""
    opening_message: str | None = None
    """Sent verbatim as the first message (saves one model call)."""
    instructions: str | None = None
    context: str | None = None
    """Scenario context: the situation the user is in."""
    min_turns: int | None = Field(default=None, ge=1)
    """Turns before the user may stop; default 1 (or 80% of max_turns with
    `min_turns_default: ratio`)."""
    min_turns_default: Literal["one", "ratio"] = "one"
    max_turns: int = Field(default=6, ge=1, le=50)
    files: list[str] = Field(default_factory=list[str])
    """Paths of files sent with every user message (relative to the test file when
    loaded), as a document the whole conversation is about."""

    @model_validator(mode="after")
    def _turns(self) -> SimulatedScenario:
        if self.min_turns is not None and self.min_turns > self.max_turns:
            raise ValueError(
                f"min_turns ({self.min_turns}) is above max_turns "
                f"({self.max_turns}); lower min_turns or raise max_turns"
            )
        if not (self.goal or self.description):
            raise ValueError(
                "a simulated scenario needs a `goal` (or a `description`) "
                "so the simulated user knows what it wants"
            )
        most = self.max_turns
        self._check_turns_within(
            most,
            f"the conversation has at most max_turns ({most}) "
            f"turns; use 1 to {most} (or -1 to -{most}) or raise max_turns",
        )
        return self

    @property
    def played_persona(self) -> str:
        """Who the simulated user is: its reusable simulated user's `system_prompt` (the
        whole persona), else that user's description and job title, else `persona`."""
        user = self.simulated_user
        if user is None:
            return self.persona
        if user.system_prompt and user.system_prompt.strip():
            return user.system_prompt.strip()
        job = f" Job title: {user.job_title.strip()}." if user.job_title.strip() else ""
        return user.description.strip() + job

    @property
    def user_goal(self) -> str:
        """`goal`, else `description` (validation makes sure one is given)."""
        return self.goal or self.description or ""

    @property
    def all_criteria(self) -> list[Criterion]:
        """Success criteria then restrictions; with none of them, no check, evaluation or
        tool-argument rubric, the default criterion `GOAL_CRITERION_ID`: "The assistant
        helps the user achieve their goal: <goal>"."""
        given = super().all_criteria
        if given or self.checks or self.evaluations or self.tool_args_judge:
            return given
        text = f"The assistant helps the user achieve their goal: {self.user_goal}"
        return [Criterion(id=GOAL_CRITERION_ID, text=_clip(text, 500))]

    @property
    def effective_min_turns(self) -> int:
        """`min_turns`, else 80% of `max_turns` (rounded down, >= 1) or 1."""
        if self.min_turns is not None:
            return self.min_turns
        if self.min_turns_default == "ratio":
            return max(1, int(self.max_turns * 0.8))
        return 1


class ScriptedScenario(ScenarioBase):
    """User messages written in the test are sent in order; agent replies are live. Steps
    may also put written agent messages into the history (`agent:`) or let a simulated user
    (`persona`, `goal`) write some messages (`simulate: N`)."""

    kind: Literal["scripted"] = "scripted"
    turns: list[ScriptedTurn] = Field(min_length=1)
    persona: str | None = None
    """Who the simulated user of `simulate:` steps is (default: a typical first-time user)."""
    user: str | None = Field(default=None, pattern=NAME_PATTERN, max_length=64)
    """A reusable simulated user by name, for `simulate:` steps (as a simulated scenario's
    `user`); its evaluations are added."""
    simulated_user: SkipJsonSchema[SimulatedUser | None] = None
    """The simulated user `user` names, resolved by the loader."""
    goal: str | None = None
    """What the simulated user of `simulate:` steps wants; defaults to `description`."""

    @property
    def simulates(self) -> bool:
        """Whether a `simulate:` step needs the simulated-user model."""
        return any(t.simulate is not None for t in self.turns)

    @model_validator(mode="after")
    def _check_turns_exist(self) -> ScriptedScenario:
        if self.simulates and not (self.goal or self.description):
            raise ValueError(
                "a `simulate:` step needs the scenario's `goal` (or `description`), so the "
                "simulated user knows what it wants; `persona` says who it is"
            )
        if all(t.user_messages == 0 for t in self.turns):
            raise ValueError("the script sends the agent nothing: add a `user:` or `simulate:`")
        count = sum(t.user_messages for t in self.turns)
        n = 0
        for index, step in enumerate(self.turns):
            n += step.user_messages
            for k, check in enumerate(step.checks):
                if check.turn is not None and abs(check.turn) > n:
                    raise ValueError(_turn_check_problem(index, n, k, check.turn, count))
        self._check_turns_within(
            count,
            f"the scenario has {count} scripted turns; use a turn "
            f"from 1 to {count} (or -1 to -{count})",
        )
        return self


def _turn_check_problem(index: int, n: int, k: int, turn: int, count: int) -> str:
    where = f"turns[{index}].checks[{k}] looks at turn {turn}, but a check in turn {n} "
    if turn < 0:
        return (
            where + f"runs when only {n} turns exist, so it can look back to turn -{n}; "
            "move it to the scenario's `checks:`"
        )
    move = (
        f"move it to turn {turn}'s checks or to the scenario's `checks:`"
        if turn <= count
        else f"the scenario has only {count} scripted turn{'' if count == 1 else 's'}"
    )
    return where + f"can only look at turns 1..{n} (or negative turns); {move}"


EXPECTED_OUTPUT_ID = "expected_output"  # the criterion id the runner gives expected_output


class SingleTurnScenario(ScenarioBase):
    """One prompt, one reply (Q&A); `expected_output` is shown to the judge as reference."""

    kind: Literal["single_turn"] = "single_turn"
    prompt: str
    files: list[str] = Field(default_factory=list[str])
    """Paths of files sent with the prompt (relative to the test file when loaded)."""
    expected_output: str | None = None
    should: list[ConditionText] = Field(default_factory=list[ConditionText])

    @field_validator("should", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _single_turn_rules(self) -> SingleTurnScenario:
        if self.expected_output and any(c.id == EXPECTED_OUTPUT_ID for c in self.all_criteria):
            raise ValueError(
                f"criterion id {EXPECTED_OUTPUT_ID!r} is reserved when "
                "`expected_output` is given: sparring judges the expected output "
                "as a criterion with that id; rename this criterion (e.g. "
                "`id: expected_answer`)"
            )
        self._check_turns_within(
            1, "a single-turn scenario has only turn 1; use `turn: 1` or leave `turn` out"
        )
        return self


def scenario_kind(value: Any) -> str:
    """Kind of a scenario mapping: explicit `kind`, else `turns` -> scripted, `prompt` ->
    single_turn, otherwise simulated."""
    if is_raw_mapping(value):
        if "kind" in value:
            return value["kind"]
        if "turns" in value:
            return "scripted"
        if "prompt" in value:
            return "single_turn"
        return "simulated"
    return getattr(value, "kind", "simulated")


Scenario = Annotated[
    Annotated[SimulatedScenario, Tag("simulated")]
    | Annotated[ScriptedScenario, Tag("scripted")]
    | Annotated[SingleTurnScenario, Tag("single_turn")]
    | Annotated[RedTeamScenario, Tag("red_team")],
    Discriminator(
        scenario_kind,
        custom_error_type="scenario_kind",
        custom_error_message="`kind` is one of: simulated, scripted, single_turn, red_team",
    ),
]
AnyScenario = SimulatedScenario | ScriptedScenario | SingleTurnScenario | RedTeamScenario
"""A `red_team` scenario is expanded into attacks (`sparring.redteam`) before a run."""


def has_something_to_check(scenario: AnyScenario) -> bool:
    """True when the scenario has at least one criterion, check, `should`, expected output,
    evaluation or tool-argument rubric."""
    if scenario.all_criteria or scenario.checks or isinstance(scenario, RedTeamScenario):
        return True
    if scenario.evaluations or scenario.tool_args_judge:
        return True
    if isinstance(scenario, ScriptedScenario):
        return any(t.checks or t.should for t in scenario.turns)
    if isinstance(scenario, SingleTurnScenario):
        return bool(scenario.should or scenario.expected_output)
    return False


def unseen_tool_calls(target: object, checks: Iterable[Check]) -> str | None:
    """Why `checks` cannot see tool calls on `target`, or `None` when they can.

    An http or a2a target spec without `tool_calls_path` records no tool calls, so a
    `tool_called` / `tool_args` check on it would pass or fail on nothing (`exclude` always
    passes): a configuration error, in test files and Python tests alike.

    Args:
        target: A target spec; anything else (a Target object, `None`) is never a problem.
        checks: The checks run on the target's replies.

    Returns:
        The reason and the fix, to follow "... checks tool calls, but ": "its http target
        does not say where they are in the reply, so it records none; add
        `tool_calls_path:` to the target (e.g. ...)".
    """
    if (
        not isinstance(target, HttpTargetSpec | A2ATargetSpec)
        or target.tool_calls_path is not None
        or not any(c.type in ("tool_called", "tool_args") for c in checks)
    ):
        return None
    call = '{"name": ..., "arguments": {...}}'
    example = (
        f'`tool_calls_path: tool_calls` for a reply like {{"reply": ..., "tool_calls": [{call}]}}'
        if isinstance(target, HttpTargetSpec)
        else "`tool_calls_path: metadata.toolCalls` for a task (A2A JSON, camelCase) whose "
        f'metadata is {{"toolCalls": [{call}]}}; A2A has no standard place for them'
    )
    return (
        f"its {target.type} target does not say where they are in the reply, so it "
        f"records none; add `tool_calls_path:` to the target (e.g. {example})"
    )


class TestFile(BaseModel):
    """A test file: one `target` shared by its `scenarios` (a test set)."""

    __test__ = False  # not a pytest test class
    model_config = FROZEN
    target: TargetSpec | None = None
    scenarios: list[Scenario] = Field(min_length=1)
