"""Playing a script: written user messages, written agent messages put into the history,
and `simulate: N` stretches where the simulated user writes the messages; checks after any
step, `should`s collected for the trial's one judge call.

Turn numbers count user messages (DESIGN.md), so an `agent:` step does not start a turn and
a `simulate: 3` step may add up to three. A step's checks and `should`s look at the reply
to the last user message sent so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sparring.errors import ModelOutputError
from sparring.judging.checks import run_check
from sparring.judging.judge import ShouldItem
from sparring.models.base import Model
from sparring.results import Usage, Verdict
from sparring.runner.settings import RunSettings
from sparring.scenario import (
    Check,
    ScriptedScenario,
    ScriptedTurn,
    SimulatedScenario,
    SingleTurnScenario,
)
from sparring.simulator import next_user_message
from sparring.targets.base import TargetSession
from sparring.transcript import Message, Transcript


class SimulatorFailed(Exception):
    """The simulated user wrote no usable message where one was needed: the trial is
    `invalid` (a bad simulated user is not a failing agent)."""


class _Context(Protocol):
    user_model: Model | None
    settings: RunSettings

    @property
    def scrub(self) -> object: ...


class _ScriptState(Protocol):
    """What playing a script needs of a running trial (`runner.trial`'s trial state)."""

    @property
    def transcript(self) -> Transcript: ...
    @property
    def wire(self) -> Transcript: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def ctx(self) -> _Context: ...
    def add_message(self, message: Message) -> None: ...
    def add_verdicts(self, verdicts: Sequence[Verdict]) -> None: ...
    async def exchange(
        self,
        session: TargetSession,
        text: str,
        *,
        files: Sequence[str] = (),
        audio: str | None = None,
    ) -> Message: ...


def script_steps(scenario: ScriptedScenario | SingleTurnScenario) -> list[ScriptedTurn]:
    """The steps of a scripted scenario; a single-turn scenario's prompt as one step."""
    if isinstance(scenario, ScriptedScenario):
        return scenario.turns
    return [ScriptedTurn(user=scenario.prompt, should=scenario.should, files=scenario.files)]


async def play_script(
    state: _ScriptState, scenario: ScriptedScenario | SingleTurnScenario, session: TargetSession
) -> list[ShouldItem]:
    """Play every step in order; check each step's reply as it arrives; return the
    `should`s (ids `t{turn}.should{i}`) for the judge.

    Raises:
        SimulatorFailed: a `simulate:` step's simulated user wrote nothing usable.
        TargetError, TargetTimeout, ModelError: from the target or the simulated user.
    """
    shoulds: list[ShouldItem] = []
    for step in script_steps(scenario):
        if step.agent is not None:
            state.add_message(Message(role="agent", content=step.agent))
            continue
        if step.simulate is not None:
            assert isinstance(scenario, ScriptedScenario)
            await _simulate(state, scenario, session, step.simulate)
        else:
            assert step.user is not None
            await state.exchange(session, step.user, files=step.files, audio=step.audio)
        turn = state.transcript.user_turns
        state.add_verdicts(_checks(step.checks, state.wire, turn))
        shoulds += [
            ShouldItem(id=f"t{turn}.should{i}", turn=turn, text=text)
            for i, text in enumerate(step.should, start=1)
        ]
    return shoulds


def _checks(checks: list[Check], wire: Transcript, turn: int) -> list[Verdict]:
    if turn == 0:  # a simulated user done before writing anything, first in the script
        return [
            Verdict(
                id=f"t0.check{i}",
                kind="check",
                description=check.type,
                status="error",
                reason="no user message was sent before this check, so there is no reply",
            )
            for i, check in enumerate(checks, start=1)
        ]
    return [
        run_check(c, wire, check_id=f"t{turn}.check{i}", turn=turn)
        for i, c in enumerate(checks, start=1)
    ]


async def _simulate(
    state: _ScriptState, scenario: ScriptedScenario, session: TargetSession, count: int
) -> None:
    """Up to `count` messages written by the simulated user, each sent to the target."""
    model = state.ctx.user_model
    assert model is not None  # the trial is skipped without one (`needs_user_model`)
    user = simulated_user(scenario)
    for n in range(1, count + 1):
        try:
            decision = await next_user_message(
                model,
                scenario=user,
                transcript=state.transcript,
                may_stop=True,
                limits=state.ctx.settings.limits,
                temperature=state.ctx.settings.user_temperature,
                usage=state.usage,
                scrub=state.ctx.scrub,  # pyright: ignore[reportArgumentType]
            )
        except ModelOutputError as e:
            raise SimulatorFailed(
                f"the simulated user wrote no usable message for message {n} of a "
                f"`simulate: {count}` step: {e}"
            ) from None
        if decision.done:
            return
        await state.exchange(session, decision.message)


def simulated_user(scenario: ScriptedScenario) -> SimulatedScenario:
    """The simulated user of a script's `simulate:` steps: its persona and goal."""
    return SimulatedScenario(
        id=scenario.id,
        persona=scenario.persona or SimulatedScenario.model_fields["persona"].default,
        simulated_user=scenario.simulated_user,
        goal=scenario.goal or scenario.description,
        description=scenario.description,
        max_turns=50,
    )


def needs_user_model(scenario: object) -> bool:
    """Whether a trial of `scenario` cannot run without the simulated-user model."""
    if isinstance(scenario, SimulatedScenario):
        return True
    return isinstance(scenario, ScriptedScenario) and scenario.simulates
