"""The suites the dashboard lists: the test suites saved in the store, and the stored runs
of test files grouped into suites.

Runs of test files (`sparring run`, pytest) make one suite per set of paths, named after
them (`tests/conversations/`), with id `files-<hash of the name>`; their definitions stay
in the files. Statuses follow the platform's rules (`sparring.store.suite_status`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sparring.results import RunResult
from sparring.store.overrides import trial_overridden
from sparring.store.reading import RunSummary
from sparring.store.suite_status import SuiteStatus, SuiteSummary, run_status
from sparring.store.suites import ResolvedCase, Suite

FILE_SUITE_PREFIX = "files-"


@dataclass(frozen=True, kw_only=True)
class SuiteRow:
    """One suite of the list: `saved` is the suite made in the dashboard (`None`: made of
    test files); `status` and `reason` its latest run's; `last_run` when that run started
    (ISO 8601 UTC, `None`: Not run); `runs` the runs that started, newest first; `cases`
    the revisions each run used (saved suites), by run id; `agents` and `users` the names
    its test cases use."""

    id: str
    name: str
    status: SuiteStatus
    reason: str | None = None
    last_run: str | None = None
    duration_ms: float | None = None
    saved: Suite | None = None
    runs: list[RunSummary] = field(default_factory=list[RunSummary])
    cases: Mapping[str, tuple[ResolvedCase, ...]] = field(
        default_factory=dict[str, tuple[ResolvedCase, ...]]
    )
    agents: list[str] = field(default_factory=list[str])
    users: list[str] = field(default_factory=list[str])
    overridden: bool = False
    """A person corrected a verdict of the latest run (its status is marked so)."""
    resumable: bool = False
    """A saved suite whose latest run was interrupted: Resume runs what did not end."""

    @property
    def latest(self) -> RunSummary | None:
        """The newest run that started, `None` before the first."""
        return self.runs[0] if self.runs else None

    @property
    def running(self) -> bool:
        """In progress: it cannot run again (or be deleted) until it ends."""
        return self.status == "in_progress"


def file_suite_id(name: str) -> str:
    """The id of the file-based suite called `name`: stable, URL-safe."""
    return FILE_SUITE_PREFIX + hashlib.sha256(name.encode()).hexdigest()[:12]


def file_suite_name(paths: Sequence[str]) -> str:
    """The name of the suite of a run of `paths` (`(no paths)` for none)."""
    return " ".join(paths) or "(no paths)"


def file_suites(
    stored: Iterable[RunSummary],
    *,
    saved_runs: set[str],
    load: Callable[[str], RunResult],
) -> list[SuiteRow]:
    """The file-based suites of `stored` runs (given newest first), leaving out
    `saved_runs` (runs of saved suites); `load` reads a run (for its latest run's
    status)."""
    grouped: dict[str, list[RunSummary]] = {}
    for run in stored:
        if run.id not in saved_runs:
            grouped.setdefault(file_suite_name(run.paths), []).append(run)
    return [_file_suite(name, runs, load) for name, runs in grouped.items()]


def _file_suite(name: str, runs: list[RunSummary], load: Callable[[str], RunResult]) -> SuiteRow:
    latest = runs[0]
    status, reason, overridden = ("in_progress", None, False)
    if latest.status != "running":
        result = load(latest.id)
        status, reason = run_status(result)
        overridden = any(trial_overridden(t) for s in result.scenarios for t in s.trials)
    return SuiteRow(
        id=file_suite_id(name),
        name=name,
        status=status,
        reason=reason,
        last_run=latest.started_at,
        duration_ms=latest.duration_ms,
        runs=runs,
        overridden=overridden,
    )


def saved_suite(
    summary: SuiteSummary, stored: Mapping[str, RunSummary], names: Mapping[int, str]
) -> SuiteRow:
    """The row of saved suite `summary`: its runs found in `stored` (by id), the names of
    its agents and simulated users from `names` (asset id -> name)."""
    suite, last = summary.suite, summary.last_run
    started = [r for r in summary.runs if r.run_id is not None and r.run_id in stored]
    return SuiteRow(
        id=str(suite.id),
        name=suite.name,
        status=summary.status,
        reason=summary.reason,
        last_run=last.started_at if last else None,
        duration_ms=last.duration_ms if last else None,
        saved=suite,
        runs=[stored[r.run_id] for r in started if r.run_id is not None],
        cases={r.run_id: r.cases for r in started if r.run_id is not None},
        agents=sorted({names.get(c.agent_id, "?") for c in suite.cases}),
        users=sorted({names.get(c.user_id, "?") for c in suite.cases}),
        overridden=last is not None and last.overridden,
        resumable=last is not None and _interrupted(stored.get(last.run_id or "")),
    )


def _interrupted(run: RunSummary | None) -> bool:
    return run is not None and run.status == "interrupted"


@dataclass(frozen=True)
class Filters:
    """The suites list's filters: last run `since` / `until` (dates `YYYY-MM-DD`,
    inclusive), an agent name, a simulated user name; empty ones do not filter."""

    since: str = ""
    until: str = ""
    agent: str = ""
    user: str = ""

    def keep(self, suite: SuiteRow) -> bool:
        """Whether `suite` passes every filter given."""
        last = (suite.last_run or "")[:10]
        if self.since and (not last or last < self.since):
            return False
        if self.until and (not last or last > self.until):
            return False
        if self.agent and self.agent not in suite.agents:
            return False
        return not self.user or self.user in suite.users
