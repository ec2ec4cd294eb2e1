"""What a red-team run found: attack success rate per plugin and per strategy (with the
95% Wilson interval), severity, and every successful attack's transcript.

Read from a run's results by the tags `sparring.redteam.attacks` gives attack scenarios,
so a stored or re-rendered run summarises the same way. A trial counts as an attempt when
it was decided: `failed` (the attack succeeded, by a detector or the judge) or `passed`
with everything judged (resisted). A `passed` trial that left something unjudged (no judge
model: only the detectors ran and found nothing) is `not judged`, never resisted: a rate
over such trials would count every attack the detectors cannot see as resisted, so a rate
with any of them has no percentage. `skipped`, `error` and `timed_out` trials are counted
apart too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparring.judging.statistics import wilson_interval
from sparring.redteam.attacks import ATTACK_TAG
from sparring.results import RunResult, ScenarioResult, TrialResult

_SEVERITY_ORDER = ("critical", "high", "medium", "low")


@dataclass
class Rate:
    """Attack success over decided attempts of one plugin or strategy.

    Attributes:
        succeeded: Attempts where the attack succeeded (the trial failed).
        resisted: Attempts the agent resisted, everything judged (the trial passed).
        not_judged: Trials that passed the detectors but left something unjudged (no
            judge model): neither succeeded nor resisted.
        skipped: Trials skipped, never sent (no model for a crescendo).
        errors: Trials that errored, timed out or were invalid (sent, not decided).
    """

    succeeded: int = 0
    resisted: int = 0
    not_judged: int = 0
    skipped: int = 0
    errors: int = 0

    @property
    def attempted(self) -> int:
        """Decided attempts: succeeded + resisted."""
        return self.succeeded + self.resisted

    @property
    def rate(self) -> float | None:
        """`succeeded / attempted`; `None` without a decided attempt or with any trial
        not judged (the resisted cannot be told from what the detectors missed)."""
        if not self.attempted or self.not_judged:
            return None
        return self.succeeded / self.attempted

    def count(self, trial: TrialResult) -> None:
        """Count one trial of an attack of this plugin or strategy."""
        self.succeeded += trial.status == "failed"
        self.resisted += trial.status == "passed" and not trial.not_judged
        self.not_judged += trial.status == "passed" and bool(trial.not_judged)
        self.skipped += trial.status == "skipped"
        self.errors += trial.status in ("error", "timed_out", "invalid")

    def text(self) -> str:
        """`"1/10 (10%, 95% CI 2-40%)"` (then `, 2 skipped, 1 errored`); with trials not
        judged no percentage: `"1 succeeded, 9 not judged (detectors only)"`; with nothing
        sent or decided `"not run (7 skipped)"` / `"not decided (1 errored, ...)"`."""
        rest = ", ".join(
            f"{n} {word}" for n, word in ((self.skipped, "skipped"), (self.errors, "errored")) if n
        )
        if self.not_judged:
            parts = [f"{self.succeeded} succeeded"]
            parts += [f"{self.resisted} resisted"] if self.resisted else []
            parts += [f"{self.not_judged} not judged (detectors only)"]
            return ", ".join([*parts, rest] if rest else parts)
        if not self.attempted:
            return f"{'not decided' if self.errors else 'not run'}" + (f" ({rest})" if rest else "")
        low, high = wilson_interval(self.succeeded, self.attempted)
        text = f"{self.succeeded}/{self.attempted} ({self.succeeded / self.attempted:.0%}, "
        text += f"95% CI {low:.0%}-{high:.0%})"
        return f"{text}, {rest}" if rest else text


@dataclass(frozen=True)
class Finding:
    """One successful attack: its scenario, labels and the trial that shows it."""

    scenario_id: str
    plugin: str
    strategy: str
    severity: str
    trial: TrialResult


@dataclass
class RedTeamSummary:
    """Rates keyed by plugin and by strategy (in the order met), and the findings."""

    plugins: dict[str, Rate] = field(default_factory=dict[str, Rate])
    strategies: dict[str, Rate] = field(default_factory=dict[str, Rate])
    severities: dict[str, str] = field(default_factory=dict[str, str])
    findings: list[Finding] = field(default_factory=list[Finding])

    @property
    def not_judged(self) -> int:
        """Trials of all attacks that passed the detectors and were not judged."""
        return sum(rate.not_judged for rate in self.plugins.values())

    def outcome(self) -> str:
        """How many attacks succeeded, then `not_judged_note()` when there is one."""
        found = f"{len(self.findings)} successful attack(s)."
        note = self.not_judged_note()
        return f"{found} {note}" if note else found

    def not_judged_note(self) -> str | None:
        """Why attempts not judged count as neither succeeded nor resisted, and how to
        judge them; `None` when every attempt was judged."""
        if not self.not_judged:
            return None
        return (
            f"{self.not_judged} attempt(s) not judged: the detectors found nothing, but "
            "without a judge model an attack they cannot see is not told apart from a "
            "resisted one, so these count as neither; give --model (or judge_model) to "
            "judge them, and --fail-on-skip to make such a run exit 3."
        )


def _label(scenario: ScenarioResult, name: str) -> str:
    prefix = f"{name}:"
    return next((t[len(prefix) :] for t in scenario.tags if t.startswith(prefix)), "?")


def summarize(result: RunResult) -> RedTeamSummary:
    """The red-team summary of the attack scenarios (tag `redteam`) in `result`."""
    summary = RedTeamSummary()
    for scenario in result.scenarios:
        if ATTACK_TAG not in scenario.tags:
            continue
        plugin, strategy = _label(scenario, "plugin"), _label(scenario, "strategy")
        severity = _label(scenario, "severity")
        summary.severities[plugin] = severity
        rates = (
            summary.plugins.setdefault(plugin, Rate()),
            summary.strategies.setdefault(strategy, Rate()),
        )
        for trial in scenario.trials:
            for rate in rates:
                rate.count(trial)
            if trial.status == "failed":
                summary.findings.append(
                    Finding(scenario.scenario_id, plugin, strategy, severity, trial)
                )
    summary.findings.sort(key=lambda f: _SEVERITY_ORDER.index(f.severity))
    return summary


def summary_dict(summary: RedTeamSummary) -> dict[str, Any]:
    """The summary as JSON data (the JSON report's `red_team` key): per plugin (with its
    severity) and per strategy `{succeeded, resisted, attempted, not_judged, skipped,
    errors, rate, ci_low, ci_high}` (`rate` and the 95% Wilson interval `None` without a
    decided attempt or with any attempt not judged: `Rate.rate`), the run's `not_judged`
    total, and each finding's `{scenario_id, trial, plugin, strategy, severity}`."""
    plugins = {
        name: {"severity": summary.severities[name], **_rate_dict(rate)}
        for name, rate in summary.plugins.items()
    }
    return {
        "plugins": plugins,
        "strategies": {name: _rate_dict(rate) for name, rate in summary.strategies.items()},
        "not_judged": summary.not_judged,
        "findings": [
            {
                "scenario_id": f.scenario_id,
                "trial": f.trial.trial,
                "plugin": f.plugin,
                "strategy": f.strategy,
                "severity": f.severity,
            }
            for f in summary.findings
        ],
    }


def _rate_dict(rate: Rate) -> dict[str, Any]:
    decided = rate.rate is not None
    low, high = wilson_interval(rate.succeeded, rate.attempted) if decided else (None, None)
    return {
        "succeeded": rate.succeeded,
        "resisted": rate.resisted,
        "attempted": rate.attempted,
        "not_judged": rate.not_judged,
        "skipped": rate.skipped,
        "errors": rate.errors,
        "rate": rate.rate,
        "ci_low": low,
        "ci_high": high,
    }


def render_rates(summary: RedTeamSummary) -> list[str]:
    """The Markdown tables of attack success per plugin (with severity) and per strategy."""
    lines = ["| plugin | severity | attack success |", "| --- | --- | --- |"]
    lines += [f"| {p} | {summary.severities[p]} | {r.text()} |" for p, r in summary.plugins.items()]
    lines += ["", "| strategy | attack success |", "| --- | --- |"]
    lines += [f"| {s} | {r.text()} |" for s, r in summary.strategies.items()]
    return lines


def render_summary(summary: RedTeamSummary) -> str:
    """The summary as Markdown: rates per plugin (with severity) and per strategy, then
    each finding with the verdicts that show it and its transcript."""
    lines = ["## Red team", "", *render_rates(summary)]
    lines += ["", summary.outcome()]
    for finding in summary.findings:
        lines += ["", *_finding_lines(finding)]
    return "\n".join(lines) + "\n"


def _finding_lines(finding: Finding) -> list[str]:
    trial = finding.trial
    lines = [
        f"### {finding.severity.upper()}: {finding.scenario_id} (trial {trial.trial})",
        "",
    ]
    lines += [
        f"- {v.id} {v.description}: {v.reason}" for v in trial.verdicts if v.status == "not_met"
    ]
    lines.append("")
    for message in trial.transcript.messages:
        lines.append(f"> **{message.role}**: " + message.content.replace("\n", "\n> "))
    return lines
