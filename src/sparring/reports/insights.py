"""Evaluations as every report shows them: insight values in words, the featured output
first, gating insights that did not pass as problems, scores, explanations and overrides.

Plain text; each renderer escapes it for its format.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sparring.results import InsightResult, Override, TrialResult, Verdict

EXPLANATION_LABEL = "why it failed (explain_failures)"
"""How reports label `TrialResult.explanation`."""


def ordered(insights: Sequence[InsightResult]) -> list[InsightResult]:
    """`insights` with the featured ones first, then by group (ungrouped first), keeping
    their order otherwise."""
    return sorted(insights, key=lambda i: (not i.featured, i.group is not None, i.group or ""))


def value_text(insight: InsightResult) -> str:
    """The value in words: `true`, `0.8`, `refund`, the text; `error: <why>` on error."""
    value = insight.value
    if insight.status == "error" or value is None:
        return f"error: {insight.error or 'no value'}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def gate_text(insight: InsightResult) -> str:
    """`passed`, `not passed` for a gating insight; `""` for one without a pass rule."""
    if not insight.gating or insight.status == "error":
        return ""
    return "passed" if insight.passed else "not passed"


def score_text(score: float | None) -> str:
    """`0.83` (two places); `-` for `None`."""
    return "-" if score is None else f"{score:.2f}"


def evaluations_passed_text(trial: TrialResult) -> str:
    """`TrialResult.evaluations_passed` as reports show it: `yes`, `no`, `pending`, `none`,
    or `error` for a `no` that only gates in `error` made (the judge's value could not be
    read: the agent did not fail them)."""
    shown = trial.evaluations_passed
    failed = [i for i in trial.insights if i.gating and not i.passed]
    if shown == "no" and failed and all(i.status == "error" for i in failed):
        return "error"
    return shown


def trial_facts(trial: TrialResult) -> list[str]:
    """`score 0.83`, `evaluations passed yes` (`evaluations not judged` while pending,
    `evaluations could not be scored` when only gates in error kept them from passing):
    what a trial's evaluations add to its facts (nothing when it has neither a score nor
    gating insights)."""
    facts = [f"score {score_text(trial.score)}"] if trial.score is not None else []
    shown = evaluations_passed_text(trial)
    if shown == "pending":
        facts.append("evaluations not judged")
    elif shown == "error":
        facts.append("evaluations could not be scored")
    elif shown != "none":
        facts.append(f"evaluations passed {shown}")
    return facts


def override_text(override: Override | None) -> str:
    """`overridden by ana (was not_met): wrong quote`; `""` without an override."""
    if override is None:
        return ""
    was = "" if override.original is None else f" (was {_shown(override.original)})"
    reason = f": {override.reason}" if override.reason else ""
    return f"overridden by {override.author}{was}{reason}"


def _shown(value: bool | float | str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def gate_verdicts(insights: Iterable[InsightResult]) -> list[Verdict]:
    """The gating insights that did not pass, as verdicts for the reports' problem lists:
    `not_met` (the judge's reasoning as reason) or `error` (the insight's error)."""
    out: list[Verdict] = []
    for i in insights:
        if not i.gating or i.passed:
            continue
        error = i.status == "error"
        out.append(
            Verdict(
                id=i.id,
                kind="criterion",
                description=f"insight{'' if error else ' = ' + value_text(i)} (pass rule of "
                f"evaluation {i.evaluation})",
                status="error" if error else "not_met",
                reason=(i.error or "") if error else i.reasoning,
                evidence=i.evidence,
                turns=i.turns,
                override=i.override,
            )
        )
    return out
