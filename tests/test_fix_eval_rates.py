"""Rates across trials with their 95% intervals in every report: each criterion and each
evaluation gate (`evaluation.insight`), in HTML, the console summary, JUnit and the exports
as well as JSON and Markdown (sparring.reports.rates)."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

from rich.console import Console

from sparring.reports.console import print_summary
from sparring.reports.exports import export_sheets
from sparring.reports.html import render_html
from sparring.reports.json import render_json
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.reports.rates import criterion_rates
from sparring.results import InsightResult, RunResult, ScenarioResult, TrialResult, Verdict

C1 = "3/6 met, 50% [19%, 81%]"
GATE = "3/5 met, 60% [23%, 88%]"


def gate(n: int) -> InsightResult:
    """Trial `n`'s gate `support.resolved`: passes in trials 1-3, fails in 4-5, error in 6."""
    if n == 6:
        return InsightResult(
            evaluation="support",
            insight="resolved",
            type="boolean",
            status="error",
            gating=True,
            error="is 'yes', not a boolean",
            group="outcome",
        )
    return InsightResult(
        evaluation="support",
        insight="resolved",
        type="boolean",
        status="ok",
        value=n <= 3,
        passed=n <= 3,
        gating=True,
        group="outcome",
    )


def trial(n: int) -> TrialResult:
    met = "met" if n % 2 == 0 else "not_met"
    verdicts = [
        Verdict(id="c1", kind="criterion", description="Says sorry", status=met),
        Verdict(id="c2", kind="criterion", description="Is polite", status="met"),
    ]
    return TrialResult(
        scenario_id="refund",
        trial=n,
        status="passed" if n == 2 else "failed",
        end_reason="script_done",
        verdicts=verdicts,
        insights=[gate(n)],
    )


def run_of(*scenarios: ScenarioResult) -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=list(scenarios),
    )


def flaky(trials: int = 6) -> ScenarioResult:
    return ScenarioResult(
        scenario_id="refund",
        name="refund",
        kind="scripted",
        threshold=0.8,
        trials=[trial(n) for n in range(1, trials + 1)],
    )


def test_each_gating_insight_has_a_rate_across_trials_its_pass_rule_decides() -> None:
    rates = {c.id: (c.kind, c.met, c.decided) for c in criterion_rates(flaky())}
    assert rates == {
        "c1": ("criterion", 3, 6),
        "c2": ("criterion", 6, 6),
        "support.resolved": ("insight", 3, 5),  # the error decided nothing
    }
    (scenario,) = json.loads(render_json(run_of(flaky())))["scenarios"]
    row = next(c for c in scenario["criteria_pass_rates"] if c["kind"] == "insight")
    assert (row["id"], row["met"], row["decided"]) == ("support.resolved", 3, 5)
    assert f"| `support.resolved` | insight | pass rule of evaluation support | {GATE} |" in (
        render_markdown(run_of(flaky()))
    )


def test_the_html_report_has_the_table_of_rates_across_trials() -> None:
    page = render_html(run_of(flaky()))
    assert "Met across trials" in page
    assert f"<td><code>c1</code></td><td>criterion</td><td>Says sorry</td><td>{C1}</td>" in page
    assert "<td><code>support.resolved</code></td><td>insight</td>" in page and GATE in page
    assert "Met across trials" not in render_html(run_of(flaky(trials=1)))


def test_the_console_summary_lists_what_was_not_met_in_every_trial() -> None:
    out = io.StringIO()
    print_summary(run_of(flaky()), console=Console(file=out, width=200, force_terminal=False))
    text = out.getvalue()
    assert "Not met in every trial" in text
    assert f"refund · c1: {C1}" in text and f"refund · support.resolved: {GATE}" in text
    assert "refund · c2" not in text  # met in every trial
    single = io.StringIO()
    print_summary(run_of(flaky(1)), console=Console(file=single, width=200))
    assert "Not met in every trial" not in single.getvalue()


def test_junit_has_a_property_per_criterion_and_gate_across_trials() -> None:
    root = ET.fromstring(render_junit(run_of(flaky())))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["met_across_trials.c1"] == C1
    assert props["met_across_trials.c2"] == "6/6 met, 100% [61%, 100%]"
    assert props["met_across_trials.support.resolved"] == GATE


def test_the_exports_have_a_rates_sheet_and_the_insight_group() -> None:
    sheets = {s.name: s for s in export_sheets(run_of(flaky()))}
    rates = sheets["Rates"].rows
    assert [(r["id"], r["kind"], r["met"], r["out of"]) for r in rates] == [
        ("refund", "scenario", 1, 6),
        ("c1", "criterion", 3, 6),
        ("c2", "criterion", 6, 6),
        ("support.resolved", "insight", 3, 5),
    ]
    c1 = rates[1]
    assert (c1["pass rate"], c1["interval low"], c1["interval high"]) == (0.5, 0.1876, 0.8124)
    insights = [r for r in sheets["Insights"].rows if r["id"] == "support.resolved"]
    assert {r["group"] for r in insights} == {"outcome"}
