"""Suites of Python tests: `Suite`, `@suite.scenario`, sessions, `should`, `unfold`, hooks.

```python
from sparring.api import AgentMessage, CustomerMessage, Suite

suite = Suite(target="http://127.0.0.1:8787/chat")

@suite.scenario(repetitions=3, threshold="66%")
async def test_greets() -> None:
    async with suite.session() as session:
        response = await session.send("Hello!")
        await response.should("greet the customer")
```

Run it with `sparring run test_file.py` (with every other option of `sparring run`), or from
Python with `suite.run()` / `await suite.arun()`, which return the `RunResult` every report is
made from. Tests run through the same runner as YAML scenarios: each repetition is a trial,
the threshold is the pass rate required across them.

A trial passes when its body returns without failing: a `should` not met or a failing
`assert` fails it; the judge failing to decide, the target failing, or any other exception
makes it `error`; `should`s without a judge model are `skipped` (the trial is then passed
only on what was checked, as for YAML; `--fail-on-skip` makes that exit 3). A body with no
assertion at all passes, like a pytest test.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio

from sparring.authoring.call_site import errors_at_decorator
from sparring.authoring.connect import (
    SessionContext,
    TargetLike,
    coerce_target,
    open_session,
    resolve_judge_model,
)
from sparring.authoring.session import Session, session_for, with_overrides
from sparring.authoring.suite_options import (
    RubricsLike,
    checked_evaluations,
    checked_options,
    suite_trials,
)
from sparring.authoring.suite_run import RegisteredTest, SuiteRun
from sparring.errors import UserError
from sparring.events import Observer
from sparring.models.base import Model
from sparring.results import RunResult
from sparring.runner import RunSettings, TargetPool, run_scenarios
from sparring.runner.code import (
    HookError,
    call_body,
    raised_text,
    refuse_in_sync_body,
)
from sparring.runner.context import (
    current_trial,
)
from sparring.scenario import parse_threshold
from sparring.scenario.base import TrialRange
from sparring.scenario.evaluations import Evaluation, SimulatedUser

if TYPE_CHECKING:
    import httpx

    from sparring.config import Settings
    from sparring.runner.code import CodeScenario
    from sparring.runner.replay_roles import ReplayRoles
    from sparring.secrets import Secrets
    from sparring.store.recorder import Recorder


F = TypeVar("F", bound=Callable[..., Any])
Hook = Callable[..., Any]


def _parlant_shorthand(
    target: TargetLike | None,
    *,
    server_url: str | None,
    agent_id: str | None,
    timeout_s: float,
) -> TargetLike | None:
    """`target`, or the Parlant target `server_url` and `agent_id` name together.

    Raises:
        UserError: only one of the two given, or both with `target`.
    """
    if server_url is None and agent_id is None:
        return target
    if server_url is None or agent_id is None:
        given, missing = (
            ("agent_id", "server_url") if server_url is None else ("server_url", "agent_id")
        )
        raise UserError(
            f"Suite({given}=...) needs {missing}= too: a Parlant agent is named by both, e.g. "
            'Suite(server_url="http://localhost:8800", agent_id="my-agent")'
        )
    if target is not None:
        raise UserError(
            "Suite(target=...) and Suite(server_url=..., agent_id=...) name two targets; "
            "give one of them"
        )
    return {"type": "parlant", "url": server_url, "agent_id": agent_id, "timeout_s": timeout_s}


class Suite:
    """A set of Python tests against one target, with hooks and shared context.

    Args:
        target: The agent under test: an `http(s)://` URL (JSON body `{"message": ...}`,
            whole body as reply), a target spec mapping as under `target:` in YAML (e.g.
            `{"url": ..., "body_template": ..., "response_path": "reply"}` or
            `{"type": "parlant", "url": ..., "agent_id": ...}`), a function
            `agent(history)`, or a `sparring.targets.base.Target`. `None` when every test
            opens sessions with `open_session(target)`.
        model: Judge for `should`: `"provider:name"`, a `Model`, or `None` for the run's
            model (`--model`, SPARRING_MODEL, `[tool.sparring]`). With no model at all,
            `should` verdicts are `skipped`, never passed.
        response_timeout: Seconds to wait for one agent reply (`--reply-timeout` wins).
        server_url: With `agent_id`, the Parlant shorthand: `Suite(server_url=URL,
            agent_id=ID)` is `Suite(target={"type": "parlant", "url": URL, "agent_id":
            ID, "timeout_s": response_timeout})`, so a Parlant test file runs after changing
            only its import line.
        agent_id: The Parlant agent's id; only with `server_url`.
        persona: Who the simulated user of `session.simulate(...)` is, by default: a
            description, or a reusable `SimulatedUser` (e.g. from
            `sparring.api.load_library`; its system prompt is then the whole persona).
        goal: What that simulated user wants, by default.
        evaluations: Evaluations scoring every test of the suite (one judge call per trial,
            after the test's body), e.g. `library.evaluations_for(user)`; a `persona` that
            is a `SimulatedUser` needs each evaluation attached to it among them.

    Attributes:
        context: A dict shared by hooks and tests (e.g. ids made in `before_all`).

    Raises:
        UserError: an argument that cannot be used (a bad URL, an invalid spec, a model
            that is neither text nor a `Model`, a timeout not above 0); the message names
            the argument, what was given and what is accepted.
    """

    def __init__(
        self,
        target: TargetLike | None = None,
        *,
        model: Model | str | None = None,
        response_timeout: float = 60,
        server_url: str | None = None,
        agent_id: str | None = None,
        persona: str | SimulatedUser | None = None,
        goal: str | None = None,
        evaluations: Sequence[Evaluation] = (),
    ) -> None:
        _check_seconds("Suite", "response_timeout", response_timeout)
        _check_model(model)
        target = _parlant_shorthand(
            target, server_url=server_url, agent_id=agent_id, timeout_s=response_timeout
        )
        try:
            self.target = (
                None if target is None else coerce_target(target, timeout_s=response_timeout)
            )
        except UserError as e:
            raise UserError(f"Suite(target=...): {e}") from None
        self.model = model
        self.response_timeout = response_timeout
        self.persona, self.goal = persona, goal
        self.evaluations = _suite_evaluations(persona, evaluations)
        self.context: dict[str, Any] = {}
        self.tests: list[RegisteredTest] = []
        self._hooks: dict[str, list[Hook]] = {
            "before_all": [],
            "after_all": [],
            "before_each": [],
            "after_each": [],
        }
        self._client: httpx.AsyncClient | None = None

    # --- registering ---------------------------------------------------------------------

    @overload
    def scenario(self, fn: F) -> F: ...
    @overload
    def scenario(
        self,
        *,
        repetitions: int = 1,
        threshold: float | str = 1.0,
        timeout_s: float = 600,
        expect_failure: bool = False,
        evaluations: Sequence[Evaluation] = (),
        trials: int | TrialRange | Mapping[str, int] | None = None,
        tool_args_judge: RubricsLike = (),
        explain_failures: bool | None = None,
    ) -> Callable[[F], F]: ...

    def scenario(
        self,
        fn: F | None = None,
        *,
        repetitions: int = 1,
        threshold: float | str = 1.0,
        timeout_s: float = 600,
        expect_failure: bool = False,
        evaluations: Sequence[Evaluation] = (),
        trials: int | TrialRange | Mapping[str, int] | None = None,
        tool_args_judge: RubricsLike = (),
        explain_failures: bool | None = None,
    ) -> F | Callable[[F], F]:
        """Register a test: `@suite.scenario` or `@suite.scenario(repetitions=5, threshold=.8)`.

        Args:
            fn: The test function, when used as a bare `@suite.scenario`.
            repetitions: Trials to run, 1-100.
            threshold: Pass rate required across them: `0.8`, `"80%"` or `80`; the
                default 1.0 means every repetition must pass.
            timeout_s: Limit for one trial, in seconds.
            expect_failure: The test must fail: a trial that fails passes ("failed as
                expected"), one that passes fails; errors and skips stay as they are.
            evaluations: Evaluations scoring this test's trials besides the suite's (one
                judge call per trial, after the body, on its conversation).
            trials: As in YAML, instead of `repetitions`: a count, or `{"min": 3, "max":
                30}` (a `TrialRange`) for adaptive trials, which stop once the pass rate's
                95% interval is clear of `threshold`.
            tool_args_judge: As in YAML: a rubric `{"tool": NAME, "rubric": ...}` (or a
                `ToolArgsJudge`, or a list): the agent must have called `tool` with
                arguments that parse, then the judge grades the rubric on them, in the
                trial's one judge call after the body.
            explain_failures: One more model call per failed trial explains why it failed
                (`None`: as the run's settings say).

        Raises:
            UserError: bad repetitions, trials (or both given), threshold, timeout_s,
                evaluations (not `Evaluation`s, or a name the suite's evaluations also
                have), tool_args_judge or explain_failures (said at the decorator), or a
                test name used twice.
        """
        with errors_at_decorator(inspect.currentframe()):
            count = suite_trials(repetitions, trials)
            _check_seconds("suite.scenario", "timeout_s", timeout_s)
            try:
                fraction = parse_threshold(threshold)
            except ValueError as e:
                raise UserError(f"suite.scenario: threshold: {e}") from None
            options = checked_options(
                "suite.scenario",
                evaluations=evaluations,
                tool_args_judge=tool_args_judge,
                explain_failures=explain_failures,
                also=self.evaluations,
            )

        def register(test: F) -> F:
            return self._register(test, count, fraction, timeout_s, expect_failure, options)

        return register if fn is None else register(fn)

    def _register(self, test: F, *settings: Any) -> F:
        """Add `test` with its run `settings` (`RegisteredTest`'s fields after `source`).

        Raises:
            UserError: the suite has a test of that name already.
        """
        name = getattr(test, "__name__", type(test).__name__)
        if any(t.name == name for t in self.tests):
            raise UserError(f"the suite already has a test named {name!r}; rename one")
        code = getattr(test, "__code__", None)
        source = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else name
        self.tests.append(RegisteredTest(test, name, source, *settings))
        return test

    def before_all(self, hook: F) -> F:
        """Register `hook()` (sync or async) to run once, before the suite's first test."""
        self._hooks["before_all"].append(hook)
        return hook

    def after_all(self, hook: F) -> F:
        """Register `hook()` to run once, after the suite's last test (when before_all ran
        without failing)."""
        self._hooks["after_all"].append(hook)
        return hook

    def before_each(self, hook: F) -> F:
        """Register `hook(test_name)` to run before each trial of each test."""
        self._hooks["before_each"].append(hook)
        return hook

    def after_each(self, hook: F) -> F:
        """Register `hook(test_name, passed, error)` to run after each trial; `error` is why
        it did not pass (`None` when it passed)."""
        self._hooks["after_each"].append(hook)
        return hook

    # --- inside tests ----------------------------------------------------------------------

    @property
    def client(self) -> httpx.AsyncClient:
        """The run's shared `httpx.AsyncClient` (no redirects followed), for setup and
        teardown calls against the agent's own API in hooks and tests.

        Raises:
            UserError: the suite is not running (the client exists only during a run).
        """
        if self._client is None:
            raise UserError(
                "suite.client exists only while the suite runs (in hooks and tests); use it there"
            )
        trial = current_trial()
        refuse_in_sync_body("suite.client", trial.scenario_id if trial else None)
        return self._client

    def session(self, **overrides: Any) -> Session | SessionContext:
        """A conversation with the suite's target: `async with suite.session() as s:`.

        `overrides` replace fields of a target given as a spec, e.g.
        `suite.session(customer_id="c-42")` or `agent_id=` for a Parlant target. Outside a
        run (a script or notebook) the session judges with the suite's model or the
        configured one.

        Raises:
            UserError: no target, or overrides that do not fit it.
        """
        trial = current_trial()
        if trial is not None:
            return session_for(trial, **overrides)
        if self.target is None:
            raise UserError("this suite has no target; give Suite(target=...)")
        target = with_overrides(self.target, overrides) if overrides else self.target
        return open_session(target, model=self.model, response_timeout=self.response_timeout)

    # --- running ---------------------------------------------------------------------------

    async def arun(
        self,
        *,
        pattern: str | None = None,
        settings: RunSettings | None = None,
        observer: Observer | None = None,
        secrets_file: str | Path | None = None,
        store: bool = True,
        replay: ReplayRoles | None = None,
        secrets: Secrets | None = None,
    ) -> RunResult:
        """Run every test (those whose name matches the regex `pattern`) and return the
        result; reports are rendered from it (`sparring.reports`). `{{secrets.NAME}}` is
        filled from the environment and `secrets_file` (default: the `secrets_file`
        setting), or from `secrets` when given (the pytest plugin's, which masks what
        every test looked up in its cassettes). The run is kept in the results store as it
        happens (the `store` setting; `store=False`: not kept). `replay` records and
        replays the targets and the configured models (the pytest plugin's
        `--sparring-replay`); a suite's own `model` is neither, as under `sparring run`.

        Raises:
            UserError: misconfiguration (bad pattern, target, model); a store that cannot
                be opened (`StoreError`).
            HookError: an after_all hook raised or did not return in time; `error.result`
                holds the run's result, whose `hook_errors` and `exit_code` (3) say so too.
        """
        from sparring.config import load_settings
        from sparring.secrets import Secrets

        run = SuiteRun([self])
        scenarios = run.scenarios(pattern=pattern)
        configured = load_settings({})
        secrets = secrets or Secrets.load(
            file=secrets_file or configured.secrets_file, api_key=configured.api_key
        )
        recorder = self._recorder(configured) if store else None
        try:
            result = await self._arun(run, scenarios, settings, recorder, observer, secrets, replay)
        except BaseException:
            if recorder is not None:
                recorder.close(None)
            raise
        if recorder is not None and (lost := recorder.close(result)):
            warnings.warn(
                f"the results store could not keep all of the run: {lost[0]}", stacklevel=2
            )
        if run.hook_errors:
            raise _hook_failure(result.hook_errors, result)
        return result

    def _recorder(self, configured: Settings) -> Recorder:
        from sparring.store.recorder import Recorder

        cwd = Path.cwd()
        files = {Path(t.source.rsplit(":", 1)[0]) for t in self.tests if ":" in t.source}
        paths = sorted(
            f.relative_to(cwd).as_posix() if f.is_relative_to(cwd) else str(f) for f in files
        )
        return Recorder.open(configured, paths=paths, cwd=cwd)

    async def _arun(
        self,
        run: SuiteRun,
        scenarios: list[CodeScenario],
        settings: RunSettings | None,
        recorder: Recorder | None,
        observer: Observer | None,
        secrets: Secrets,
        replay: ReplayRoles | None,
    ) -> RunResult:
        if recorder is not None:
            observer = recorder.observe(observer)
        async with AsyncExitStack() as stack:
            models_off = settings is not None and settings.no_model_reason is not None
            user, judge = None, None
            if replay is not None and self.model is None and not models_off:
                user, judge = replay.models()
            elif not models_off:  # the suite's model plays `session.simulate` users too
                user = judge = await resolve_judge_model(self.model, stack, fallback=True)
            pool = await stack.enter_async_context(TargetPool(secrets=secrets))
            targets = pool.for_scenario
            if replay is not None:
                targets, observer = replay.targets(targets), replay.observe(observer or _ignore)
            async with run.active(client=pool.client, models_off=models_off) as active:
                result = await run_scenarios(
                    [active[s.id] for s in scenarios],
                    targets=targets,
                    user_model=user,
                    judge_model=judge,
                    settings=settings,
                    observer=observer,
                    scrub=secrets.scrub,
                )
        result.hook_errors.extend(secrets.scrub(e) for e in run.hook_errors)
        return result

    def run(
        self,
        *,
        pattern: str | None = None,
        settings: RunSettings | None = None,
        observer: Observer | None = None,
        secrets_file: str | Path | None = None,
        store: bool = True,
    ) -> RunResult:
        """`arun` from synchronous code. Inside a running event loop (Jupyter, an async
        test, a web app) the run goes to a worker thread with its own loop, so the caller's
        loop is never re-entered or patched."""

        def go() -> RunResult:
            return anyio.run(
                lambda: self.arun(
                    pattern=pattern,
                    settings=settings,
                    observer=observer,
                    secrets_file=secrets_file,
                    store=store,
                )
            )

        if not _loop_running():
            return go()
        outcome: list[RunResult | BaseException] = []

        def work() -> None:
            try:
                outcome.append(go())
            except BaseException as e:  # handed back to the caller's thread
                outcome.append(e)

        worker = threading.Thread(target=work, name="sparring-suite-run")
        worker.start()
        worker.join()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    # --- for SuiteRun ----------------------------------------------------------------------

    def written_in(self, path: Path) -> bool:
        """Whether the suite belongs to the file `path`: a test of it is written there, or
        none is written in a known file. A Suite a test file imports from another belongs to
        that other file, so it is collected (and run) once."""
        files = {Path(t.source.rsplit(":", 1)[0]).resolve() for t in self.tests if ":" in t.source}
        return not files or path.resolve() in files

    async def _run_hooks(
        self, kind: str, *args: Any, timeout_s: float | None = None, limit: str = ""
    ) -> None:
        """Run the `kind` hooks in order with `args`, each within `timeout_s` seconds (`None`:
        no limit; `limit` says where that limit comes from).

        Raises:
            HookError: a hook raised anything (`SystemExit` too) but the run's own
                cancellation, or did not return in time; the message names it.
        """
        for hook in self._hooks[kind]:
            what = f"{kind} hook {getattr(hook, '__name__', 'hook')}()"
            try:
                with anyio.move_on_after(timeout_s) as scope:
                    await call_body(hook, *args)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as e:
                raise HookError(f"{what} raised {raised_text(e)}") from e
            if scope.cancelled_caught:
                raise HookError(
                    f"{what} did not return within {timeout_s:g} s ({limit}); "
                    "make it return, or raise that timeout if it is just slow"
                )


def _ignore(event: object) -> None:
    """The observer of a run nothing else watches."""


def _loop_running() -> bool:
    import sniffio

    try:
        sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return False
    return True


def _hook_failure(errors: list[str], result: RunResult) -> HookError:
    error = HookError("; ".join(errors))
    error.add_note("the run finished; its result is in the exception's `result`")
    error.result = result  # type: ignore[attr-defined]
    return error


def _suite_evaluations(
    persona: str | SimulatedUser | None, evaluations: Sequence[Evaluation]
) -> tuple[Evaluation, ...]:
    """The suite's evaluations, checked: `Evaluation`s with distinct names, holding every
    evaluation a `SimulatedUser` persona has attached.

    Raises:
        UserError: an item that is not an `Evaluation`, a name twice, or an attached
            evaluation missing (the message says how to pass them).
    """
    given = checked_evaluations("Suite", evaluations)
    names = [e.name for e in given]
    if isinstance(persona, SimulatedUser):
        missing = [n for n in persona.evaluations if n not in names]
        if missing:
            raise UserError(
                f"simulated user {persona.name!r} has evaluations {', '.join(missing)} "
                "attached: pass them too, e.g. Suite(persona=user, "
                "evaluations=library.evaluations_for(user))"
            )
    return given


def _check_seconds(call: str, name: str, value: object) -> None:
    """A duration argument must be a number of seconds above 0.

    Raises:
        UserError: naming `call(name=...)`, the value given and what is accepted.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(
            f"{call}({name}=...) must be a number of seconds above 0, e.g. {name}=60; got {value!r}"
        )


def _check_model(model: object) -> None:
    """A Suite's judge model must be `"provider:name"`, a `Model` or `None`.

    Raises:
        UserError: anything else (a spec without `provider:` included).
    """
    if model is None or isinstance(model, Model):
        return
    if isinstance(model, str):
        if ":" in model.strip(" :"):
            return
        raise UserError(
            f"Suite(model={model!r}) names no provider; write 'provider:name', "
            f"e.g. 'openai:{model.strip(' :') or 'gpt-4o-mini'}' or "
            "'ollama:qwen2.5:7b'"
        )
    raise UserError(
        f"Suite(model=...) is the judge model: a 'provider:name' text such as "
        f"'openai:gpt-4o-mini', a sparring Model, or None for the run's model "
        f"(--model, SPARRING_MODEL); got {type(model).__name__} {model!r}"
    )
