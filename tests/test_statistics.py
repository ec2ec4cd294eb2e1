"""Wilson score intervals of pass rates (sparring.judging.statistics)."""

from __future__ import annotations

import pytest

from sparring.judging.statistics import wilson_interval


@pytest.mark.parametrize(
    ("passed", "total", "expected"),
    [
        # reference values: Wilson (1927), as tabulated by Newcombe (1998) and R's prop.test
        # without continuity correction
        (5, 10, (0.2366, 0.7634)),
        (9, 10, (0.5958, 0.9821)),
        (3, 3, (0.4385, 1.0)),
        (0, 10, (0.0, 0.2775)),
        (1, 1, (0.2065, 1.0)),
        (81, 263, (0.2553, 0.3662)),
    ],
)
def test_wilson_interval_matches_reference_values(
    passed: int, total: int, expected: tuple[float, float]
) -> None:
    low, high = wilson_interval(passed, total)
    assert (round(low, 4), round(high, 4)) == expected


def test_the_interval_holds_the_rate_and_narrows_with_more_trials() -> None:
    for total in (1, 2, 5, 30, 1000):
        for passed in range(total + 1):
            low, high = wilson_interval(passed, total)
            assert 0.0 <= low <= passed / total <= high <= 1.0
    assert wilson_interval(50, 100)[1] - wilson_interval(50, 100)[0] < (
        wilson_interval(5, 10)[1] - wilson_interval(5, 10)[0]
    )


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    low90, high90 = wilson_interval(5, 10, confidence=0.9)
    low95, high95 = wilson_interval(5, 10)
    assert low95 < low90 < high90 < high95


@pytest.mark.parametrize(
    ("passed", "total", "confidence", "message"),
    [
        (0, 0, 0.95, "at least one trial"),
        (4, 3, 0.95, "between 0 and total=3"),
        (-1, 3, 0.95, "between 0 and total=3"),
        (1, 3, 1.0, "strictly between 0 and 1"),
        (1, 3, 0.0, "strictly between 0 and 1"),
    ],
)
def test_bad_arguments_say_what_is_wrong(
    passed: int, total: int, confidence: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        wilson_interval(passed, total, confidence=confidence)
