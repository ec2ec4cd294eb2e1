"""Adaptive trials (`trials: {min, max}`, `--adaptive`): the runner adds trials only while
the pass rate's 95% Wilson interval straddles the threshold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from sparring.errors import TargetError, UserError
from sparring.events import Event, ScenarioFinished, TrialStarted
from sparring.loaders.yaml import load_text
from sparring.results import RunResult
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.scenario.base import TrialRange
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Transcript

pytestmark = pytest.mark.anyio


def scenario(*, threshold: float, trials: Any = None) -> ScriptedScenario:
    """One user turn whose `contains: ok` check decides the trial: no model needed."""
    spec: dict[str, Any] = {
        "id": "s",
        "threshold": threshold,
        "turns": [{"user": "hi", "checks": [{"contains": "ok"}]}],
    }
    if trials is not None:
        spec["trials"] = trials
    return ScriptedScenario.model_validate(spec)


def agent(passes: Callable[[int], bool], *, pause_seconds: float = 0.0) -> ScriptedTarget:
    """An agent whose n-th reply (1-based, in the order trials reach it) passes when
    `passes(n)`; `pause_seconds` keeps replies in flight together."""
    calls = 0

    async def reply(transcript: Transcript) -> str:
        nonlocal calls
        calls += 1
        n = calls
        await anyio.sleep(pause_seconds)
        return "ok" if passes(n) else "no"

    return ScriptedTarget([reply])


async def run(
    target: ScriptedTarget, *scenarios: ScriptedScenario, **settings: Any
) -> tuple[RunResult, list[Event]]:
    events: list[Event] = []
    result = await run_scenarios(
        list(scenarios),
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        settings=RunSettings(**settings),
        observer=events.append,
    )
    return result, events


async def test_an_always_passing_agent_stops_once_the_interval_clears_the_threshold() -> None:
    s = scenario(threshold=0.5, trials={"min": 3, "max": 30})
    result, events = await run(agent(lambda n: True), s, parallel=1)
    (r,) = result.scenarios
    # 3 of 3 gives [44%, 100%], still straddling 50%; 4 of 4 gives [51%, 100%]
    assert [t.trial for t in r.trials] == [1, 2, 3, 4]
    assert (r.status, r.decision, r.max_trials, r.planned_trials) == ("passed", "passed", 30, 3)
    assert result.exit_code == 0
    assert [e.trials for e in events if isinstance(e, TrialStarted)] == [30] * 4
    assert sum(isinstance(e, ScenarioFinished) for e in events) == 1


async def test_min_trials_run_even_when_fewer_would_decide() -> None:
    s = scenario(threshold=0.5, trials={"min": 7, "max": 30})
    result, _ = await run(agent(lambda n: True), s, parallel=1)
    assert len(result.scenarios[0].trials) == 7


async def test_a_coin_flip_agent_fails_a_90_percent_threshold_early() -> None:
    s = scenario(threshold=0.9, trials={"min": 3, "max": 30})
    result, _ = await run(agent(lambda n: n % 2 == 1), s, parallel=1)
    (r,) = result.scenarios
    # 2 of 3: [21%, 94%] straddles 90%; 2 of 4: [15%, 85%] is below it
    assert (len(r.trials), r.status) == (4, "failed")
    assert result.exit_code == 1


async def test_a_borderline_agent_reaches_max_and_is_undecided() -> None:
    s = scenario(threshold=0.8, trials={"min": 3, "max": 30})
    result, _ = await run(agent(lambda n: n % 5 != 0), s, parallel=1)
    (r,) = result.scenarios
    # 24 of 30 is exactly 80%: [63%, 90%] never clears the threshold
    assert (len(r.trials), r.passed_trials, r.status, r.decision) == (30, 24, "undecided", None)
    assert result.exit_code == 3
    assert result.counts() == {"undecided": 1}


async def test_trials_start_together_and_those_in_flight_when_decided_count() -> None:
    s = scenario(threshold=0.5, trials={"min": 3, "max": 30})
    result, _ = await run(agent(lambda n: True, pause_seconds=0.01), s, parallel=6)
    (r,) = result.scenarios
    # six start at once; four passes decide it, and every trial already running when it is
    # decided is kept and counted (how many more a slow machine starts before the fourth
    # pass arrives depends on timing, so only the six and the counting are asserted)
    numbers = [t.trial for t in r.trials]
    assert numbers[:6] == [1, 2, 3, 4, 5, 6]
    assert numbers == list(range(1, len(numbers) + 1))
    assert all(t.status == "passed" for t in r.trials)
    assert r.status == "passed"


async def test_a_decision_reopened_by_trials_in_flight_starts_more() -> None:
    # trials 1-4 start together: 1-3 pass ([44%, 100%] clears 43%), then 4 fails: 3 of 4,
    # [30%, 95%], straddles again, so more trials start (5 of 6 clears it: [44%, 97%])
    s = scenario(threshold=0.43, trials={"min": 3, "max": 30})
    result, _ = await run(agent(lambda n: n != 4, pause_seconds=0.01), s, parallel=4)
    (r,) = result.scenarios
    assert len(r.trials) > 4
    assert r.status == "passed"


async def test_an_agent_that_never_answers_stops_after_min_trials() -> None:
    s = scenario(threshold=0.8, trials={"min": 3, "max": 30})
    target = ScriptedTarget([TargetError("down")])
    result, _ = await run(target, s, parallel=1)
    (r,) = result.scenarios
    assert (len(r.trials), r.status) == (3, "error")


async def test_errors_never_tip_an_adaptive_scenario_to_passed_or_failed() -> None:
    # passes on odd calls, the target fails on even ones: 2 passed of 4 that tested it
    calls = 0

    def reply(transcript: Transcript) -> str:
        nonlocal calls
        calls += 1
        if calls % 2 == 0:
            raise TargetError("down")
        return "ok"

    s = scenario(threshold=0.9, trials={"min": 3, "max": 8})
    result, _ = await run(ScriptedTarget([reply]), s, parallel=1)
    (r,) = result.scenarios
    assert len(r.trials) == 8  # as failures the errors would have failed it at 4
    assert r.status == "error"


async def test_adaptive_setting_gives_scenarios_without_trials_3_to_30() -> None:
    s = scenario(threshold=0.9)
    result, _ = await run(agent(lambda n: n % 2 == 1), s, parallel=1, adaptive=True)
    (r,) = result.scenarios
    assert (r.planned_trials, r.max_trials, len(r.trials), r.status) == (3, 30, 4, "failed")


async def test_fixed_trials_stay_fixed() -> None:
    s = scenario(threshold=0.5, trials=5)
    result, _ = await run(agent(lambda n: True), s, parallel=1)
    (r,) = result.scenarios
    assert (len(r.trials), r.max_trials, r.decision) == (5, None, None)


async def test_fail_fast_stops_other_scenarios_once_an_adaptive_one_fails() -> None:
    failing = scenario(threshold=0.9, trials={"min": 3, "max": 30})
    slow = ScriptedScenario.model_validate(
        {**failing.model_dump(), "id": "t", "threshold": 0.5, "trials": {"min": 3, "max": 30}}
    )
    result, _ = await run(agent(lambda n: n <= 2), failing, slow, parallel=1, fail_fast=True)
    first, second = result.scenarios
    assert first.status == "failed"
    assert len(second.trials) < 3
    assert result.exit_code == 1


def test_trials_override_and_adaptive_cannot_go_together() -> None:
    with pytest.raises(UserError, match="--trials and --adaptive"):
        RunSettings(trials=3, adaptive=True)


@pytest.mark.parametrize(
    ("trials", "message"),
    [
        ({"min": 5, "max": 2}, "min \\(5\\) must not be above max \\(2\\)"),
        (0, "at least 1 and at most 100, got 0"),
    ],
)
def test_bad_trial_ranges_are_rejected(trials: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scenario(threshold=0.5, trials=trials)


def test_yaml_trials_take_min_and_max_and_errors_point_at_the_key() -> None:
    head = 'target: {type: http, url: "http://127.0.0.1:9/x"}\nscenarios:\n  - id: a\n'
    head += "    goal: get help\n"
    (s,) = load_text(head + "    trials: {min: 5, max: 40}\n", path="t.yaml")
    assert s.trials == TrialRange(min=5, max=40)
    with pytest.raises(UserError, match=r"t\.yaml:5:22: unknown key 'maxx' in scenarios\[0\]"):
        load_text(head + "    trials: {min: 5, maxx: 40}\n", path="t.yaml")
    with pytest.raises(UserError, match=r"t\.yaml:5:13: scenarios\[0\]\.trials: trials min"):
        load_text(head + "    trials: {min: 5, max: 2}\n", path="t.yaml")
