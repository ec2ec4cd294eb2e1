"""Conversations in Python tests: `Session`, `Response.should`, `unfold`, `open_session`.

A `Session` is one conversation with a target. `await session.send(text)` returns a
`Response`; `await response.should("verb phrase")` asks the judge about that reply (one model
call per condition, all at once) and raises `ConditionsNotMet`, an `AssertionError`, naming
every unmet condition. `session.unfold(steps)` tests each scripted agent step that has
`should` or `checks` in a fresh conversation preloaded with the steps before it.

Inside a run (`sparring run`, `Suite.run`, the pytest plugin) sessions record into the
trial's `TrialContext` (`sparring.runner.context`); outside one, `open_session(target,
model=...)` makes a context of its own (`TrialLog`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from pydantic import TypeAdapter, ValidationError

from sparring.authoring.blocking import SYNC_WAY, BlockingSession, SyncSession
from sparring.authoring.steps import (
    AgentMessage,
    CustomerMessage,
    Step,
    parse_check,
    transcript_of,
    validation_summary,
    warn_condition,
)
from sparring.errors import ModelOutputError, RunError, TargetError, UserError
from sparring.judging.checks import run_check
from sparring.judging.should import Condition, judge_shoulds
from sparring.results import SubtestResult, Verdict, trial_status
from sparring.runner.code import refuse_in_sync_body
from sparring.runner.context import (
    ConditionsNotMet,
    ConditionsUndecided,
    SimulationSkipped,
    TrialContext,
    UserPlay,
    current_trial,
)
from sparring.scenario import Check, SimulatedScenario, unseen_tool_calls
from sparring.scenario.evaluations import SimulatedUser
from sparring.simulator import next_user_message
from sparring.target_specs import TargetSpec
from sparring.targets.attachments import read_attachment
from sparring.targets.base import EvidenceSession, Target, TargetSession
from sparring.transcript import Message, StatusEvent, ToolCall, Transcript

if TYPE_CHECKING:
    from sparring.targets.registry import AnyTargetSpec

T = TypeVar("T")
UNKNOWN_TURNS = 10
"""The turn limit a Python test's browser session plans its step budget by (12 + 5 x 10
steps, over the budget's cap of 60): a test body's length is not known in advance."""


def session_for(trial: TrialContext, **overrides: Any) -> Session:
    """A session on the test's target; `overrides` replace fields of its spec (e.g.
    `customer_id=...` for a Parlant target).

    Raises:
        UserError: no target, overrides on a target not given as a spec, or overrides
            that make the spec invalid.
    """
    if trial.target is None:
        raise UserError(
            f"test {trial.scenario_id!r} has no target; give the Suite a "
            "`target=` (a URL, a target spec, a function or a Target)"
        )
    if not overrides:
        return Session(trial.target, trial=trial)
    spec = with_overrides(trial.spec or trial.target, overrides)
    if trial.build_target is None:
        raise UserError("session overrides need a run that can build targets")
    return Session(trial.build_target(spec), trial=trial)


def with_overrides(target: Target | AnyTargetSpec, overrides: Mapping[str, Any]) -> AnyTargetSpec:
    """The target spec with `overrides` replacing its fields, validated.

    Raises:
        UserError: `target` is not a spec (a function or Target object), or the result is
            not a valid spec.
    """
    if isinstance(target, Target):
        raise UserError(
            f"session overrides {sorted(overrides)} need a target given as a spec "
            "(a mapping or a URL); this target is a Python object, so make "
            "another Suite for the other setup"
        )
    spec = target
    data = {**spec.model_dump(), **overrides}
    try:
        return TypeAdapter[Any](TargetSpec).validate_python(data)
    except ValidationError as e:
        raise UserError(
            f"session overrides {dict(overrides)!r} do not fit the "
            f"{spec.type} target: {validation_summary(e)}"
        ) from None


def _raise_unless_met(verdicts: Sequence[Verdict], replies: Mapping[str, str]) -> None:
    if any(v.status == "not_met" for v in verdicts):
        raise ConditionsNotMet(verdicts, replies)
    if any(v.status == "error" for v in verdicts):
        raise ConditionsUndecided(verdicts)


# --- session and response ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Response:
    """The agent's answer to one `Session.send`.

    Attributes:
        reply: The agent message as recorded (content, parts, tool calls, raw payload).
        turn: 1-based turn of the reply in its session (preloaded user messages count).
        transcript: The session's conversation up to and including the reply.
    """

    reply: Message
    turn: int
    transcript: Transcript
    trial: TrialContext

    def __repr__(self) -> str:
        """`Response(turn=1, message='Booked! …', tool_calls=['create_booking'])`: short,
        as pytest's failed-`assert` explanation shows it (the transcript and trial are left
        out; the message is cut at 80 characters)."""
        text = self.message if len(self.message) <= 80 else self.message[:79] + "…"
        tools = (
            f", tool_calls={[call.name for call in self.reply.tool_calls]!r}"
            if self.reply.tool_calls
            else ""
        )
        return f"Response(turn={self.turn}, message={text!r}{tools})"

    @property
    def message(self) -> str:
        """All reply text: every message the agent sent for this turn, joined by newlines."""
        return self.reply.content

    @property
    def messages(self) -> list[str]:
        """Each message the agent sent separately (a preamble, then the answer)."""
        return list(self.reply.parts) or [self.reply.content]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Tools the agent called for this reply, in order."""
        return list(self.reply.tool_calls)

    @property
    def status_events(self) -> list[StatusEvent]:
        """States the agent reported while producing the reply."""
        return list(self.reply.status_events)

    @property
    def latency_ms(self) -> float | None:
        """Reply time in milliseconds."""
        return self.reply.latency_ms

    def should(
        self, condition: str | Sequence[str], *, require_evidence: bool = True
    ) -> Coroutine[Any, Any, list[Verdict]]:
        """Assert that the reply does what each condition says: `await
        response.should("greet the customer")`.

        Each condition completes "The message should ...", e.g. "greet the customer"; each
        is judged in its own model call, all at once. Without a judge model the verdicts are
        `skipped` (nothing is raised). A `met` must quote the conversation, else it is
        `error`, unless `require_evidence=False`. A `should` never awaited makes the trial
        `error` (and outside a run, the session raises a UserError when it closes).

        Returns:
            One `should` verdict per condition, in order.

        Raises:
            ConditionsNotMet: some condition was not met (an AssertionError naming each).
            ConditionsUndecided: no condition failed but the judge could not decide some.
            UserError: no condition given.
        """
        return self.trial.track("response.should", self._should(condition, require_evidence))

    async def _should(
        self, condition: str | Sequence[str], require_evidence: bool
    ) -> list[Verdict]:
        texts = [condition] if isinstance(condition, str) else list(condition)
        if not texts:
            raise UserError(
                "should() needs at least one condition, e.g. should('greet the customer')"
            )
        for text in texts:
            warn_condition(text, stacklevel=2)
        conditions = [Condition(self.trial.next_id(f"t{self.turn}.should"), text) for text in texts]
        verdicts = await judge_shoulds(
            conditions,
            transcript=self.transcript,
            turn=self.turn,
            judge=replace(self.trial.judge, require_evidence=require_evidence),
            usage=self.trial.usage,
        )
        self.trial.recorder.add_verdicts(verdicts)
        _raise_unless_met(verdicts, {f"the agent's reply at turn {self.turn}": self.message})
        return verdicts

    def check(self, *checks: Check | Mapping[str, Any]) -> list[Verdict]:
        """Run sparring's declarative checks on this reply, as a YAML turn's `checks:` do:
        `response.check({"tool_called": {"include": ["lookup_order"]}}, {"contains":
        "10234"})`. No model is needed; each verdict is recorded in the trial.

        Returns:
            One `check` verdict per spec, in order.

        Raises:
            ConditionsNotMet: a check was not met (an AssertionError naming each, with the
                same reason a YAML check gives).
            UserError: no check given, or a spec that is not a valid check.
        """
        if not checks:
            raise UserError('check() needs at least one check, e.g. check({"contains": "x"})')
        parsed = [parse_check(c) for c in checks]
        verdicts = [
            run_check(
                c,
                self.transcript,
                check_id=self.trial.next_id(f"t{self.turn}.check"),
                turn=self.turn,
            )  # fmt: skip
            for c in parsed
        ]
        self.trial.recorder.add_verdicts(verdicts)
        _raise_unless_met(verdicts, {f"the agent's reply at turn {self.turn}": self.message})
        return verdicts


class Session:
    """One conversation with a target; use it as `async with suite.session() as session`.

    Messages, verdicts and sub-tests are recorded in the trial it belongs to.
    """

    def __init__(self, target: Target, *, trial: TrialContext) -> None:
        self.target, self.trial = target, trial
        self.transcript = Transcript()
        """The conversation so far, as the target has it (preloaded history included)."""
        self._connection: TargetSession | None = None
        self._sync: SyncSession | None = None

    async def __aenter__(self) -> Session:
        refuse_in_sync_body("a session", self.trial.scenario_id, sync_way=SYNC_WAY)
        self._connection = await self._kept(self.target.open_session())
        if isinstance(self._connection, EvidenceSession) and self.trial.evidence is None:
            self._connection.plan(max_turns=UNKNOWN_TURNS)  # a browser: its step budget
            self.trial.evidence = self._connection  # screenshots and page URL, kept
        return self

    def __enter__(self) -> BlockingSession:
        """`with suite.session() as session:` in a sync test or hook: calls that block.

        Raises:
            UserError: anywhere else (write `async with`)."""
        self._sync = SyncSession(self)
        return self._sync.__enter__()

    def __exit__(self, *exc: Any) -> bool | None:
        return self._sync.__exit__(*exc) if self._sync is not None else None

    async def __aexit__(self, *exc: object) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with anyio.CancelScope(shield=True):
                await connection.close()
        # in a run the runner checks at the end of the trial; outside one, here
        forgotten = self.trial.unawaited() if current_trial() is None else None
        if forgotten and exc[0] is None:
            raise UserError(forgotten)

    async def _kept(self, call: Awaitable[T]) -> T:
        """`await call`; a `TargetError` it raises is kept on the trial first (the trial is
        `error` even when the test body catches it)."""
        try:
            return await call
        except TargetError as e:
            self.trial.target_failed(e)
            raise

    def _open(self) -> TargetSession:
        if self._connection is None:
            raise UserError(
                "the session is not open; use it as `async with suite.session() as session:`"
            )
        return self._connection

    async def send(
        self, text: str, *, files: Sequence[str | Path] = (), audio: str | Path | None = None
    ) -> Response:
        """Send a user message, with the files at the paths `files` (relative to the current
        directory, as `open` reads them; images, PDFs, text files, up to 20 MiB each);
        return the agent's reply. `audio` is a WAV a voice target plays instead of speaking
        `text` itself (text targets ignore it).

        Raises:
            UserError: a file or the `audio` WAV is missing, unreadable or too large.
            TargetError: the target failed or did not reply in time (the trial is `error`),
                or cannot take files.
        """
        connection = self._open()
        attached = tuple(read_attachment(f) for f in files)
        wav = None if audio is None else Path(audio).absolute()
        if wav is not None and not wav.is_file():
            raise UserError(f"audio {str(audio)!r} is not a file ({wav}); give a WAV's path")
        heard = None if wav is None else str(wav)
        user = Message(role="user", content=text, files=attached, audio=heard)
        self.trial.recorder.add_message(user)
        wire = self.transcript.with_message(user)
        reply = await self._kept(self.trial.send(connection, wire, target=self.target.name))
        self.transcript = wire.with_message(reply)
        self.trial.recorder.add_message(reply)
        return Response(reply, self.transcript.user_turns, self.transcript, self.trial)

    async def simulate(
        self,
        turns: int = 1,
        *,
        persona: str | SimulatedUser | None = None,
        goal: str | None = None,
    ) -> list[Response]:
        """Let the simulated user write the next `turns` messages (fewer when it is done),
        each sent to the agent: `await session.simulate(turns=2, goal="Get a refund")`.

        `persona` and `goal` default to the Suite's (`Suite(persona=..., goal=...)`); a
        persona is a description or a reusable `SimulatedUser` (its system prompt is then the
        whole persona). The simulated user reads the conversation so far, written turns
        included.

        Returns:
            The agent's replies, one per message the simulated user wrote.

        Raises:
            SimulationSkipped: no simulated-user model; the trial is `skipped`.
            UserError: `turns` below 1, or no goal given here or to the Suite.
            RunError: the simulated user wrote no usable message (the trial is `error`).
            TargetError: the target failed.
        """
        play = self.trial.user
        chosen_goal = goal or play.goal
        if turns < 1 or not chosen_goal:
            raise UserError(
                "simulate() needs turns >= 1 and a goal: simulate(turns=2, goal='Get a "
                "refund for order 10236'), or Suite(goal=...)"
            )
        if play.model is None:
            skipped = Verdict(
                id=self.trial.next_id("simulate"),
                kind="check",
                description=f"simulate(turns={turns})",
                status="skipped",
                reason=play.skip_reason,
            )
            self.trial.recorder.add_verdicts([skipped])
            raise SimulationSkipped(skipped)
        return await self._simulate(play, turns, persona or play.persona, chosen_goal)

    async def _simulate(
        self, play: UserPlay, turns: int, persona: str | SimulatedUser | None, goal: str
    ) -> list[Response]:
        assert play.model is not None
        reusable = persona if isinstance(persona, SimulatedUser) else None
        user = SimulatedScenario(
            id=self.trial.scenario_id.replace("::", "/")[:128] or "session",
            persona=persona
            if isinstance(persona, str) and persona
            else SimulatedScenario.model_fields["persona"].default,
            simulated_user=reusable,
            goal=goal,
        )
        replies: list[Response] = []
        for n in range(1, turns + 1):
            try:
                decision = await next_user_message(
                    play.model,
                    scenario=user,
                    transcript=self.transcript,
                    may_stop=True,
                    limits=play.limits,
                    temperature=play.temperature,
                    usage=self.trial.usage,
                    scrub=play.scrub,
                )
            except ModelOutputError as e:
                raise RunError(
                    f"the simulated user wrote no usable message {n} of simulate(turns="
                    f"{turns}): {e}; a bad simulated user is not a failing agent"
                ) from None
            if decision.done:
                break
            replies.append(await self.send(decision.message))
        return replies

    async def add_events(self, history: Sequence[Step]) -> None:
        """Make `history` (e.g. `InteractionBuilder().step(...).build()`) the conversation so
        far, before the first `send`. Agent steps count as said as written.

        Raises:
            UserError: the session already has messages, or an agent step has `should` or
                `checks` (history is not tested; `unfold` tests written steps).
            TargetError: the target refused the history.
        """
        connection = self._open()
        if self.transcript.messages:
            raise UserError(
                "add_events must come before the session's first send; open a "
                "new session for another history"
            )
        for position, step in enumerate(history, start=1):
            if isinstance(step, AgentMessage) and step.asserts:
                raise UserError(
                    f"add_events step {position} (AgentMessage {step.text!r}) has `should` "
                    "or `checks`, but add_events only loads history and tests nothing; to "
                    "test written steps use `await session.unfold(steps)`, else drop them"
                )
        loaded = await self._kept(connection.preload(transcript_of(history)))
        self.transcript = loaded
        for message in loaded.messages:
            self.trial.recorder.add_message(message)

    def unfold(self, steps: Sequence[Step]) -> Coroutine[Any, Any, list[SubtestResult]]:
        """Test each `AgentMessage` with `should` or `checks` in isolation: `await
        session.unfold(steps)` (never awaited, it makes the trial `error`).

        For each such step a fresh conversation is opened, preloaded with every earlier step
        (agent steps as written; a target that can only replay, such as a2a, answers the
        earlier customer messages itself, and the sub-test's `history` says `replayed`), and
        the customer message just before it is sent live; the reply is checked and judged.
        Sub-tests run at once and are reported in order, as `unfoldN.stepK` (K: the 1-based
        position of the agent step in `steps`).

        Returns:
            The sub-tests, in order.

        Raises:
            UserError: an asserting agent step does not follow a customer message, no step
                asserts anything, or a step checks tool calls on a target that records none
                (an http or a2a target without `tool_calls_path`).
            ConditionsNotMet: some condition or check was not met (all are named).
            ConditionsUndecided: none failed, but some could not be decided.
        """
        return self.trial.track("session.unfold", self._unfold(steps))

    async def _unfold(self, steps: Sequence[Step]) -> list[SubtestResult]:
        plan = _plan(steps)
        _check_tools_seen(self.target, steps)
        prefix = self.trial.next_id("unfold")
        outcomes: dict[int, tuple[SubtestResult, list[Verdict]]] = {}

        async def one(index: int) -> None:
            outcomes[index] = await self._subtest(f"{prefix}.step{plan[index]}", steps, plan[index])

        async with anyio.create_task_group() as tg:
            for index in range(len(plan)):
                tg.start_soon(one, index)
        verdicts: list[Verdict] = []
        replies: dict[str, str] = {}
        for index in range(len(plan)):
            subtest, found = outcomes[index]
            self.trial.recorder.add_subtest(subtest)
            self.trial.recorder.add_verdicts(found)
            verdicts += found
            agent = subtest.transcript.agent_replies()
            if agent and any(v.status == "not_met" for v in found):
                replies[f"{subtest.id} reply"] = agent[-1][1].content
        _raise_unless_met(verdicts, replies)
        return [outcomes[i][0] for i in range(len(plan))]

    async def _subtest(
        self, sub_id: str, steps: Sequence[Step], position: int
    ) -> tuple[SubtestResult, list[Verdict]]:
        step, customer = steps[position - 1], steps[position - 2]
        assert isinstance(step, AgentMessage) and isinstance(customer, CustomerMessage)
        history = transcript_of(steps[: position - 2])
        name = f"{customer.text!r} -> " + "; ".join(
            [f"should {s}" for s in step.should] + [c.type for c in step.checks]
        )
        user = customer.message()
        wire = history.with_message(user)
        connection = await self.target.open_session()
        try:
            loaded = await connection.preload(history)
            wire = loaded.with_message(user)
            reply = await self.trial.send(connection, wire, target=self.target.name)
        except TargetError as e:
            reason = f"sub-test {sub_id} could not run: {e}"
            verdicts = _unrun(sub_id, step, reason)
            return SubtestResult(
                id=sub_id, name=name, status="error", transcript=wire, error=str(e)
            ), verdicts
        finally:
            with anyio.CancelScope(shield=True):
                await connection.close()
        replayed = loaded != history  # a transport that can only replay (a2a)
        transcript = wire.with_message(reply)
        turn = transcript.user_turns
        verdicts = [
            run_check(c, transcript, check_id=f"{sub_id}.check{k}", turn=turn)
            for k, c in enumerate(step.checks, start=1)
        ]
        verdicts += await judge_shoulds(
            [Condition(f"{sub_id}.should{k}", s) for k, s in enumerate(step.should, start=1)],
            transcript=transcript,
            turn=turn,
            judge=self.trial.judge,
            usage=self.trial.usage,
        )
        return SubtestResult(
            id=sub_id,
            name=name,
            status=trial_status(verdicts),
            transcript=transcript,
            history="replayed" if replayed else "as_written",
        ), verdicts


def _plan(steps: Sequence[Step]) -> list[int]:
    """1-based positions of the agent steps `unfold` tests.

    Raises:
        UserError: such a step does not follow a customer message, or there is none.
    """
    positions: list[int] = []
    for position, step in enumerate(steps, start=1):
        if not isinstance(step, CustomerMessage | AgentMessage):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"unfold step {position} is a {type(step).__name__}; give "
                "CustomerMessage and AgentMessage steps"
            )
        if isinstance(step, AgentMessage) and step.asserts:
            if position < 2 or not isinstance(steps[position - 2], CustomerMessage):
                raise UserError(
                    f"unfold step {position} (AgentMessage {step.text!r}) has "
                    "assertions but does not follow a CustomerMessage: the live "
                    "reply being tested answers the customer message before it"
                )
            positions.append(position)
    if not positions:
        raise UserError(
            "unfold has nothing to test: give at least one AgentMessage `should=` or `checks=`"
        )
    return positions


def _check_tools_seen(target: Target, steps: Sequence[Step]) -> None:
    """The rule test files follow at load time (`unseen_tool_calls`), for `unfold`.

    Raises:
        UserError: a step checks tool calls, but `target` records none.
    """
    spec: object = getattr(target, "spec", None)  # the spec a built http / a2a target keeps
    for position, step in enumerate(steps, start=1):
        if isinstance(step, AgentMessage) and (why := unseen_tool_calls(spec, step.checks)):
            raise UserError(
                f"unfold step {position} (AgentMessage {step.text!r}) checks tool calls, but {why}"
            )


def _unrun(sub_id: str, step: AgentMessage, reason: str) -> list[Verdict]:
    """`error` verdicts for every assertion of a sub-test that could not run."""
    from sparring.judging.checks import describe

    return [
        Verdict(
            id=f"{sub_id}.check{k}",
            kind="check",
            description=describe(c),
            status="error",
            reason=reason,
        )
        for k, c in enumerate(step.checks, 1)
    ] + [
        Verdict(
            id=f"{sub_id}.should{k}",
            kind="should",
            description=f"should {s}",
            status="error",
            reason=reason,
        )
        for k, s in enumerate(step.should, 1)
    ]
