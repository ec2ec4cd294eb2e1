"""`SuiteRun`: suites prepared for one run, as `sparring run` and `Suite.arun` use them."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from sparring.authoring.connect import resolve_judge_model
from sparring.authoring.suite_options import TestOptions
from sparring.errors import UserError
from sparring.models.base import Model
from sparring.runner.code import (
    CodeScenario,
    HookError,
    call_body,
)
from sparring.runner.context import (
    TrialContext,
)
from sparring.scenario.base import TrialRange
from sparring.transcript import valid_text

if TYPE_CHECKING:
    import httpx

    from sparring.authoring.suite import Suite
    from sparring.config import Settings


Hook = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class RegisteredTest:
    """A test `@suite.scenario` registered: the function and its run settings."""

    fn: Callable[[], Any]
    name: str
    source: str
    trials: int | TrialRange
    """`repetitions`, or `trials=` (a count or an adaptive `TrialRange`)."""
    threshold: float
    timeout_s: float
    expect_failure: bool = False
    options: TestOptions = TestOptions()
    """The test's own evaluations (scored besides the suite's), rubrics, explain_failures."""


def shown_path(file: str) -> str:
    """A test file as test ids show it: relative to the current directory when it is under
    it (`d1/test_greet.py`), else its name."""
    path = Path(file)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path.name


class SuiteRun:
    """Suites prepared for one run: their tests as `CodeScenario`s, their hooks wired.

    `sparring run` and `Suite.arun` use it: `scenarios()` to list or filter the tests, and
    `async with run.active(client=...) as by_id:` around the run, which binds
    `suite.client`, resolves each suite's own model, runs after_all hooks at the end
    (failures are collected in `hook_errors`) and closes what it opened.

    Args:
        suites: The suites, in run order.
        settings: The run's settings (CLI > env > files), which connect a suite's model
            given as `"provider:name"` (`--base-url`, `--api-key`, timeouts, prices);
            `None`: read from the environment and files.
    """

    def __init__(self, suites: Sequence[Suite], *, settings: Settings | None = None) -> None:
        self.suites = list(suites)
        self.settings = settings
        self.hook_errors: list[str] = []
        self._started: dict[int, bool] = {}
        self._failed: dict[int, str] = {}
        self._locks: dict[int, anyio.Lock] = {}

    def scenarios(
        self, *, pattern: str | None = None, models: dict[int, Model | None] | None = None
    ) -> list[CodeScenario]:
        """The tests of every suite, in order; with `pattern`, those whose id or name it
        matches (`re.search`). A test's id is `<file>::<name>`, the file relative to the
        current directory when it is under it (see `_shown_path`).

        Raises:
            UserError: `pattern` is not a regular expression, or two tests have one id.
        """
        try:
            regex = re.compile(pattern) if pattern is not None else None
        except re.error as e:
            raise UserError(
                f"pattern {pattern!r} is not a valid regular expression ({e})"
            ) from None
        out: list[CodeScenario] = []
        seen: dict[str, str] = {}
        for suite in self.suites:
            model = (models or {}).get(id(suite))
            for test in suite.tests:
                scenario = self._scenario(suite, test, model)
                if scenario.id in seen:
                    raise UserError(
                        f"two tests have the id {scenario.id!r}: {seen[scenario.id]} "
                        f"and {test.source}; rename one (or put them in one "
                        "Suite, which refuses a name used twice)"
                    )
                seen[scenario.id] = test.source
                if regex is None or regex.search(scenario.id) or regex.search(test.name):
                    out.append(scenario)
        return out

    def _scenario(self, suite: Suite, test: RegisteredTest, model: Model | None) -> CodeScenario:
        from sparring.loaders.files import shown_source

        fn = test.fn

        async def body(trial: TrialContext) -> None:
            await call_body(fn)

        async def before() -> None:
            await self._before_all(suite)
            await suite._run_hooks("before_each", test.name)  # pyright: ignore[reportPrivateUsage]

        async def after(passed: bool, error: str | None) -> None:
            await suite._run_hooks(  # pyright: ignore[reportPrivateUsage]
                "after_each",
                test.name,
                passed,
                error,
                timeout_s=test.timeout_s,
                limit=f"the timeout_s of {test.name}",
            )

        return CodeScenario(
            id=f"{shown_path(test.source.rsplit(':', 1)[0])}::{test.name}",
            display_name=test.name,
            body=body,
            target=suite.target,
            source=shown_source(test.source),  # relative, like a YAML scenario's
            trials=test.trials,
            threshold=test.threshold,
            timeout_s=test.timeout_s,
            reply_timeout_s=suite.response_timeout,
            judge_model=model,
            before=before,
            after=after,
            persona=suite.persona,
            goal=suite.goal,
            evaluations=(*suite.evaluations, *test.options.evaluations),
            tool_args_judge=test.options.tool_args_judge,
            explain_failures=test.options.explain_failures,
            expect_failure=test.expect_failure,
        )

    async def _before_all(self, suite: Suite) -> None:
        """Run the suite's before_all hooks once (the first trial to get here runs them);
        if they failed or never finished (that trial timed out), every trial of the suite
        fails with that error."""
        key = id(suite)
        async with self._locks.setdefault(key, anyio.Lock()):
            if not self._started.get(key):
                self._started[key] = True
                self._failed[key] = (
                    "the suite's before_all hooks did not finish: the trial "
                    "running them timed out or was interrupted"
                )
                try:
                    await suite._run_hooks("before_all")  # pyright: ignore[reportPrivateUsage]
                    del self._failed[key]
                except HookError as e:
                    self._failed[key] = str(e)
        if key in self._failed:
            raise HookError(self._failed[key])

    @asynccontextmanager
    async def active(
        self, *, client: httpx.AsyncClient, models_off: bool = False
    ) -> AsyncGenerator[dict[str, CodeScenario]]:
        """Bind the suites to a run; yields their tests by id, with their models resolved
        (none with `models_off`: the run calls no model).

        Raises:
            UserError: a suite is already running, or its model cannot be resolved.
        """
        busy = [s for s in self.suites if s._client is not None]  # pyright: ignore[reportPrivateUsage]
        if busy:
            raise UserError("a suite is already running; run one suite at a time")
        async with AsyncExitStack() as stack:
            models = {
                id(s): None
                if models_off
                else await resolve_judge_model(
                    s.model, stack, fallback=False, settings=self.settings
                )
                for s in self.suites
            }
            for suite in self.suites:
                suite._client = client  # pyright: ignore[reportPrivateUsage]
            try:
                yield {s.id: s for s in self.scenarios(models=models)}
            finally:
                with anyio.CancelScope(shield=True):
                    await self._after_all()
                for suite in self.suites:
                    suite._client = None  # pyright: ignore[reportPrivateUsage]

    async def _after_all(self) -> None:
        for suite in reversed(self.suites):
            key = id(suite)
            if self._started.get(key) and key not in self._failed:
                longest = max((t.timeout_s for t in suite.tests), default=600)
                try:
                    await suite._run_hooks(  # pyright: ignore[reportPrivateUsage]
                        "after_all",
                        timeout_s=longest,
                        limit="the longest timeout_s of the suite's tests",
                    )
                except HookError as e:
                    self.hook_errors.append(valid_text(str(e)))
        self._started.clear()
        self._failed.clear()
