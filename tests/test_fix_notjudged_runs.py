"""Runs with nothing judged, end to end: a scenario with only a gated evaluation and no
model is skipped with the same reason as every other skip; `sparring run` of a suite with
`kind: red_team` prints the red-team rates as `sparring redteam` does (once, and on standard
error when the JSON report has standard output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.judging.should import NO_MODEL_HINT
from sparring.reports.markdown import render_markdown
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.targets.scripted import ScriptedTarget
from tests.test_redteam import sparring

GATED = {
    "name": "support",
    "prompt": "Was the order found?",
    "insights": [{"name": "resolved", "type": "boolean", "pass_when": True}],
}
SUITE = (
    'target: {type: callable, ref: "sparring.demo.agent:chat"}\n'
    "scenarios:\n"
    "  - {id: rt, kind: red_team, plugins: [prompt_injection], strategy: [plain]}\n"
)


@pytest.mark.anyio
async def test_a_gated_evaluation_without_a_model_is_skipped_with_the_reason() -> None:
    scenario = ScriptedScenario.model_validate(
        {"id": "evalonly", "turns": [{"user": "Where is my order?"}], "evaluations": [GATED]}
    )
    result = await run_scenarios(
        [scenario],
        targets=lambda _s: ScriptedTarget(["Your order number?"]),
        user_model=None,
        judge_model=None,
        settings=RunSettings(parallel=1),
    )
    (trial,) = result.scenarios[0].trials
    assert trial.status == "skipped" and trial.evaluations_passed == "pending"
    assert trial.error == NO_MODEL_HINT
    assert len(trial.transcript.messages) == 2  # it talked: the report must not say otherwise
    md = render_markdown(result)
    assert "(no trial judged: 1 skipped)" in md and "no trial ran" not in md


def test_sparring_run_prints_the_red_team_rates_of_red_team_scenarios(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    ran = sparring("run", str(suite), "--no-store", "-q")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.count("## Red team") == 1
    assert "| prompt_injection | high | 0 succeeded, 2 not judged (detectors only) |" in ran.stdout

    piped = sparring("run", str(suite), "--no-store", "-q", "-o", "-")
    assert piped.returncode == 0, piped.stdout + piped.stderr
    assert json.loads(piped.stdout)["red_team"]  # standard output holds the JSON alone
    assert "## Red team" in piped.stderr


def test_sparring_redteam_prints_its_summary_once_and_writes_report(tmp_path: Path) -> None:
    file = tmp_path / "t.yaml"
    file.write_text(SUITE, encoding="utf-8")
    report = tmp_path / "rt.md"
    done = sparring("redteam", str(file), "--no-store", "-q", "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("## Red team") == 1
    assert report.read_text(encoding="utf-8").startswith("## Red team")
