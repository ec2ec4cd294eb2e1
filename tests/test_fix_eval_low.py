"""Smaller fixes around evaluations: the JSON schema takes `tool_args_judge` as one rubric,
as the loader does; a run with nothing to judge says so."""

from __future__ import annotations

import io

import jsonschema
import pytest
from rich.console import Console

from sparring.loaders.schema import test_file_json_schema
from sparring.reports.console import print_summary
from sparring.reports.markdown import render_markdown
from sparring.reports.outcome import exit_meaning
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.scenario import SingleTurnScenario

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
