"""Evaluations in trials: one judge call, score, gates, `done`, tool-argument rubrics and
`explain_failures`, run end to end with the scripted model and target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from sparring.errors import ModelError
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult, TrialResult
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, ToolCall

pytestmark = pytest.mark.anyio

REPLY = "Your refund of $42 is on its way today."
EVALUATION = {
    "name": "quality",
    "prompt": "How well was the refund handled?",
    "insights": [
        {"name": "resolved", "type": "boolean"},
        {"name": "tone", "type": "score"},
    ],
}
GATED = {
    "name": "gate",
    "prompt": "Was the refund granted?",
    "insights": [{"name": "refunded", "type": "boolean", "pass_when": True}],
}


def scenario(**extra: Any) -> ScriptedScenario:
    return ScriptedScenario.model_validate(
        {"id": "refund", "turns": [{"user": "Where is my refund?"}], **extra}
    )


class Judge:
    """A scripted judge: every verdict `verdict`, every insight value from `values` (or
    true / 0.5 by type), quoting the agent's reply; an explanation for a plain call."""

    def __init__(
        self,
        *,
        verdict: str = "met",
        values: dict[str, Any] | None = None,
        explanation: str | Exception = "It never said when.",
    ) -> None:
        self.verdict, self.values, self.explanation = verdict, values or {}, explanation
        self.model = ScriptedModel(handler=self.answer, name="scripted:judge")

    def answer(self, messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        if schema is None:
            return self.explanation
        properties = schema["properties"]
        quote = "refund of $42"
        verdicts = {
            i: {"reason": "r", "evidence": [quote], "turns": [1], "verdict": self.verdict}
            for i in properties.get("verdicts", {}).get("required", [])
        }
        insights: dict[str, Any] = {}
        for i, spec in properties.get("insights", {}).get("properties", {}).items():
            kind = spec["properties"]["value"]["type"]
            value = self.values.get(i, True if kind == "boolean" else 0.5)
            insights[i] = {"reasoning": "r", "evidence": [quote], "turns": [1], "value": value}
        answer: dict[str, Any] = {"replies": {}}
        if verdicts:
            answer["verdicts"] = verdicts
        if insights:
            answer["insights"] = insights
        return answer

    @property
    def calls(self) -> int:
        return len(self.model.calls)


async def run(
    *scenarios: ScriptedScenario,
    judge: Judge | None = None,
    reply: str | Message = REPLY,
    settings: RunSettings | None = None,
    scrub: Any = None,
) -> RunResult:
    return await run_scenarios(
        list(scenarios),
        targets=lambda _s: ScriptedTarget([reply] * 5),
        user_model=None,
        judge_model=None if judge is None else judge.model,
        settings=settings or RunSettings(parallel=1),
        scrub=scrub,
    )


def only_trial(result: RunResult) -> TrialResult:
    (s,) = result.scenarios
    (t,) = s.trials
    return t


async def test_nothing_to_judge_ends_done_not_passed_and_exits_0() -> None:
    result = await run(scenario(), judge=Judge())
    trial = only_trial(result)
    assert trial.status == "done" and trial.score is None
    assert trial.evaluations_passed == "none"
    (s,) = result.scenarios
    assert s.status == "done" and s.pass_rate is None and s.passed_trials == 0
    assert result.exit_code == 0 and result.counts() == {"done": 1}


async def test_an_empty_reply_still_fails_a_conversation_with_nothing_else_to_judge() -> None:
    result = await run(scenario(), judge=Judge(), reply="")
    assert only_trial(result).status == "failed" and result.exit_code == 1


async def test_evaluations_only_are_scored_in_one_call_and_end_done() -> None:
    judge = Judge(values={"quality.tone": 0.2})
    result = await run(scenario(evaluations=[EVALUATION]), judge=judge)
    trial = only_trial(result)
    assert judge.calls == 1 and trial.usage.model_calls == 1
    assert trial.status == "done" and trial.evaluations_passed == "none"
    assert [(i.id, i.value) for i in trial.insights] == [
        ("quality.resolved", True),
        ("quality.tone", 0.2),
    ]
    assert trial.score == pytest.approx(0.6)


async def test_criteria_and_evaluations_share_the_one_judge_call() -> None:
    judge = Judge()
    spec = scenario(criteria=["Says when", "Names the amount"], evaluations=[EVALUATION, GATED])
    result = await run(spec, spec.model_copy(update={"id": "again"}), judge=judge)
    assert judge.calls == 2  # one per trial
    for s in result.scenarios:
        (trial,) = s.trials
        assert trial.status == "passed" and trial.evaluations_passed == "yes"
        assert len(trial.insights) == 3 and trial.score == pytest.approx(2.5 / 3)


async def test_a_gating_insight_that_does_not_pass_fails_the_trial() -> None:
    judge = Judge(values={"gate.refunded": False})
    result = await run(scenario(evaluations=[GATED]), judge=judge)
    trial = only_trial(result)
    assert trial.status == "failed" and trial.evaluations_passed == "no"
    assert result.exit_code == 1


async def test_a_gating_insight_in_error_makes_the_trial_error() -> None:
    judge = Judge(values={"gate.refunded": "maybe"})
    result = await run(scenario(criteria=["Says when"], evaluations=[GATED]), judge=judge)
    trial = only_trial(result)
    assert trial.status == "error" and trial.evaluations_passed == "no"
    assert (trial.error or "").startswith("gate.refunded could not be scored")
    assert judge.calls == 2  # the one call and its one repair
    assert result.exit_code == 3


async def test_a_non_gating_insight_error_does_not_fail_the_trial() -> None:
    judge = Judge(values={"quality.tone": 7})
    result = await run(scenario(criteria=["Says when"], evaluations=[EVALUATION]), judge=judge)
    trial = only_trial(result)
    assert trial.status == "passed"
    assert [i.status for i in trial.insights] == ["ok", "error"]
    assert trial.score == 0.5  # the errored insight scores 0, as an error criterion is not met


async def test_an_errored_insight_never_raises_the_score() -> None:
    weighted = {
        "name": "quality",
        "prompt": "How well was the refund handled?",
        "insights": [
            {"name": "resolved", "type": "boolean"},
            {"name": "tone", "type": "score", "weight": 2},
            {"name": "kind", "type": "category", "options": ["a", "b"], "score_map": {"a": 1}},
            {"name": "other", "type": "category", "options": ["a", "b"]},
            {"name": "note", "type": "text"},
        ],
    }
    values = {"quality.tone": 1.5, "quality.kind": "c", "quality.other": "c", "quality.note": 3}
    result = await run(scenario(evaluations=[weighted]), judge=Judge(values=values))
    trial = only_trial(result)
    assert [i.score for i in trial.insights] == [1.0, 0.0, 0.0, None, None]
    assert trial.score == pytest.approx(1 / 4)  # resolved 1 of weights 1 + 2 + 1


async def test_evaluations_only_with_every_insight_in_error_is_an_error() -> None:
    judge = Judge()
    judge.model = ScriptedModel([ModelError("judge down")], name="scripted:judge")
    result = await run(scenario(evaluations=[EVALUATION]), judge=judge)
    trial = only_trial(result)
    assert trial.status == "error" and "judge down" in (trial.error or "")


async def test_gates_are_pending_without_a_judge_model() -> None:
    result = await run(scenario(criteria=["Says when"], evaluations=[GATED]))
    trial = only_trial(result)
    assert trial.status == "skipped" and trial.evaluations_passed == "pending"
    assert trial.insights == []


async def test_gates_are_pending_when_a_check_already_failed() -> None:
    spec = scenario(checks=[{"contains": "tomorrow"}], evaluations=[GATED])
    judge = Judge()
    trial = only_trial(await run(spec, judge=judge))
    assert trial.status == "failed" and trial.evaluations_passed == "pending"
    assert judge.calls == 0


def lookup(arguments: Any) -> Message:
    return Message(
        role="agent",
        content=REPLY,
        tool_calls=(ToolCall.from_arguments("lookup_order", arguments),),
    )


RUBRIC = {"tool": "lookup_order", "rubric": "The order id is the one the user gave"}


async def test_tool_args_judge_never_called_is_not_met_without_asking() -> None:
    judge = Judge()
    trial = only_trial(await run(scenario(tool_args_judge=RUBRIC), judge=judge))
    (verdict,) = trial.verdicts
    assert verdict.id == "tool_args.lookup_order" and verdict.status == "not_met"
    assert "never called lookup_order" in verdict.reason
    assert judge.calls == 0 and trial.status == "failed"


async def test_tool_args_judge_with_arguments_that_do_not_parse_is_not_met() -> None:
    judge = Judge()
    spec = scenario(tool_args_judge=[RUBRIC])
    trial = only_trial(await run(spec, judge=judge, reply=lookup('{"order_id": 42')))
    (verdict,) = trial.verdicts
    assert verdict.status == "not_met" and "parse as JSON" in verdict.reason
    assert judge.calls == 0


async def test_tool_args_judge_grades_the_rubric_in_the_same_judge_call() -> None:
    judge = Judge()
    spec = scenario(
        criteria=["Says when"], tool_args_judge={**RUBRIC, "id": "order-id"}, evaluations=[GATED]
    )
    trial = only_trial(await run(spec, judge=judge, reply=lookup({"order_id": "4411"})))
    assert judge.calls == 1
    assert [(v.id, v.status) for v in trial.verdicts] == [("c1", "met"), ("order-id", "met")]
    prompt = judge.model.calls[0][0][-1]["content"]
    assert "- order-id (about the arguments of the agent's lookup_order calls)" in prompt
    assert '(tool call) lookup_order {"order_id": "4411"}' in prompt
    schema = judge.model.calls[0][1] or {}
    assert schema["properties"]["verdicts"]["required"] == ["c1", "order-id"]
    assert trial.verdicts[1].description.startswith("lookup_order arguments: ")


async def test_explain_failures_adds_one_call_per_failed_trial_only() -> None:
    judge = Judge(verdict="not_met")
    settings = RunSettings(parallel=1, explain_failures=True)
    spec = scenario(criteria=["Says when"], trials=2)
    result = await run(spec, judge=judge, settings=settings)
    trials = result.scenarios[0].trials
    assert [t.status for t in trials] == ["failed", "failed"]
    assert judge.calls == 4 and all(t.usage.model_calls == 2 for t in trials)
    assert all(t.explanation == "It never said when." for t in trials)
    prompt = judge.model.calls[1][0]
    assert "c1 (Says when): r" in prompt[-1]["content"]
    passing = Judge()
    result = await run(spec, judge=passing, settings=settings)
    assert passing.calls == 2 and all(t.explanation is None for t in result.scenarios[0].trials)


async def test_explain_failures_is_off_by_default_and_a_scenario_can_turn_it_on() -> None:
    judge = Judge(verdict="not_met")
    trial = only_trial(await run(scenario(criteria=["Says when"]), judge=judge))
    assert judge.calls == 1 and trial.explanation is None
    own = scenario(criteria=["Says when"], explain_failures=True)
    trial = only_trial(await run(own, judge=judge))
    assert judge.calls == 3 and trial.explanation == "It never said when."
    off = scenario(criteria=["Says when"], explain_failures=False)
    trial = only_trial(
        await run(off, judge=judge, settings=RunSettings(parallel=1, explain_failures=True))
    )
    assert judge.calls == 4 and trial.explanation is None


async def test_a_failed_explanation_call_leaves_the_verdict_and_notes_why() -> None:
    judge = Judge(verdict="not_met", explanation=ModelError("quota exceeded"))
    settings = RunSettings(parallel=1, explain_failures=True)
    trial = only_trial(await run(scenario(criteria=["Says when"]), judge=judge, settings=settings))
    assert trial.status == "failed" and trial.explanation is None
    assert "no explanation (explain_failures)" in (trial.error or "")
    assert "quota exceeded" in (trial.error or "")
    assert trial.usage.model_calls == 2  # the failed call is counted too


async def test_evaluations_without_a_judge_model_are_skipped_not_done() -> None:
    trial = only_trial(await run(scenario(evaluations=[EVALUATION])))
    assert trial.status == "skipped" and trial.end_reason == "skipped"
    assert trial.insights == [] and trial.evaluations_passed == "none"


async def test_an_insights_error_and_text_keep_no_secret() -> None:
    secret = "sk-live-0123456789"
    text = {"name": "notes", "prompt": "Notes?", "insights": [{"name": "note", "type": "text"}]}
    judge = Judge(values={"quality.tone": f"about {secret}", "notes.note": f"saw {secret}"})
    spec = scenario(criteria=["Says when"], evaluations=[EVALUATION, text])
    trial = only_trial(await run(spec, judge=judge, scrub=lambda t: t.replace(secret, "***")))
    dumped = trial.model_dump_json()
    assert secret not in dumped and "about ***" in dumped and "saw ***" in dumped
