"""The pytest failure message of a sparring test: the pass rate's 95% interval in its first
line, and each evaluation gate that did not pass with its value and the judge's reasoning
(sparring.pytest_plugin.items.describe_failure)."""

from __future__ import annotations

from sparring.pytest_plugin.items import describe_failure
from sparring.results import InsightResult, ScenarioResult, TrialResult


def gated_trial(n: int, *, passed: bool) -> TrialResult:
    gate = InsightResult(
        evaluation="support",
        insight="resolved",
        type="boolean",
        status="ok",
        value=passed,
        passed=passed,
        gating=True,
        reasoning="It never offered a refund." if not passed else "Refunded.",
    )
    return TrialResult(
        scenario_id="refund",
        trial=n,
        status="passed" if passed else "failed",
        end_reason="script_done",
        insights=[gate],
        evaluations_passed="yes" if passed else "no",
    )


def test_a_scenario_failing_only_on_a_gate_names_it_with_value_and_reasoning() -> None:
    result = ScenarioResult(
        scenario_id="refund",
        name="refund",
        kind="scripted",
        threshold=0.8,
        trials=[gated_trial(1, passed=True), gated_trial(2, passed=False)],
    )
    text = describe_failure(result)
    assert text.splitlines()[0] == (
        "sparring scenario 'refund' failed: 1/2 trials passed, 50% [9%, 91%], threshold 80%"
    )
    assert "trial 2: failed (end reason script_done)" in text
    assert (
        "  support.resolved (insight = false (pass rule of evaluation support)) not met: "
        "It never offered a refund."
    ) in text
    assert "trial 1" not in text  # a passed trial is not listed


def test_a_scenario_with_no_counted_trial_states_no_interval() -> None:
    skipped = TrialResult(scenario_id="s", trial=1, status="error", end_reason="target_error")
    result = ScenarioResult(
        scenario_id="s",
        name="s",
        kind="scripted",
        threshold=1.0,
        trials=[skipped.model_copy(update={"status": "skipped", "end_reason": "skipped"})],
    )
    assert describe_failure(result).splitlines()[0] == (
        "sparring scenario 's' skipped: 0/0 trials passed, threshold 100%"
    )


def test_an_undecided_test_fails_under_pytest_saying_it_is_undecided_not_failed() -> None:
    result = ScenarioResult(
        scenario_id="refund",
        name="refund",
        kind="scripted",
        threshold=0.9,
        max_trials=3,
        planned_trials=3,
        trials=[gated_trial(n, passed=True) for n in (1, 2, 3)],
    )
    assert result.status == "undecided"
    lines = describe_failure(result).splitlines()
    assert lines[0].startswith("sparring scenario 'refund' undecided: 3/3 trials passed")
    assert lines[1] == (
        "undecided, not failed: after 3 trials (the most allowed) the pass rate's 95% interval "
        "still holds the threshold; raise the trials' max or lower the threshold (sparring run "
        "exits 3 for it)"
    )
