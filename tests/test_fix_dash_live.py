"""What a suite's conversations show while and after they run: Evaluating while the judge
call of an ended conversation is in flight, and Evaluations passed Pending only while a
conversation can still be scored (a dash once it ended unjudged)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparring.dashboard.runs import SuiteRunner
from sparring.dashboard.state import Dashboard
from sparring.dashboard.views import conversation_rows
from sparring.events import JudgeStarted
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.runner import RunSettings
from sparring.store.database import Store, open_store
from sparring.store.recorder import renumbered
from tests.support.dashboard_platform import PlatformModels, dashboard_client
from tests.test_dashboard import demo, finished, the_three

__all__ = ["demo"]  # the demo agent's server, a fixture


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/live.db")
    yield opened
    opened.close()


def slow_judge_dashboard(store: Store) -> Dashboard:
    """A dashboard whose simulated user answers at once and whose judge takes 8 s (time for
    a loaded machine to poll while it is in flight)."""
    answers = PlatformModels()

    def models() -> tuple[ScriptedModel, ScriptedModel]:
        user = ScriptedModel(handler=answers.answer)
        return user, ScriptedModel(handler=answers.answer, latency_seconds=8.0)

    runner = SuiteRunner(store=store, models=models, settings=RunSettings(parallel=1))
    return Dashboard(store=store, runner=runner)


def test_a_conversation_being_judged_is_evaluating(store: Store, demo: str) -> None:
    with dashboard_client(slow_judge_dashboard(store)) as client:
        agent, user = the_three(client, demo)
        case = {"agent_id": agent, "user_id": user, "max_turns": 3}
        suite_id = client.post(
            "/api/suites", json={"name": "S", "cases": [case], "run": True}
        ).json()["id"]
        seen: set[str] = set()
        for _ in range(1200):  # up to a minute on a busy machine
            (row,) = client.get(f"/api/suites/{suite_id}/conversations").json()
            seen.add(row["status"])
            if row["status"] == "evaluating":
                assert row["evaluations_passed"] == "pending"
                assert "Evaluating" in client.get(f"/suites/{suite_id}?tab=metrics").text
                break
            time.sleep(0.05)
        assert "evaluating" in seen, seen
        assert finished(client, suite_id)["status"] == "passed"
        (row,) = client.get(f"/api/suites/{suite_id}/conversations").json()
        assert (row["status"], row["evaluations_passed"]) == ("passed", "yes")


def test_a_resumed_runs_judge_start_has_the_stored_trial_number() -> None:
    assert renumbered(JudgeStarted("case-1", 1), {"case-1": [3]}) == JudgeStarted("case-1", 3)


def test_evaluations_passed_is_a_dash_once_a_conversation_ended_unjudged() -> None:
    ended = TrialResult.model_validate(
        {
            "scenario_id": "case-1",
            "trial": 1,
            "status": "timed_out",
            "end_reason": "timeout",
            "evaluations_passed": "pending",  # no judge call was made
        }
    )
    scenario = ScenarioResult.model_validate(
        {"scenario_id": "case-1", "name": "A / U", "kind": "simulated", "threshold": 1}
        | {"trials": [ended], "planned_trials": 2}
    )
    run = RunResult.model_validate(
        {
            "sparring_version": "0",
            "run_id": "r1",
            "started_at": "2026-12-01",
            "scenarios": [scenario],
        }
    )
    rows = conversation_rows([run], running={"r1"})
    assert [(r.status, r.evaluations_passed) for r in rows] == [
        ("timed_out", "none"),
        ("in_progress", "pending"),  # it can still be scored
    ]
    (done,) = conversation_rows([run], running=set())
    assert done.evaluations_passed == "none"
