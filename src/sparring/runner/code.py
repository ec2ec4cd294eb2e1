"""Tests written in Python, as the runner runs them: `CodeScenario`, calling a sync or async
body (sync ones in a worker thread, so timeouts and Ctrl-C still work), and hook errors."""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

from sparring.errors import UserError
from sparring.models.base import Model
from sparring.results import TrialResult, TrialStatus
from sparring.runner.context import TrialContext
from sparring.scenario.base import TrialRange
from sparring.scenario.evaluations import Evaluation, SimulatedUser, ToolArgsJudge
from sparring.targets.base import Target

if TYPE_CHECKING:
    from sparring.targets.registry import AnyTargetSpec

T = TypeVar("T")


@dataclass(frozen=True)
class _SyncBody:
    """A sync test function or hook `call_body` runs in a worker thread: its `name`, the
    `portal` its blocking sessions call the run's loop through, the loop's `thread`."""

    name: str
    portal: BlockingPortal
    thread: int


_SYNC_BODY: contextvars.ContextVar[_SyncBody | None] = contextvars.ContextVar(
    "sparring_sync_body", default=None
)


# --- code-defined scenarios, for the runner -------------------------------------------------

Body = Callable[[TrialContext], Awaitable[None] | None]
"""A Python test's body: gets its trial, may be sync or async."""


@dataclass(frozen=True, kw_only=True)
class CodeScenario:
    """A test written in Python, run by `sparring.runner.run_scenarios` like a YAML one.

    Attributes:
        id: Unique in the run; `display_name` is shown in reports.
        body: Called once per trial with its `TrialContext` (also `current_trial()`). A
            failing `assert` (any AssertionError) fails the trial; any other exception makes
            it `error`; returning with no verdict at all passes it, like a pytest test.
        target: Spec (built by the run's target pool) or Target object; `None` when the body
            opens its own sessions.
        source: `file:line` of the test.
        trials: Repetitions, or a `TrialRange` for adaptive trials; `threshold`: pass
            rate required across them (0-1).
        timeout_s: Limit for one trial, in seconds; `reply_timeout_s` for one reply.
        judge_model: Judges this test's `should`s instead of the run's judge model.
        before: Awaited before each trial's body (setup hooks); raising makes it `error`.
        after: Awaited after each trial with `(passed, error)`; raising makes it `error`.
        evaluations: Scorecards the judge values on the trial's conversation after the body
            (one judge call), like a YAML scenario's `evaluations`.
        tool_args_judge: Rubrics on a tool call's arguments, judged in that same call.
        explain_failures: One more model call per failed trial explains why (`None`:
            as the run's settings say).
        persona, goal: The simulated user of `Session.simulate` (the Suite's): a
            description, or a reusable `SimulatedUser`.
        expect_failure: The test must fail: a failed trial passes, a passed one fails.
    """

    id: str
    display_name: str
    body: Body
    target: AnyTargetSpec | Target | None = None
    source: str | None = None
    trials: int | TrialRange = 1
    threshold: float = 1.0
    timeout_s: float = 600
    reply_timeout_s: float | None = None
    judge_model: Model | None = None
    before: Callable[[], Awaitable[None]] | None = None
    after: Callable[[bool, str | None], Awaitable[None]] | None = None
    evaluations: tuple[Evaluation, ...] = ()
    tool_args_judge: tuple[ToolArgsJudge, ...] = ()
    explain_failures: bool | None = None
    persona: str | SimulatedUser | None = None
    goal: str | None = None
    expect_failure: bool = False
    kind: Literal["python"] = "python"

    @property
    def name(self) -> str:
        """Same as `display_name` (YAML scenarios have both)."""
        return self.display_name


EXPECTED = "failed as expected"
"""How the error text of an `expect_failure` test's trial that failed (so passed) starts."""


def as_expected_failure(status: TrialStatus, error: str | None) -> tuple[TrialStatus, str | None]:
    """A trial of an `expect_failure` test: `failed` becomes `passed` (the error text kept,
    prefixed `EXPECTED`), `passed` becomes `failed`; anything else (an error, a skip) stays,
    since it says nothing about whether the test fails."""
    if status == "failed":
        return "passed", f"{EXPECTED}: {error}" if error else EXPECTED
    if status == "passed":
        return "failed", "expected to fail (expect_failure=True), but every check passed"
    return status, error


def failed_as_expected(trial: TrialResult) -> bool:
    """Whether `trial` passed because its `expect_failure` test failed: its failed checks
    and criteria are what was expected."""
    return trial.status == "passed" and (trial.error or "").startswith(EXPECTED)


class HookError(Exception):
    """A test hook (before_all, before_each, after_each, after_all) raised or did not return
    in time; the message says which."""


async def call_body(body: Callable[..., Any], *args: Any) -> None:
    """Call a sync or async function and await its result when it is awaitable.

    A sync function runs in a daemon worker thread (with the caller's context variables),
    so the event loop stays free: timeouts and Ctrl-C still work while it blocks. Cancelled
    (a timeout, Ctrl-C), the call is abandoned: the thread keeps running until the function
    returns (Python cannot stop a thread) but no longer holds up the run or the process exit.

    Raises:
        BaseException: whatever `body` raises.
    """
    if inspect.iscoroutinefunction(body):
        await body(*args)
        return
    result = await _in_thread(functools.partial(body, *args))
    if inspect.isawaitable(result):
        await result


def refuse_in_sync_body(what: str, scenario_id: str | None = None, *, sync_way: str = "") -> None:
    """Refuse `what` (a session, the run's client) in a sync test or hook's worker thread
    outside the run's event loop: its targets, HTTP client and models belong to that loop,
    and one `asyncio.run` (or any other loop) there would leave their connections to a
    closed loop. `sync_way` says how to do it from the sync function instead, if it can.

    Raises:
        UserError: called there; the message names the function and the test
            (`scenario_id`) and says to make it `async def` (or `sync_way`).
    """
    body = _SYNC_BODY.get()
    if body is None or threading.get_ident() == body.thread:
        return
    test = f"test {scenario_id!r}: " if scenario_id else ""
    advice = f"{sync_way}make it `async def {body.name}(...)` and `await` there"
    raise UserError(
        f"{test}{what} cannot be used from another event loop (asyncio.run) or thread in the "
        f"sync function {body.name}(): it belongs to the run's loop. "
        f"{advice[0].upper()}{advice[1:]}"
    )


def sync_portal() -> BlockingPortal | None:
    """The portal to the run's event loop of the sync test or hook running in this worker
    thread (`call_body`); `None` elsewhere (the loop's own thread, code outside a run)."""
    body = _SYNC_BODY.get()
    if body is None or threading.get_ident() == body.thread:
        return None
    return body.portal


def assertion_text(error: AssertionError) -> str:
    """The assertion's message, else where it failed (file:line and the source line)."""
    if str(error):
        return str(error)
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "assertion failed"
    last = frames[-1]
    return f"assertion failed at {last.filename}:{last.lineno}: {last.line or ''}".rstrip(": ")


def raised_text(error: BaseException) -> str:
    """What a test or hook raised, for messages: `ValueError: boom`, or `SystemExit(0)` for
    exceptions whose text says nothing by itself (`SystemExit`, `KeyboardInterrupt`, an
    empty message)."""
    if isinstance(error, SystemExit | KeyboardInterrupt | GeneratorExit) or not str(error):
        return f"{type(error).__name__}({', '.join(map(repr, error.args))})"
    return f"{type(error).__name__}: {error}"


async def _in_thread(call: Callable[[], T]) -> T:
    """`call()` in a daemon thread, with a portal to this loop for its blocking sessions
    (`sync_portal`); cancelling the wait abandons the thread."""
    name = getattr(call, "func", call)
    label = getattr(name, "__name__", "test")
    outcome: list[T] = []
    failure: list[BaseException] = []
    async with BlockingPortal() as portal:  # raised after it closes: never in a group
        body = _SyncBody(label, portal, threading.get_ident())
        context = contextvars.copy_context()
        context.run(_SYNC_BODY.set, body)
        await _wait_for(functools.partial(context.run, call), label, outcome, failure)
    if failure:
        raise failure[0]
    return outcome[0]


async def _wait_for(
    call: Callable[[], T], label: str, outcome: list[T], failure: list[BaseException]
) -> None:
    """`call()` in a daemon thread named after `label`, into `outcome` or `failure`;
    cancelling the wait abandons the thread."""
    done = threading.Event()

    def work() -> None:
        try:
            outcome.append(call())
        except BaseException as e:  # handed to the awaiting task
            failure.append(e)
        finally:
            done.set()

    threading.Thread(target=work, daemon=True, name=f"sparring {label}").start()
    try:  # anyio's own worker only waits, so it is freed at once when the wait is cancelled
        await anyio.to_thread.run_sync(done.wait, abandon_on_cancel=True)
    finally:
        done.set()
