"""What a Python test's trial is, as the runner gives it to the test body.

The runner gives each trial of a Python test a `TrialContext` (also `current_trial()`):
sessions opened in the body (`sparring.authoring`) record their messages, verdicts and
sub-tests into it and use its judge model, limits, timeouts and secret scrubbing. Outside a
run, `sparring.api.open_session` makes a context of its own with a `TrialLog`.
`ConditionsNotMet` / `ConditionsUndecided` are how an assertion tells the runner that a
trial failed or could not be decided.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from sparring.errors import RunError, TargetError, TargetTimeout
from sparring.judging.should import NO_MODEL_HINT, JudgeSettings
from sparring.models.base import Model
from sparring.prompts import DEFAULT_LIMITS, Limits
from sparring.results import SubtestResult, Usage, Verdict
from sparring.scenario.evaluations import SimulatedUser
from sparring.targets.base import EvidenceSession, Target, TargetSession
from sparring.transcript import Message, Transcript, sanitized

if TYPE_CHECKING:
    from sparring.targets.registry import AnyTargetSpec

REPLY_TIMEOUT_HINT = (
    "raise the Suite's `response_timeout` (or --reply-timeout) if the agent is just slow"
)
_REPLY_CHARS = 600
T = TypeVar("T")


# --- the trial a session records into ---------------------------------------------------


class Recorder(Protocol):
    """Where a trial keeps what its sessions did (the runner's trial state, or `TrialLog`)."""

    def add_message(self, message: Message, /) -> None:
        """A user or agent message of the trial's main conversation."""
        ...

    def add_verdicts(self, verdicts: Sequence[Verdict], /) -> None:
        """Verdicts decided in the trial."""
        ...

    def add_subtest(self, subtest: SubtestResult, /) -> None:
        """A finished sub-test (`unfold` step)."""
        ...


def masked_verdict(verdict: Verdict, scrub: Callable[[str], str] | None) -> Verdict:
    """`verdict` with secrets masked in its description, reason and evidence (checks quote
    what the agent really said, which may hold a secret it echoed)."""
    if scrub is None:
        return verdict
    return verdict.model_copy(
        update={
            "description": scrub(verdict.description),
            "reason": scrub(verdict.reason),
            "evidence": tuple(scrub(e) for e in verdict.evidence),
        }
    )


@dataclass
class TrialLog:
    """A `Recorder` that keeps everything in memory, for sessions outside a run.

    Messages (of `transcript` and of sub-tests) are kept as a run keeps them: with every
    secret value `scrub` knows masked.
    """

    transcript: Transcript = field(default_factory=Transcript)
    verdicts: list[Verdict] = field(default_factory=list[Verdict])
    subtests: list[SubtestResult] = field(default_factory=list[SubtestResult])
    scrub: Callable[[str], str] | None = None

    def add_message(self, message: Message, /) -> None:
        """Append to `transcript`, secrets masked."""
        self.transcript = self.transcript.with_message(self._kept(message))

    def add_verdicts(self, verdicts: Sequence[Verdict], /) -> None:
        """Append to `verdicts`, secrets masked."""
        self.verdicts.extend(masked_verdict(v, self.scrub) for v in verdicts)

    def add_subtest(self, subtest: SubtestResult, /) -> None:
        """Append to `subtests`, its transcript's secrets masked."""
        messages = tuple(self._kept(m) for m in subtest.transcript.messages)
        self.subtests.append(
            subtest.model_copy(update={"transcript": Transcript(messages=messages)})
        )

    def _kept(self, message: Message) -> Message:
        return sanitized(message, self.scrub)


@dataclass(frozen=True, kw_only=True)
class UserPlay:
    """How `Session.simulate` plays the simulated user: the model (`None`: no model, the
    simulation is skipped with `skip_reason`), the default persona and goal (the Suite's),
    what the user sees of the conversation, its temperature and the secret scrubber."""

    model: Model | None = None
    persona: str | SimulatedUser | None = None
    goal: str | None = None
    limits: Limits = DEFAULT_LIMITS
    temperature: float = 0.7
    scrub: Callable[[str], str] | None = None
    skip_reason: str = NO_MODEL_HINT


@dataclass(kw_only=True)
class TrialContext:
    """One trial of a Python test, as its body sees it (also `current_trial()`).

    Attributes:
        scenario_id: The test's id; `trial` its 1-based trial number.
        target: The test's target (`None` when it has none: sessions then need one given).
        spec: The target's spec, when it was given as one (session overrides apply to it).
        build_target: Builds a target from a spec (the run's target pool).
        judge: Model and settings for `should`.
        reply_timeout_s: Limit for one reply, in seconds (`None`: the target's own).
        usage: Model calls and tokens of the judge are added here.
        recorder: Where messages, verdicts and sub-tests go.
        user: The simulated user of `Session.simulate`.
        evidence: The trial's first session with evidence (`Session` sets it).
    """

    scenario_id: str
    trial: int = 1
    target: Target | None
    spec: AnyTargetSpec | None = None
    build_target: Callable[[AnyTargetSpec], Target] | None = None
    judge: JudgeSettings
    reply_timeout_s: float | None = None
    usage: Usage = field(default_factory=Usage)
    recorder: Recorder = field(default_factory=TrialLog)
    user: UserPlay = field(default_factory=UserPlay)
    evidence: EvidenceSession | None = None
    """The first session of the trial that keeps evidence (a browser's screenshots and
    page URL), kept with the trial's result."""
    target_failure: TargetError | None = None
    """The trial's first target failure (`target_failed`): the trial is `error` with it
    even when the test body caught it, as an error is never a pass."""
    _ids: Counter[str] = field(default_factory=Counter[str])
    _asserts: list[tuple[str, Coroutine[Any, Any, Any]]] = field(
        default_factory=list[tuple[str, Coroutine[Any, Any, Any]]]
    )

    def __repr__(self) -> str:
        """`TrialContext(scenario_id='t.py::test_books', trial=2)`: short, as pytest's
        failed-`assert` explanation shows it."""
        return f"TrialContext(scenario_id={self.scenario_id!r}, trial={self.trial})"

    def next_id(self, prefix: str) -> str:
        """`prefix` numbered from 1, unique in this trial: `t1.should` -> `t1.should2`."""
        self._ids[prefix] += 1
        return f"{prefix}{self._ids[prefix]}"

    def track(self, call: str, assertion: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """Keep `assertion` (the coroutine of `call`, e.g. `response.should`) so that
        `unawaited()` can tell when it was never awaited; returns it unchanged."""
        self._asserts.append((call, assertion))
        return assertion

    def unawaited(self) -> str | None:
        """Why the trial cannot pass when an assertion was never awaited (`None` when all
        were), e.g. "response.should(...) was not awaited; write `await
        response.should(...)`". Closes such coroutines (no RuntimeWarning follows) and
        forgets every tracked one."""
        forgotten = [
            call
            for call, c in self._asserts
            if inspect.getcoroutinestate(c) == inspect.CORO_CREATED
        ]
        for _, assertion in self._asserts:
            assertion.close()
        self._asserts.clear()
        if not forgotten:
            return None
        count = f" ({len(forgotten)} times)" if len(forgotten) > 1 else ""
        return (
            f"{forgotten[0]}(...) was not awaited{count}, so it checked nothing; write "
            f"`await {forgotten[0]}(...)`"
        )

    def target_failed(self, error: TargetError) -> None:
        """Keep `error` as the trial's `target_failure`, unless it already has one."""
        self.target_failure = self.target_failure or error

    async def send(self, connection: TargetSession, wire: Transcript, *, target: str) -> Message:
        """Send the last message of `wire` on `connection` within `reply_timeout_s`.

        Raises:
            TargetError: the target failed; `TargetTimeout` when it was too slow.
        """
        if self.reply_timeout_s is None:
            return await connection.send(wire)
        try:
            with anyio.fail_after(self.reply_timeout_s):
                return await connection.send(wire)
        except TimeoutError:
            raise TargetTimeout(
                target=target, timeout_seconds=self.reply_timeout_s, hint=REPLY_TIMEOUT_HINT
            ) from None


CURRENT_TRIAL: ContextVar[TrialContext | None] = ContextVar("sparring_trial", default=None)


def current_trial() -> TrialContext | None:
    """The trial a Python test body is running in, or `None` outside a run."""
    return CURRENT_TRIAL.get()


# --- failures ------------------------------------------------------------------------------


class ConditionsNotMet(AssertionError):
    """Some `should` conditions or checks were not met; the message names each, with the
    judge's reason and the reply it was about.

    Attributes:
        verdicts: Every verdict of the assertion (met ones too).
    """

    def __init__(self, verdicts: Sequence[Verdict], replies: Mapping[str, str]) -> None:
        self.verdicts = list(verdicts)
        unmet = [v for v in verdicts if v.status == "not_met"]
        lines = [
            f"{len(unmet)} of {len(verdicts)} condition{'s' if len(verdicts) != 1 else ''} not met:"
        ]
        for v in unmet:
            lines.append(f"  - {v.id} {v.description}: {v.reason}")
        for where, reply in replies.items():
            lines.append(f"{where}: {reply[:_REPLY_CHARS]!r}")
        super().__init__("\n".join(lines))


class ConditionsUndecided(RunError):
    """The judge could not decide some conditions (its answer was unreadable, or the model
    failed): the trial is `error`, never passed. Its verdicts decide the trial's status
    (`SimulationSkipped` carries a `skipped` one)."""

    def __init__(self, verdicts: Sequence[Verdict]) -> None:
        self.verdicts = list(verdicts)
        undecided = "; ".join(
            f"{v.id} {v.description}: {v.reason}" for v in verdicts if v.status == "error"
        )
        super().__init__(f"could not be decided: {undecided}")


class SimulationSkipped(ConditionsUndecided):
    """`Session.simulate` without a simulated-user model: its `skipped` verdict makes the
    trial `skipped` (the test body stops there, as pytest's skip does)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__([verdict])
        Exception.__init__(self, f"skipped: {verdict.reason}")
