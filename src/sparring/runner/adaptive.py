"""Adaptive trials: run a scenario's trials until its pass rate is clearly above or below
its threshold (`trials: {min, max}`, `sparring run --adaptive`).

After at least `min` trials have finished, the 95% Wilson interval of the pass rate
(`sparring.judging.statistics`) decides: `passed` once its low end reaches the threshold,
`failed` once its high end is below it. Until then more trials start, up to `parallel` of
the scenario in flight at once, at most `max` in all. Trials already running when the
scenario is decided finish and count, so a decision can be reopened by them (and more
trials start). A scenario that reaches `max` still straddling is `undecided`
(`ScenarioResult.status`).

A threshold of 1 (the default) is no rate to estimate but a rule, every trial must pass,
which no interval ever proves: such a scenario fails at its first failed trial (the
interval's high end drops below 1) and passes once `max` trials all passed. A threshold
below 1 that even `max` passes out of `max` cannot confirm (95% with `max` 30 needs 73)
can only fail or end `undecided`; `unconfirmable` names such scenarios before a run.

Trials that did not test the agent (`error`, `timed_out`, `invalid`) never tip the scale:
they count as failures for `passed` and as passes for `failed`. If none of the first `min`
trials tested the agent, no more start: more of them would say no more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import anyio

from sparring.judging.statistics import decided, trials_to_pass
from sparring.results import Decision, ScenarioResult, TrialResult
from sparring.runner.code import CodeScenario
from sparring.runner.settings import AnyRunnable
from sparring.scenario.base import TrialRange

ADAPTIVE_DEFAULT = TrialRange()
"""What `--adaptive` gives a scenario that has no `trials` of its own."""

_NOT_TESTED = ("error", "timed_out", "invalid")
_MOST_TRIALS = 1000
"""The largest `max` a `TrialRange` takes."""


def trial_range(scenario: AnyRunnable, *, adaptive: bool) -> TrialRange | None:
    """The scenario's adaptive trials: its own `{min, max}`, else `ADAPTIVE_DEFAULT` when
    the run is `adaptive` and the scenario leaves its count open; `None` for a fixed count.

    A count given in a test file (`trials: 5`, also when it is 1) or a Python test's
    `repetitions` above 1 stays fixed under `adaptive`.
    """
    if isinstance(scenario.trials, TrialRange):
        return scenario.trials
    if isinstance(scenario, CodeScenario):
        fixed = scenario.trials > 1  # a dataclass cannot say whether 1 was given
    else:
        fixed = "trials" in scenario.model_fields_set
    return ADAPTIVE_DEFAULT if adaptive and not fixed else None


def adaptive_decision(result: ScenarioResult, trials: TrialRange) -> Decision | None:
    """Where the finished trials of `result` put it against its threshold (see the module
    docstring); `None` while the interval straddles it, fewer than `trials.min` finished,
    or, at a threshold of 1, fewer than `trials.max` passed."""
    if len(result.trials) < trials.min:
        return None
    out_of = len(result.counted) + result.invalid_trials
    passed = result.passed_trials
    every_one = result.threshold >= 1 and passed >= trials.max  # all `max` trials passed
    if every_one or decided(passed, out_of, result.threshold) == "passed":
        return "passed"
    not_tested = sum(t.status in _NOT_TESTED for t in result.trials)
    if decided(passed + not_tested, out_of, result.threshold) == "failed":
        return "failed"
    return None


def record_trial(result: ScenarioResult, trial: TrialResult, trials: TrialRange) -> None:
    """Add a finished trial to `result` and update `result.decision`."""
    result.trials.append(trial)
    result.decision = adaptive_decision(result, trials)


def unconfirmable(scenarios: Sequence[AnyRunnable], *, adaptive: bool) -> str | None:
    """A warning naming the scenarios with adaptive trials whose threshold (below 1) not
    even `max` passes out of `max` would confirm, so that they can only fail or end
    `undecided`, with the `max` each needs; `None` when there are none.

    Args:
        scenarios: The run's scenarios.
        adaptive: The run gives scenarios without `trials` adaptive ones (`--adaptive`).
    """
    needs: dict[tuple[float, int], list[str]] = {}
    for scenario in scenarios:
        trials = trial_range(scenario, adaptive=adaptive)
        threshold = scenario.threshold
        if trials is None or threshold >= 1:
            continue
        if decided(trials.max, trials.max, threshold) != "passed":
            needs.setdefault((threshold, trials.max), []).append(scenario.id)
    if not needs:
        return None
    parts = [_unconfirmable_part(threshold, most, ids) for (threshold, most), ids in needs.items()]
    return (
        "adaptive trials cannot confirm the threshold of "
        + "; ".join(parts)
        + ": even an agent that always passes ends `undecided` (exit 3). Raise `max` in "
        "`trials: {min, max}`, or lower `threshold`."
    )


def _unconfirmable_part(threshold: float, most: int, ids: list[str]) -> str:
    """`a, b (95% needs 73 passes in a row, max is 30)`."""
    needed = trials_to_pass(threshold, limit=_MOST_TRIALS)
    need = f"{needed}" if needed <= _MOST_TRIALS else f"more than {_MOST_TRIALS}"
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return f"{shown} ({threshold * 100:g}% needs {need} passes in a row, max is {most})"


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
