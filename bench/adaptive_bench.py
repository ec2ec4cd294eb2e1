"""Adaptive trials against a fixed N = 30: mean trials used and wrong-decision rate.

Pure statistics: each simulated agent passes a trial with probability `true_rate`
(Bernoulli draws from a fixed seed); adaptive trials use sparring's own decision function
(`sparring.judging.statistics.decided`, 95% Wilson interval) one trial at a time, from
`min` to `max`; the fixed run takes 30 trials and passes when the pass rate reaches the
threshold (as `ScenarioResult.status` does). A decision is wrong when it disagrees with
`true_rate >= threshold`; an adaptive run that reaches `max` still straddling is
`undecided` (counted apart, not as wrong).

Run: `.venv/bin/python bench/adaptive_bench.py [--runs 2000] [--seed 11]`; prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import random

from sparring.judging.statistics import decided

RATES = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99)
THRESHOLDS = (0.8, 0.9)
FIXED_N = 30


def adaptive(
    rng: random.Random, rate: float, threshold: float, lo: int, hi: int
) -> tuple[int, str | None]:
    """(trials used, decision or None) of one adaptive run, one trial at a time."""
    passed = 0
    for n in range(1, hi + 1):
        passed += rng.random() < rate
        if n >= lo:
            verdict = decided(passed, n, threshold)
            if verdict is not None:
                return n, verdict
    return hi, None


def fixed(rng: random.Random, rate: float, threshold: float) -> str:
    passed = sum(rng.random() < rate for _ in range(FIXED_N))
    return "passed" if passed >= threshold * FIXED_N - 1e-9 else "failed"


def row(rng: random.Random, rate: float, threshold: float, runs: int, lo: int, hi: int) -> str:
    truth = "passed" if rate >= threshold else "failed"
    used = wrong = undecided = fixed_wrong = 0
    for _ in range(runs):
        n, verdict = adaptive(rng, rate, threshold, lo, hi)
        used += n
        undecided += verdict is None
        wrong += verdict is not None and verdict != truth
        fixed_wrong += fixed(rng, rate, threshold) != truth
    return (
        f"| {threshold:.0%} | {rate:.0%} | {used / runs:.1f} | {wrong / runs:.1%} | "
        f"{undecided / runs:.1%} | {FIXED_N} | {fixed_wrong / runs:.1%} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated runs per cell")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--min", dest="lo", type=int, default=3)
    parser.add_argument("--max", dest="hi", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"Adaptive trials {args.lo}-{args.hi} vs fixed N = {FIXED_N}, {args.runs} runs a cell")
    print()
    print(
        "| threshold | true rate | adaptive: mean trials | adaptive: wrong | adaptive: "
        "undecided | fixed: trials | fixed: wrong |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for threshold in THRESHOLDS:
        for rate in RATES:
            print(row(rng, rate, threshold, args.runs, args.lo, args.hi))


if __name__ == "__main__":
    main()
