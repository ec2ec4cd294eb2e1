"""Runs of saved test suites inside the dashboard's server process.

A run goes through the same runner as `sparring run` (`run_scenarios`, one `TargetPool`),
and is kept in the store as it goes (`Recorder`: the run row when it starts, each trial as
it ends), so a page reload shows where it is. The suite is claimed first (one run of a
suite at a time, `start_suite_run`); a run that cannot start records why
(`fail_suite_run`). When the server stops, runs still going are cancelled and kept
`interrupted`, with every trial that ended.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from sparring.errors import UserError
from sparring.events import Event, RunFinished, RunStarted
from sparring.models.base import Model
from sparring.results import RunResult
from sparring.runner import RunSettings, run_scenarios
from sparring.runner.run import TargetPool
from sparring.secrets import Secrets
from sparring.store.database import Store, open_store
from sparring.store.provenance import current_provenance
from sparring.store.recorder import Recorder
from sparring.store.suites import (
    ResolvedSuite,
    fail_suite_run,
    link_suite_run,
    resolve_suite,
    start_suite_run,
)
from sparring.store.writer import RunRecord

Models = Callable[[], tuple[Model | None, Model | None]]
"""Makes the simulated user's and the judge's model for one run (closed after it)."""
START_WAIT_S = 10.0
"""How long starting a run waits for the runner to name the run, in seconds."""


@dataclass
class SuiteRunner:
    """Starts runs of saved suites in the server process (see the module docstring).

    Attributes:
        store: The dashboard's store.
        models: Makes each run's models (`None` for a role leaves its steps skipped).
        settings: How to run (concurrency, limits, temperatures); each test case's own
            timeout, max turns and session count are kept.
        secrets: Fill `{{secrets.NAME}}` in agent configs and mask them in what is kept.
        cwd: Where runs are said to run (git provenance).
    """

    store: Store
    models: Models
    settings: RunSettings = field(default_factory=RunSettings)
    secrets: Secrets = field(default_factory=Secrets.load)
    cwd: Path = field(default_factory=Path.cwd)
    _group: TaskGroup | None = None

    @asynccontextmanager
    async def serving(self) -> AsyncGenerator[None]:
        """Runs may start while inside; leaving cancels those still going (kept
        `interrupted`)."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def start(self, suite_id: int, *, author: str) -> str | None:
        """Start a run of saved suite `suite_id` with the revisions its test cases select
        now; returns the run's id once the runner named it (`None` when it could not start:
        the suite's status then says why).

        Raises:
            SuiteNotFound: no such suite.
            SuiteError: a test case cannot run (e.g. no Published revision).
            SuiteBusy: the suite is In progress.
            UserError: the server is not serving (no run can start).
        """
        if self._group is None:
            raise UserError("the dashboard is not serving: start it with `sparring serve`")
        resolved = resolve_suite(self.store, suite_id)
        claim = start_suite_run(self.store, resolved, author=author)
        named: list[str] = []
        started = anyio.Event()
        self._group.start_soon(self._run, resolved, claim, named, started)
        with anyio.move_on_after(START_WAIT_S):
            await started.wait()
        return named[0] if named else None

    async def _run(
        self, resolved: ResolvedSuite, claim: int, named: list[str], started: anyio.Event
    ) -> None:
        """Run `resolved` under `claim`, kept in the store; `named` gets the run id and
        `started` is set once it is known (or the run could not start)."""
        paths = [f"suite:{resolved.suite.name}"]
        invocation = {"paths": paths, "suite_id": resolved.suite.id, "claim": claim}
        record = RunRecord(
            paths=paths,
            invocation=invocation,
            settings={},
            provenance=current_provenance(self.cwd),
        )
        recorder = Recorder(store=open_store(self.store.url), record=record)
        finished: list[RunResult] = []

        def observe(event: Event) -> None:
            if isinstance(event, RunStarted) and event.run is not None:
                link_suite_run(self.store, claim, event.run.run_id)
                named.append(event.run.run_id)
                started.set()
            elif isinstance(event, RunFinished):
                finished.append(event.result)

        why = "the server stopped before the run started"
        try:
            await self._execute(resolved, recorder.observe(observe))
        except Exception as e:  # noqa: BLE001 (kept as the suite's reason, not raised into
            # the server): e.g. an agent's target cannot be built, so nothing ran
            why = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {e}"
        finally:
            with anyio.CancelScope(shield=True):
                recorder.close(finished[-1] if finished else None)
                if not named:
                    fail_suite_run(self.store, claim, why)
            started.set()

    async def _execute(self, resolved: ResolvedSuite, observer: Callable[[Event], None]) -> None:
        user, judge = self.models()
        try:
            async with TargetPool(secrets=self.secrets) as pool:
                await run_scenarios(
                    resolved.scenarios,
                    targets=pool.for_scenario,
                    user_model=user,
                    judge_model=judge,
                    settings=self.settings,
                    observer=observer,
                    scrub=self.secrets.scrub,
                )
        finally:
            with anyio.CancelScope(shield=True):
                for model in {id(m): m for m in (user, judge) if m}.values():
                    await model.aclose()
