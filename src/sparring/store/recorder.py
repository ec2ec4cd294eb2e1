"""Keep a run in the store from its events: `Recorder.observe` wraps an observer, starts
the run on `RunStarted`, streams each `TrialFinished`, and `close` writes the end.

Used by `Suite.run()` / `Suite.arun()` and the dashboard's runs (which resume a stored run
with `resumed`); `sparring run` wraps it with `--resume` and `--rerun-failed`
(`sparring.cli.recording`); `run_record` is what both keep about a run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.config import Settings
from sparring.events import (
    Event,
    JudgeStarted,
    MessageAdded,
    Observer,
    RunStarted,
    ScenarioFinished,
    TrialFinished,
    TrialStarted,
    VerdictAdded,
)
from sparring.results import RunResult, TrialResult
from sparring.store.database import Store, open_store
from sparring.store.location import shown_url, store_url
from sparring.store.provenance import current_provenance
from sparring.store.reading import load_run
from sparring.store.writer import RunRecord, RunWriter


def run_record(
    invocation: dict[str, Any], settings: Settings, *, cwd: Path, parent: str | None = None
) -> RunRecord:
    """What is kept about a run started now in `cwd`: `invocation` (its `paths` among
    them), `settings` without `api_key` and with any password in a URL masked, git and
    process provenance, and the `parent` run it reruns."""
    kept = settings.model_dump(mode="json", exclude={"api_key"})
    for key in ("base_url", "store"):  # a password in a URL is masked
        kept[key] = kept[key] and shown_url(kept[key])
    return RunRecord(
        paths=invocation["paths"],
        invocation=invocation,
        settings=kept,
        provenance=current_provenance(cwd),
        parent_run_id=parent,
    )


@dataclass
class Recorder:
    """Keeps one run, seen through its events, in `store` as described by `record`; with
    `resumed`, the run completes that stored (interrupted) run instead: its k-th trial of a
    scenario is the scenario's k-th number in `missing` (see `renumbered`)."""

    store: Store
    record: RunRecord
    writer: RunWriter | None = None
    resumed: str | None = None
    missing: dict[str, list[int]] = field(default_factory=dict[str, list[int]])

    @classmethod
    def open(cls, settings: Settings, *, paths: list[str], cwd: Path) -> Recorder:
        """A recorder into the store `settings.store` names (default `.sparring/sparring.db`
        in the project root of `cwd`), for a run of `paths`.

        Raises:
            StoreError: the store cannot be opened.
        """
        store = open_store(store_url(settings.store, cwd=cwd))
        invocation: dict[str, Any] = {"cwd": str(cwd), "paths": paths, "options": {}}
        return cls(store=store, record=run_record(invocation, settings, cwd=cwd))

    def observe(self, observer: Observer | None) -> Observer:
        """An observer that keeps the run's start and each finished trial, then passes the
        event to `observer` (when given)."""

        def recorded(event: Event) -> None:
            if self.resumed is not None:
                event = renumbered(event, self.missing)
            if isinstance(event, RunStarted) and event.run is not None and self.writer is None:
                self.writer = RunWriter(self.store)
                if self.resumed is not None:
                    self.writer.reopen(self.resumed, provenance=self.record.provenance)
                else:
                    self.writer.start(event.run.model_copy(deep=True), record=self.record)
            elif isinstance(event, TrialFinished) and self.writer is not None:
                self.writer.add(event.result)
            if observer is not None:
                observer(event)

        return recorded

    def close(self, result: RunResult | None) -> list[str]:
        """Write the run's end (`result`; `None` when the run raised: kept `interrupted`
        with its finished trials) and close the store; returns what could not be kept
        (one message each)."""
        writer = self.writer
        try:
            if writer is None:
                return []
            if result is None:
                writer.abandon()
                return writer.errors
            if self.resumed is not None:  # the stored run, now with every trial that ended
                writer.flush()
                result = completed_run(load_run(self.store, self.resumed), result)
            writer.finish(result, exit_code=result.exit_code)
            return writer.errors
        finally:
            self.store.close()


def completed_run(stored: RunResult, resumed: RunResult) -> RunResult:
    """Stored run `stored` (read back whole, every trial) as the run resuming it ended
    (`resumed`: interrupted again or not, its hook errors, duration and `fail_on_skip`);
    `stored` is changed and returned."""
    stored.interrupted, stored.hook_errors = resumed.interrupted, resumed.hook_errors
    stored.duration_ms, stored.fail_on_skip = resumed.duration_ms, resumed.fail_on_skip
    return stored


def renumbered(event: Event, missing: Mapping[str, Sequence[int]]) -> Event:
    """`event` of a run that resumes a stored one, with the stored run's trial numbers: a
    scenario's k-th trial is its k-th number in `missing` (per scenario id)."""

    def number(scenario_id: str, trial: int) -> int:
        numbers = missing.get(scenario_id)
        return numbers[trial - 1] if numbers and trial <= len(numbers) else trial

    def trial(result: TrialResult) -> TrialResult:
        return result.model_copy(update={"trial": number(result.scenario_id, result.trial)})

    match event:
        case TrialStarted() | MessageAdded() | VerdictAdded() | JudgeStarted():
            return dataclasses.replace(event, trial=number(event.scenario_id, event.trial))
        case TrialFinished():
            return TrialFinished(trial(event.result))
        case ScenarioFinished():
            trials = [trial(t) for t in event.result.trials]
            return ScenarioFinished(event.result.model_copy(update={"trials": trials}))
        case _:
            return event
