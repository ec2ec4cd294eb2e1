"""Confidence intervals for pass rates.

A pass rate from a handful of trials is a noisy estimate of how often the agent passes;
reports show it with the range that likely holds the true rate. The Wilson score interval
(Wilson, 1927) stays inside 0-1 and behaves at 0 of n and n of n, where the textbook
"rate ± 1.96 standard errors" gives nonsense such as 100% ± 0 after 3 of 3.

Adaptive trials (`trials: {min: 3, max: 30}`) use `decided`: keep adding trials while the
interval still straddles the threshold, stop once it is clear of it.
"""

from __future__ import annotations

from math import sqrt
from statistics import NormalDist
from typing import Literal

Decision = Literal["passed", "failed"]
"""Where a pass rate stands against a threshold once its interval is clear of it."""


def wilson_interval(passed: int, total: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a pass rate of `passed` out of `total` trials.

    Args:
        passed: Trials that passed, 0 <= passed <= total.
        total: Trials counted, >= 1.
        confidence: Chance that the interval holds the true rate, strictly between 0 and 1.

    Returns:
        `(low, high)`, fractions with 0 <= low <= passed/total <= high <= 1; e.g. 3 of 3 at
        95% is about `(0.439, 1.0)`.

    Raises:
        ValueError: `total < 1`, `passed` outside 0..total, or `confidence` outside (0, 1).
    """
    if total < 1:
        raise ValueError(f"a pass rate needs at least one trial, got total={total}")
    if not 0 <= passed <= total:
        raise ValueError(f"passed={passed} must be between 0 and total={total}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must be strictly between 0 and 1")
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    rate = passed / total
    z2_n = z * z / total
    centre = (rate + z2_n / 2) / (1 + z2_n)
    half = z * sqrt(rate * (1 - rate) / total + z2_n / (4 * total)) / (1 + z2_n)
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == total else min(1.0, centre + half)
    return low, high


def decided(
    passed: int, total: int, threshold: float, *, confidence: float = 0.95
) -> Decision | None:
    """Whether `passed` of `total` trials settle a pass rate against `threshold`.

    Args:
        passed: Trials that passed, 0 <= passed <= total.
        total: Trials counted, >= 0; 0 decides nothing.
        threshold: Pass rate required, a fraction 0-1.
        confidence: As in `wilson_interval`.

    Returns:
        `"passed"` when the interval's low end is at or above `threshold`, `"failed"` when
        its high end is below it, `None` while it straddles it (more trials are needed).
        E.g. at 0.8: 16 of 16 passed (low 0.806), 5 of 10 failed (high 0.763).

    Raises:
        ValueError: as `wilson_interval`, for a `total` >= 1.
    """
    if total == 0:
        return None
    low, high = wilson_interval(passed, total, confidence=confidence)
    if low >= threshold:
        return "passed"
    if high < threshold:
        return "failed"
    return None


def trials_to_pass(threshold: float, *, confidence: float = 0.95, limit: int = 10_000) -> int:
    """The fewest trials that, all passed, decide `passed` against `threshold`: the least
    `max` of adaptive trials that can ever pass (e.g. 4 at 0.5, 16 at 0.8, 35 at 0.9).

    Returns:
        That count; `limit + 1` when even `limit` passes of `limit` are not enough (a
        threshold of 1 is never proven by a finite run).
    """
    n = 1
    while n <= limit and decided(n, n, threshold, confidence=confidence) != "passed":
        n += 1
    return n
