"""Every report shows pass rates with their 95% Wilson intervals, per-criterion rates across
trials, and adaptive scenarios left `undecided` (sparring.reports.rates and the reports)."""

from __future__ import annotations

import json

from sparring.reports.console_summary import ASCII, scenario_line
from sparring.reports.json import load_json, render_json
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.reports.outcome import exit_causes
from sparring.reports.rates import criterion_rates, rate_text
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict


def verdict(id_: str, status: str, *, turn: int | None = None) -> Verdict:
    return Verdict.model_validate(
        {
            "id": id_,
            "kind": "criterion",
            "description": f"{id_} holds",
            "status": status,
            "turn": turn,
        }
    )


def trial(n: int, *verdicts: Verdict) -> TrialResult:
    failed = any(v.status == "not_met" for v in verdicts)
    return TrialResult(
        scenario_id="s",
        trial=n,
        status="failed" if failed else "passed",
        end_reason="script_done",
        verdicts=list(verdicts),
    )


def flaky_scenario(**fields: object) -> ScenarioResult:
    """10 trials, 7 passed: c1 always met, c2 flaky (not met in 3), c3 an error in trial 1."""
    trials = [
        trial(
            n,
            verdict("c1", "met"),
            verdict("c2", "not_met" if n in (2, 5, 9) else "met"),
            verdict("c3", "error" if n == 1 else "met"),
        )
        for n in range(1, 11)
    ]
    trials[0] = trials[0].model_copy(update={"status": "passed"})  # as if c3 were tolerated
    return ScenarioResult.model_validate(
        {
            "scenario_id": "s",
            "name": "s",
            "kind": "scripted",
            "threshold": 0.8,
            "planned_trials": 10,
            "trials": trials,
            **fields,
        }
    )


def run_of(*scenarios: ScenarioResult) -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=list(scenarios),
    )


def test_rate_text_reads_like_the_issue() -> None:
    assert rate_text(7, 10) == "7/10 passed, 70% [40%, 89%]"
    assert rate_text(0, 0) == "0/0 passed"


def test_criterion_rates_count_trials_that_decided_each_criterion() -> None:
    rates = {c.id: (c.met, c.decided) for c in criterion_rates(flaky_scenario())}
    assert rates == {"c1": (10, 10), "c2": (7, 10), "c3": (9, 9)}


def test_a_should_judged_on_several_replies_is_met_in_a_trial_only_if_met_on_each() -> None:
    s = flaky_scenario()
    s.trials = [
        trial(1, verdict("should1", "met", turn=1), verdict("should1", "met", turn=2)),
        trial(2, verdict("should1", "met", turn=1), verdict("should1", "not_met", turn=2)),
    ]
    ((_, met, decided),) = [(c.id, c.met, c.decided) for c in criterion_rates(s)]
    assert (met, decided) == (1, 2)


def test_json_has_intervals_for_scenarios_the_run_and_each_criterion() -> None:
    result = run_of(flaky_scenario())
    data = json.loads(render_json(result))
    (scenario,) = data["scenarios"]
    assert scenario["pass_rate_interval"] == [0.3968, 0.8922]
    c2 = next(c for c in scenario["criteria_pass_rates"] if c["id"] == "c2")
    assert (c2["met"], c2["decided"], c2["pass_rate"]) == (7, 10, 0.7)
    assert c2["pass_rate_interval"] == [0.3968, 0.8922]
    assert (data["passed_trials"], data["counted_trials"]) == (7, 10)
    assert data["pass_rate_interval"] == [0.3968, 0.8922]
    assert load_json(render_json(result)) == result  # derived keys are dropped on reading


def test_markdown_shows_the_interval_and_a_flaky_criterion() -> None:
    md = render_markdown(run_of(flaky_scenario()))
    assert "pass rate 7/10 passed, 70% [40%, 89%]" in md  # the run
    assert "| 10 | 7 | 70% [40%, 89%] | 80% |" in md  # the summary table
    assert "| `c2` | criterion | c2 holds | 7/10 met, 70% [40%, 89%] |" in md
    assert "| `c3` | criterion | c3 holds | 9/9 met, 100% [70%, 100%] |" in md


def test_junit_carries_the_interval_as_a_property() -> None:
    xml = render_junit(run_of(flaky_scenario()))
    assert '<property name="pass_rate_interval" value="[40%, 89%]" />' in xml


def test_an_undecided_adaptive_scenario_is_shown_apart_and_exits_3() -> None:
    s = flaky_scenario(max_trials=10, planned_trials=3)
    result = run_of(s)
    assert (s.status, result.exit_code) == ("undecided", 3)
    assert "# s: undecided, pass rate 70% [40%, 89%]" in scenario_line(s, ASCII).plain
    assert exit_causes(result) == (
        "1 scenario undecided: 10 trials left the pass rate's 95% interval around threshold (s)"
    )
    assert "## ❔ s" in render_markdown(result)
    xml = render_junit(result)
    assert "the threshold is undecided: after 10 trials (the most allowed)" in xml
    decided = flaky_scenario(max_trials=10, planned_trials=3, decision="failed")
    assert decided.status == "failed"
