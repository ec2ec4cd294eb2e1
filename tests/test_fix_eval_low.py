"""Smaller fixes around evaluations: the JSON schema takes `tool_args_judge` as one rubric,
as the loader does; a run with nothing to judge says so; a reference to a library entry that
failed to load says so; stored user turns are no model calls; a gate in error reads as not
scored."""

from __future__ import annotations

import io
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from sparring.errors import ConfigError
from sparring.loaders import load_paths
from sparring.loaders.schema import test_file_json_schema
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.reports.console import print_summary
from sparring.reports.exports import export_sheets
from sparring.reports.insights import evaluations_passed_text, trial_facts
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.reports.outcome import exit_meaning
from sparring.results import InsightResult, RunResult, ScenarioResult, TrialResult
from sparring.runner import RunSettings, run_scenarios
from sparring.runner.replay_cassettes import observe
from sparring.runner.replay_users import StoredConversation, StoredUsers
from sparring.scenario import SimulatedScenario, SingleTurnScenario
from sparring.targets.scripted import ScriptedTarget
from tests.support.judging import agent_quote

SCENARIO = {"id": "a", "prompt": "Where is order 4411?", "target": {"url": "http://x"}}
RUBRIC = {"tool": "lookup_order", "rubric": "The order id is 4411"}


@pytest.mark.parametrize("rubrics", [RUBRIC, [RUBRIC, {**RUBRIC, "id": "again"}]])
def test_the_schema_takes_one_rubric_or_a_list_as_the_loader_does(rubrics: object) -> None:
    scenario = {**SCENARIO, "tool_args_judge": rubrics}
    jsonschema.validate(scenario, test_file_json_schema())
    loaded = SingleTurnScenario.model_validate({**scenario, "target": None})
    assert loaded.tool_args_judge[0].tool == "lookup_order"


def test_the_schema_still_refuses_a_rubric_without_its_tool() -> None:
    with pytest.raises(jsonschema.ValidationError):
        bad = {**SCENARIO, "tool_args_judge": {"rubric": "x"}}
        jsonschema.validate(bad, test_file_json_schema())


# --- a run where every conversation had nothing to judge (`done`) --------------------------


def _run_of(*statuses: str) -> RunResult:
    scenarios = [
        ScenarioResult(
            scenario_id=f"s{n}",
            name=f"s{n}",
            kind="scripted",
            threshold=1.0,
            trials=[
                TrialResult(scenario_id=f"s{n}", trial=k, status=status, end_reason="script_done")  # type: ignore[arg-type]
                for k in (1, 2)
            ],
        )
        for n, status in enumerate(statuses, start=1)
    ]
    return RunResult(
        sparring_version="0", run_id="r", started_at="2026-01-01T00:00:00Z", scenarios=scenarios
    )


def test_a_run_with_nothing_to_judge_says_so_not_that_everything_passed() -> None:
    result = _run_of("done")
    meaning = (
        "nothing to judge: 2 conversations ran and ended done (no criterion, check, should, "
        "tool-argument rubric or evaluation gate to pass or fail)"
    )
    assert result.exit_code == 0 and exit_meaning(result) == meaning
    md = render_markdown(result)
    assert f"**exit code 0**: {meaning}" in md and "every scenario that ran passed" not in md
    assert "pass rate - (nothing to judge) ·" in md
    assert "pass rate - (nothing to judge: 2 conversations done)" in md
    out = io.StringIO()
    print_summary(result, console=Console(file=out, width=300))
    assert f"exit code 0: {meaning}" in out.getvalue()


def test_a_run_where_some_passed_and_some_were_done_says_both() -> None:
    assert exit_meaning(_run_of("passed", "done")) == (
        "every scenario that ran passed; 1 scenario had nothing to judge (done)"
    )
    assert exit_meaning(_run_of("passed")) == "every scenario that ran passed"


# --- a bad library entry: references to it say it did not load ------------------------------

BAD_LIBRARY = """\
evaluations:
  - name: empathy
    prompt: How well?
    insights:
      - {name: acknowledged, type: bool}
  - name: resolution
    prompt: Resolved?
    insights:
      - {name: fixed, type: boolean}
simulated_users:
  - name: late
    description: Her order is late.
    evaluations: [empathy]
"""
USES_IT = """\
target: {url: "http://127.0.0.1:9/chat"}
scenarios:
  - {id: a, goal: Get a refund, user: late, evaluations: [resolution, empathy]}
"""


def test_a_reference_to_a_library_entry_that_failed_to_load_says_so(tmp_path: Path) -> None:
    (tmp_path / "library.yaml").write_text(BAD_LIBRARY, encoding="utf-8")
    (tmp_path / "t.yaml").write_text(USES_IT, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    lines = str(caught.value).splitlines()
    where = f"{tmp_path / 'library.yaml'}:2:5"
    did_not_load = f"evaluation 'empathy' did not load: its definition at {where} has an error"
    assert lines[0].startswith(f"{tmp_path / 'library.yaml'}:5:36: evaluations[0].insights[0]")
    assert f"simulated user 'late': {did_not_load}" in lines[1]
    assert f"{tmp_path / 't.yaml'}:3:71: {did_not_load}" in lines[2]
    assert len(lines) == 3  # the valid user and evaluation load: no "none is defined"


# --- --replay-users: stored user turns are no model calls ----------------------------------


@pytest.mark.anyio
async def test_stored_user_turns_are_not_counted_as_model_calls() -> None:
    scenario = SimulatedScenario.model_validate(
        {"id": "refund", "persona": "A customer", "goal": "Get a refund", "criteria": ["Helps"]}
    )
    said = ("Hi, I want a refund", "Order 4411")
    users = StoredUsers(
        "r1", {"refund": [StoredConversation(said, "goal_achieved")]}, kinds={"refund": "simulated"}
    )
    judge = ScriptedModel(
        handler=lambda messages, schema: example_for_schema(
            schema or {}, text=agent_quote(messages)
        )
    )
    result = await run_scenarios(
        users.scenarios([scenario]),
        targets=lambda _s: ScriptedTarget(["Sure, refunded."] * 4),
        user_model=users,
        judge_model=judge,
        settings=RunSettings(parallel=1),
        observer=observe(users.observe(lambda _e: None)),
    )
    (trial,) = result.scenarios[0].trials
    assert tuple(m.content for m in trial.transcript.messages if m.role == "user") == said
    assert trial.usage.model_calls == len(judge.calls) == 1  # the judge's call only


# --- a gate in error reads as not scored, not as the agent failing -------------------------


def _gated(status: str, passed: bool | None) -> TrialResult:
    gate = InsightResult(
        evaluation="support",
        insight="resolved",
        type="boolean",
        status=status,  # type: ignore[arg-type]
        value=None if status == "error" else passed,
        passed=passed,
        gating=True,
        error="is 'yes', not a boolean" if status == "error" else None,
    )
    return TrialResult(
        scenario_id="s",
        trial=1,
        status="error" if status == "error" else "failed",
        end_reason="script_done",
        insights=[gate],
        evaluations_passed="no",
    )


def test_a_gate_in_error_shows_as_not_scored_rather_than_not_passed() -> None:
    errored, failed = _gated("error", None), _gated("ok", False)
    assert evaluations_passed_text(errored) == "error"
    assert evaluations_passed_text(failed) == "no"
    assert trial_facts(errored) == ["evaluations could not be scored"]
    assert trial_facts(failed) == ["evaluations passed no"]
    scenario = ScenarioResult(scenario_id="s", name="s", kind="scripted", threshold=1.0)
    scenario.trials = [errored]
    run = RunResult(sparring_version="0", run_id="r", started_at="2026-01-01T00:00:00Z")
    run.scenarios = [scenario]
    assert '<property name="evaluations_passed" value="error" />' in render_junit(run)
    (row,) = next(s for s in export_sheets(run) if s.name == "Runs").rows
    assert row["evaluations passed"] == "error"
