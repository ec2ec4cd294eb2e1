"""One pytest session, one stored run: the session's sparring tests kept in the results
store as each finishes (`--sparring-no-store`: not kept).

Only the controller writes (the process that sees every test's report: the only one
without xdist, the xdist controller with it), each test's result once, as pytest reports
it; workers write nothing, so no trial is lost or kept twice. A test's scenario id in the
store is its pytest node id (unique in the session, the same from one session to the
next), so `sparring diff` compares sessions test by test. Imported only when a sparring
test has finished.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sparring.config import Settings
from sparring.results import RunResult, ScenarioResult
from sparring.store.database import StoreError
from sparring.store.recorder import Recorder
from sparring.store.writer import RunWriter


@dataclass
class SessionStore:
    """Keeps one session's sparring tests as one run; opened at the first result.

    `head` makes the run's head (a `RunResult` without scenarios) when the session starts
    and ends; `note` says where the run went, or why it could not be kept.
    """

    settings: Settings
    cwd: Path
    paths: list[str]
    """The tests pytest was given (`session_paths`), kept as the run's paths."""
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    note: str | None = None
    _recorder: Recorder | None = None
    _writer: RunWriter | None = None
    _seen: set[str] = field(default_factory=set[str])

    def add(self, nodeid: str, result_json: str, *, head: RunResult) -> None:
        """Keep test `nodeid`'s result (a `ScenarioResult` as JSON) under its node id;
        a node id already kept is not kept again."""
        if nodeid in self._seen or not self._started(head):
            return
        self._seen.add(nodeid)
        result = ScenarioResult.model_validate_json(result_json)
        trials = [t.model_copy(update={"scenario_id": nodeid}) for t in result.trials]
        kept = result.model_copy(update={"scenario_id": nodeid, "trials": trials})
        assert self._writer is not None
        try:
            self._writer.add_scenario(kept, position=len(self._seen))
        except Exception as e:  # the store never breaks a test session
            self._writer.errors.append(f"{type(e).__name__}: {e}")

    def close(self, head: RunResult, *, exit_code: int) -> None:
        """Write the session's end (`head.interrupted`: kept `interrupted`) and set `note`."""
        if self._recorder is None or self._writer is None:
            return
        self._writer.finish(head.model_copy(update={"run_id": self.run_id}), exit_code=exit_code)
        self._recorder.store.close()
        errors = self._writer.errors
        self.note = (
            f"warning: sparring: the results store could not keep all of run {self.run_id}: "
            f"{errors[0]}"
            if errors
            else f"sparring: stored as run {self.run_id} (`sparring show {self.run_id}`)"
        )

    def _started(self, head: RunResult) -> bool:
        """Open the store and start the run, once; False when the store cannot be used."""
        if self._writer is not None:
            return True
        if self.note is not None:
            return False
        try:
            self._recorder = Recorder.open(self.settings, paths=self.paths, cwd=self.cwd)
            self._writer = RunWriter(self._recorder.store)
            planned = head.model_copy(update={"run_id": self.run_id})
            self._writer.start(planned, record=self._recorder.record)
        except Exception as e:  # the store never breaks a test session
            why = str(e) if isinstance(e, StoreError) else f"{type(e).__name__}: {e}"
            self.note = f"warning: sparring: this session is not kept in the results store: {why}"
            self._writer = None
            return False
        return True


def session_paths(config: pytest.Config) -> list[str]:
    """The tests a pytest session runs, for its stored run's paths (its name in `sparring
    runs` and the dashboard): each path pytest was given or took from `testpaths`, relative
    to pytest's rootdir (a `::test` part kept), options left out; `[rootdir name]` when
    they are the rootdir itself or nothing was given."""
    root = config.rootpath
    paths: list[str] = []
    for arg in config.args:
        file, sep, rest = str(arg).partition("::")
        where = (config.invocation_params.dir / file).resolve()
        relative = where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where)
        if relative != ".":
            paths.append(relative + sep + rest)
    return paths or [root.name]
