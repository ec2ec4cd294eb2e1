"""Verdict edge cases: a tiny threshold needs a pass, one definition of an empty reply, an
empty `should` is bad input, a reply too deep for `json_schema` is the agent's failure, and
text checks see through Unicode disguises."""

from __future__ import annotations

import pytest

from sparring.results import ScenarioResult, TrialResult, TrialStatus, passes_needed


def scenario(threshold: float, statuses: list[TrialStatus]) -> ScenarioResult:
    trials = [
        TrialResult(scenario_id="s", trial=i, status=status, end_reason="script_done")
        for i, status in enumerate(statuses, start=1)
    ]
    return ScenarioResult(
        scenario_id="s", name="s", kind="scripted", threshold=threshold, trials=trials
    )


@pytest.mark.parametrize("threshold", [1.0e-20, 1e-12, 0.01])
def test_a_positive_threshold_however_tiny_needs_one_pass(threshold: float) -> None:
    failing = scenario(threshold, ["failed", "failed", "failed"])
    assert failing.status == "failed"
    assert failing.needed == (1, 3)
    assert not failing.can_still_pass(0) and failing.can_still_pass(1)
    assert scenario(threshold, ["failed", "passed", "failed"]).status == "passed"
    assert passes_needed(threshold, 3) == 1 and passes_needed(threshold, 0) == 0


def test_a_zero_threshold_needs_no_pass() -> None:
    assert passes_needed(0.0, 3) == 0
    assert scenario(0.0, ["failed", "failed"]).status == "passed"
