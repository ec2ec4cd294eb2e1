"""The platform's statuses as the seed gives them: Done for a suite with no agent
evaluation attached, Evaluations passed never Pending once a conversation ended, the
interrupted run's reason counting only conversations that ended."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sparring.events import Event, RunStarted, TrialFinished
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult, TrialResult
from sparring.runner import RunSettings, run_scenarios
from sparring.store import suite_status, suites
from sparring.store.database import Store, open_store
from sparring.store.suites import SuiteCase
from sparring.store.writer import RunWriter
from sparring.targets.scripted import ScriptedTarget
from tests.test_platform_store import AGENT, REPLY, Models, published
from tests.test_store import _record  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/statuses.db")
    yield opened
    opened.close()


async def run_suite(store: Store, suite_id: int, reply: str = REPLY) -> RunResult:
    """Run suite `suite_id` as the dashboard does, the agent answering `reply` each turn."""
    resolved = suites.resolve_suite(store, suite_id)
    claim = suites.start_suite_run(store, resolved, author="ann")
    writer = RunWriter(store)

    def observe(event: Event) -> None:
        if isinstance(event, RunStarted) and event.run is not None:
            writer.start(event.run.model_copy(deep=True), record=_record())
            suites.link_suite_run(store, claim, event.run.run_id)
        elif isinstance(event, TrialFinished):
            writer.add(event.result)

    models = Models()
    said = iter(range(1000))

    def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        if "done_reason" in (schema or {}).get("properties", {}) and reply != REPLY:
            return {"message": f"Still late, day {next(said)}?", "done": False, "done_reason": None}
        return models.answer(messages, schema)

    model = ScriptedModel(handler=answer)
    result = await run_scenarios(
        resolved.scenarios,
        targets=lambda _s: ScriptedTarget([reply] * 60),
        user_model=model,
        judge_model=model,
        settings=RunSettings(parallel=1),
        observer=observe,
    )
    writer.finish(result, exit_code=result.exit_code)
    return result


def plain_suite(store: Store, *, max_turns: int | None = None) -> int:
    """A suite whose simulated user has no agent evaluation attached: its id."""
    user_id = published(store, "simulated_user", "Plain", {"description": "wants help"})
    agent_id = published(store, "agent", "Bot", AGENT)
    case = SuiteCase(agent_id=agent_id, user_id=user_id, max_turns=max_turns)
    return suites.save_suite(store, "S", [case]).id


@pytest.mark.anyio
async def test_without_evaluations_a_natural_end_is_done_not_passed(store: Store) -> None:
    suite_id = plain_suite(store)
    result = await run_suite(store, suite_id)
    summary = suite_status.suite_summary(store, suite_id)
    assert (summary.status, summary.reason) == ("done", None)
    (case,) = summary.runs[0].cases
    (trial,) = result.scenarios[0].trials
    assert trial.status == "passed"  # its one check, that it ended naturally, was met
    assert suite_status.conversation_status(trial, case) == ("done", None)
    assert suite_status.conversation_status(trial) == ("passed", None)  # a file's own check


@pytest.mark.anyio
async def test_without_evaluations_reaching_max_turns_is_failed(store: Store) -> None:
    suite_id = plain_suite(store, max_turns=2)
    await run_suite(store, suite_id, reply="Please hold.")
    summary = suite_status.suite_summary(store, suite_id)
    assert summary.status == "failed"
    assert summary.reason is not None
    assert summary.reason.startswith("the conversation reached Max turns without ending naturally")


def test_a_saved_suites_timeout_reason_names_the_advanced_setting() -> None:
    data = {"scenario_id": "case-1", "trial": 1, "status": "timed_out", "end_reason": "timeout"}
    error = "conversation timed out after 5 s; raise the scenario's `timeout_s` if it is just slow"
    trial = TrialResult.model_validate(data | {"error": error})
    case = suites.ResolvedCase(
        number=1,
        scenario_id="case-1",
        agent=suites.RevisionChoice(asset_id=1, name="A", number=1, state="published"),
        user=suites.RevisionChoice(asset_id=2, name="U", number=1, state="published"),
    )
    _, reason = suite_status.conversation_status(trial, case)
    assert reason is not None and "Advanced settings -> Timeout" in reason
    assert "timeout_s" in (suite_status.conversation_status(trial)[1] or "")
