"""What changed between two runs (`sparring diff BASE RUN`): per scenario the pass-rate
change with its confidence, newly failing and newly passing scenarios and criteria, cost
and latency.

A pass-rate change is *significant* when the 95% Wilson intervals of the two rates do not
overlap (`sparring.judging.statistics.wilson_interval`); a conservative test, so a
significant change is very unlikely to be noise. Something *regressed* when a scenario that
passed now fails or errs, or a pass rate dropped significantly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparring.judging.statistics import wilson_interval
from sparring.reports import percent, usd
from sparring.reports.rates import interval_text
from sparring.results import RunResult, ScenarioResult

_FAILING = ("failed", "error")


@dataclass(frozen=True, kw_only=True)
class ScenarioChange:
    """One scenario in both runs (or in one: `None` counts and status for the other).

    `*_passed` of `*_counted` trials passed (those that tested the agent); criteria are
    verdict ids: `newly_failing_criteria` were met in every trial of BASE that decided
    them and are `not_met` in some trial of RUN; `newly_passing_criteria` the reverse.
    """

    scenario_id: str
    base_status: str | None
    run_status: str | None
    base_passed: int = 0
    base_counted: int = 0
    run_passed: int = 0
    run_counted: int = 0
    newly_failing_criteria: list[str] = field(default_factory=list[str])
    newly_passing_criteria: list[str] = field(default_factory=list[str])

    @property
    def change(self) -> float | None:
        """RUN's pass rate minus BASE's, as a fraction; `None` when either has none."""
        if not self.base_counted or not self.run_counted:
            return None
        return self.run_passed / self.run_counted - self.base_passed / self.base_counted

    @property
    def significant(self) -> bool:
        """Whether the two pass rates' 95% Wilson intervals do not overlap."""
        if not self.base_counted or not self.run_counted:
            return False
        base = wilson_interval(self.base_passed, self.base_counted)
        run = wilson_interval(self.run_passed, self.run_counted)
        return run[1] < base[0] or base[1] < run[0]

    @property
    def newly_failing(self) -> bool:
        """Passed in BASE, failed or erred in RUN."""
        return self.base_status == "passed" and self.run_status in _FAILING

    @property
    def newly_passing(self) -> bool:
        """Failed or erred in BASE, passed in RUN."""
        return self.base_status in _FAILING and self.run_status == "passed"

    @property
    def regressed(self) -> bool:
        """Newly failing, or its pass rate dropped significantly."""
        change = self.change
        return self.newly_failing or (self.significant and change is not None and change < 0)


@dataclass(frozen=True, kw_only=True)
class RunDiff:
    """BASE against RUN: a `ScenarioChange` per scenario (RUN's order, then those only in
    BASE), total cost in USD and mean agent reply latency in ms (`None`: no latency known)."""

    base: RunResult
    run: RunResult
    scenarios: list[ScenarioChange]
    base_cost_usd: float
    run_cost_usd: float
    base_latency_ms: float | None
    run_latency_ms: float | None

    @property
    def regressions(self) -> list[ScenarioChange]:
        """The scenarios that regressed (see `ScenarioChange.regressed`)."""
        return [s for s in self.scenarios if s.regressed]

    @property
    def shared(self) -> list[ScenarioChange]:
        """The scenarios in both runs: all that was compared (none: unrelated runs)."""
        return [s for s in self.scenarios if s.base_status and s.run_status]


def diff_runs(base: RunResult, run: RunResult) -> RunDiff:
    """Compare `run` with `base` (see the module docstring)."""
    before = {s.scenario_id: s for s in base.scenarios}
    after = {s.scenario_id: s for s in run.scenarios}
    ids = [*after, *(i for i in before if i not in after)]
    return RunDiff(
        base=base,
        run=run,
        scenarios=[_scenario_change(i, before.get(i), after.get(i)) for i in ids],
        base_cost_usd=base.usage_totals().cost_usd,
        run_cost_usd=run.usage_totals().cost_usd,
        base_latency_ms=_mean_latency(base),
        run_latency_ms=_mean_latency(run),
    )


def _scenario_change(
    scenario_id: str, base: ScenarioResult | None, run: ScenarioResult | None
) -> ScenarioChange:
    base_verdicts, run_verdicts = _criteria(base), _criteria(run)
    return ScenarioChange(
        scenario_id=scenario_id,
        base_status=base and base.status,
        run_status=run and run.status,
        base_passed=base.passed_trials if base else 0,
        base_counted=len(base.counted) if base else 0,
        run_passed=run.passed_trials if run else 0,
        run_counted=len(run.counted) if run else 0,
        newly_failing_criteria=[
            c for c, met in run_verdicts.items() if not met and base_verdicts.get(c) is True
        ],
        newly_passing_criteria=[
            c for c, met in run_verdicts.items() if met and base_verdicts.get(c) is False
        ],
    )


def _criteria(scenario: ScenarioResult | None) -> dict[str, bool]:
    """Verdict id -> whether it was met in every trial that decided it (`met`/`not_met`)."""
    out: dict[str, bool] = {}
    for trial in scenario.trials if scenario else []:
        for verdict in trial.verdicts:
            if verdict.status in ("met", "not_met"):
                out[verdict.id] = out.get(verdict.id, True) and verdict.status == "met"
    return out


def _mean_latency(result: RunResult) -> float | None:
    latencies = [
        m.latency_ms
        for s in result.scenarios
        for t in s.trials
        for m in t.transcript.messages
        if m.role == "agent" and m.latency_ms is not None
    ]
    return sum(latencies) / len(latencies) if latencies else None


def render_diff(diff: RunDiff) -> list[str]:
    """The diff as text lines: one per scenario with its rates, intervals and whether the
    change is significant; its criteria that changed; newly failing and newly passing
    scenarios; cost and latency; the regressions, or that there are none, or that the runs
    share no scenario (`NOTHING_SHARED`)."""
    lines = [f"Diff: base {diff.base.run_id} -> run {diff.run.run_id}", "Scenarios:"]
    for change in diff.scenarios:
        lines.append(f"  {change.scenario_id}: {_rate_change(change)}")
        if change.newly_failing_criteria:
            lines.append(f"    newly failing criteria: {', '.join(change.newly_failing_criteria)}")
        if change.newly_passing_criteria:
            lines.append(f"    newly passing criteria: {', '.join(change.newly_passing_criteria)}")
    failing = [c.scenario_id for c in diff.scenarios if c.newly_failing]
    passing = [c.scenario_id for c in diff.scenarios if c.newly_passing]
    lines.append(f"Newly failing scenarios: {', '.join(failing) or 'none'}")
    lines.append(f"Newly passing scenarios: {', '.join(passing) or 'none'}")
    lines.append(f"Cost: {_money_change(diff.base_cost_usd, diff.run_cost_usd)}")
    lines.append(f"Mean reply latency: {_ms_change(diff.base_latency_ms, diff.run_latency_ms)}")
    return [*lines, _conclusion(diff)]


NOTHING_SHARED = "Nothing compared: the two runs share no scenario"
"""Starts the last line of a diff of unrelated runs (`RunDiff.shared` empty)."""


def _conclusion(diff: RunDiff) -> str:
    """The last line: the regressions, that the runs share nothing, or that nothing
    regressed (naming the criteria that newly fail in scenarios that did not)."""
    regressed = [c.scenario_id for c in diff.regressions]
    if regressed:
        return f"Regressions: {', '.join(regressed)}"
    if not diff.shared:
        return (
            f"{NOTHING_SHARED} (different test files?); give a BASE run of the same tests "
            "(`sparring runs` lists them): `sparring diff BASE RUN`"
        )
    criteria = [
        f"{c.scenario_id} {criterion}"
        for c in diff.scenarios
        for criterion in c.newly_failing_criteria
    ]
    if criteria:
        return (
            "No scenario regressed (none newly fails or dropped significantly), but criteria "
            f"newly fail: {', '.join(criteria)}"
        )
    return "No regressions against the base."


def _rate(passed: int, counted: int) -> str:
    return f"{percent(passed / counted)} {interval_text(passed, counted)}" if counted else "-"


def _rate_change(change: ScenarioChange) -> str:
    """E.g. `passed 100% [44%, 100%] -> failed 0% [0%, 56%] (-100 points, significant: the
    95% intervals do not overlap)`."""
    if change.base_status is None:
        return (
            f"new in this run: {change.run_status} {_rate(change.run_passed, change.run_counted)}"
        )
    if change.run_status is None:
        return "not in this run"
    base = f"{change.base_status} {_rate(change.base_passed, change.base_counted)}"
    run = f"{change.run_status} {_rate(change.run_passed, change.run_counted)}"
    delta = change.change
    if delta is None:
        return f"{base} -> {run}"
    if change.significant:
        why = "significant: the 95% intervals do not overlap"
    else:
        why = "not significant: the 95% intervals overlap"
    return f"{base} -> {run} ({delta * 100:+.0f} points, {why})"


def _money_change(base: float, run: float) -> str:
    sign = "+" if run >= base else "-"
    return f"{usd(base)} -> {usd(run)} ({sign}{usd(abs(run - base))})"


def _ms_change(base: float | None, run: float | None) -> str:
    if base is None or run is None:
        return f"{_ms(base)} -> {_ms(run)}"
    return f"{_ms(base)} -> {_ms(run)} ({run - base:+.0f} ms)"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"
