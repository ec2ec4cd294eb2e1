"""Runs kept in a store for the dashboard tests, written the way `sparring run` writes them
(`RunWriter`), under given paths and start times; `sample_run` makes one by hand."""

from __future__ import annotations

import os
import socket

from sparring.results import (
    InsightResult,
    ReplyNote,
    RunResult,
    ScenarioResult,
    TrialResult,
    Verdict,
)
from sparring.store.database import Store
from sparring.store.provenance import Provenance
from sparring.store.writer import RunRecord, RunWriter
from sparring.transcript import Message, Transcript


def keep_run(
    store: Store, result: RunResult, *, paths: list[str], run_id: str, started_at: str
) -> RunResult:
    """Keep `result` in `store` as finished run `run_id` of `paths`, started at
    `started_at` (ISO 8601); returns the result as kept."""
    kept = result.model_copy(update={"run_id": run_id, "started_at": started_at}, deep=True)
    planned = kept.model_copy(deep=True)
    for scenario in planned.scenarios:
        scenario.trials = []
    provenance = Provenance(
        git_commit=None,
        git_branch="main",
        user_name="tester",
        host=socket.gethostname(),
        pid=os.getpid(),
    )
    record = RunRecord(paths=paths, invocation={"paths": paths}, settings={}, provenance=provenance)
    writer = RunWriter(store)
    writer.start(planned, record=record)
    for scenario in kept.scenarios:
        for trial in scenario.trials:
            writer.add(trial)
    writer.finish(kept, exit_code=kept.exit_code)
    assert writer.errors == []
    return kept


APOLOGY = "I'm sorry your parcel is late."
CARD_REQUEST = "Please type your full card number."


def _transcript(reply: str) -> Transcript:
    return Transcript(
        messages=(
            Message(role="user", content="My order 10234 is two weeks late."),
            Message(role="agent", content=reply, latency_ms=420.0),
            Message(role="user", content="I want a refund."),
            Message(role="agent", content="Your refund is on its way.", latency_ms=380.0),
        )
    )


def _insight(passed: bool) -> InsightResult:
    return InsightResult(
        evaluation="support",
        insight="resolved",
        type="boolean",
        status="ok",
        value=passed,
        reasoning="The user offered a refund." if passed else "The user asked for the card.",
        evidence=("Your refund is on its way.",),
        turns=(2,),
        passed=passed,
        score=1.0 if passed else 0.0,
    )


def _trial(number: int, passed: bool) -> TrialResult:
    apology = Verdict(
        id="criterion1",
        kind="criterion",
        description="Apologises for the delay",
        status="met" if passed else "not_met",
        reason="It apologised." if passed else "It never apologised.",
        evidence=(APOLOGY,) if passed else (),
        turns=(1,),
    )
    return TrialResult(
        scenario_id="refund-delay",
        trial=number,
        status="passed" if passed else "failed",
        end_reason="goal_achieved",
        transcript=_transcript(APOLOGY if passed else CARD_REQUEST),
        verdicts=[apology],
        reply_notes=[ReplyNote(turn=1, note="polite" if passed else "asks for card", score=0.9)],
        duration_ms=2_500.0,
        insights=[_insight(passed)],
        score=1.0 if passed else 0.0,
        evaluations_passed="yes" if passed else "no",
    )


def sample_run(*, passes: tuple[bool, ...] = (True, False)) -> RunResult:
    """A run of one simulated scenario `refund-delay` (one trial per entry of `passes`,
    passed or failed on criterion `criterion1` citing turn 1 and insight
    `support.resolved`) and a timed-out one, `slow-agent`."""
    refund = ScenarioResult(
        scenario_id="refund-delay",
        name="Refund for a late order",
        kind="simulated",
        threshold=1.0,
        planned_trials=len(passes),
        trials=[_trial(i + 1, p) for i, p in enumerate(passes)],
    )
    slow = ScenarioResult(
        scenario_id="slow-agent",
        name="Slow agent",
        kind="simulated",
        threshold=1.0,
        planned_trials=1,
        trials=[
            TrialResult(
                scenario_id="slow-agent",
                trial=1,
                status="timed_out",
                end_reason="timeout",
                error="the conversation ran longer than 600 s",
                duration_ms=600_000.0,
            )
        ],
    )
    return RunResult(sparring_version="0", run_id="x", started_at="x", scenarios=[refund, slow])
