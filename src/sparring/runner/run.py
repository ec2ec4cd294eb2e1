"""Run scenarios: trials, concurrency, timeouts, stop conditions. Never prints.

The runner drives each trial through the conversation loop of DESIGN.md section 3, runs the
deterministic checks, makes one judge call per trial (plus one repair call if its answer
cannot be read), and reports progress as
events (`sparring.events`). Every trial that started gets a `TrialResult` with whatever
transcript it got, even when the target or a model fails; such trials are `error` or
`timed_out` (or `invalid`, when the simulated user wrote nothing sendable before
`min_turns`), never `failed` and never `passed`.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

if TYPE_CHECKING:
    import httpx

    from sparring.secrets import Secrets

from sparring import __version__
from sparring.errors import MissingPart, UserError
from sparring.events import (
    Event,
    Observer,
    RunFinished,
    RunStarted,
    ScenarioFinished,
)
from sparring.judging.sampling import models_used
from sparring.models.base import Model
from sparring.results import (
    RunResult,
    ScenarioResult,
    TrialResult,
)
from sparring.runner.adaptive import record_trial, run_adaptive, trial_range
from sparring.runner.code import CodeScenario
from sparring.runner.settings import AnyRunnable, RunSettings
from sparring.runner.trial import RunContext, run_trial
from sparring.scenario import EXPECTED_OUTPUT_ID, Criterion, SingleTurnScenario
from sparring.scenario.base import TrialRange
from sparring.targets.base import Target, TargetSession

Runnable = TypeVar("Runnable", bound=AnyRunnable)


def with_expected_output(scenario: Runnable) -> Runnable:
    """Give a single-turn scenario's `expected_output` an explicit criterion for the judge
    (id `expected_output`); any other scenario is returned as it is. `sparring rejudge`
    grades stored transcripts against the same criteria."""
    if not isinstance(scenario, SingleTurnScenario) or not scenario.expected_output:
        return scenario
    criterion = Criterion(
        id=EXPECTED_OUTPUT_ID,
        text="The reply gives the same answer as the expected output: "
        + scenario.expected_output[:400],
    )
    return scenario.model_copy(update={"criteria": [*scenario.criteria, criterion]})


def _labels(scenario: AnyRunnable) -> dict[str, Any]:
    """What a test file says about a scenario, kept in its result: `description`, `tags`,
    `category`, `topic`, `behavior` (nothing for Python tests)."""
    if isinstance(scenario, CodeScenario):
        return {}
    return {
        "description": scenario.description,
        "tags": scenario.tags,
        "category": scenario.category,
        "topic": scenario.topic,
        "behavior": scenario.behavior,
    }


class TargetPool:
    """Builds one Target per distinct target spec, sharing one HTTP client; closes them all.

    Use as `async with TargetPool(secrets=...) as pool: pool.for_scenario(s)`.
    """

    def __init__(self, *, secrets: Secrets) -> None:
        self._secrets = secrets
        self._targets: dict[str, Target] = {}
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> TargetPool:
        import httpx

        self._client = httpx.AsyncClient(
            follow_redirects=False,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close every target, then the client. A close that fails is a warning
        (`RuntimeWarning`), never an error: the run's results are final by now, and a
        target left half-open (e.g. by a sync test's own event loop) must not lose them."""
        with anyio.CancelScope(shield=True):
            closers = [t.aclose for t in self._targets.values()]
            if self._client is not None:
                closers.append(self._client.aclose)
            for close in closers:
                try:
                    await close()
                except Exception as e:
                    warnings.warn(
                        f"sparring: closing a target after the run failed ({e!r}); "
                        "the results are kept",
                        RuntimeWarning,
                        stacklevel=1,
                    )

    @property
    def client(self) -> httpx.AsyncClient:
        """The HTTP client the pool's targets share (`follow_redirects=False`)."""
        assert self._client is not None, "use TargetPool as an async context manager"
        return self._client

    def for_scenario(self, scenario: AnyRunnable) -> Target:
        """The target of `scenario`, built on first use; a Python test's Target object is
        used as it is (and not closed by the pool).

        Raises:
            UserError: the scenario has no target, or its target cannot be built.
        """
        from sparring.targets.registry import build_target

        if isinstance(scenario.target, Target):
            return scenario.target
        if scenario.target is None:
            raise UserError(
                f"scenario {scenario.id!r} ({scenario.source}) has no target: add "
                "`target:` to its file or to the scenario"
            )
        key = scenario.target.model_dump_json()
        if key not in self._targets:
            assert self._client is not None, "use TargetPool as an async context manager"
            try:
                self._targets[key] = build_target(
                    scenario.target, client=self._client, secrets=self._secrets
                )
            except MissingPart as e:  # its trials are skipped, saying what to install
                self._targets[key] = _Unavailable(scenario.target.type, str(e))
            except UserError as e:
                raise UserError(
                    f"{scenario.source or scenario.id}: target of scenario {scenario.id!r}: {e}"
                ) from None
        return self._targets[key]


class _Unavailable:
    """A target whose optional package or program is not installed: each conversation
    raises `MissingPart`, so the scenario's trials are skipped with the install line."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self._reason = name, reason

    async def open_session(self) -> TargetSession:
        """Never opens: raises `MissingPart` with the install line."""
        raise MissingPart(self._reason)

    async def aclose(self) -> None:
        """Nothing to release."""


def _ignore(event: Event) -> None:
    """The default observer: drops every event."""


async def run_scenarios(
    scenarios: Sequence[AnyRunnable],
    *,
    targets: Callable[[AnyRunnable], Target],
    user_model: Model | None,
    judge_model: Model | None,
    settings: RunSettings | None = None,
    observer: Observer | None = None,
    scrub: Callable[[str], str] | None = None,
) -> RunResult:
    """Run every trial of every scenario, `settings.parallel` trials at a time.

    Args:
        scenarios: Scenarios to run (from test files, or `CodeScenario`s: tests written in
            Python); ids must be unique.
        targets: Gives the Target for a scenario (e.g. `TargetPool.for_scenario`); called
            once per scenario before anything starts, so misconfiguration fails early (not
            for a Python test without a target), and for a Python test's session overrides.
        user_model: Plays simulated users; `None` skips simulated scenarios.
        judge_model: Grades criteria and `should`s; `None` marks them `skipped`.
        settings: Concurrency, timeouts, trials override, limits, temperatures.
        observer: Called with every event (live view, store); must not raise.
        scrub: Masks secret values in everything the run keeps and reports (transcripts,
            verdicts, events) and in what models are shown; the target is sent the real
            conversation.

    Returns:
        One ScenarioResult per scenario, in the order given; trials in trial order.

    Raises:
        UserError: `settings.parallel < 1`, duplicate scenario ids, or a target that
            cannot be built.
    """
    settings = settings or RunSettings()
    prepared = _prepared(scenarios, settings)
    bound = [(s, _target_of(s, targets)) for s in prepared]
    ctx = RunContext(
        settings=settings,
        user_model=user_model,
        judge_model=judge_model,
        observer=observer or _ignore,
        targets=targets,
        scrub=scrub,
    )
    run = _planned_run(prepared, settings, user_model=user_model, judge_model=judge_model)
    await _execute(run, bound, ctx)
    return run


def _prepared(scenarios: Sequence[AnyRunnable], settings: RunSettings) -> list[AnyRunnable]:
    """`scenarios` ready to run (`with_expected_output`).

    Raises:
        UserError: `settings.parallel < 1`, or duplicate scenario ids.
    """
    if settings.parallel < 1:
        raise UserError(f"--parallel must be at least 1, got {settings.parallel}")
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise UserError(f"scenario ids must be unique; repeated: {', '.join(repeated)}")
    return [with_expected_output(s) for s in scenarios]


def _target_of(scenario: AnyRunnable, targets: Callable[[AnyRunnable], Target]) -> Target | None:
    """The scenario's target; `None` for a Python test that opens its own sessions."""
    if isinstance(scenario, CodeScenario) and scenario.target is None:
        return None
    return targets(scenario)


def _planned_run(
    prepared: list[AnyRunnable],
    settings: RunSettings,
    *,
    user_model: Model | None,
    judge_model: Model | None,
) -> RunResult:
    """The run before it starts: one empty ScenarioResult per scenario, its trials planned."""
    results = [
        ScenarioResult(
            scenario_id=s.id,
            name=s.display_name,
            kind=s.kind,
            source=s.source,
            threshold=s.threshold,
            **_planned_trials(s, settings),
            **_labels(s),
        )
        for s in prepared
    ]
    return RunResult(
        sparring_version=__version__,
        run_id=uuid.uuid4().hex[:12],
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        user_model=getattr(user_model, "name", None),
        judge_model=getattr(judge_model, "name", None),
        models=models_used(
            user_model,
            judge_model,
            user_temperature=settings.user_temperature,
            judge_temperature=settings.judge_temperature,
        ),
        scenarios=results,
        fail_on_skip=settings.fail_on_skip,
    )


def _planned_trials(scenario: AnyRunnable, settings: RunSettings) -> dict[str, int]:
    """`planned_trials` of a scenario's result, and `max_trials` for adaptive trials (where
    `planned_trials` is their `min`)."""
    adaptive = trial_range(scenario, adaptive=settings.adaptive)
    if adaptive is not None:
        return {"planned_trials": adaptive.min, "max_trials": adaptive.max}
    assert isinstance(scenario.trials, int)  # not a TrialRange: trial_range returned it
    return {"planned_trials": settings.trials or scenario.trials}


async def _execute(
    run: RunResult, bound: list[tuple[AnyRunnable, Target | None]], ctx: RunContext
) -> None:
    """Run every planned trial into `run`, with RunStarted / RunFinished around them; an
    interrupted run is marked so (and the cancellation goes on) after observers got it."""
    planned = [r.planned_trials for r in run.scenarios]
    ctx.observer(RunStarted(len(bound), sum(planned), run.user_model, run.judge_model, run))
    started = time.perf_counter()
    try:
        await _run_all(bound, planned, run.scenarios, ctx)
    except anyio.get_cancelled_exc_class():
        run.interrupted = True
        raise
    finally:  # also when interrupted: observers get what finished
        for r in run.scenarios:
            r.trials.sort(key=lambda t: t.trial)
        run.duration_ms = (time.perf_counter() - started) * 1000
        ctx.observer(RunFinished(run))


async def _run_all(
    bound: list[tuple[AnyRunnable, Target | None]],
    counts: list[int],
    results: list[ScenarioResult],
    ctx: RunContext,
) -> None:
    limiter = anyio.CapacityLimiter(ctx.settings.parallel)
    async with anyio.create_task_group() as tg:
        for index, (scenario, target) in enumerate(bound):
            trials = _Trials(scenario, target, results[index], ctx, limiter)
            max_trials = results[index].max_trials
            if max_trials is None:
                tg.start_soon(trials.fixed, counts[index])
            else:
                tg.start_soon(trials.adaptive, TrialRange(min=counts[index], max=max_trials))


class _Trials:
    """Runs the trials of one scenario into its result, under the run's `limiter`."""

    def __init__(
        self,
        scenario: AnyRunnable,
        target: Target | None,
        result: ScenarioResult,
        ctx: RunContext,
        limiter: anyio.CapacityLimiter,
    ) -> None:
        self.scenario, self.target, self.result = scenario, target, result
        self.ctx, self.limiter = ctx, limiter

    async def fixed(self, count: int) -> None:
        """Run trials 1..count, stopping early only for `ctx.stop` (`--fail-fast`)."""
        remaining = count

        def record(trial: TrialResult) -> None:
            nonlocal remaining
            self.result.trials.append(trial)
            remaining -= 1
            if self.ctx.settings.fail_fast and not self.result.can_still_pass(remaining):
                self.ctx.stop = True
            if remaining == 0:
                self.ctx.observer(ScenarioFinished(self.result))

        async def one(number: int) -> None:
            async with self.limiter:
                if not self.ctx.stop:
                    await self._run(number, of=count, on_result=record)

        async with anyio.create_task_group() as tg:
            for number in range(1, count + 1):
                tg.start_soon(one, number)

    async def adaptive(self, trials: TrialRange) -> None:
        """Run trials until the scenario is decided or reaches `trials.max` (`run_adaptive`)."""
        result, ctx = self.result, self.ctx

        def record(trial: TrialResult) -> None:
            record_trial(result, trial, trials)
            if ctx.settings.fail_fast and result.decision == "failed":
                ctx.stop = True

        async def one(number: int) -> None:
            await self._run(number, of=trials.max, on_result=record)

        await run_adaptive(
            result,
            trials,
            one,
            limiter=self.limiter,
            parallel=ctx.settings.parallel,
            stopped=lambda: ctx.stop,
        )
        if len(result.trials) >= trials.min:
            ctx.observer(ScenarioFinished(result))

    async def _run(self, number: int, *, of: int, on_result: Callable[[TrialResult], None]) -> None:
        await run_trial(
            self.scenario, number, self.target, self.ctx, trials=of, on_result=on_result
        )
