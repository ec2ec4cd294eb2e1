"""Stream one run into the store as it happens: the run row when it starts, each trial the
moment it finishes, the end.

Trials are written by a background thread, in batches of whatever finished meanwhile, so
the event loop never waits on the database; a process killed mid-run loses only the trials
in flight (and those finished in the last few milliseconds).
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Executable, delete, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from sparring.errors import UserError
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.store.database import Store
from sparring.store.provenance import Provenance, process_alive
from sparring.store.schema import runs, scenarios, trials

INTERRUPTED_END = "interrupted"
"""The end reason of a trial cut off by Ctrl-C: stored, but resumed like a missing one."""


def now_iso() -> str:
    """The time now, ISO 8601 in UTC to the millisecond (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """What is kept about a run besides its results.

    Attributes:
        paths: The test files and directories run.
        invocation: What `sparring run` was given (`paths`, `pattern`, `tags`, and the
            setting options given on the command line), so `--resume` can run it again.
        settings: The resolved settings, secrets already masked and `api_key` left out.
        provenance: Git commit and branch, user, host, process id.
        parent_run_id: The run this one reruns (`--rerun-failed`), if any.
    """

    paths: list[str]
    invocation: dict[str, Any]
    settings: dict[str, Any]
    provenance: Provenance
    parent_run_id: str | None = None


@dataclass
class RunWriter:
    """Writes one run to `store`: `start` (or `reopen`), `add` per trial, `finish`.

    Write failures never raise into the run: they are kept in `errors` (one message each)
    for the caller to report.
    """

    store: Store
    run_id: str = ""
    shard: int | None = None
    """The slice of the run this process writes (`join`), if any."""
    errors: list[str] = field(default_factory=list[str])
    _queue: queue.SimpleQueue[dict[str, Any] | None] = field(
        default_factory=queue.SimpleQueue[dict[str, Any] | None]
    )
    _thread: threading.Thread | None = None

    def start(self, planned: RunResult, *, record: RunRecord) -> None:
        """Insert the run row and its planned scenarios (synchronously, so they exist
        before any trial), then start the trial writer."""
        self.run_id = planned.run_id
        row, planned_scenarios = run_rows(planned, record=record)
        try:
            with self.store.engine.begin() as conn:
                conn.execute(insert(runs), row)
                if planned_scenarios:  # a pytest session's come as its tests finish
                    conn.execute(insert(scenarios), planned_scenarios)
        except SQLAlchemyError as e:
            self.errors.append(_why(e))
            return
        self._start_thread()

    def join(
        self,
        planned: RunResult,
        *,
        record: RunRecord,
        shard: tuple[int, int],
        order: Sequence[str],
    ) -> None:
        """Add slice `shard` (`(K, N)`) to run `planned.run_id`, creating the run if no slice
        did yet, its scenarios placed by `order` (`sparring.store.shards.join_shard`), then
        start the trial writer; `finish`
        and `abandon` then end the slice, and the run with its last slice."""
        from sparring.store.shards import join_shard

        self.run_id, self.shard = planned.run_id, shard[0]
        try:
            join_shard(self.store, planned, record=record, shard=shard, order=order)
        except SQLAlchemyError as e:
            self.errors.append(_why(e))
            return
        self._start_thread()

    def reopen(self, run_id: str, *, provenance: Provenance) -> None:
        """Take over stored run `run_id` to resume it: mark it running in this process and
        drop its trials cut off by an interrupt (they run again)."""
        self.run_id = run_id
        running = {"status": "running", "finished_at": None, **provenance_columns(provenance)}
        try:
            with self.store.engine.begin() as conn:
                conn.execute(update(runs).where(runs.c.id == run_id).values(running))
                conn.execute(
                    delete(trials).where(
                        trials.c.run_id == run_id, trials.c.end_reason == INTERRUPTED_END
                    )
                )
        except SQLAlchemyError as e:
            self.errors.append(_why(e))
            return
        self._start_thread()

    def add(self, result: TrialResult) -> None:
        """Queue a finished trial for writing (returns at once; nothing when the run could
        not be written)."""
        if self._thread is None:
            return
        self._queue.put(
            {
                "run_id": self.run_id,
                "scenario_id": result.scenario_id,
                "trial": result.trial,
                "status": result.status,
                "end_reason": result.end_reason,
                "duration_ms": result.duration_ms,
                "cost_usd": result.usage.cost_usd,
                "finished_at": now_iso(),
                "result": result,
            }
        )

    def add_scenario(self, result: ScenarioResult, *, position: int) -> None:
        """Keep a finished scenario (`result`, its trials included) of a run started with
        no planned scenarios (a pytest session's): its row now, its trials queued."""
        if self._thread is None:
            return
        data = result.model_dump_json(exclude={"trials"})
        row = {"run_id": self.run_id, "scenario_id": result.scenario_id, "position": position}
        self._write(insert(scenarios), row | {"data": data})
        for trial in result.trials:
            self.add(trial)

    def flush(self) -> None:
        """Write every queued trial and stop the writer thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def finish(self, result: RunResult, *, exit_code: int) -> None:
        """Write the queued trials, then the run's end: status `interrupted` when
        `result.interrupted`, else `finished`; `result` without its scenarios as the head."""
        self.flush()
        status = "interrupted" if result.interrupted else "finished"
        if self.shard is not None:
            self._end_shard(status, exit_code)
            return
        values = {
            "status": status,
            "finished_at": now_iso(),
            "exit_code": exit_code,
            "head": result.model_dump_json(exclude={"scenarios"}),
        }
        self._write(update(runs).where(runs.c.id == self.run_id), values)

    def abandon(self) -> None:
        """Write the queued trials and mark the run `interrupted` (its process raised
        before a result: it keeps every trial that finished)."""
        self.flush()
        if self.shard is not None:
            self._end_shard("interrupted", None)
            return
        values = {"status": "interrupted", "finished_at": now_iso()}
        self._write(update(runs).where(runs.c.id == self.run_id), values)

    def _end_shard(self, status: str, exit_code: int | None) -> None:
        from sparring.store.shards import end_shard

        assert self.shard is not None
        try:
            end_shard(self.store, self.run_id, self.shard, status=status, exit_code=exit_code)
        except SQLAlchemyError as e:
            self.errors.append(_why(e))

    def _start_thread(self) -> None:
        self._thread = threading.Thread(target=self._drain, name="sparring-store", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """The writer thread: one transaction per batch of queued trials, until `None`."""
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get())
            rows = [row for row in batch if row is not None]
            for row in rows:  # serialised here, off the event loop
                row["result"] = row["result"].model_dump_json()
            if rows:
                self._write(insert(trials), rows)
            if None in batch:
                return

    def _write(self, statement: Executable, params: dict[str, Any] | list[dict[str, Any]]) -> None:
        try:
            with self.store.engine.begin() as conn:
                conn.execute(statement, params)
        except SQLAlchemyError as e:
            self.errors.append(_why(e))


def run_rows(
    planned: RunResult, *, record: RunRecord
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The `runs` row of a run starting as `planned` (status `running`) and the `scenarios`
    rows of its planned scenarios, in order (`position` 0, 1, ...)."""
    row = {
        "id": planned.run_id,
        "started_at": planned.started_at,
        "status": "running",
        "paths": json.dumps(record.paths),
        "invocation": json.dumps(record.invocation),
        "settings": json.dumps(record.settings),
        "models": json.dumps([m.model_dump() for m in planned.models]),
        "head": planned.model_dump_json(exclude={"scenarios"}),
        "parent_run_id": record.parent_run_id,
        **provenance_columns(record.provenance),
    }
    planned_scenarios = [
        {"run_id": planned.run_id, "scenario_id": s.scenario_id, "position": i}
        | {"data": s.model_dump_json(exclude={"trials"})}
        for i, s in enumerate(planned.scenarios)
    ]
    return row, planned_scenarios


def mark_baseline(store: Store, run_id: str) -> None:
    """Mark stored run `run_id` as the baseline `sparring diff` compares against by
    default, unmarking any other (one transaction).

    Raises:
        UserError: no run `run_id` in the store.
    """
    with store.engine.begin() as conn:
        marked = conn.execute(update(runs).where(runs.c.id == run_id).values(baseline=True))
        if not marked.rowcount:
            raise UserError(f"no run {run_id!r} in the store; `sparring runs` lists them")
        conn.execute(update(runs).where(runs.c.id != run_id).values(baseline=False))


def claim_run(store: Store, run_id: str, *, provenance: Provenance) -> bool:
    """Mark stored run `run_id` running in this process, if it is still interrupted (stored
    so, or `running` by a process that is gone); one transaction holding the row's write
    lock, so of several processes resuming one run exactly one gets `True`.

    Raises:
        UserError: no run `run_id` in the store.
    """
    with store.engine.begin() as conn:
        query = select(runs.c.status, runs.c.host, runs.c.pid).where(runs.c.id == run_id)
        row = conn.execute(query.with_for_update()).one_or_none()
        if row is None:
            raise UserError(f"no run {run_id!r} in the store; `sparring runs` lists them")
        gone = row.status == "running" and process_alive(row.host, row.pid) is False
        if row.status != "interrupted" and not gone:
            return False
        running = {"status": "running", "finished_at": None, **provenance_columns(provenance)}
        conn.execute(update(runs).where(runs.c.id == run_id).values(running))
    return True


def _why(error: SQLAlchemyError) -> str:
    return f"{type(error).__name__}: {getattr(error, 'orig', None) or error}"


def provenance_columns(provenance: Provenance) -> dict[str, Any]:
    """The `runs` (and `shards`) columns of `provenance`: git, user, host, process id."""
    return {
        "git_commit": provenance.git_commit,
        "git_branch": provenance.git_branch,
        "user_name": provenance.user_name,
        "host": provenance.host,
        "pid": provenance.pid,
    }
