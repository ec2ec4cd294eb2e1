"""What a red-team run found: attack success rate per plugin and per strategy (with the
95% Wilson interval), severity, and every successful attack's transcript.

Read from a run's results by the tags `sparring.redteam.attacks` gives attack scenarios,
so a stored or re-rendered run summarises the same way. A trial counts as an attempt when
it was decided (`passed`: resisted, `failed`: the attack succeeded); `skipped`, `error` and
`timed_out` trials are counted apart, never as resisted.
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
        attempted: Decided attempts (passed or failed trials).
        skipped: Trials skipped, never sent (no model for a crescendo or a judged attack).
        errors: Trials that errored, timed out or were invalid (sent, not decided).
    """

    succeeded: int = 0
    attempted: int = 0
    skipped: int = 0
    errors: int = 0

    def count(self, trial: TrialResult) -> None:
        """Count one trial of an attack of this plugin or strategy."""
        self.attempted += trial.status in ("passed", "failed")
        self.succeeded += trial.status == "failed"
        self.skipped += trial.status == "skipped"
        self.errors += trial.status in ("error", "timed_out", "invalid")

    def text(self) -> str:
        """`"1/10 (10%, 95% CI 2-40%)"` (then `, 2 skipped, 1 errored`), or without a
        decided attempt `"not run (7 skipped)"` / `"not decided (1 errored, ...)"`."""
        rest = ", ".join(
            f"{n} {word}" for n, word in ((self.skipped, "skipped"), (self.errors, "errored")) if n
        )
        if not self.attempted:
            return f"{'not decided' if self.errors else 'not run'}" + (f" ({rest})" if rest else "")
        low, high = wilson_interval(self.succeeded, self.attempted)
        rate = self.succeeded / self.attempted
        text = f"{self.succeeded}/{self.attempted} ({rate:.0%}, 95% CI {low:.0%}-{high:.0%})"
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
    severity) and per strategy `{succeeded, attempted, skipped, errors, rate, ci_low,
    ci_high}`
    (`rate` and the 95% Wilson interval `None` without a decided attempt), and each
    finding's `{scenario_id, trial, plugin, strategy, severity}`."""
    plugins = {
        name: {"severity": summary.severities[name], **_rate_dict(rate)}
        for name, rate in summary.plugins.items()
    }
    return {
        "plugins": plugins,
        "strategies": {name: _rate_dict(rate) for name, rate in summary.strategies.items()},
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
    low, high = wilson_interval(rate.succeeded, rate.attempted) if rate.attempted else (None, None)
    return {
        "succeeded": rate.succeeded,
        "attempted": rate.attempted,
        "skipped": rate.skipped,
        "errors": rate.errors,
        "rate": rate.succeeded / rate.attempted if rate.attempted else None,
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
    lines += ["", f"{len(summary.findings)} successful attack(s)."]
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
