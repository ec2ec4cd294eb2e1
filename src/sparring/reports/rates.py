"""Pass rates with their 95% Wilson intervals, as every report shows them.

`7/10 passed, 70% [40%, 89%]`: the interval is the range that holds the agent's true pass
rate with 95% confidence (`sparring.judging.statistics.wilson_interval`). Rates are given
for a scenario (its trials), the run (every trial), a group gate (its tests) and each
criterion, `should` and check across the trials that decided it, so a flaky criterion shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sparring.judging.statistics import wilson_interval
from sparring.reports import percent, shown_status
from sparring.results import RunResult, ScenarioResult, VerdictKind


def interval(passed: int, counted: int) -> list[float] | None:
    """`[low, high]`: the 95% Wilson interval of `passed` of `counted`, as fractions rounded
    to 4 places; `None` when `counted` is 0."""
    if not counted:
        return None
    low, high = wilson_interval(passed, counted)
    return [round(low, 4), round(high, 4)]


def interval_text(passed: int, counted: int) -> str:
    """`[40%, 89%]` for 7 of 10 (whole percent); `""` when `counted` is 0."""
    bounds = interval(passed, counted)
    return "" if bounds is None else f"[{bounds[0] * 100:.0f}%, {bounds[1] * 100:.0f}%]"


def rate_text(passed: int, counted: int) -> str:
    """`7/10 passed, 70% [40%, 89%]`; `0/0 passed` when nothing was counted."""
    if not counted:
        return "0/0 passed"
    rate = percent(passed / counted)
    return f"{passed}/{counted} passed, {rate} {interval_text(passed, counted)}"


def with_interval(rate: str, scenario: ScenarioResult) -> str:
    """`rate` (a shown pass rate such as `70%`) followed by the scenario's interval, when it
    has a rate (`-` stays as it is)."""
    if rate == "-" or not scenario.counted:
        return rate
    return f"{rate} {interval_text(scenario.passed_trials, len(scenario.counted))}"


def run_counts(result: RunResult) -> tuple[int, int]:
    """`(passed, counted)` trials over every scenario of the run (as `ScenarioResult.counted`),
    leaving out scenarios cut off in every trial (`shown_status` `interrupted`)."""
    shown = [s for s in result.scenarios if shown_status(s) != "interrupted"]
    return sum(s.passed_trials for s in shown), sum(len(s.counted) for s in shown)


RateKind = VerdictKind | Literal["insight"]
"""What a `CriterionRate` is of: a verdict's kind, or `insight` for a gating insight."""


@dataclass(frozen=True)
class CriterionRate:
    """How often one criterion, `should`, check or gating insight was met across a
    scenario's trials.

    `decided` counts the trials where it was `met` or `not_met` (not `error` or `skipped`);
    `met` those where every such verdict of it was `met` (a `should` is judged per reply).
    A gating insight (`kind` `insight`, id `evaluation.insight`) is decided when it has a
    value, and met when its pass rule (`pass_when`) held.
    """

    id: str
    kind: RateKind
    description: str
    met: int
    decided: int

    @property
    def text(self) -> str:
        """`7/10 met, 70% [40%, 89%]`; `0/0 met` when no trial decided it."""
        return rate_text(self.met, self.decided).replace(" passed", " met")

    def as_dict(self) -> dict[str, Any]:
        """The JSON report's entry: the fields, `pass_rate` and `pass_rate_interval`."""
        return {
            "id": self.id,
            "kind": self.kind,
            "description": self.description,
            "met": self.met,
            "decided": self.decided,
            "pass_rate": self.met / self.decided if self.decided else None,
            "pass_rate_interval": interval(self.met, self.decided),
        }


def criterion_rates(scenario: ScenarioResult) -> list[CriterionRate]:
    """One `CriterionRate` per verdict id of the scenario's trials, in first-seen order,
    then one per gating insight (`gate_rates`)."""
    seen: dict[str, tuple[VerdictKind, str]] = {}
    met: dict[str, int] = {}
    decided: dict[str, int] = {}
    for trial in scenario.trials:
        statuses: dict[str, set[str]] = {}
        for v in trial.verdicts:
            seen.setdefault(v.id, (v.kind, v.description))
            statuses.setdefault(v.id, set()).add(v.status)
        for id_, found in statuses.items():
            if found & {"met", "not_met"}:
                decided[id_] = decided.get(id_, 0) + 1
                met[id_] = met.get(id_, 0) + (found & {"met", "not_met"} == {"met"})
    verdicts = [
        CriterionRate(id_, kind, text, met.get(id_, 0), decided.get(id_, 0))
        for id_, (kind, text) in seen.items()
    ]
    return verdicts + gate_rates(scenario)


def rates_across_trials(scenario: ScenarioResult) -> list[CriterionRate]:
    """`criterion_rates` of a scenario with more than one trial (`[]` for one trial or
    none: a rate across one trial says nothing more than the trial), as the reports' tables
    of rates across trials show them."""
    return criterion_rates(scenario) if len(scenario.trials) > 1 else []


def unsteady_rates(scenario: ScenarioResult) -> list[CriterionRate]:
    """`rates_across_trials` not met in every trial that decided them (the flaky and the
    always failing ones), as the console's compact summary shows them."""
    return [c for c in rates_across_trials(scenario) if c.met < c.decided]


def gate_rates(scenario: ScenarioResult) -> list[CriterionRate]:
    """One `CriterionRate` (kind `insight`) per gating insight of the scenario's trials, in
    first-seen order: decided when it has a value (not `error`), met when it passed."""
    seen: dict[str, str] = {}
    met: dict[str, int] = {}
    decided: dict[str, int] = {}
    for insight in (i for t in scenario.trials for i in t.insights if i.gating):
        seen.setdefault(insight.id, f"pass rule of evaluation {insight.evaluation}")
        if insight.status == "ok":
            decided[insight.id] = decided.get(insight.id, 0) + 1
            met[insight.id] = met.get(insight.id, 0) + bool(insight.passed)
    return [
        CriterionRate(id_, "insight", text, met.get(id_, 0), decided.get(id_, 0))
        for id_, text in seen.items()
    ]


def add_intervals(data: dict[str, Any], result: RunResult) -> dict[str, Any]:
    """The JSON report `data` (`RunResult.report_dict()`) with pass rates and intervals:
    `pass_rate_interval` and `criteria_pass_rates` per scenario; the run's `passed_trials`,
    `counted_trials`, `pass_rate` and `pass_rate_interval`. Returns `data`."""
    for raw, scenario in zip(data["scenarios"], result.scenarios, strict=True):
        raw["pass_rate_interval"] = interval(scenario.passed_trials, len(scenario.counted))
        raw["criteria_pass_rates"] = [c.as_dict() for c in criterion_rates(scenario)]
    passed, counted = run_counts(result)
    data["passed_trials"], data["counted_trials"] = passed, counted
    data["pass_rate"] = passed / counted if counted else None
    data["pass_rate_interval"] = interval(passed, counted)
    return data
