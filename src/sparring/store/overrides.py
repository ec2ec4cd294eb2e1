"""Verdict overrides ("Verdict wrong?"): a person's correction of one verdict or insight of
one stored trial, kept with who, when and why, and applied whenever the run is read
(`sparring.store.reading.load_run`), so every report, export and page shows it.

A **verdict** (by id, e.g. `c1`, `t2.should1`) is corrected to `met` or `not_met`. An
**insight** (by `evaluation.insight`) is corrected to a value of its type: `true`/`false`
for a boolean (or `met`/`not_met`: the value that passes or fails its rule), a number 0-1
for a score, an option for a category, text for a text insight. The corrected insight's
`passed` follows: a boolean's pass rule is known from what the judge said; for a gating
score or category the person says whether the new value passes (`passed`). Its score is
the new value for a score, 1 or 0 for a boolean; a changed category no longer counts
toward the trial's score (its score map is not kept with the run).

Applying overrides recomputes the trial (status, error, `evaluations_passed`, score) and so
its scenario's status; `trial_overridden` tells the pages to mark them "overridden". The
newest override of a verdict or insight wins; all are kept, and `list_overrides` reads
them as the labels `sparring calibrate` measures the judge against.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Connection, insert, select

from sparring.errors import UserError
from sparring.results import (
    InsightResult,
    Override,
    RunResult,
    TrialResult,
    Verdict,
    evaluations_passed,
    trial_score,
    trial_status,
    undecided_text,
)
from sparring.store.database import Store
from sparring.store.schema import overrides, trials
from sparring.store.writer import now_iso
from sparring.transcript import Transcript

Value = bool | float | str
_VERDICT_VALUES = ("met", "not_met")
_DECIDED = ("passed", "failed", "error", "done", "skipped")
"""Trial statuses that come from verdicts and insights, and so follow overrides."""


class OverrideError(UserError):
    """An override cannot be recorded: no such run, scenario, trial, verdict or insight, or
    a value, reason or author that does not fit. The message says what would."""


@dataclass(frozen=True, kw_only=True)
class StoredOverride:
    """One recorded override: of `target` (a verdict id or `evaluation.insight`) in trial
    `trial` of scenario `scenario_id` of run `run_id`; `passed` and `score` are what an
    insight override makes of the insight (`None` for a verdict)."""

    id: int
    run_id: str
    scenario_id: str
    trial: int
    target: str
    override: Override
    passed: bool | None = None
    score: float | None = None


@dataclass(frozen=True, kw_only=True)
class OverrideLabel:
    """An override as a label for `sparring calibrate`: what was judged (`criterion`: the
    verdict's criterion text, or the insight's `evaluation.insight (type)`), on which
    conversation (`transcript`), what the judge said (`original`) and the person's
    corrected `value`, reason, author and time."""

    run_id: str
    scenario_id: str
    trial: int
    target: str
    kind: Literal["verdict", "insight"]
    criterion: str
    original: Value | None
    value: Value
    reason: str
    author: str
    at: str
    transcript: Transcript


def parse_value(text: str) -> Value:
    """A `--value` given as text: `true`/`false` -> bool, a number -> float, anything else
    (`met`, `not_met`, a category option, text) as is."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return float(text)
    except ValueError:
        return text


def record_override(
    store: Store,
    *,
    run_id: str,
    scenario_id: str,
    trial: int,
    target: str,
    value: Value,
    reason: str,
    author: str,
    passed: bool | None = None,
    at: str | None = None,
) -> StoredOverride:
    """Record that verdict or insight `target` of trial `trial` (1-based) of scenario
    `scenario_id` of run `run_id` should be `value` (see the module docstring), because of
    `reason`, said by `author` at `at` (ISO 8601 UTC; default now). `passed` says whether a
    gating score or category insight's new value passes.

    Raises:
        OverrideError: no such trial, verdict or insight (the message lists those there
            are); a verdict value other than `met`/`not_met`; an insight value not of its
            type; a changed value of a gating score or category insight without `passed`;
            a blank reason or author.
    """
    if not reason.strip() or not author.strip():
        raise OverrideError("an override needs a reason and an author (who corrects it)")
    with store.engine.begin() as conn:
        judged = _stored_trial(conn, run_id, scenario_id, trial)
        override, effect = _correction(judged, target, value, passed)
        override = override.model_copy(
            update={"reason": reason.strip(), "author": author.strip(), "at": at or now_iso()}
        )
        row = {
            "run_id": run_id,
            "scenario_id": scenario_id,
            "trial": trial,
            "target": target,
            "value": json.dumps(override.value),
            "original": json.dumps(override.original),
            "effect": None if effect is None else json.dumps(effect),
            "reason": override.reason,
            "author": override.author,
            "at": override.at,
        }
        key = conn.execute(insert(overrides).values(row)).inserted_primary_key
    assert key is not None
    return _stored({**row, "id": int(key[0])})


def _stored_trial(conn: Connection, run_id: str, scenario_id: str, number: int) -> TrialResult:
    """The trial as stored (as the judge left it, no override applied)."""
    query = select(trials.c.trial, trials.c.result).where(
        trials.c.run_id == run_id, trials.c.scenario_id == scenario_id
    )
    stored = {n: data for n, data in conn.execute(query)}
    if number not in stored:
        there = ", ".join(map(str, sorted(stored))) or "none"
        raise OverrideError(
            f"run {run_id!r} has no trial {number} of scenario {scenario_id!r} (its trials: "
            f"{there}); `sparring show {run_id}` lists the scenarios and trials"
        )
    return TrialResult.model_validate_json(stored[number])


def _correction(
    trial: TrialResult, target: str, value: Value, passed: bool | None
) -> tuple[Override, dict[str, Any] | None]:
    """The override of `target` in `trial` (reason, author and time left blank) and, for an
    insight, its effect (`passed`, `score`)."""
    verdict = next((v for v in trial.verdicts if v.id == target), None)
    if verdict is not None:
        if value is True or value is False:
            value = "met" if value else "not_met"
        if value not in _VERDICT_VALUES:
            raise OverrideError(f"verdict {target!r} is corrected to met or not_met, not {value!r}")
        return Override(value=value, reason="", author="", at="", original=verdict.status), None
    insight = next((i for i in trial.insights if i.id == target), None)
    if insight is None:
        ids = [v.id for v in trial.verdicts] + [i.id for i in trial.insights]
        raise OverrideError(
            f"trial {trial.trial} of {trial.scenario_id!r} has no verdict or insight "
            f"{target!r}; it has: {', '.join(ids) or 'none'}"
        )
    typed = _insight_value(insight, value)
    effect = {"passed": _passes(insight, typed, passed), "score": _score(insight, typed)}
    override = Override(value=typed, reason="", author="", at="", original=insight.value)
    return override, effect


def _insight_value(insight: InsightResult, value: Value) -> Value:
    """`value` as a value of `insight`'s type (`met`/`not_met` for a gating boolean: the
    value that passes / fails its rule)."""
    where = f"insight {insight.id!r} ({insight.type})"
    if insight.type == "boolean":
        if value in _VERDICT_VALUES and insight.gating:
            rule = _boolean_rule(insight)
            if rule is not None:
                return rule if value == "met" else not rule
        if not isinstance(value, bool):
            raise OverrideError(f"{where} is corrected to true or false, not {value!r}")
        return value
    if insight.type == "score":
        if isinstance(value, bool) or not isinstance(value, float | int) or not 0 <= value <= 1:
            raise OverrideError(f"{where} is corrected to a number from 0 to 1, not {value!r}")
        return float(value)
    if not isinstance(value, str) or not value.strip():
        raise OverrideError(f"{where} is corrected to text, not {value!r}")
    return value


def _boolean_rule(insight: InsightResult) -> bool | None:
    """The value a gating boolean insight passes with, from what the judge said."""
    if insight.status != "ok" or not isinstance(insight.value, bool) or insight.passed is None:
        return None
    return insight.value if insight.passed else not insight.value


def _passes(insight: InsightResult, value: Value, passed: bool | None) -> bool | None:
    if not insight.gating:
        return None
    if insight.type == "boolean":
        rule = _boolean_rule(insight)
        if rule is not None:
            return value is rule
    if value == insight.value and insight.status == "ok":
        return insight.passed if passed is None else passed
    if passed is None:
        raise OverrideError(
            f"insight {insight.id!r} decides the trial, and whether {value!r} passes its rule "
            "is not kept with the run: say whether it passes (--passes or --fails)"
        )
    return passed


def _score(insight: InsightResult, value: Value) -> float | None:
    if insight.type == "boolean":
        return 1.0 if value is True else 0.0
    if insight.type == "score":
        return float(value)
    return insight.score if value == insight.value else None


# --- applying ------------------------------------------------------------------------------


def run_overrides(store: Store, run_id: str) -> list[StoredOverride]:
    """Every override recorded on run `run_id`, oldest first."""
    query = select(overrides).where(overrides.c.run_id == run_id).order_by(overrides.c.id)
    with store.engine.connect() as conn:
        return [_stored(row) for row in conn.execute(query).mappings()]


def status_changes(conn: Connection, run_ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """Per run of `run_ids` with overrides: `(stored status, overridden status)` of each
    overridden trial, so counts kept by status (`sparring runs`) can follow overrides."""
    query = select(overrides).where(overrides.c.run_id.in_(run_ids)).order_by(overrides.c.id)
    by_trial: dict[tuple[str, str, int], dict[str, StoredOverride]] = {}
    for row in conn.execute(query).mappings():
        one = _stored(row)
        by_trial.setdefault((one.run_id, one.scenario_id, one.trial), {})[one.target] = one
    out: dict[str, list[tuple[str, str]]] = {}
    for (run_id, scenario_id, number), by_target in by_trial.items():
        data = conn.execute(
            select(trials.c.result).where(
                trials.c.run_id == run_id,
                trials.c.scenario_id == scenario_id,
                trials.c.trial == number,
            )
        ).scalar_one()
        trial = TrialResult.model_validate_json(data)
        after = overridden_trial(trial, by_target).status
        out.setdefault(run_id, []).append((trial.status, after))
    return out


def apply_overrides(run: RunResult, found: Sequence[StoredOverride]) -> None:
    """Apply `found` (oldest first; the newest of a target wins) to `run`'s trials in
    place: each overridden verdict and insight, then its trial's status, error,
    `evaluations_passed` and score (so its scenario's status follows)."""
    by_trial: dict[tuple[str, int], dict[str, StoredOverride]] = {}
    for one in found:
        by_trial.setdefault((one.scenario_id, one.trial), {})[one.target] = one
    for scenario in run.scenarios:
        scenario.trials = [
            overridden_trial(t, by_trial[(t.scenario_id, t.trial)])
            if (t.scenario_id, t.trial) in by_trial
            else t
            for t in scenario.trials
        ]


def overridden_trial(trial: TrialResult, by_target: dict[str, StoredOverride]) -> TrialResult:
    """`trial` with the overrides `by_target` (verdict id or `evaluation.insight` -> its
    newest override) applied and its outcome recomputed."""
    verdicts = [_verdict(v, by_target.get(v.id)) for v in trial.verdicts]
    insights = [_insight(i, by_target.get(i.id)) for i in trial.insights]
    changed = trial.model_copy(update={"verdicts": verdicts, "insights": insights})
    undecided = undecided_text(trial.verdicts, trial.insights)
    if trial.status not in _DECIDED or (trial.status == "error" and trial.error != undecided):
        return changed  # it did not end by its verdicts (target error, timeout, ...)
    status = trial_status(verdicts, insights)
    if status == "skipped" and trial.status in ("done", "skipped"):
        status = trial.status
    error = trial.error if trial.error != undecided else None  # e.g. a simulated user's slip
    pending = trial.evaluations_passed == "pending"
    return changed.model_copy(
        update={
            "status": status,
            "error": undecided_text(verdicts, insights) if status == "error" else error,
            "evaluations_passed": evaluations_passed(insights, pending=pending),
            "score": trial_score(insights, verdicts),
        }
    )


def _verdict(verdict: Verdict, found: StoredOverride | None) -> Verdict:
    if found is None:
        return verdict
    return verdict.model_copy(update={"status": found.override.value, "override": found.override})


def _insight(insight: InsightResult, found: StoredOverride | None) -> InsightResult:
    if found is None:
        return insight
    return insight.model_copy(
        update={
            "status": "ok",
            "value": found.override.value,
            "passed": found.passed,
            "score": found.score,
            "error": None,
            "override": found.override,
        }
    )


def trial_overridden(trial: TrialResult) -> bool:
    """Whether a person overrode a verdict or insight of `trial` (the pages and reports
    mark it, and its scenario, "overridden")."""
    return any(v.override is not None for v in trial.verdicts) or any(
        i.override is not None for i in trial.insights
    )


def list_overrides(store: Store, *, run_id: str | None = None) -> list[OverrideLabel]:
    """Every override (of run `run_id` when given), oldest first, as calibration labels:
    each with the conversation as stored and the text of what was judged."""
    query = select(overrides, trials.c.result).join(
        trials,
        (trials.c.run_id == overrides.c.run_id)
        & (trials.c.scenario_id == overrides.c.scenario_id)
        & (trials.c.trial == overrides.c.trial),
    )
    if run_id is not None:
        query = query.where(overrides.c.run_id == run_id)
    with store.engine.connect() as conn:
        rows = conn.execute(query.order_by(overrides.c.id)).mappings().all()
    return [_label(row) for row in rows]


def _label(row: Mapping[Any, Any]) -> OverrideLabel:
    trial = TrialResult.model_validate_json(row["result"])
    stored = _stored(row)
    verdict = next((v for v in trial.verdicts if v.id == stored.target), None)
    insight = next((i for i in trial.insights if i.id == stored.target), None)
    criterion = (
        verdict.description
        if verdict is not None
        else f"{stored.target} ({insight.type if insight else 'insight'})"
    )
    return OverrideLabel(
        run_id=stored.run_id,
        scenario_id=stored.scenario_id,
        trial=stored.trial,
        target=stored.target,
        kind="verdict" if verdict is not None else "insight",
        criterion=criterion,
        original=stored.override.original,
        value=stored.override.value,
        reason=stored.override.reason,
        author=stored.override.author,
        at=stored.override.at,
        transcript=trial.transcript,
    )


def _stored(row: Mapping[Any, Any]) -> StoredOverride:
    """An `overrides` row (its columns by name) as a `StoredOverride`."""
    get = row.__getitem__
    effect: dict[str, Any] = json.loads(get("effect")) if get("effect") else {}
    return StoredOverride(
        id=get("id"),
        run_id=get("run_id"),
        scenario_id=get("scenario_id"),
        trial=get("trial"),
        target=get("target"),
        override=Override(
            value=json.loads(get("value")),
            reason=get("reason"),
            author=get("author"),
            at=get("at"),
            original=json.loads(get("original")),
        ),
        passed=effect.get("passed"),
        score=effect.get("score"),
    )
