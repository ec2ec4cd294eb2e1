"""What a trial keeps from a session with evidence (a browser target's screenshots and page
URL), and the step budget such a session is given (see `targets.base.EvidenceSession`);
`StepBudgetSpent` is what a session raises when the next turn does not fit in it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparring.errors import StepBudgetSpent
from sparring.runner.script import script_steps
from sparring.scenario import ScriptedScenario, SingleTurnScenario
from sparring.targets.base import EvidenceSession, TargetSession
from sparring.transcript import Transcript

__all__ = ["StepBudgetSpent", "kept", "planned", "unsent"]


def planned(session: TargetSession, scenario: Any) -> EvidenceSession | None:
    """`session` told the turn limit of `scenario` (its `max_turns`, or the user messages
    its script sends at most) when it keeps evidence; `None` for any other session."""
    if not isinstance(session, EvidenceSession):
        return None
    if isinstance(scenario, ScriptedScenario | SingleTurnScenario):
        session.plan(max_turns=sum(step.user_messages for step in script_steps(scenario)))
    else:
        session.plan(max_turns=scenario.max_turns)
    return session


def kept(
    evidence: EvidenceSession | None, *, failed: bool, scrub: Callable[[str], str] | None
) -> dict[str, Any]:
    """The `artifacts` and `page_url` fields of the trial's result, their URLs masked with
    `scrub` like everything else kept."""
    artifacts, page_url = evidence.evidence(failed=failed) if evidence else ([], None)
    if scrub is not None:
        page_url = None if page_url is None else scrub(page_url)
        artifacts = [a.model_copy(update={"url": a.url and scrub(a.url)}) for a in artifacts]
    return {"artifacts": artifacts, "page_url": page_url}


def unsent(transcript: Transcript) -> Transcript:
    """`transcript` without its last message: the user message a spent step budget kept
    from being sent."""
    return Transcript(messages=transcript.messages[:-1])
