"""Fail-closed red-team rates: an attack whose restriction was never judged (no model, only
the detectors ran) is not a resisted attack. It is counted apart in the summary and every
report, the rate has no percentage, and the exit code follows sparring's rule for steps not
judged (0, or 3 with --fail-on-skip)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.redteam import render_summary, summarize
from sparring.reports.html import render_html
from sparring.reports.json import render_json
from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult

FILE = """\
target: {type: callable, ref: "sparring.demo.agent:chat"}
redteam: {plugins: [jailbreak], strategies: [plain]}
"""


def _trial(n: int, status: str, restriction: str) -> dict[str, object]:
    verdict = {"id": "attack_resisted", "kind": "restriction", "status": restriction}
    verdict |= {"description": "The assistant refuses", "reason": "r"}
    return {
        "scenario_id": "a",
        "trial": n,
        "status": status,
        "end_reason": "script_done",
        "verdicts": [verdict],
    }


def _run(*trials: dict[str, object]) -> RunResult:
    tags = ["redteam", "plugin:jailbreak", "strategy:plain", "severity:high"]
    scenario = ScenarioResult.model_validate(
        {"scenario_id": "a", "name": "a", "kind": "single_turn", "threshold": 1.0,
         "tags": tags, "trials": list(trials)}
    )  # fmt: skip
    return RunResult.model_validate(
        {"run_id": "r", "sparring_version": "0", "started_at": "2025-03-14T00:00:00Z",
         "scenarios": [scenario.model_dump()]}
    )  # fmt: skip


def test_attacks_not_judged_are_counted_apart_never_as_resisted() -> None:
    result = _run(*(_trial(n, "passed", "skipped") for n in range(1, 11)))
    summary = summarize(result)
    jailbreak = summary.plugins["jailbreak"]
    assert (jailbreak.attempted, jailbreak.resisted, jailbreak.not_judged) == (0, 0, 10)
    assert jailbreak.text() == "0 succeeded, 10 not judged (detectors only)"
    assert "10 attempt(s) not judged" in render_summary(summary)

    data = json.loads(render_json(result))["red_team"]
    assert data["not_judged"] == 10
    assert data["plugins"]["jailbreak"]["rate"] is None  # no 0% (95% CI 0%-28%)
    assert data["plugins"]["jailbreak"]["ci_high"] is None
    markdown = render_markdown(result)
    assert "| jailbreak | high | 0 succeeded, 10 not judged (detectors only) |" in markdown
    assert "10 attempt(s) not judged: the detectors found nothing" in markdown
    page = render_html(result)
    assert "<td>0 succeeded, 10 not judged (detectors only)</td>" in page
    assert "10 attempt(s) not judged" in page


def test_a_finding_beside_attempts_not_judged_gives_no_rate_and_judged_ones_do() -> None:
    trials = _trial(1, "failed", "skipped"), _trial(2, "passed", "met")
    mixed = summarize(_run(*trials, _trial(3, "passed", "skipped"))).plugins["jailbreak"]
    assert mixed.text() == "1 succeeded, 1 resisted, 1 not judged (detectors only)"
    assert mixed.rate is None
    judged = summarize(_run(_trial(1, "failed", "not_met"), _trial(2, "passed", "met")))
    assert judged.plugins["jailbreak"].text() == "1/2 (50%, 95% CI 9%-91%)"
    assert judged.not_judged_note() is None
    assert judged.outcome() == "1 successful attack(s)."


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"OPENAI_API_KEY": None, "COLUMNS": "200"})


def test_a_run_with_only_the_detectors_exits_as_steps_not_judged_do(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(FILE, encoding="utf-8")
    done = invoke("redteam", str(path), "--no-store", "-q")
    assert done.exit_code == 0, done.output  # like `passed (1 not judged)` in `sparring run`
    assert "| jailbreak | high | 0 succeeded, 2 not judged (detectors only) |" in done.output
    assert "2 attempt(s) not judged" in done.output
    strict = invoke("redteam", str(path), "--no-store", "-q", "--fail-on-skip")
    assert strict.exit_code == 3, strict.output


def test_show_prints_a_stored_red_team_runs_rates_and_findings(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        'target: {type: callable, ref: "sparring.demo.agent:vulnerable_chat"}\n'
        "redteam: {plugins: prompt_injection, strategies: plain, canaries: [NW-STAFF-7731]}\n",
        encoding="utf-8",
    )
    report = tmp_path / "r.json"
    done = invoke("redteam", str(path), "-q", "-o", str(report))
    assert done.exit_code == 1, done.output
    shown = invoke("show", json.loads(report.read_text())["run_id"])
    assert shown.exit_code == 0, shown.output
    assert "| prompt_injection | high | 1 succeeded, 1 not judged (detectors only) |" in (
        shown.output
    )
    assert "### HIGH: redteam/prompt_injection/plain/ignore-previous (trial 1)" in shown.output
    assert "NW-STAFF-7731" in shown.output  # the finding's transcript
