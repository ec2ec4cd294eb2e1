"""`StoredUsers`: the simulated users of a stored run played again, word for word
(`sparring run --replay-users RUN`): a new agent version meets the very same user
messages, trial by trial, and no simulator model is called.

It takes the simulated user's model's place: trial k of scenario S is answered with the
user messages of the k-th stored conversation of S, in order (which turn a trial is at is
counted from the user messages it sent, `observe`), and once they run out the user stops
as the stored one did (`goal_achieved` or `user_gave_up`). A stored conversation that ended
otherwise (the agent failed, `max_turns`, a timeout) has no decision to repeat: a trial that
asks for more is `error`, saying so. Criteria are judged as usual.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparring.errors import ModelError, UserError
from sparring.events import Event, MessageAdded, Observer
from sparring.models.base import ChatMessage, Completion
from sparring.results import RunResult, ScenarioResult
from sparring.runner.replay_cassettes import TrialKey, current_trial
from sparring.scenario import AnyScenario, ScriptedScenario, SimulatedScenario

_STOPS = ("goal_achieved", "user_gave_up")
"""End reasons that are the simulated user's own decision to stop."""


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """The user side of one stored trial: its user messages in order (masked as stored),
    and why the conversation ended."""

    messages: tuple[str, ...]
    end_reason: str


class StoredUsers:
    """A Model (sparring.models.base) playing every simulated user from `conversations`
    (scenario id -> its stored conversations, in trial order); see the module.

    Args:
        run_id: The stored run; the model is named `stored:<run_id>` in reports.
        conversations: Per scenario id, one entry per trial to play.
        kinds: The kind of every scenario of the run, by id.
    """

    sends_seed = False

    def __init__(
        self,
        run_id: str,
        conversations: Mapping[str, Sequence[StoredConversation]],
        *,
        kinds: Mapping[str, str],
    ) -> None:
        self.name = f"stored:{run_id}"
        self.run_id = run_id
        self.conversations = dict(conversations)
        self.kinds = dict(kinds)
        self._sent: Counter[TrialKey] = Counter()

    @classmethod
    def from_run(cls, run: RunResult) -> StoredUsers:
        """The simulated users of `run`: each simulated scenario's trials that sent at
        least one user message (those skipped or broken off before one are left out)."""
        conversations = {
            s.scenario_id: _conversations(s) for s in run.scenarios if s.kind == "simulated"
        }
        kinds = {s.scenario_id: s.kind for s in run.scenarios}
        return cls(run.run_id, conversations, kinds=kinds)

    def observe(self, observer: Observer) -> Observer:
        """`observer`, after counting the user messages each trial sent."""

        def counted(event: Event) -> None:
            if isinstance(event, MessageAdded) and event.message.role == "user":
                self._sent[TrialKey(event.scenario_id, event.trial)] += 1
            observer(event)

        return counted

    def scenarios(self, scenarios: Sequence[AnyScenario]) -> list[AnyScenario]:
        """`scenarios` ready to play: each simulated one with a trial per stored
        conversation and no `opening_message` (the stored first message is sent instead);
        the others (scripted, single-turn) as they are.

        Raises:
            UserError: a simulated scenario the run does not hold, or holds as another
                kind or with no conversation; a scenario simulated in the run and not now;
                or no simulated scenario to play at all.
        """
        simulated = [s for s in scenarios if isinstance(s, SimulatedScenario)]
        self._check_kinds(scenarios)
        missing = [s.id for s in simulated if s.id not in self.kinds]
        if missing:
            held = ", ".join(sorted(self.conversations)) or "none"
            names = ", ".join(missing)
            which = f"scenario {names} is" if len(missing) == 1 else f"scenarios {names} are"
            raise UserError(
                f"--replay-users {self.run_id}: {which} not in that "
                f"run (its simulated scenarios: {held}); choose them with --pattern or --tag"
            )
        if not simulated:
            raise UserError(
                f"--replay-users {self.run_id}: none of the scenarios to run is simulated, so "
                "there is no simulated user to replay; choose simulated ones"
            )
        return [self._ready(s) if isinstance(s, SimulatedScenario) else s for s in scenarios]

    def _check_kinds(self, scenarios: Sequence[AnyScenario]) -> None:
        """Refuse a scenario that is simulated in the run or now, not in both, and a script
        with `simulate:` steps.

        Raises:
            UserError: naming the scenario (and both kinds).
        """
        for s in scenarios:
            if isinstance(s, ScriptedScenario) and any(t.simulate for t in s.turns):
                raise UserError(
                    f"--replay-users {self.run_id}: scenario {s.id} has `simulate:` steps, "
                    "whose simulated user is not replayed; leave it out with --pattern"
                )
            was = self.kinds.get(s.id)
            if was is not None and (was == "simulated") != (s.kind == "simulated"):
                raise UserError(
                    f"--replay-users {self.run_id}: scenario {s.id} was {was} in that run and "
                    f"is {s.kind} now; only simulated scenarios have simulated users to "
                    "replay (leave it out with --pattern)"
                )

    def _ready(self, scenario: SimulatedScenario) -> SimulatedScenario:
        stored = self.conversations[scenario.id]
        if not stored:
            raise UserError(
                f"--replay-users {self.run_id}: scenario {scenario.id} has no stored "
                "conversation there (its trials were skipped or sent nothing)"
            )
        return scenario.model_copy(update={"trials": len(stored), "opening_message": None})

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """The asking trial's next stored user message, or its stop (see the module).

        Raises:
            ModelError: not asked from a trial, a trial with no stored conversation, or a
                stored conversation that has no next message and no decision to stop.
        """
        at = current_trial()
        if at is None:
            raise ModelError("replay-users: a simulated user was asked outside any trial")
        conversation = self._conversation(at)
        sent = self._sent[at]
        if sent < len(conversation.messages):
            answer: dict[str, Any] = {
                "message": conversation.messages[sent],
                "done": False,
                "done_reason": None,
            }
        elif conversation.end_reason in _STOPS:
            answer = {"message": "", "done": True, "done_reason": conversation.end_reason}
        else:
            raise ModelError(
                f"replay-users: the stored conversation of {at} in run {self.run_id} ended "
                f"with {conversation.end_reason} after {sent} user message"
                f"{'s' * (sent != 1)}, so it has no message for turn {sent + 1}",
                requests=0,
            )
        return Completion(text=json.dumps(answer), input_tokens=0, output_tokens=0, requests=0)

    def _conversation(self, at: TrialKey) -> StoredConversation:
        """The stored conversation trial `at` plays.

        Raises:
            ModelError: the run holds no simulated scenario of that id (a script's
                `simulate:` steps or a Python test playing a user) or fewer trials of it.
        """
        if at.scenario not in self.conversations:
            raise ModelError(
                f"replay-users: run {self.run_id} holds no simulated user of scenario "
                f"{at.scenario!r}: only simulated scenarios' users are replayed, not a "
                "script's `simulate:` steps or a Python test's; leave it out with --pattern",
                requests=0,
            )
        stored = self.conversations[at.scenario]
        if at.trial > len(stored):
            raise ModelError(
                f"replay-users: run {self.run_id} holds {len(stored)} "
                f"conversation{'s' * (len(stored) != 1)} of scenario {at.scenario!r}, none for "
                f"trial {at.trial}",
                requests=0,
            )
        return stored[at.trial - 1]

    async def aclose(self) -> None:
        """Nothing to release."""


def _conversations(scenario: ScenarioResult) -> list[StoredConversation]:
    out: list[StoredConversation] = []
    for trial in sorted(scenario.trials, key=lambda t: t.trial):
        said = tuple(m.content for m in trial.transcript.messages if m.role == "user")
        if said:
            out.append(StoredConversation(said, trial.end_reason))
    return out
