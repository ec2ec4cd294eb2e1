"""What the suite results page shows: its conversations (every trial of every run, newest
run first), the Metrics table, one conversation turn by turn.

Transcripts are laid out as the HTML report lays them out (`conversation_view`: verdicts
beside the turns they cite, the judge's note and score and the latency on each reply).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count, groupby

from sparring.reports.html import ConversationView, conversation_view
from sparring.reports.insights import ordered
from sparring.results import (
    EvaluationsPassed,
    InsightResult,
    RunResult,
    ScenarioResult,
    TrialResult,
)
from sparring.store.asset_specs import spec_name
from sparring.store.overrides import trial_overridden
from sparring.store.suite_status import STATUS_LABELS, ConversationStatus, conversation_status
from sparring.store.suites import ResolvedCase

Cases = Mapping[str, tuple[ResolvedCase, ...]]
"""Per run id, the test cases a saved suite's run resolved (their revisions)."""


LABELS = {**STATUS_LABELS, "yes": "Yes", "no": "No", "pending": "Pending", "none": "-"}
"""How statuses and `evaluations_passed` values read on a page."""


def label(status: str) -> str:
    """`status` as a page shows it (`timed_out` -> `Timed out`)."""
    return LABELS.get(status, status.replace("_", " ").capitalize())


@dataclass(frozen=True, kw_only=True)
class ConversationRow:
    """One conversation of a suite: trial `trial` of scenario `scenario_id` in run
    `run_id`; `result` is `None` while it is in progress; `reason` why it failed, timed
    out or was invalid; `case` the test case (agent and simulated user revisions) of a
    saved suite's conversation."""

    run_id: str
    started_at: str
    scenario_id: str
    name: str
    trial: int
    status: ConversationStatus
    reason: str | None = None
    result: TrialResult | None = None
    case: ResolvedCase | None = None

    @property
    def duration_ms(self) -> float | None:
        """How long the conversation took (with its judging), in ms."""
        return None if self.result is None else self.result.duration_ms

    @property
    def evaluations_passed(self) -> EvaluationsPassed:
        """Evaluations passed as the Metrics tab shows it: `pending` only while the
        conversation can still be scored (running or being judged, with agent evaluations),
        `none` (a dash) once it ended without a judge answer (timed out, interrupted, an
        error) or has no gating insight, else `yes` / `no`."""
        if self.result is None:
            return "pending" if self.case is None or self.case.evaluations else "none"
        shown = self.result.evaluations_passed
        return "none" if shown == "pending" else shown

    @property
    def overridden(self) -> bool:
        """A person corrected one of its verdicts or insights."""
        return self.result is not None and trial_overridden(self.result)

    @property
    def key(self) -> str:
        """`run/trial/scenario`: the conversation's part of a URL."""
        return f"{self.run_id}/{self.trial}/{self.scenario_id}"


def conversation_rows(
    runs: Sequence[RunResult],
    *,
    running: set[str],
    cases: Cases | None = None,
    judging: Callable[[str], Collection[tuple[str, int]]] = lambda _run_id: (),
) -> list[ConversationRow]:
    """Every conversation of `runs` (given newest first), newest run first and in each
    run in scenario and trial order; planned trials of a run in `running` that have no
    result yet are listed `evaluating` when `judging(run_id)` holds their (scenario id,
    trial), else `in_progress`; `cases` label a saved suite's conversations."""
    rows: list[ConversationRow] = []
    for run in runs:
        by_scenario = {c.scenario_id: c for c in (cases or {}).get(run.run_id, ())}
        judged = judging(run.run_id) if run.run_id in running else ()
        for scenario in run.scenarios:
            done = {t.trial: t for t in scenario.trials}
            planned = range(1, scenario.planned_trials + 1) if run.run_id in running else ()
            case = by_scenario.get(scenario.scenario_id)
            rows.extend(
                _row(run, scenario, n, done.get(n), case, (scenario.scenario_id, n) in judged)
                for n in sorted({*done, *planned})
            )
    return rows


def _row(
    run: RunResult,
    scenario: ScenarioResult,
    trial: int,
    result: TrialResult | None,
    case: ResolvedCase | None,
    judged: bool = False,
) -> ConversationRow:
    status: ConversationStatus
    reason: str | None = None
    if result is None:
        status = "evaluating" if judged else "in_progress"
    else:
        status, reason = conversation_status(result, case)
    return ConversationRow(
        run_id=run.run_id,
        started_at=run.started_at,
        scenario_id=scenario.scenario_id,
        name=scenario.name,
        trial=trial,
        status=status,
        reason=reason,
        result=result,
        case=case,
    )


@dataclass(frozen=True)
class MetricsTable:
    """The Metrics tab: `columns` are the insight ids shown (`evaluation.insight`),
    `available` every insight id found (featured ones first, then by group), `rows` one
    per conversation with its insight results by id; `titles` name each insight as people
    wrote it (agent evaluation and insight), `featured` are the featured ones, `groups` the
    headings above the shown columns with how many columns each spans (none when no
    insight is featured or grouped)."""

    columns: list[str]
    available: list[str]
    rows: list[tuple[ConversationRow, dict[str, InsightResult]]] = field(
        default_factory=list[tuple[ConversationRow, dict[str, InsightResult]]]
    )
    titles: dict[str, str] = field(default_factory=dict[str, str])
    featured: set[str] = field(default_factory=set[str])
    groups: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])


def metrics_table(rows: Sequence[ConversationRow], *, selected: Sequence[str] = ()) -> MetricsTable:
    """The Metrics table of `rows`: one column per insight (those in `selected` when any
    is given: Select metrics), featured ones first, then by group, else in order of first
    appearance."""
    found: dict[str, InsightResult] = {}
    titles: dict[str, str] = {}
    table: list[tuple[ConversationRow, dict[str, InsightResult]]] = []
    for row in rows:
        cells = {i.id: i for i in row.result.insights} if row.result else {}
        for i in cells.values():
            found.setdefault(i.id, i)
            titles.setdefault(i.id, insight_title(i, row.case))
        table.append((row, cells))
    available = [i.id for i in ordered(list(found.values()))]
    columns = [c for c in available if c in selected] if selected else available
    headings = [_heading(found[c], titles[c]) for c in columns]
    groups = [(h, len(list(n))) for h, n in groupby(headings)] if any(headings) else []
    featured = {c for c, i in found.items() if i.featured}
    return MetricsTable(columns, available, table, titles, featured, groups)


def insight_title(insight: InsightResult, case: ResolvedCase | None) -> str:
    """`insight` as people named it: `<agent evaluation> · <insight>` (the evaluation's
    name from the test case `case` when it has it, else as verdict ids spell it)."""
    names = {spec_name(e.name): e.name for e in case.evaluations} if case else {}
    return f"{names.get(insight.evaluation, insight.evaluation)} · {insight.insight}"


def _heading(insight: InsightResult, title: str) -> str:
    """The group heading of an insight's column: `Featured`, `<evaluation> · <group>`,
    or empty (ungrouped)."""
    if insight.featured:
        return "Featured"
    return "" if insight.group is None else f"{title.rsplit(' · ', 1)[0]} · {insight.group}"


@dataclass(frozen=True, kw_only=True)
class ConversationDetail:
    """One conversation to read (`row`: its status, reason, test case), its transcript
    laid out turn by turn (`conversation`), its insights (featured first, then by group)."""

    row: ConversationRow
    scenario: ScenarioResult
    conversation: ConversationView
    insights: list[InsightResult]
    user_label: str
    titles: dict[str, str] = field(default_factory=dict[str, str])
    """Each insight's name as people wrote it (`insight_title`), by id."""


def conversation_detail(
    run: RunResult, scenario_id: str, trial: int, *, cases: Cases | None = None
) -> ConversationDetail | None:
    """Trial `trial` of scenario `scenario_id` in `run`, laid out (labelled with its test
    case from `cases`); `None` when it has no result (yet)."""
    scenario = next((s for s in run.scenarios if s.scenario_id == scenario_id), None)
    result = next((t for t in scenario.trials if t.trial == trial), None) if scenario else None
    if scenario is None or result is None:
        return None
    user_label = "Simulated User" if scenario.kind == "simulated" else "User"
    keys = (f"v{n}" for n in count(1))
    view = conversation_view(
        result.transcript, result.verdicts, result.reply_notes, user_label=user_label, keys=keys
    )
    case = next(
        (c for c in (cases or {}).get(run.run_id, ()) if c.scenario_id == scenario_id), None
    )
    return ConversationDetail(
        row=_row(run, scenario, trial, result, case),
        scenario=scenario,
        conversation=view,
        insights=ordered(result.insights),
        titles={i.id: insight_title(i, case) for i in result.insights},
        user_label=user_label,
    )
