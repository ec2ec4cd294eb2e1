"""Python tests take what YAML scenarios take, under the same names: adaptive `trials`,
`tool_args_judge` and `explain_failures` on `@suite.scenario`, and those plus `evaluations`
on `@pytest.mark.sparring`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import pytest

from sparring.api import Suite, ToolArgsJudge, TrialRange
from sparring.errors import UserError
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel

pytest_plugins = ["pytester"]

LOOKUP = {"name": "lookup_order", "arguments": {"order_id": "4411"}}


def calls_the_tool(history: list[dict[str, str]]) -> Any:
    return "Order 4411 ships today.", [LOOKUP]


def answers_only(history: list[dict[str, str]]) -> str:
    return "It ships today."


class Judge:
    """A scripted judge: every verdict `verdict` quoting the order id; plain text for an
    explanation call."""

    def __init__(self, verdict: str = "met") -> None:
        self.verdict = verdict
        self.model = ScriptedModel(handler=self.answer, name="scripted:judge")

    def answer(self, messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        if schema is None:
            return "It looked up the wrong order; check the id the customer gave."
        wanted = schema["properties"]["verdicts"]["required"]
        entry = {"reason": "r", "evidence": ["4411"], "turns": [1], "verdict": self.verdict}
        return {"verdicts": {i: entry for i in wanted}, "replies": {}}


def test_adaptive_trials_stop_once_the_interval_clears_the_threshold() -> None:
    suite = Suite(target=answers_only)

    @suite.scenario(trials={"min": 2, "max": 10}, threshold=0.5)
    async def test_always_passes() -> None:
        async with suite.session() as session:
            await session.send("When does it ship?")

    (scenario,) = suite.run(store=False).scenarios
    assert (scenario.planned_trials, scenario.max_trials) == (2, 10)
    assert scenario.status == "passed" and scenario.decision == "passed"
    assert 4 <= len(scenario.trials) < 10  # 4/4 clears 50%; those in flight then count too

    other = Suite(target=answers_only)
    other.scenario(trials=TrialRange(min=1, max=3))(test_always_passes)
    assert other.tests[0].trials == TrialRange(min=1, max=3)


def test_the_tool_argument_rubric_is_judged_after_the_body() -> None:
    judge = Judge()
    suite = Suite(target=calls_the_tool, model=judge.model)
    rubric = {"tool": "lookup_order", "rubric": "The order id is the one the customer gave"}

    @suite.scenario(tool_args_judge=rubric)
    async def test_looks_up() -> None:
        async with suite.session() as session:
            await session.send("Where is order 4411?")

    (scenario,) = suite.run(store=False).scenarios
    (verdict,) = scenario.trials[0].verdicts
    assert (verdict.id, verdict.status) == ("tool_args.lookup_order", "met")
    assert scenario.status == "passed" and len(judge.model.calls) == 1


def test_a_tool_never_called_fails_the_rubric_without_a_model_call() -> None:
    judge = Judge()
    suite = Suite(target=answers_only, model=judge.model)

    @suite.scenario(tool_args_judge=[ToolArgsJudge(tool="lookup_order", rubric="Right id")])
    async def test_looks_up() -> None:
        async with suite.session() as session:
            await session.send("Where is order 4411?")

    (scenario,) = suite.run(store=False).scenarios
    (verdict,) = scenario.trials[0].verdicts
    assert verdict.status == "not_met" and scenario.status == "failed"
    assert judge.model.calls == []


def test_explain_failures_on_a_python_test_explains_its_failed_trial() -> None:
    judge = Judge(verdict="not_met")
    suite = Suite(target=calls_the_tool, model=judge.model)

    @suite.scenario(
        tool_args_judge={"tool": "lookup_order", "rubric": "Right id"}, explain_failures=True
    )
    async def test_looks_up() -> None:
        async with suite.session() as session:
            await session.send("Where is order 4411?")

    (scenario,) = suite.run(store=False).scenarios
    (trial,) = scenario.trials
    assert trial.status == "failed"
    assert trial.explanation == "It looked up the wrong order; check the id the customer gave."
    assert len(judge.model.calls) == 2  # the judge call and the explanation


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trials": {"min": 5, "max": 2}}, "trials {'min': 5, 'max': 2}: .*must not be above"),
        ({"trials": 0}, "trials must be a whole number from 1 to 100, got 0"),
        ({"trials": 3, "repetitions": 2}, "give trials= or repetitions=, not both"),
        ({"tool_args_judge": {"tool": "x"}}, r"tool_args_judge\[0\]: rubric: Field required"),
        ({"tool_args_judge": "x"}, "tool_args_judge must be a rubric or a list of them"),
        ({"explain_failures": "yes"}, "explain_failures must be True or False, got 'yes'"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        Suite(target=answers_only).scenario(**options)


MARKED = """
import pytest
from sparring.api import Evaluation

from shop import reply

CHECKED = Evaluation.model_validate(
    {"name": "booking", "prompt": "Booked?", "insights": [{"name": "ok", "type": "boolean",
     "pass_when": True}]}
)


@pytest.mark.sparring(trials={"min": 2, "max": 6}, threshold=0.5, live=False)
async def test_adaptive(sparring):
    async with sparring.session(reply) as session:
        await session.send("hello")


@pytest.mark.sparring(
    live=False, tool_args_judge={"tool": "create_booking", "rubric": "A time is given"}
)
async def test_rubric(sparring):
    async with sparring.session(reply) as session:
        await session.send("hello")


@pytest.mark.sparring(live=False, evaluations=[CHECKED], explain_failures=False)
async def test_evaluated(sparring):
    async with sparring.session(reply) as session:
        await session.send("hello")


@pytest.mark.sparring(evaluations=["booking"], live=False)
def test_named_evaluation():
    pass
"""


def test_the_marker_takes_trial_ranges_rubrics_and_evaluations(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(shop="def reply(history):\n    return 'Hello!'\n")
    pytester.makepyfile(test_marked=textwrap.dedent(MARKED))
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines_random(
        [
            "*test_adaptive PASSED*",
            "*test_rubric FAILED*",
            "*test_evaluated PASSED*",
            "*test_named_evaluation FAILED*",
            "*tool_args.create_booking (*) not met*",
            "*test_named_evaluation(evaluations=...) takes sparring Evaluation objects*",
        ]
    )
