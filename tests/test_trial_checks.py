"""Checks inside a trial (issue 9): they read what the agent really said while what is kept is
masked, an empty reply fails the trial, `end_reason` checks, judging after a failed check,
the default goal criterion, and the labels a scenario result keeps."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from sparring.events import Event, VerdictAdded
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult, TrialResult
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import (
    AnyScenario,
    ScriptedScenario,
    SimulatedScenario,
    SingleTurnScenario,
)
from sparring.targets.scripted import Reply, ScriptedTarget

pytestmark = pytest.mark.anyio

SECRET = "tok-9f8e7d6c5b"


def mask(text: str) -> str:
    return text.replace(SECRET, "***")


def scripted(**kw: Any) -> ScriptedScenario:
    return ScriptedScenario.model_validate({"id": "s", **kw})


async def run(
    scenario: AnyScenario,
    replies: Sequence[Reply],
    *,
    model: ScriptedModel | None = None,
    settings: RunSettings | None = None,
) -> tuple[RunResult, TrialResult, list[Event]]:
    events: list[Event] = []
    result = await run_scenarios(
        [scenario],
        targets=lambda s: ScriptedTarget(replies),
        user_model=model,
        judge_model=model,
        settings=settings or RunSettings(),
        observer=events.append,
        scrub=mask,
    )
    return result, result.scenarios[0].trials[0], events


def judge_and_user(
    verdicts: dict[str, str], *, user: Sequence[dict[str, Any]] = (), quote: str = ""
) -> ScriptedModel:
    """A model that answers judge prompts with `verdicts` (each quoting `quote`) and
    simulated-user prompts with `user`, in order."""
    said = iter(user)

    def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        if "verdicts" not in (schema or {}).get("properties", {}):
            return next(said)
        return {
            "verdicts": {
                i: {"verdict": s, "reason": f"{i} is {s}", "evidence": [quote], "turns": [1]}
                for i, s in verdicts.items()
            },
            "replies": {},
        }

    return ScriptedModel(handler=answer)


def judge_prompts(model: ScriptedModel) -> list[str]:
    return [
        str(messages[-1]["content"])
        for messages, schema in model.calls
        if "verdicts" in (schema or {}).get("properties", {})
    ]


# --- checks read the real text; what is kept is masked ------------------------------------


async def test_not_contains_a_secret_fails_when_the_agent_echoes_it() -> None:
    scenario = scripted(
        turns=[
            {"user": "What is my token?", "checks": [{"not_contains": SECRET}]},
            {"user": "And again?"},
        ],
        checks=[{"not_contains": SECRET}, {"regex": "tok-[0-9a-f]{10}"}],
    )
    result, trial, events = await run(scenario, [f"Your token is {SECRET}.", f"Still {SECRET}."])
    assert trial.status == "failed"
    assert {v.id: v.status for v in trial.verdicts} == {
        "t1.check1": "not_met",
        "check1": "not_met",
        "check2": "met",
    }
    first = trial.verdicts[0]
    assert first.reason == 'expected no reply to contain "***", but turn 1: "Your token is ***."'
    assert first.evidence == ('turn 1: "Your token is ***."',)
    assert first.description == 'does not contain "***"'
    assert trial.verdicts[2].evidence == ('turn 1: "Your token is ***."',)
    kept = [e.verdict for e in events if isinstance(e, VerdictAdded)]
    assert kept == trial.verdicts  # the live view gets the masked verdicts too
    assert SECRET not in json.dumps(result.report_dict())
    assert result.exit_code == 1


async def test_a_check_that_needs_the_secret_to_pass_sees_it() -> None:
    scenario = scripted(turns=[{"user": "Token?", "checks": [{"contains": SECRET}]}])
    result, trial, _ = await run(scenario, [f"It is {SECRET}"])
    assert trial.status == "passed"
    assert trial.verdicts[0].evidence == ('turn 1: "It is ***"',)
    assert SECRET not in result.model_dump_json()


# --- the built-in empty-reply check --------------------------------------------------------


@pytest.mark.parametrize("empty", ["", "   \n", "\u200b"])
async def test_an_empty_reply_fails_the_trial_and_names_its_turn(empty: str) -> None:
    scenario = scripted(
        turns=[{"user": "hi", "checks": [{"contains": "hello"}]}, {"user": "are you there?"}],
        criteria=["The assistant is polite"],
    )
    model = ScriptedModel([])  # a decided trial makes no judge call
    result, trial, _ = await run(scenario, ["hello!", empty], model=model)
    assert trial.status == "failed"
    empty_reply = trial.verdicts[1]
    assert (empty_reply.id, empty_reply.status, empty_reply.turn) == ("empty_reply", "not_met", 2)
    assert empty_reply.reason.startswith("the agent sent no reply at turn 2")
    assert model.calls == []
    assert trial.verdicts[2].status == "skipped"
    assert "check empty_reply (the agent replies at every turn) already failed" in (
        trial.verdicts[2].reason
    )
    assert result.exit_code == 1


async def test_allow_empty_replies_turns_the_check_off() -> None:
    scenario = scripted(
        turns=[{"user": "hi", "checks": [{"contains": "hello"}]}, {"user": "ok"}],
        allow_empty_replies=True,
    )
    _, trial, _ = await run(scenario, ["hello!", ""])
    assert trial.status == "passed"
    assert [v.id for v in trial.verdicts] == ["t1.check1"]


async def test_an_empty_reply_in_a_simulated_conversation_fails_it() -> None:
    scenario = SimulatedScenario(
        id="sim", goal="Get a refund", opening_message="Refund please", max_turns=2
    )
    model = judge_and_user({}, user=[{"message": "Hello?", "done": False, "done_reason": None}])
    _, trial, _ = await run(scenario, ["Sure, which order?", " "], model=model)
    assert trial.status == "failed"
    assert trial.verdicts[0].reason.startswith("the agent sent no reply at turn 2")
    assert judge_prompts(model) == []


# --- end_reason ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wanted", "status"), [(["goal_achieved", "user_gave_up"], "met"), (["max_turns"], "not_met")]
)
async def test_end_reason_checks_how_the_simulated_conversation_ended(
    wanted: list[str], status: str
) -> None:
    scenario = SimulatedScenario.model_validate(
        {
            "id": "sim",
            "goal": "Get a refund",
            "opening_message": "Refund please",
            "max_turns": 3,
            "checks": [{"end_reason": wanted}],
        }
    )
    model = judge_and_user({}, user=[{"message": "", "done": True, "done_reason": "goal_achieved"}])
    _, trial, _ = await run(scenario, ["Refunded."], model=model)
    assert trial.end_reason == "goal_achieved"
    assert trial.verdicts[0].status == status
    if status == "not_met":
        assert trial.verdicts[0].reason == (
            "expected the conversation to end with max_turns; it ended with goal_achieved"
        )


async def test_a_scripted_scenario_ends_with_script_done() -> None:
    scenario = scripted(turns=[{"user": "hi"}], checks=[{"end_reason": "script_done"}])
    _, trial, _ = await run(scenario, ["hello"])
    assert trial.status == "passed"


# --- judging after a failed check ----------------------------------------------------------


def failing(**kw: Any) -> ScriptedScenario:
    return scripted(
        turns=[{"user": "hi", "checks": [{"contains": "welcome"}], "should": "greet the user"}],
        criteria=["The assistant is polite"],
        **kw,
    )


async def test_judge_after_failed_checks_judges_the_trial_a_check_failed() -> None:
    model = judge_and_user({"c1": "met", "t1.should1": "not_met"}, quote="go away")
    _, trial, _ = await run(failing(judge_after_failed_checks=True), ["go away"], model=model)
    assert len(judge_prompts(model)) == 1
    assert trial.status == "failed"
    assert {v.id: v.status for v in trial.verdicts} == {
        "t1.check1": "not_met",
        "c1": "met",
        "t1.should1": "not_met",
    }


async def test_the_setting_judges_after_failed_checks_in_every_scenario() -> None:
    model = judge_and_user({"c1": "met", "t1.should1": "met"}, quote="go away")
    settings = RunSettings(judge_after_failed_checks=True)
    _, trial, _ = await run(failing(), ["go away"], model=model, settings=settings)
    assert len(judge_prompts(model)) == 1
    assert trial.status == "failed"  # the check still fails the trial


async def test_by_default_a_failed_check_saves_the_judge_call() -> None:
    model = judge_and_user({"c1": "met", "t1.should1": "met"}, quote="go away")
    _, trial, _ = await run(failing(), ["go away"], model=model)
    assert judge_prompts(model) == []
    assert [v.status for v in trial.verdicts] == ["not_met", "skipped", "skipped"]


def test_run_settings_take_judge_after_failed_checks_from_the_settings() -> None:
    from sparring.config import load_settings

    settings = load_settings({}, env={"SPARRING_JUDGE_AFTER_FAILED_CHECKS": "1"})
    assert RunSettings.from_settings(settings).judge_after_failed_checks is True
    assert RunSettings.from_settings(load_settings({}, env={})).judge_after_failed_checks is False


# --- the default goal criterion ------------------------------------------------------------


async def test_a_simulated_scenario_without_criteria_is_judged_on_its_goal() -> None:
    scenario = SimulatedScenario(
        id="sim", description="Get a refund for order 10234", opening_message="Refund please"
    )
    model = judge_and_user(
        {"goal": "met"},
        user=[{"message": "", "done": True, "done_reason": "goal_achieved"}],
        quote="Refunded",
    )
    _, trial, _ = await run(scenario, ["Refunded."], model=model)
    [prompt] = judge_prompts(model)
    assert "The assistant helps the user achieve their goal: Get a refund for order 10234" in (
        prompt
    )
    assert [(v.id, v.kind, v.status) for v in trial.verdicts] == [("goal", "criterion", "met")]
    assert trial.status == "passed"


# --- labels kept on each scenario result ---------------------------------------------------


async def test_description_tags_and_single_turn_labels_are_kept_in_the_report() -> None:
    scenario = SingleTurnScenario.model_validate(
        {
            "id": "q",
            "prompt": "Can I pay by card?",
            "description": "Card payments are refused",
            "tags": ["payments", "smoke"],
            "category": "Harmless",
            "topic": "payments",
            "behavior": "Compliance",
            "checks": [{"contains": "no"}],
        }
    )
    result, _, _ = await run(scenario, ["No, sorry."])
    kept = result.report_dict()["scenarios"][0]  # type: ignore[index]
    assert {k: kept[k] for k in ("description", "tags", "category", "topic", "behavior")} == {
        "description": "Card payments are refused",
        "tags": ["payments", "smoke"],
        "category": "Harmless",
        "topic": "payments",
        "behavior": "Compliance",
    }
    plain, _, _ = await run(scripted(turns=[{"user": "x", "checks": [{"contains": "y"}]}]), ["y"])
    unlabelled = plain.scenarios[0]
    assert (unlabelled.description, unlabelled.tags, unlabelled.category) == (None, [], None)
