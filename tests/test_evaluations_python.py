"""`@suite.scenario(evaluations=[...])`: a Python test's own evaluations, scored in one judge
call per trial after its body, beside the suite's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from sparring.api import Evaluation, Suite
from sparring.errors import UserError
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel

REPLY = "Your table for two is booked at 8pm."
BOOKED = Evaluation.model_validate(
    {
        "name": "booking",
        "prompt": "Did the agent book the table?",
        "insights": [{"name": "booked", "type": "boolean", "pass_when": True}],
    }
)
TONE = Evaluation.model_validate(
    {"name": "tone", "prompt": "How polite?", "insights": [{"name": "polite", "type": "score"}]}
)


def agent(history: list[dict[str, str]]) -> str:
    return REPLY


def judge(values: dict[str, Any]) -> ScriptedModel:
    def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        wanted = (schema or {})["properties"]["insights"]["required"]
        entry = {"reasoning": "r", "evidence": ["booked at 8pm"], "turns": [1]}
        return {"insights": {i: {**entry, "value": values[i]} for i in wanted}, "replies": {}}

    return ScriptedModel(handler=answer, name="scripted:judge")


def suite_with(model: ScriptedModel) -> Suite:
    suite = Suite(target=agent, model=model, evaluations=[TONE])

    @suite.scenario(evaluations=[BOOKED])
    async def test_books() -> None:
        async with suite.session() as session:
            await session.send("A table for two at 8pm, please")

    return suite


def test_a_tests_evaluations_are_scored_with_the_suites_in_one_call() -> None:
    model = judge({"booking.booked": True, "tone.polite": 0.5})
    (scenario,) = suite_with(model).run(store=False).scenarios
    (trial,) = scenario.trials
    assert len(model.calls) == 1
    assert [(i.id, i.value) for i in trial.insights] == [
        ("tone.polite", 0.5),
        ("booking.booked", True),
    ]
    assert trial.status == "passed" and trial.evaluations_passed == "yes"
    assert trial.score == pytest.approx(0.75)


def test_a_tests_gating_insight_that_does_not_pass_fails_it() -> None:
    model = judge({"booking.booked": False, "tone.polite": 0.9})
    (scenario,) = suite_with(model).run(store=False).scenarios
    assert scenario.trials[0].status == "failed" and scenario.status == "failed"


def test_a_tests_evaluations_must_be_evaluations_named_apart_from_the_suites() -> None:
    suite = Suite(target=agent, evaluations=[TONE])
    with pytest.raises(UserError, match=r"names tone twice \(the suite's evaluations"):
        suite.scenario(evaluations=[TONE])
    with pytest.raises(UserError, match="takes sparring Evaluation objects, got str"):
        suite.scenario(evaluations=["booking"])  # type: ignore[list-item]


def test_explain_failures_explains_only_what_finally_failed() -> None:
    """A test expected to fail that fails has passed: no explanation call."""
    from sparring.runner import RunSettings

    model = ScriptedModel(["The agent booked it."], name="scripted:judge")
    suite = Suite(target=agent, model=model)

    @suite.scenario(expect_failure=True)
    async def test_refuses() -> None:
        async with suite.session() as session:
            reply = await session.send("Book a table")
            assert "cannot" in reply.message

    @suite.scenario
    async def test_declines() -> None:
        async with suite.session() as session:
            reply = await session.send("Book a table")
            assert "sorry" in reply.message

    settings = RunSettings(parallel=1, explain_failures=True)
    refuses, declines = suite.run(store=False, settings=settings).scenarios
    assert refuses.trials[0].status == "passed" and refuses.trials[0].explanation is None
    assert declines.trials[0].status == "failed"
    assert declines.trials[0].explanation == "The agent booked it." and len(model.calls) == 1
