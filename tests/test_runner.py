"""The runner end to end with fakes: ScriptedTarget for the agent, ScriptedModel for models."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from sparring.errors import ModelError, TargetError
from sparring.events import Event, TrialFinished, TrialStarted
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import (
    ScriptedScenario,
    SimulatedScenario,
    SingleTurnScenario,
)
from sparring.targets.base import Target
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, ToolCall

pytestmark = pytest.mark.anyio


def judge_says(quote: str = "", /, **statuses: str) -> dict[str, Any]:
    """A judge answer with the given verdict per id, each quoting `quote` (replies left for
    the judge to note)."""
    return {
        "verdicts": {
            i: {"verdict": s, "reason": f"{i} is {s}", "evidence": [quote], "turns": [1]}
            for i, s in statuses.items()
        },
        "replies": {},
    }


def user_says(message: str, *, done: bool = False, reason: str | None = None) -> dict[str, Any]:
    return {"message": message, "done": done, "done_reason": reason}


def always_valid(messages: Any, schema: dict[str, Any] | None) -> Any:
    return example_for_schema(schema or {})


async def run(
    scenarios: list[Any], target: Target, *, model: ScriptedModel | None = None, **settings: Any
):
    events: list[Event] = []
    result = await run_scenarios(
        scenarios,
        targets=lambda s: target,
        user_model=model,
        judge_model=model,
        settings=RunSettings(**settings),
        observer=events.append,
    )
    return result, events


def scripted(**kw: Any) -> ScriptedScenario:
    return ScriptedScenario.model_validate({"id": "s", **kw})


async def test_scripted_checks_run_without_a_model_and_shoulds_are_skipped() -> None:
    scenario = scripted(
        turns=[
            {
                "user": "Where is my order?",
                "checks": [{"contains": "order number"}],
                "should": "ask for the order number",
            },
            {"user": "10234", "checks": [{"tool_called": ["lookup_order"]}]},
        ]
    )
    target = ScriptedTarget(
        [
            "What is your order number?",
            Message(
                role="agent",
                content="It shipped.",
                tool_calls=(ToolCall.from_arguments("lookup_order", {"order_id": "10234"}),),
            ),
        ]
    )
    result, _ = await run([scenario], target)
    trial = result.scenarios[0].trials[0]
    assert trial.status == "passed"
    assert trial.end_reason == "script_done"
    assert [(v.id, v.status) for v in trial.verdicts] == [
        ("t1.check1", "met"),
        ("t2.check1", "met"),
        ("t1.should1", "skipped"),
    ]
    assert "--model" in trial.verdicts[-1].reason
    assert result.exit_code == 0


async def test_simulated_scenario_without_model_is_skipped_and_target_untouched() -> None:
    scenario = SimulatedScenario(id="sim", goal="Get a refund", criteria=["Apologises"])
    target = ScriptedTarget(["hello"])
    result, _ = await run([scenario], target)
    assert result.scenarios[0].status == "skipped"
    assert target.seen == []
    assert result.exit_code == 0


async def test_simulated_conversation_uses_turns_plus_one_model_calls() -> None:
    scenario = SimulatedScenario(
        id="sim",
        goal="Get a refund",
        max_turns=3,
        criteria=["Apologises"],
        restrictions=["Asks for a card"],
    )
    model = ScriptedModel(
        [
            user_says("Hi, refund please"),
            user_says("Order 1"),
            user_says("Thanks"),
            judge_says("b", c1="met", r1="met"),
        ]
    )
    result, _ = await run([scenario], ScriptedTarget(["a", "b", "c"]), model=model)
    trial = result.scenarios[0].trials[0]
    assert trial.status == "passed"
    assert trial.end_reason == "max_turns"
    assert [m.content for m in trial.transcript.messages] == [
        "Hi, refund please",
        "a",
        "Order 1",
        "b",
        "Thanks",
        "c",
    ]
    assert len(model.calls) == 3 + 1
    assert trial.usage.model_calls == 4


async def test_opening_message_saves_a_call_and_user_may_stop_after_min_turns() -> None:
    scenario = SimulatedScenario(
        id="sim", goal="g", opening_message="Hello", max_turns=5, min_turns=2, criteria=["Greets"]
    )
    model = ScriptedModel(
        [
            user_says("Second"),
            user_says("", done=True, reason="user_gave_up"),
            judge_says(c1="not_met"),
        ]
    )
    result, _ = await run([scenario], ScriptedTarget(["r1", "r2"]), model=model)
    trial = result.scenarios[0].trials[0]
    assert [m.content for m in trial.transcript.messages] == ["Hello", "r1", "Second", "r2"]
    assert trial.end_reason == "user_gave_up"
    assert trial.status == "failed"
    assert result.exit_code == 1


async def test_target_failure_mid_run_is_an_error_that_keeps_the_transcript() -> None:
    scenario = scripted(
        turns=[
            {"user": "one", "checks": [{"contains": "a"}]},
            {"user": "two", "checks": [{"contains": "b"}]},
        ]
    )
    target = ScriptedTarget(["a", TargetError("connection refused by 127.0.0.1:9")])
    result, _ = await run([scenario], target)
    trial = result.scenarios[0].trials[0]
    assert trial.status == "error"
    assert trial.end_reason == "target_error"
    assert "connection refused" in (trial.error or "")
    assert [m.content for m in trial.transcript.messages] == ["one", "a", "two"]
    assert result.scenarios[0].status == "error"
    assert result.exit_code == 3


async def test_failing_check_skips_the_judge_call() -> None:
    scenario = scripted(
        turns=[{"user": "hi", "checks": [{"contains": "welcome"}], "should": "greet"}],
        criteria=["Is polite"],
    )
    model = ScriptedModel([])
    result, _ = await run([scenario], ScriptedTarget(["go away"]), model=model)
    trial = result.scenarios[0].trials[0]
    assert model.calls == []
    assert trial.status == "failed"
    assert {v.id: v.status for v in trial.verdicts} == {
        "t1.check1": "not_met",
        "c1": "skipped",
        "t1.should1": "skipped",
    }


@pytest.mark.parametrize("answer", ["not json at all", {"verdicts": "nope"}])
async def test_unparseable_judge_answer_is_an_error_never_a_pass(answer: Any) -> None:
    scenario = SingleTurnScenario(id="q", prompt="Can I pay by card?", criteria=["Says no"])
    result, _ = await run(
        [scenario], ScriptedTarget(["No."]), model=ScriptedModel([answer, answer])
    )
    trial = result.scenarios[0].trials[0]
    assert trial.status == "error"
    assert [v.status for v in trial.verdicts] == ["error"]
    assert (trial.error or "").startswith("c1 could not be decided: the judge's answer")
    assert result.exit_code == 3


async def test_simulated_user_model_failure_is_a_model_error() -> None:
    scenario = SimulatedScenario(id="sim", goal="g", criteria=["x"])
    model = ScriptedModel([ModelError("HTTP 500 from the model after 4 retries")])
    result, _ = await run([scenario], ScriptedTarget([]), model=model)
    trial = result.scenarios[0].trials[0]
    assert (trial.status, trial.end_reason) == ("error", "model_error")
    assert "HTTP 500" in (trial.error or "")


async def test_conversation_timeout_gives_timed_out_with_partial_transcript() -> None:
    async def slow(_: Any) -> str:
        await anyio.sleep_forever()
        return "never"

    scenario = scripted(
        turns=[
            {"user": "one", "checks": [{"contains": "a"}]},
            {"user": "two", "checks": [{"contains": "b"}]},
        ],
        timeout_s=2,  # turn 1 must end well within it, even on a loaded machine
    )
    result, _ = await run([scenario], ScriptedTarget(["a", slow]))
    trial = result.scenarios[0].trials[0]
    assert (trial.status, trial.end_reason) == ("timed_out", "timeout")
    assert [m.content for m in trial.transcript.messages] == ["one", "a", "two"]


async def test_reply_timeout_is_a_target_error() -> None:
    async def slow(_: Any) -> str:
        await anyio.sleep(10)
        return "late"

    result, _ = await run(
        [scripted(turns=[{"user": "x", "checks": [{"contains": "a"}]}])],
        ScriptedTarget([slow]),
        reply_timeout_s=0.05,
    )
    trial = result.scenarios[0].trials[0]
    assert (trial.status, trial.end_reason) == ("error", "target_error")
    assert "0.05 s" in (trial.error or "")


async def test_trials_threshold_and_pass_hat_k() -> None:
    answers = iter(["yes", "no", "yes", "yes"])
    scenario = scripted(
        turns=[{"user": "ok?", "checks": [{"equals": "yes"}]}], trials=4, threshold="75%"
    )
    result, events = await run([scenario], ScriptedTarget([lambda t: next(answers)]), parallel=1)
    summary = result.scenarios[0].summary()
    assert [t.status for t in result.scenarios[0].trials] == [
        "passed",
        "failed",
        "passed",
        "passed",
    ]
    assert summary["pass_rate"] == 0.75
    assert summary["status"] == "passed"
    assert summary["pass_hat_k"][4] == 0.0
    assert summary["pass_hat_k"][1] == 0.75
    started = [e for e in events if isinstance(e, TrialStarted)]
    assert [(e.trial, e.trials) for e in started] == [(1, 4), (2, 4), (3, 4), (4, 4)]


async def test_single_turn_expected_output_is_judged_as_a_criterion() -> None:
    scenario = SingleTurnScenario(id="q", prompt="Capital of France?", expected_output="Paris")
    model = ScriptedModel([judge_says("Paris", expected_output="met")])
    result, _ = await run([scenario], ScriptedTarget(["Paris."]), model=model)
    trial = result.scenarios[0].trials[0]
    assert [(v.id, v.status) for v in trial.verdicts] == [("expected_output", "met")]
    judge_prompt = str(model.calls[0][0])
    assert "Paris" in judge_prompt


async def test_fail_fast_starts_no_new_trials_after_a_failure() -> None:
    scenarios = [
        scripted(id=f"s{i}", turns=[{"user": "x", "checks": [{"equals": "yes"}]}]) for i in range(4)
    ]
    result, events = await run(scenarios, ScriptedTarget(["no"]), parallel=1, fail_fast=True)
    finished = [e for e in events if isinstance(e, TrialFinished)]
    assert len(finished) == 1
    assert [s.status for s in result.scenarios] == ["failed", "not_run", "not_run", "not_run"]


async def test_many_conversations_run_concurrently_with_a_limit() -> None:
    in_flight, peak = 0, 0

    async def reply(_: Any) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.01)
        in_flight -= 1
        return "fine"

    scenarios = [
        scripted(id=f"s{i}", turns=[{"user": "x", "checks": [{"contains": "fine"}]}])
        for i in range(20)
    ]
    result, _ = await run(scenarios, ScriptedTarget([reply]), parallel=5)
    assert peak == 5
    assert all(s.status == "passed" for s in result.scenarios)


async def test_secret_values_echoed_by_the_agent_never_reach_results() -> None:
    reply = Message(
        role="agent",
        content="your key is s3cret-value",
        tool_calls=(ToolCall.from_arguments("login", {"key": "s3cret-value"}),),
        raw={"echo": "s3cret-value"},
    )
    scenario = scripted(
        turns=[
            {"user": "hi", "checks": [{"contains": "key"}]},
            {"user": "and?", "checks": [{"contains": "ok"}]},
        ]
    )
    target = ScriptedTarget([reply, "ok"])
    result = await run_scenarios(
        [scenario],
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        scrub=lambda text: text.replace("s3cret-value", "***"),
    )
    dumped = result.model_dump_json()
    assert "s3cret-value" not in dumped
    assert "your key is ***" in dumped
    # the agent itself is sent the conversation as it happened, not the masked copy
    assert target.seen[1].messages[1].content == "your key is s3cret-value"


async def test_secret_values_quoted_in_a_target_error_never_reach_results() -> None:
    scenario = scripted(turns=[{"user": "hi", "checks": [{"contains": "a"}]}])
    target = ScriptedTarget([TargetError("unexpected event {'token': 's3cret-value'}")])
    result = await run_scenarios(
        [scenario],
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        scrub=lambda text: text.replace("s3cret-value", "***"),
    )
    trial = result.scenarios[0].trials[0]
    assert trial.status == "error"
    assert trial.error == "unexpected event {'token': '***'}"
    assert "s3cret-value" not in result.model_dump_json()


async def test_lone_surrogates_and_nan_from_the_agent_keep_reports_valid() -> None:
    reply = Message(role="agent", content="shipped \ud83d", raw={"score": float("nan")})
    scenario = scripted(turns=[{"user": "hi", "checks": [{"contains": "shipped"}]}])
    result, _ = await run([scenario], ScriptedTarget([reply]))
    trial = result.scenarios[0].trials[0]
    assert trial.status == "passed"
    json.dumps(result.report_dict(), allow_nan=False)  # the JSON report is strict JSON
    assert trial.transcript.messages[1].content.startswith("shipped \ufffd")


async def test_threshold_zero_never_turns_errors_into_a_pass() -> None:
    scenario = scripted(turns=[{"user": "x", "checks": [{"contains": "a"}]}], trials=2)
    scenario = scenario.model_copy(update={"threshold": 0})  # test files refuse 0 (a hint)
    result, _ = await run([scenario], ScriptedTarget([TargetError("connection refused")]))
    assert result.scenarios[0].status == "error"
    assert result.exit_code == 3


async def test_fail_fast_waits_until_a_scenario_can_no_longer_pass() -> None:
    answers = iter(["no", "yes", "yes"])
    flaky = scripted(
        id="flaky", turns=[{"user": "x", "checks": [{"equals": "yes"}]}], trials=3, threshold=0.66
    )
    result, _ = await run(
        [flaky], ScriptedTarget([lambda t: next(answers)]), parallel=1, fail_fast=True
    )
    assert [t.status for t in result.scenarios[0].trials] == ["failed", "passed", "passed"]
    assert result.scenarios[0].status == "passed"


async def test_fail_fast_ignores_skipped_trials() -> None:
    simulated = SimulatedScenario(id="sim", goal="g", criteria=["x"], trials=2)
    checked = scripted(
        id="checked", turns=[{"user": "x", "checks": [{"contains": "ok"}]}], trials=3
    )
    result, _ = await run([simulated, checked], ScriptedTarget(["ok"]), parallel=1, fail_fast=True)
    assert [s.status for s in result.scenarios] == ["skipped", "passed"]
    assert result.exit_code == 0


async def test_fail_on_skip_counts_missing_models_not_judging_a_decided_trial() -> None:
    answers = iter(["good", "bad", "good"])
    scenario = scripted(
        turns=[{"user": "x", "checks": [{"contains": "good"}], "should": "be good"}],
        trials=3,
        threshold=0.6,
    )
    judged, _ = await run(
        [scenario],
        ScriptedTarget([lambda t: next(answers)]),
        parallel=1,
        model=ScriptedModel(handler=lambda _, schema: example_for_schema(schema, text="good")),
        fail_on_skip=True,
    )
    assert [t.status for t in judged.scenarios[0].trials] == ["passed", "failed", "passed"]
    assert judged.exit_code == 0  # the skipped `should` belongs to a trial already failed
    unjudged, _ = await run([scenario], ScriptedTarget(["good"]), fail_on_skip=True)
    assert unjudged.exit_code == 3


async def test_a_numeric_secret_echoed_as_a_number_is_masked() -> None:
    reply = Message(
        role="agent",
        content="ok",
        raw={"pin": 90817263, "n": 7},
        tool_calls=(ToolCall.from_arguments("verify", {"pin": 90817263}),),
    )
    scenario = scripted(turns=[{"user": "hi", "checks": [{"contains": "ok"}]}])
    result = await run_scenarios(
        [scenario],
        targets=lambda s: ScriptedTarget([reply]),
        user_model=None,
        judge_model=None,
        scrub=lambda text: text.replace("90817263", "***"),
    )
    dumped = result.model_dump_json()
    assert "90817263" not in dumped
    assert '"n":7' in dumped


async def test_a_scenario_cut_short_by_fail_fast_is_not_passed() -> None:
    failing = scripted(id="a", turns=[{"user": "x", "checks": [{"equals": "yes"}]}])
    passing = scripted(id="b", turns=[{"user": "x", "checks": [{"contains": "no"}]}], trials=5)

    def replying_after(seconds: float) -> Callable[[Any], Awaitable[str]]:
        async def reply(_: Any) -> str:
            await anyio.sleep(seconds)
            return "no"

        return reply

    # a fails while b's first trial is still under way
    targets = {
        "a": ScriptedTarget([replying_after(0.02)]),
        "b": ScriptedTarget([replying_after(0.2)]),
    }
    result = await run_scenarios(
        [failing, passing],
        targets=lambda s: targets[s.id],
        user_model=None,
        judge_model=None,
        settings=RunSettings(parallel=2, fail_fast=True),
    )
    b = result.scenarios[1]
    assert 0 < len(b.trials) < 5 and all(t.status == "passed" for t in b.trials)
    assert b.status == "error"  # the trials that never ran could have failed
    assert result.exit_code == 1
