"""Runs of saved test suites (and of test files sent to the API) inside the dashboard's
server process.

A run goes through the same runner as `sparring run` (`run_scenarios`, one `TargetPool`),
and is kept in the store as it goes (`Recorder`: the run row when it starts, each trial as
it ends), so a page reload shows where it is. The suite is claimed first (one run of a
suite at a time, `start_suite_run`); a run that cannot start records why
(`fail_suite_run`). When the server stops, runs still going are cancelled and kept
`interrupted`, with every trial that ended; Resume runs the trials that did not end into
the same run (`sparring.store.suite_resume`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from sparring.dashboard.guards import check_scenarios
from sparring.errors import UserError
from sparring.events import Event, JudgeStarted, RunFinished, RunStarted, TrialFinished
from sparring.models.base import Model
from sparring.results import RunResult
from sparring.runner import RunSettings, run_scenarios
from sparring.runner.run import TargetPool
from sparring.scenario import AnyScenario
from sparring.secrets import MODEL_KEY_VARIABLES, Secrets
from sparring.store.database import Store, open_store
from sparring.store.provenance import current_provenance
from sparring.store.recorder import Recorder
from sparring.store.suite_resume import claim_resume, release_resume, resume_plan
from sparring.store.suites import (
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
NO_MODEL_REASON = (
    "no model configured for the dashboard's runs, so they skip the simulated user and the "
    'judge: set `model = "provider:name"` (e.g. "openai:gpt-4o-mini") in '
    "sparring.toml, or export SPARRING_MODEL, where `sparring serve` starts, then start it "
    "again"
)
"""Why a dashboard run without any model skips what needs one (its trials' reason)."""


@dataclass
class _Launch:
    """One run to start: its scenarios, the paths and invocation it is kept with, what to
    do once the runner named it (`linked`) or when it could not start (`failed`, with
    why); `named` gets its run id. With `resumed`, it completes that stored run instead
    (trial numbers by `missing`, see `Recorder`)."""

    scenarios: list[AnyScenario]
    paths: list[str]
    invocation: dict[str, Any]
    linked: Callable[[str], None]
    failed: Callable[[str], None]
    named: list[str] = field(default_factory=list[str])
    resumed: str | None = None
    missing: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    judging: set[tuple[str, int]] = field(default_factory=set[tuple[str, int]])
    """(scenario id, trial) of its trials whose judge call is in flight (Evaluating)."""


@dataclass
class SuiteRunner:
    """Starts runs of saved suites in the server process (see the module docstring).

    Attributes:
        store: The dashboard's store.
        models: Makes each run's models (`None` for a role leaves its steps skipped).
        settings: How to run (concurrency, limits, temperatures); each test case's own
            timeout, max turns and session count are kept.
        secrets: Fill `{{secrets.NAME}}` in agent configs and mask them in what is kept:
            the server's secrets file only (`server_secrets`), never its environment. The
            models' API keys in the environment are masked too.
        cwd: Where runs are said to run (git provenance).
    """

    store: Store
    models: Models
    settings: RunSettings = field(default_factory=RunSettings)
    secrets: Secrets = field(default_factory=lambda: server_secrets(None))
    cwd: Path = field(default_factory=Path.cwd)
    _group: TaskGroup | None = None
    _live: dict[str, _Launch] = field(default_factory=dict[str, _Launch])

    def judging(self, run_id: str) -> frozenset[tuple[str, int]]:
        """(scenario id, trial) of run `run_id`'s trials being judged now: their
        conversation ended and the judge has not answered yet (none for a run this server
        is not running)."""
        launch = self._live.get(run_id)
        return frozenset(launch.judging) if launch is not None else frozenset()

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
            UserError: the server is not serving (no run can start), or an agent's target
                is not one the dashboard runs (`sparring.dashboard.guards`).
        """
        group = self._serving()
        resolved = resolve_suite(self.store, suite_id)
        check_scenarios(resolved.scenarios)
        claim = start_suite_run(self.store, resolved, author=author)
        launch = _Launch(
            scenarios=list(resolved.scenarios),
            paths=[f"suite:{resolved.suite.name}"],
            invocation={"suite_id": resolved.suite.id, "claim": claim, "author": author},
            linked=lambda run_id: link_suite_run(self.store, claim, run_id),
            failed=lambda why: fail_suite_run(self.store, claim, why),
        )
        return await self._launch(group, launch)

    async def resume(self, suite_id: int, *, author: str) -> str | None:
        """Resume saved suite `suite_id`'s interrupted latest run: run only its
        conversations that did not end, into that run, with the revisions it used; returns
        the run's id once it runs again (`None` when it could not start: it stays
        interrupted).

        Raises:
            SuiteNotFound: no such suite.
            SuiteError: nothing to resume (`sparring.store.suite_resume.resume_plan` says why).
            SuiteBusy: the run is being resumed already.
            UserError: the server is not serving, or an agent's target is not one the
                dashboard runs (`sparring.dashboard.guards`).
        """
        group = self._serving()
        plan = resume_plan(self.store, suite_id)
        check_scenarios(plan.scenarios)
        claim_resume(self.store, plan, provenance=current_provenance(self.cwd))
        launch = _Launch(
            scenarios=list(plan.scenarios),
            paths=[f"suite:{plan.suite.name}"],
            invocation={"suite_id": plan.suite.id, "author": author},
            linked=lambda _run_id: None,
            failed=lambda _why: release_resume(self.store, plan.run_id),
            resumed=plan.run_id,
            missing=plan.missing,
        )
        return await self._launch(group, launch)

    async def start_tests(self, scenarios: Sequence[AnyScenario], *, name: str, author: str) -> str:
        """Run `scenarios` (a test file sent to the API) as a run of paths `api:<name>`,
        so it is listed as the suite `api:<name>`; returns the run's id.

        Raises:
            UserError: the server is not serving, a target is not one the dashboard runs
                (`sparring.dashboard.guards`), or the run could not start (e.g. a target
                cannot be built), saying why.
        """
        group = self._serving()
        check_scenarios(scenarios)
        reasons: list[str] = []
        launch = _Launch(
            scenarios=list(scenarios),
            paths=[f"api:{name}"],
            invocation={"author": author},
            linked=lambda _run_id: None,
            failed=reasons.append,
        )
        run_id = await self._launch(group, launch)
        if run_id is None:
            raise UserError(f"the tests {name!r} could not start: {'; '.join(reasons)}")
        return run_id

    def _serving(self) -> TaskGroup:
        if self._group is None:
            raise UserError("the dashboard is not serving: start it with `sparring serve`")
        return self._group

    async def _launch(self, group: TaskGroup, launch: _Launch) -> str | None:
        """Start `launch` in `group`; its run id once the runner named it, `None` when it
        could not start (within `START_WAIT_S`)."""
        started = anyio.Event()
        group.start_soon(self._run, launch, started)
        with anyio.move_on_after(START_WAIT_S):
            await started.wait()
        return launch.named[0] if launch.named else None

    async def _run(self, launch: _Launch, started: anyio.Event) -> None:
        """Run `launch`, kept in the store as it goes; `started` is set once its run id is
        known (`launch.named`), or once it could not start (`launch.failed` says why)."""
        record = RunRecord(
            paths=launch.paths,
            invocation={"paths": launch.paths, **launch.invocation},
            settings={},
            provenance=current_provenance(self.cwd),
        )
        recorder = Recorder(
            store=open_store(self.store.url),
            record=record,
            resumed=launch.resumed,
            missing=launch.missing,
        )
        finished: list[RunResult] = []

        def observe(event: Event) -> None:
            if isinstance(event, RunStarted) and event.run is not None:
                run_id = launch.resumed or event.run.run_id
                launch.linked(run_id)
                launch.named.append(run_id)
                self._live[run_id] = launch
                started.set()
            elif isinstance(event, JudgeStarted):
                launch.judging.add((event.scenario_id, event.trial))
            elif isinstance(event, TrialFinished):
                launch.judging.discard((event.result.scenario_id, event.result.trial))
            elif isinstance(event, RunFinished):
                finished.append(event.result)

        why = "the server stopped before the run started"
        try:
            await self._execute(launch.scenarios, recorder.observe(observe))
        except Exception as e:  # noqa: BLE001 (kept as the reason, not raised into the
            # server): e.g. an agent's target cannot be built, so nothing ran
            why = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {e}"
        finally:
            with anyio.CancelScope(shield=True):
                recorder.close(finished[-1] if finished else None)
                if not launch.named:
                    launch.failed(why)
                for run_id in launch.named:
                    self._live.pop(run_id, None)
            started.set()

    async def _execute(
        self, scenarios: Sequence[AnyScenario], observer: Callable[[Event], None]
    ) -> None:
        user, judge = self.models()
        scrub = self.secrets.scrubber_with(os.environ.get(n, "") for n in MODEL_KEY_VARIABLES)
        settings = self.settings
        if user is None and judge is None:  # say how to configure one for the server
            settings = replace(settings, no_model_reason=NO_MODEL_REASON)
        try:
            async with TargetPool(secrets=self.secrets) as pool:
                await run_scenarios(
                    scenarios,
                    targets=pool.for_scenario,
                    user_model=user,
                    judge_model=judge,
                    settings=settings,
                    observer=observer,
                    scrub=scrub.scrub,
                )
        finally:
            with anyio.CancelScope(shield=True):
                for model in {id(m): m for m in (user, judge) if m}.values():
                    await model.aclose()


def server_secrets(file: str | Path | None, *, api_key: str | None = None) -> Secrets:
    """The secrets of the dashboard's runs: `{{secrets.NAME}}` filled from the server's
    secrets `file` only (`secrets_file` setting, `sparring serve --secrets-file`), never
    from its environment, which a test sent to the API could otherwise send to an agent of
    its choosing (`{{secrets.OPENAI_API_KEY}}` in a header); `api_key` (the setting) is
    masked in what is kept.

    Raises:
        ConfigError: `file` cannot be read or has a malformed line.
    """
    return _ServerSecrets.load(env={}, file=file, api_key=api_key)


class _ServerSecrets(Secrets):
    """`Secrets` from the server's secrets file only; a missing one says where to add it
    (not `export`, which the server never reads, nor the file's path)."""

    def get(self, name: str) -> str:
        if name not in self:
            raise UserError(
                f"secret {name!r} (used as {{{{secrets.{name}}}}}) is not in the dashboard's "
                f"secrets file (the server's environment is never used): add `{name}=...` to "
                "the file given to `sparring serve --secrets-file` (or the `secrets_file` "
                "setting) and start the server again"
            )
        return super().get(name)
