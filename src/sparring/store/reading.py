"""Read the store: list runs, find one by id or prefix, load it back as a `RunResult`.

A run stays `running` in its row until its process writes the end; a `running` run whose
process is gone (killed, crashed) reads as `interrupted` (`effective_status`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import Row, func, select

from sparring.errors import UserError
from sparring.results import ModelSettings, RunResult, ScenarioResult, TrialResult
from sparring.store.database import Store
from sparring.store.overrides import apply_overrides, run_overrides, status_changes
from sparring.store.provenance import process_alive
from sparring.store.schema import runs, scenarios, trials
from sparring.store.writer import INTERRUPTED_END

RunStatus = Literal["running", "finished", "interrupted"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "finished", "interrupted")
_NOT_COUNTED = ("skipped", "invalid", "done")


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One stored run, as `sparring runs` lists it.

    `trial_counts` are trials per status; `duration_ms` is `None` while nothing is known
    (a run killed before any trial finished); `cost_usd` sums its trials' cost.
    """

    id: str
    started_at: str
    status: RunStatus
    exit_code: int | None
    paths: list[str]
    git_commit: str | None
    git_branch: str | None
    user_name: str | None
    models: list[ModelSettings]
    trial_counts: dict[str, int]
    cost_usd: float
    duration_ms: float | None
    parent_run_id: str | None
    baseline: bool = False

    @property
    def pass_rate(self) -> float | None:
        """Passed trials / trials that tested the agent (not skipped, invalid or done)."""
        counted = sum(n for s, n in self.trial_counts.items() if s not in _NOT_COUNTED)
        return self.trial_counts.get("passed", 0) / counted if counted else None


def effective_status(status: str, host: str | None, pid: int | None) -> RunStatus:
    """`status` as stored, except a `running` run whose process is gone: `interrupted`."""
    if status == "running" and process_alive(host, pid) is False:
        return "interrupted"
    return cast(RunStatus, status)


def list_runs(
    store: Store,
    *,
    limit: int | None = None,
    status: str | None = None,
    tags: Sequence[str] = (),
) -> list[RunSummary]:
    """Stored runs, newest first: at most `limit`, only those in `status` (one of
    `RUN_STATUSES`) when given, only those holding a scenario with any of `tags` when given;
    trials counted by their status after verdict overrides."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(runs).order_by(runs.c.started_at.desc(), runs.c.id)).all()
        rows = [r for r in rows if status is None or _status(r) == status]
        if tags:
            tagged = _tagged_runs(conn, set(tags))
            rows = [r for r in rows if r.id in tagged]
        rows = rows[:limit]
        totals = _trial_totals(conn, [r.id for r in rows])
        for run_id, changes in status_changes(conn, list(totals)).items():
            counts = totals[run_id][0]
            for before, after in changes:
                counts[before] -= 1
                counts[after] = counts.get(after, 0) + 1
                if not counts[before]:
                    del counts[before]
    return [_summary(r, *totals.get(r.id, ({}, 0.0, None))) for r in rows]


def _status(row: Row[Any]) -> RunStatus:
    return effective_status(row.status, row.host, row.pid)


def _tagged_runs(conn: Any, tags: set[str]) -> set[str]:
    """Ids of the runs holding a scenario with any of `tags` (its stored `ScenarioResult`)."""
    query = select(scenarios.c.run_id, scenarios.c.data)
    return {
        run_id
        for run_id, data in conn.execute(query)
        if tags.intersection(json.loads(data).get("tags") or ())
    }


def _trial_totals(
    conn: Any, run_ids: Sequence[str]
) -> dict[str, tuple[dict[str, int], float, str | None]]:
    """Per run: trials per status, their cost, and when the last one finished."""
    out: dict[str, tuple[dict[str, int], float, str | None]] = {}
    if not run_ids:
        return out
    query = (
        select(
            trials.c.run_id,
            trials.c.status,
            func.count(),
            func.sum(trials.c.cost_usd),
            func.max(trials.c.finished_at),
        )
        .where(trials.c.run_id.in_(run_ids))
        .group_by(trials.c.run_id, trials.c.status)
    )
    for run_id, status, count, cost, last in conn.execute(query):
        counts, total, latest = out.get(run_id, ({}, 0.0, None))
        counts[status] = count
        out[run_id] = (
            counts,
            total + (cost or 0.0),
            max(filter(None, (latest, last)), default=None),
        )
    return out


def _summary(
    row: Row[Any], counts: dict[str, int], cost_usd: float, last: str | None
) -> RunSummary:
    status = _status(row)
    head = json.loads(row.head)
    duration: float | None = head.get("duration_ms") if status == "finished" else None
    if duration is None and last is not None:
        duration = _elapsed_ms(row.started_at, last)
    return RunSummary(
        id=row.id,
        started_at=row.started_at,
        status=status,
        exit_code=row.exit_code,
        paths=json.loads(row.paths),
        git_commit=row.git_commit,
        git_branch=row.git_branch,
        user_name=row.user_name,
        models=[ModelSettings.model_validate(m) for m in json.loads(row.models)],
        trial_counts=counts,
        cost_usd=cost_usd,
        duration_ms=duration,
        parent_run_id=row.parent_run_id,
        baseline=bool(row.baseline),
    )


def _elapsed_ms(start: str, end: str) -> float | None:
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000
    except ValueError:
        return None


def find_run(
    store: Store,
    ref: str | None,
    *,
    where: Callable[[RunSummary], bool] = lambda _: True,
    what: str = "run",
) -> RunSummary:
    """The run `ref` names (its id, or a unique start of it); with no `ref`, the newest run
    for which `where` holds (`what` names such a run in the error).

    Raises:
        UserError: no such run, or `ref` is the start of several ids.
    """
    stored = list_runs(store)
    if ref is None:
        found = next((r for r in stored if where(r)), None)
        if found is None:
            raise UserError(f"the store holds no {what}; `sparring runs` lists the stored runs")
        return found
    matches = [r for r in stored if r.id == ref] or [r for r in stored if r.id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UserError(f"no run {ref!r} in the store; `sparring runs` lists the stored runs")
    ids = ", ".join(r.id for r in matches[:5])
    raise UserError(f"{ref!r} starts several run ids ({ids}); give more of the id")


def diff_pair(
    store: Store, base_ref: str | None, run_ref: str | None
) -> tuple[RunSummary, RunSummary]:
    """The runs `sparring diff [BASE] [RUN]` compares: RUN as named, else the newest run
    not running; BASE as named, else the run marked baseline, else the newest run before
    RUN of the same test paths on RUN's git branch (both not running, and not RUN itself).

    Raises:
        UserError: a named run is missing or ambiguous, the store holds no finished run,
            or no base can be found (with how to name or mark one).
    """
    run = find_run(store, run_ref, where=lambda r: r.status != "running", what="finished run")
    if base_ref is not None:
        return find_run(store, base_ref), run
    stored = list_runs(store)
    marked = next((r for r in stored if r.baseline and r.id != run.id), None)
    if marked is not None:
        return marked, run
    earlier = (
        r
        for r in stored
        if r.started_at < run.started_at
        and r.git_branch == run.git_branch
        and sorted(r.paths) == sorted(run.paths)
        and r.status != "running"
    )
    base = next(earlier, None)
    if base is None:
        branch = f" on branch {run.git_branch}" if run.git_branch else ""
        raise UserError(
            f"nothing to compare run {run.id} with: no run is marked baseline and no earlier "
            f"run of {' '.join(run.paths) or 'the same paths'}{branch} is stored; give BASE "
            "(`sparring diff BASE RUN`) or mark one with `sparring baseline RUN`"
        )
    return base, run


def load_run(store: Store, run_id: str) -> RunResult:
    """Run `run_id` as the `RunResult` it reported (or, for a run that never finished,
    would have reported: `interrupted`, with every trial that finished), with the verdict
    overrides recorded on it applied (`sparring.store.overrides`).

    Raises:
        UserError: no run `run_id` in the store.
    """
    with store.engine.connect() as conn:
        row = conn.execute(select(runs).where(runs.c.id == run_id)).first()
        if row is None:
            raise UserError(f"no run {run_id!r} in the store; `sparring runs` lists them")
        planned = conn.execute(
            select(scenarios.c.data)
            .where(scenarios.c.run_id == run_id)
            .order_by(scenarios.c.position)
        ).scalars()
        results = [ScenarioResult.model_validate_json(data) for data in planned]
        stored = conn.execute(
            select(trials.c.result).where(trials.c.run_id == run_id).order_by(trials.c.trial)
        ).scalars()
        by_id = {s.scenario_id: s for s in results}
        for data in stored:
            trial = TrialResult.model_validate_json(data)
            by_id[trial.scenario_id].trials.append(trial)
    run = RunResult.model_validate_json(row.head)
    run.scenarios = results
    if _status(row) == "interrupted":
        run.interrupted = True
    apply_overrides(run, run_overrides(store, run_id))
    return run


def run_invocation(store: Store, run_id: str) -> dict[str, Any]:
    """What `sparring run` was given for run `run_id` (see `RunRecord.invocation`)."""
    with store.engine.connect() as conn:
        data = conn.execute(select(runs.c.invocation).where(runs.c.id == run_id)).scalar_one()
    return json.loads(data)


def run_settings(store: Store, run_id: str) -> dict[str, Any]:
    """The resolved settings run `run_id` ran with (`api_key` left out, URLs masked)."""
    with store.engine.connect() as conn:
        data = conn.execute(select(runs.c.settings).where(runs.c.id == run_id)).scalar_one()
    return json.loads(data)


def finished_trials(store: Store, run_id: str) -> dict[str, set[int]]:
    """Per scenario id, the numbers of run `run_id`'s trials that have a result (those cut
    off by an interrupt do not)."""
    out: dict[str, set[int]] = {}
    query = select(trials.c.scenario_id, trials.c.trial).where(
        trials.c.run_id == run_id, trials.c.end_reason != INTERRUPTED_END
    )
    with store.engine.connect() as conn:
        for scenario_id, number in conn.execute(query):
            out.setdefault(scenario_id, set()).add(number)
    return out
