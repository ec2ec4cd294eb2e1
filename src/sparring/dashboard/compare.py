"""A suite's run against its baseline, as `sparring diff` compares them
(`sparring.reports.diff`), and one scenario's transcripts side by side."""

from __future__ import annotations

from dataclasses import dataclass

from sparring.dashboard.catalog import SuiteRow
from sparring.dashboard.state import Dashboard
from sparring.dashboard.views import ConversationDetail, conversation_detail
from sparring.errors import UserError
from sparring.reports.diff import RunDiff, diff_runs
from sparring.store.reading import RunSummary


@dataclass(frozen=True)
class SuiteDiff:
    """Run `run` of a suite against `base`: `diff` scenario by scenario."""

    base: RunSummary
    run: RunSummary
    diff: RunDiff


def suite_diff(
    dashboard: Dashboard, suite: SuiteRow, *, base_id: str | None, run_id: str | None
) -> SuiteDiff:
    """Run `run_id` of `suite` (default: its latest run not in progress) against
    `base_id` (default: the suite's run marked baseline, else the run before RUN).

    Raises:
        UserError: a named run is not the suite's, or there is nothing to compare.
    """
    done = [r for r in suite.runs if r.status != "running"]
    run = _named(suite, run_id) if run_id else next(iter(done), None)
    if run is None:
        raise UserError(f"suite {suite.name!r} has no finished run to compare yet")
    base = _named(suite, base_id) if base_id else _default_base(done, run)
    if base is None:
        raise UserError(
            f"nothing to compare run {run.id} of suite {suite.name!r} with: it is its first "
            "run and no run is marked baseline (`sparring baseline RUN` marks one)"
        )
    return SuiteDiff(base, run, diff_runs(dashboard.run(base.id), dashboard.run(run.id)))


def _named(suite: SuiteRow, run_id: str) -> RunSummary:
    found = next((r for r in suite.runs if r.id == run_id), None)
    if found is None:
        raise UserError(f"run {run_id!r} is not a run of suite {suite.name!r}")
    return found


def _default_base(done: list[RunSummary], run: RunSummary) -> RunSummary | None:
    marked = next((r for r in done if r.baseline and r.id != run.id), None)
    if marked is not None:
        return marked
    return next((r for r in done if r.started_at < run.started_at), None)


def side_by_side(
    dashboard: Dashboard, compared: SuiteDiff, scenario_id: str
) -> tuple[ConversationDetail | None, ConversationDetail | None]:
    """The first trial of `scenario_id` in the base run and in the run (`None` where the
    run has none)."""
    return (
        conversation_detail(compared.diff.base, scenario_id, 1),
        conversation_detail(compared.diff.run, scenario_id, 1),
    )
