"""Keep a run in the store from its events: `Recorder.observe` wraps an observer, starts
the run on `RunStarted`, streams each `TrialFinished`, and `close` writes the end.

Used by `Suite.run()` / `Suite.arun()`; `sparring run` wraps it with `--resume` and
`--rerun-failed` (`sparring.cli.recording`); `run_record` is what both keep about a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.config import Settings
from sparring.events import Event, Observer, RunStarted, TrialFinished
from sparring.results import RunResult
from sparring.store.database import Store, open_store
from sparring.store.location import shown_url, store_url
from sparring.store.provenance import current_provenance
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
    """Keeps one run, seen through its events, in `store` as described by `record`."""

    store: Store
    record: RunRecord
    writer: RunWriter | None = None

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
            if isinstance(event, RunStarted) and event.run is not None and self.writer is None:
                self.writer = RunWriter(self.store)
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
            writer.finish(result, exit_code=result.exit_code)
            return writer.errors
        finally:
            self.store.close()
