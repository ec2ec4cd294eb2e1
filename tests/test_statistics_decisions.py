"""Decisions of adaptive trials from Wilson intervals (sparring.judging.statistics)."""

from __future__ import annotations

import pytest

from sparring.judging.statistics import decided, trials_to_pass, wilson_interval


def test_the_interval_of_seven_of_ten_is_the_one_reports_show() -> None:
    low, high = wilson_interval(7, 10)
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)  # "70% [40%, 89%]"


@pytest.mark.parametrize(
    ("passed", "total", "threshold", "expected"),
    [
        (16, 16, 0.8, "passed"),  # low 0.8064
        (15, 15, 0.8, None),  # low 0.7963: not yet
        (5, 10, 0.8, "failed"),  # high 0.7634
        (6, 10, 0.8, None),  # high 0.8318
        (0, 0, 0.8, None),  # nothing to go on
        (3, 3, 0.4, "passed"),  # low 0.4385
        (3, 3, 0.44, None),  # low 0.4385: just short
        (29, 30, 0.8, "passed"),  # low 0.8333
        (30, 30, 0.9, None),  # low 0.8865: 30 passes never prove 90%
        (23, 30, 0.9, "failed"),  # high 0.8821
        (24, 30, 0.9, None),  # high 0.9049
    ],
)
def test_decided_only_when_the_interval_is_clear_of_the_threshold(
    passed: int, total: int, threshold: float, expected: str | None
) -> None:
    assert decided(passed, total, threshold) == expected


def test_decided_is_passed_exactly_at_the_low_end() -> None:
    low, high = wilson_interval(9, 10)
    assert decided(9, 10, low) == "passed"
    assert decided(9, 10, high) is None
    assert decided(9, 10, high + 1e-9) == "failed"


@pytest.mark.parametrize(
    ("threshold", "trials"), [(0.5, 4), (0.8, 16), (0.9, 35), (0.95, 73), (1.0, 10_001)]
)
def test_trials_to_pass_is_the_fewest_all_passed_trials_that_decide(
    threshold: float, trials: int
) -> None:
    assert trials_to_pass(threshold) == trials
    if trials <= 10_000:
        assert decided(trials, trials, threshold) == "passed"
        assert decided(trials - 1, trials - 1, threshold) is None


def test_decided_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="between 0 and total=3"):
        decided(4, 3, 0.8)
