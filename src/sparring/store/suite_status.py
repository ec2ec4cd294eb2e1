"""The statuses the test suites list and results pages show, from the stored runs (with
verdict overrides applied).

Conversation (one trial): **In progress** (no result yet: the dashboard shows the planned
trials that have none), **Evaluating** (ended, agent evaluations still scoring), **Passed**
/ **Failed** (the trial's status: its agent evaluations, criteria, `should`s and checks;
an error of the target or a model is Failed with its reason), **Timed out**, **Skipped**
(what would judge it could not run, e.g. no model configured: the reason says how to
configure one), **Done** (ended normally, nothing that could pass or fail it), **Invalid**
(the simulated user could not play its part: says nothing about the agent).

Suite (its latest run): **Not run**, **In progress**, **Passed** (every scored
conversation passed), **Failed** (every scored conversation failed, or the run could not
start or was interrupted), **Mixed**, **Timed out** (every conversation), **Skipped** (no
conversation scored, one skipped: with why), **Done** (no verdict, e.g. no agent
evaluation attached); a failure comes with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Row, func, select

from sparring.store.database import Store
from sparring.store.overrides import trial_overridden
from sparring.store.reading import load_run
from sparring.store.schema import overrides, runs, suite_runs
from sparring.store.suites import (
    ResolvedCase,
    Suite,
    all_suites,
    claim_running,
    get_suite,
    resolved_cases,
)
from sparring.store.writer import INTERRUPTED_END

if TYPE_CHECKING:
    from sparring.results import RunResult, TrialResult

SuiteStatus = Literal[
    "not_run", "in_progress", "passed", "failed", "mixed", "timed_out", "skipped", "done"
]
ConversationStatus = Literal[
    "in_progress", "evaluating", "passed", "failed", "timed_out", "skipped", "done", "invalid"
]
STATUS_LABELS: dict[str, str] = {
    "not_run": "Not run",
    "in_progress": "In progress",
    "evaluating": "Evaluating",
    "passed": "Passed",
    "failed": "Failed",
    "mixed": "Mixed",
    "timed_out": "Timed out",
    "skipped": "Skipped",
    "done": "Done",
    "invalid": "Invalid",
}
"""How the pages name each status."""


@dataclass(frozen=True, kw_only=True)
class SuiteRun:
    """One run of a suite: its claim `id`, the runner's `run_id` (`None` until it started
    or when it could not), when it started, the revisions each test case used, who started
    it, its `status` with the failure `reason`, `duration_ms` (`None` while unknown), and
    whether an override changed a verdict of it (`overridden`)."""

    id: int
    suite_id: int
    run_id: str | None
    started_at: str
    cases: tuple[ResolvedCase, ...]
    author: str | None
    status: SuiteStatus
    reason: str | None
    duration_ms: float | None
    overridden: bool


@dataclass(frozen=True, kw_only=True)
class SuiteSummary:
    """A row of the test suites list: the suite, its `last_run` (`None`: Not run) and the
    status that run gives it (`status`, `reason`), and all its runs, newest first."""

    suite: Suite
    last_run: SuiteRun | None
    runs: tuple[SuiteRun, ...]

    @property
    def status(self) -> SuiteStatus:
        """The latest run's status, or `not_run`."""
        return "not_run" if self.last_run is None else self.last_run.status

    @property
    def reason(self) -> str | None:
        """Why the latest run failed (or timed out, is mixed or was skipped), if it did."""
        return None if self.last_run is None else self.last_run.reason

    @property
    def running(self) -> bool:
        """In progress: Rerun, Delete and Save and run are not available."""
        return self.status == "in_progress"


def conversation_status(
    trial: TrialResult, case: ResolvedCase | None = None
) -> tuple[ConversationStatus, str | None]:
    """The status of a stored conversation (`trial`, judged, overrides applied) and the
    reason shown above a failed, timed-out, skipped or invalid one (`None` otherwise).

    `case` is the saved suite's test case it ran (`None` for a run of test files). Such a
    conversation with no agent evaluation attached is judged by nothing but the check that
    it ended naturally (`sparring.store.suites.case_scenario`): met, it is **Done** (the
    simulated user reaching its goal is no verdict on the agent); not met (Max turns), it
    is Failed. Otherwise a trial that passed (by its checks alone too) is Passed, and Done
    is left for one that had nothing that could pass or fail it. A stored trial is never
    In progress or Evaluating: the dashboard shows those for trials of a running run that
    have no result yet."""
    if trial.status == "timed_out":
        reason = trial.error or "the conversation ran longer than its timeout"
        return "timed_out", reason if case is None else reason.replace(*_TIMEOUT_SETTING)
    if trial.status == "invalid":
        return "invalid", trial.error
    if trial.status == "error":
        return "failed", trial.error
    if trial.status == "skipped":
        return "skipped", trial.error or "what would judge it could not run"
    by_its_end = case is not None and _judged_by_its_end(trial, case)
    if trial.status == "done" or (by_its_end and trial.status == "passed"):
        return "done", None
    if trial.status == "passed":
        return "passed", None
    if by_its_end and trial.end_reason == "max_turns":
        return "failed", _MAX_TURNS_REASON
    return "failed", _failure_reason(trial)


_TIMEOUT_SETTING = ("the scenario's `timeout_s`", "Advanced settings -> Timeout of the test case")
"""How a timed-out conversation's reason names the timeout in a saved suite."""


_MAX_TURNS_REASON = (
    "the conversation reached Max turns without ending naturally (the simulated user neither "
    "reached its goal nor gave up); raise Max turns in the test case's Advanced settings if "
    "it needs more"
)


def _judged_by_its_end(trial: TrialResult, case: ResolvedCase) -> bool:
    """Whether `trial` of test case `case` had nothing but checks to judge it (no agent
    evaluation attached, no criterion): the check that it ended naturally."""
    return (
        not case.evaluations
        and not trial.insights
        and all(v.kind == "check" for v in trial.verdicts)
    )


def _failure_reason(trial: TrialResult) -> str | None:
    """The first failed insight or verdict of a failed trial, as `id: why` (the person's
    reason when they overrode it)."""
    insight = next((i for i in trial.insights if i.passed is False), None)
    if insight is not None:
        why = insight.override.reason if insight.override else insight.reasoning
        return f"{insight.id}: {why or insight.value}"
    verdict = next(iter(trial.failures), None)
    if verdict is not None:
        why = verdict.override.reason if verdict.override else verdict.reason
        return f"{verdict.id}: {why or verdict.description}"
    return trial.error


def run_status(
    run: RunResult, cases: Sequence[ResolvedCase] = ()
) -> tuple[SuiteStatus, str | None]:
    """The suite status a finished or interrupted `run` gives, with the failure reason;
    `cases` are the test cases of a saved suite's run (see `conversation_status`)."""
    trials = [t for s in run.scenarios for t in s.trials]
    if run.interrupted:
        ended = sum(t.end_reason != INTERRUPTED_END for t in trials)
        planned = sum(max(s.planned_trials, len(s.trials)) for s in run.scenarios)
        rest = "; Resume runs the others" if cases and ended < planned else ""
        return "failed", f"the run was interrupted ({ended} of {planned} conversations ended){rest}"
    by_scenario = {c.scenario_id: c for c in cases}
    statuses = [conversation_status(t, by_scenario.get(t.scenario_id)) for t in trials]
    return _aggregate(statuses)


def _aggregate(
    statuses: Sequence[tuple[ConversationStatus, str | None]],
) -> tuple[SuiteStatus, str | None]:
    if not statuses:
        return "failed", "no conversation ran"
    first_bad = next((r for s, r in statuses if s not in ("passed", "done", "skipped")), None)
    if all(s == "timed_out" for s, _ in statuses):
        return "timed_out", first_bad
    scored = [s for s, _ in statuses if s in ("passed", "failed", "timed_out")]
    if scored:
        passed = scored.count("passed")
        if passed == len(scored):
            return "passed", None
        return ("failed" if passed == 0 else "mixed"), first_bad
    if all(s == "invalid" for s, _ in statuses):
        return "failed", first_bad
    skipped = next((r for s, r in statuses if s == "skipped"), None)
    return ("skipped", skipped) if skipped is not None else ("done", None)


def suite_summary(store: Store, suite_id: int) -> SuiteSummary:
    """Suite `suite_id` with its runs and status.

    Raises:
        SuiteNotFound: no such suite.
    """
    suite = get_suite(store, suite_id)
    found = _runs_of(store, [suite.id]).get(suite.id, [])
    return SuiteSummary(suite=suite, last_run=found[0] if found else None, runs=tuple(found))


def list_suites(
    store: Store,
    *,
    since: str | None = None,
    until: str | None = None,
    agent_id: int | None = None,
    user_id: int | None = None,
) -> list[SuiteSummary]:
    """The test suites list, by name: only suites whose last run (or, never run, last save)
    is at or after `since` and before `until` (ISO 8601 UTC texts, e.g. `2026-12-01` or
    `2026-12-01T10:00`), and only suites with a test case of agent `agent_id` / simulated
    user `user_id`, when given."""
    chosen = [
        s
        for s in all_suites(store)
        if (agent_id is None or any(c.agent_id == agent_id for c in s.cases))
        and (user_id is None or any(c.user_id == user_id for c in s.cases))
    ]
    by_suite = _runs_of(store, [s.id for s in chosen])
    out: list[SuiteSummary] = []
    for suite in chosen:
        found = by_suite.get(suite.id, [])
        last = found[0] if found else None
        when = last.started_at if last is not None else suite.updated_at
        if (since is None or when >= since) and (until is None or when < until):
            out.append(SuiteSummary(suite=suite, last_run=last, runs=tuple(found)))
    return out


def suite_of_run(store: Store, run_id: str) -> tuple[Suite, SuiteRun] | None:
    """The suite run `run_id` belongs to, and that run of it; `None` for a file-based run."""
    with store.engine.connect() as conn:
        suite_id = conn.execute(
            select(suite_runs.c.suite_id).where(suite_runs.c.run_id == run_id)
        ).scalar()
    if suite_id is None:
        return None
    summary = suite_summary(store, suite_id)
    return summary.suite, next(r for r in summary.runs if r.run_id == run_id)


def _runs_of(store: Store, suite_ids: Sequence[int]) -> dict[int, list[SuiteRun]]:
    """Per suite, its runs newest first, each with its status."""
    query = (
        select(
            suite_runs,
            runs.c.status,
            runs.c.finished_at,
            runs.c.host.label("run_host"),
            runs.c.pid.label("run_pid"),
            select(func.max(overrides.c.id))
            .where(overrides.c.run_id == suite_runs.c.run_id)
            .scalar_subquery()
            .label("last_override"),
        )
        .outerjoin(runs, runs.c.id == suite_runs.c.run_id)
        .where(suite_runs.c.suite_id.in_(suite_ids))
        .order_by(suite_runs.c.id.desc())
    )
    with store.engine.connect() as conn:
        rows = conn.execute(query).all()
    out: dict[int, list[SuiteRun]] = {}
    for row in rows:
        out.setdefault(row.suite_id, []).append(_suite_run(store, row))
    return out


def _suite_run(store: Store, row: Row[Any]) -> SuiteRun:
    status: SuiteStatus
    reason: str | None = row.error
    duration: float | None = None
    overridden = False
    if row.error is not None:
        status = "failed"
    elif claim_running(row):
        status = "in_progress"
    elif row.run_id is None or row.status is None:
        status, reason = "failed", "the run stopped before it started (the server stopped)"
    else:
        version = (row.status, row.finished_at, row.last_override, row.cases)
        status, reason, duration, overridden = _outcome(store, row.run_id, version)
    return SuiteRun(
        id=row.id,
        suite_id=row.suite_id,
        run_id=row.run_id,
        started_at=row.started_at,
        cases=resolved_cases(row.cases),
        author=row.author,
        status=status,
        reason=reason,
        duration_ms=duration,
        overridden=overridden,
    )


@lru_cache(maxsize=4096)
def _outcome(
    store: Store, run_id: str, version: tuple[str, str | None, int | None, str]
) -> tuple[SuiteStatus, str | None, float | None, bool]:
    """Status, reason, duration and overridden mark of a stored run that is not running,
    read once per `version` (its stored status, end, newest override and test cases (JSON):
    all that can change what is read), so the suites list refreshing itself does not
    reread every run."""
    run = load_run(store, run_id)
    status, reason = run_status(run, resolved_cases(version[3]))
    overridden = any(trial_overridden(t) for s in run.scenarios for t in s.trials)
    return status, reason, run.duration_ms or None, overridden
