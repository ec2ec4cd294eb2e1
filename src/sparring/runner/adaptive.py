"""Adaptive trials: run a scenario's trials until its pass rate is clearly above or below
its threshold (`trials: {min, max}`, `sparring run --adaptive`).

After at least `min` trials have finished, the 95% Wilson interval of the pass rate
(`sparring.judging.statistics`) decides: `passed` once its low end reaches the threshold,
`failed` once its high end is below it. Until then more trials start, up to `parallel` of
the scenario in flight at once, at most `max` in all. Trials already running when the
scenario is decided finish and count, so a decision can be reopened by them (and more
trials start). A scenario that reaches `max` still straddling is `undecided`
(`ScenarioResult.status`).

Trials that did not test the agent (`error`, `timed_out`, `invalid`) never tip the scale:
they count as failures for `passed` and as passes for `failed`. If none of the first `min`
trials tested the agent, no more start: more of them would say no more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from sparring.judging.statistics import decided
from sparring.results import Decision, ScenarioResult, TrialResult
from sparring.runner.settings import AnyRunnable
from sparring.scenario.base import TrialRange

ADAPTIVE_DEFAULT = TrialRange()
"""What `--adaptive` gives a scenario that has no `trials: {min, max}` of its own."""

_NOT_TESTED = ("error", "timed_out", "invalid")


def trial_range(scenario: AnyRunnable, *, adaptive: bool) -> TrialRange | None:
    """The scenario's adaptive trials: its own `{min, max}`, else `ADAPTIVE_DEFAULT` when
    the run is `adaptive`; `None` for a fixed count."""
    if isinstance(scenario.trials, TrialRange):
        return scenario.trials
    return ADAPTIVE_DEFAULT if adaptive else None


def adaptive_decision(result: ScenarioResult, *, min_trials: int) -> Decision | None:
    """Where the finished trials of `result` put it against its threshold (see the module
    docstring); `None` while the interval straddles it or fewer than `min_trials` finished."""
    if len(result.trials) < min_trials:
        return None
    out_of = len(result.counted) + result.invalid_trials
    passed = result.passed_trials
    if decided(passed, out_of, result.threshold) == "passed":
        return "passed"
    not_tested = sum(t.status in _NOT_TESTED for t in result.trials)
    if decided(passed + not_tested, out_of, result.threshold) == "failed":
        return "failed"
    return None


def record_trial(result: ScenarioResult, trial: TrialResult, *, min_trials: int) -> None:
    """Add a finished trial to `result` and update `result.decision`."""
    result.trials.append(trial)
    result.decision = adaptive_decision(result, min_trials=min_trials)


def settled(result: ScenarioResult, trials: TrialRange, *, started: int) -> bool:
    """Whether no more trials of `result` should start: decided, `max` started, or the first
    `min` finished without one that tested the agent."""
    if started >= trials.max or result.decision is not None:
        return True
    finished = result.trials
    return len(finished) >= trials.min and not any(
        t.status in ("passed", "failed") for t in finished
    )


async def run_adaptive(
    result: ScenarioResult,
    trials: TrialRange,
    run_one: Callable[[int], Awaitable[None]],
    *,
    limiter: anyio.CapacityLimiter,
    parallel: int,
    stopped: Callable[[], bool],
) -> None:
    """Start trials of one scenario until it is `settled` (or `stopped()`, e.g. by
    `--fail-fast`), at most `parallel` of them waiting or running at once.

    Args:
        result: The scenario's result; `run_one` must `record_trial` into it.
        trials: Its `min` and `max`.
        run_one: Runs trial number n (1-based, in the order trials start).
        limiter: The run's limit on trials in flight, shared by every scenario.
        parallel: Trials of this scenario waiting or running at once, >= 1.
        stopped: True once the run starts no new trial at all.
    """
    started = 0
    in_flight = 0
    changed = anyio.Condition()

    def done() -> bool:
        return stopped() or settled(result, trials, started=started)

    async def ticket() -> None:
        nonlocal started, in_flight
        try:
            async with limiter:
                if not done():  # decided while this one waited: it never starts
                    started += 1
                    await run_one(started)
        finally:
            in_flight -= 1
            async with changed:
                changed.notify_all()

    async with anyio.create_task_group() as tg, changed:
        while True:
            while not done() and in_flight < parallel:
                in_flight += 1
                tg.start_soon(ticket)
            if done() and not in_flight:
                return
            await changed.wait()
