"""`done` (a conversation with nothing to judge) is neither passed nor failed everywhere:
the pytest plugin, group gates, the store's pass rate, adaptive trials."""

from __future__ import annotations

import pytest

from sparring.gates import run_records
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.store.reading import RunSummary
from tests.test_pytest_plugin import make_project

pytest_plugins = ["pytester"]

CHAT = """
target: {ref: "shop_agent:reply"}
scenarios:
  - id: small_talk
    turns:
      - user: "Hello there"
    evaluations:
      - name: tone
        prompt: How friendly is the agent?
        insights: [{name: friendly, type: boolean}]
"""
CONFTEST = """
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel, example_for_schema


def pytest_configure(config):
    register_provider("scripted", lambda spec, name, options: ScriptedModel(
        handler=lambda messages, schema: example_for_schema(schema or {}), name=spec))


def pytest_unconfigure(config):
    PROVIDERS.pop("scripted", None)
"""


def done_run() -> RunResult:
    trial = TrialResult(scenario_id="chat", trial=1, status="done", end_reason="script_done")
    scenario = ScenarioResult(
        scenario_id="chat", name="chat", kind="scripted", threshold=1.0, trials=[trial]
    )
    return RunResult(
        sparring_version="0", run_id="r", started_at="2026-12-01", scenarios=[scenario]
    )


def test_a_done_scenario_passes_as_a_pytest_test(pytester: pytest.Pytester) -> None:
    make_project(pytester, settings='model = "scripted:any"\n', files={"evals/chat.yaml": CHAT})
    pytester.makeconftest(CONFTEST)
    pytester.runpytest().assert_outcomes(skipped=1)  # evaluations call a model
    pytester.runpytest("--sparring-live").assert_outcomes(passed=1)


def test_a_done_scenario_is_not_run_for_group_gates() -> None:
    (record,) = run_records(done_run())
    assert record.outcome == "skipped"


def test_the_store_leaves_done_trials_out_of_the_pass_rate() -> None:
    summary = RunSummary(
        id="r",
        started_at="2026-12-01",
        status="finished",
        exit_code=0,
        paths=[],
        git_commit=None,
        git_branch=None,
        user_name=None,
        models=[],
        trial_counts={"passed": 1, "done": 3},
        cost_usd=0,
        duration_ms=1,
        parent_run_id=None,
    )
    assert summary.pass_rate == 1.0


def test_a_done_run_exits_0_and_is_no_skip_under_fail_on_skip() -> None:
    run = done_run()
    assert run.exit_code == 0
    assert run.model_copy(update={"fail_on_skip": True}).exit_code == 0
    (scenario,) = run.scenarios
    assert scenario.status == "done" and scenario.pass_rate is None
    assert scenario.needed == (0, 0) and scenario.summary()["score"] is None


@pytest.mark.anyio
async def test_rejudge_counts_a_stored_trials_gates() -> None:
    """A trial a gating insight failed is judged again (its verdicts were those of a trial
    the runner judged) and stays failed: the gate still counts."""
    from sparring.cli.rejudging import rejudge_run
    from sparring.config import Settings
    from sparring.models.scripted import ScriptedModel
    from sparring.results import InsightResult, Verdict
    from sparring.scenario import ScriptedScenario
    from sparring.transcript import Message, Transcript

    chat = Transcript(
        messages=(Message(role="user", content="Hi"), Message(role="agent", content="Hello there"))
    )
    gate = InsightResult(
        evaluation="e",
        insight="ok",
        type="boolean",
        status="ok",
        value=False,
        passed=False,
        score=0.0,
        gating=True,
    )
    met = Verdict(
        id="c1",
        kind="criterion",
        description="Greets",
        status="met",
        reason="r",
        evidence=("Hello there",),
    )
    trial = TrialResult(
        scenario_id="chat",
        trial=1,
        status="failed",
        end_reason="script_done",
        transcript=chat,
        verdicts=[met],
        insights=[gate],
    )
    run = done_run().model_copy(
        update={"scenarios": [done_run().scenarios[0].model_copy(update={"trials": [trial]})]}
    )
    spec = ScriptedScenario.model_validate(
        {"id": "chat", "turns": [{"user": "Hi"}], "criteria": ["Greets"]}
    )
    verdict = {"reason": "r", "evidence": ["Hello there"], "turns": [1], "verdict": "met"}
    judge = ScriptedModel([{"verdicts": {"c1": verdict}, "replies": {}}])
    rejudged = await rejudge_run(run, {"chat": spec}, judge=judge, settings=Settings(), repeat=1)
    (again,) = rejudged.result.scenarios[0].trials
    assert len(judge.calls) == 1 and again.status == "failed" and again.insights == [gate]
