"""Resuming an interrupted run of a saved suite (its server stopped mid-run): only the
conversations that did not end run again, into the same run, with the revisions the run
used.

`resume_plan` says what would run (or why nothing can); `claim_resume` takes the run over
for this process, so of two resumes at once one gets SuiteBusy; `release_resume` gives it
back when the resume could not start. The run is then written as `sparring run --resume`
writes one (`sparring.store.recorder.Recorder` with `resumed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import select, update

from sparring.store.assets import Asset, Revision, get_asset
from sparring.store.database import Store
from sparring.store.provenance import Provenance
from sparring.store.reading import effective_status, finished_trials, load_run
from sparring.store.schema import runs
from sparring.store.suite_status import STATUS_LABELS, SuiteRun, suite_summary
from sparring.store.suites import (
    ResolvedCase,
    RevisionChoice,
    Suite,
    SuiteBusy,
    SuiteError,
    case_scenario,
)
from sparring.store.writer import claim_run

if TYPE_CHECKING:
    from sparring.scenario.kinds import SimulatedScenario


@dataclass(frozen=True, kw_only=True)
class ResumePlan:
    """What resuming suite `suite`'s interrupted run `run_id` runs: per scenario id the
    trial numbers that did not end (`missing`), and those scenarios (`scenarios`), each
    with as many trials as it misses and the revisions the run used."""

    suite: Suite
    run_id: str
    missing: dict[str, list[int]]
    scenarios: list[SimulatedScenario] = field(default_factory=list["SimulatedScenario"])


def resumable(store: Store, suite_id: int) -> SuiteRun | None:
    """The latest run of saved suite `suite_id` when Resume can take it (it was
    interrupted), else `None`.

    Raises:
        SuiteNotFound: no such suite.
    """
    last = suite_summary(store, suite_id).last_run
    if last is None or last.run_id is None or _run_status(store, last.run_id) != "interrupted":
        return None
    return last


def resume_plan(store: Store, suite_id: int) -> ResumePlan:
    """What resuming suite `suite_id`'s latest run would run (nothing is claimed yet).

    Raises:
        SuiteNotFound: no such suite.
        SuiteError: its latest run was not interrupted (nothing to resume: Rerun runs it
            again), the suite was saved since that run started (its test cases may differ:
            Rerun it), or every conversation of the run ended.
    """
    summary = suite_summary(store, suite_id)
    suite, last = summary.suite, resumable(store, suite_id)
    if last is None or last.run_id is None:
        what = (
            "has never run" if summary.last_run is None else f"is {STATUS_LABELS[summary.status]}"
        )
        raise SuiteError(
            f"the test suite {suite.name!r} {what}: only an interrupted run can be resumed "
            "(Rerun runs the suite again)"
        )
    if suite.updated_at > last.started_at:
        raise SuiteError(
            f"the test suite {suite.name!r} was saved after run {last.run_id} started, so its "
            "test cases may differ from the run's: Rerun it instead"
        )
    missing = _missing(store, last.run_id)
    if not missing:
        raise SuiteError(f"every conversation of run {last.run_id} ended; nothing to resume")
    scenarios = [
        _scenario(store, suite, case).model_copy(update={"trials": len(missing[case.scenario_id])})
        for case in last.cases
        if case.scenario_id in missing
    ]
    return ResumePlan(suite=suite, run_id=last.run_id, missing=missing, scenarios=scenarios)


def claim_resume(store: Store, plan: ResumePlan, *, provenance: Provenance) -> None:
    """Take run `plan.run_id` over for this process (`provenance`): its suite is then In
    progress.

    Raises:
        SuiteBusy: another process took it first (it is being resumed).
    """
    if not claim_run(store, plan.run_id, provenance=provenance):
        raise SuiteBusy(
            f"run {plan.run_id} of {plan.suite.name!r} is being resumed already; wait until "
            "the suite is no longer In progress"
        )


def release_resume(store: Store, run_id: str) -> None:
    """Give run `run_id`, claimed by `claim_resume`, back as `interrupted` (its resume
    could not start)."""
    with store.engine.begin() as conn:
        conn.execute(update(runs).where(runs.c.id == run_id).values(status="interrupted"))


def _run_status(store: Store, run_id: str) -> str | None:
    query = select(runs.c.status, runs.c.host, runs.c.pid).where(runs.c.id == run_id)
    with store.engine.connect() as conn:
        row = conn.execute(query).first()
    return None if row is None else effective_status(row.status, row.host, row.pid)


def _missing(store: Store, run_id: str) -> dict[str, list[int]]:
    """Per scenario id of run `run_id`, the numbers of its planned trials that did not end."""
    done = finished_trials(store, run_id)
    missing = {
        s.scenario_id: [
            n
            for n in range(1, (s.planned_trials or len(s.trials)) + 1)
            if n not in done.get(s.scenario_id, set())
        ]
        for s in load_run(store, run_id).scenarios
    }
    return {sid: numbers for sid, numbers in missing.items() if numbers}


def _scenario(store: Store, suite: Suite, case: ResolvedCase) -> SimulatedScenario:
    """Test case `case` of `suite` as its run ran it: the same revisions, whatever their
    state now."""
    if not 1 <= case.number <= len(suite.cases):
        raise SuiteError(f"test case {case.number} of {suite.name!r} is gone: Rerun it instead")
    return case_scenario(
        suite.cases[case.number - 1],
        case,
        agent=_revision(store, case.agent),
        user=_revision(store, case.user),
        evaluations=[_revision(store, e) for e in case.evaluations],
    )


def _revision(store: Store, choice: RevisionChoice) -> tuple[Asset, Revision]:
    asset = get_asset(store, choice.asset_id)
    return asset, asset.revision(choice.number)
