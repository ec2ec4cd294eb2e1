"""`sparring run --explain-failures`, `explain_failures` in the settings, and `sparring
schema` holding the evaluation keys, through the real CLI and a real OpenAI-compatible
endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.openai_server import Reply, ScriptedOpenAIServer

SUITE = """\
target: {type: callable, ref: 'sparring.demo.agent:chat'}
scenarios:
  - id: asks-number
    turns:
      - user: Hi, where is my order?
    criteria: [Says the delivery date]
"""
EXPLANATION = "The agent asked for the order number instead of giving a date."


def _answer(request: dict[str, Any]) -> Reply:
    """The judge finds the criterion not met; a call without a schema is the explanation."""
    if "response_format" not in request:
        return Reply(EXPLANATION)
    why = {"reason": "No date.", "evidence": [], "turns": [1], "verdict": "not_met"}
    return Reply(json.dumps({"verdicts": {"c1": why}, "replies": {}}))


def sparring(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**env, "COLUMNS": "200"},
    )


def _run(tmp_path: Path, *flags: str, settings: str = "") -> tuple[dict[str, Any], int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "sparring.toml").write_text(settings, encoding="utf-8")
    with ScriptedOpenAIServer([_answer] * 4) as llm:
        done = sparring(
            "run",
            "suite.yaml",
            *("--model", "openai-compatible:judge", "--base-url", llm.base_url),
            *("--no-live", "--no-store", "-o", "report.json", *flags),
            cwd=tmp_path,
        )
        calls = len(llm.requests)
    assert done.returncode == 1, done.stderr
    return json.loads((tmp_path / "report.json").read_text()), calls


def _trial(report: dict[str, Any]) -> dict[str, Any]:
    return report["scenarios"][0]["trials"][0]


def test_explain_failures_flag_adds_one_call_and_the_explanation(tmp_path: Path) -> None:
    report, calls = _run(tmp_path, "--explain-failures")
    trial = _trial(report)
    assert calls == 2 and trial["usage"]["model_calls"] == 2
    assert trial["status"] == "failed" and trial["explanation"] == EXPLANATION


def test_explain_failures_is_off_by_default_and_on_from_the_settings(tmp_path: Path) -> None:
    report, calls = _run(tmp_path)
    assert calls == 1 and _trial(report)["explanation"] is None
    report, calls = _run(tmp_path, settings="explain_failures = true\n")
    assert calls == 2 and _trial(report)["explanation"] == EXPLANATION
    report, calls = _run(tmp_path, "--no-explain-failures", settings="explain_failures = true\n")
    assert calls == 1 and _trial(report)["explanation"] is None


def test_the_schema_holds_the_evaluation_keys(tmp_path: Path) -> None:
    done = sparring("schema", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for key in ("evaluations", "tool_args_judge", "explain_failures", "pass_when", "score_map"):
        assert f'"{key}"' in text, key
    assert '"featured"' in text and '"insights"' in text


def test_the_readme_evaluations_example_loads() -> None:
    from sparring.loaders.yaml import load_text
    from tests.test_newcomer_fixes import DEMO_AGENT, readme_yaml

    (scenario,) = load_text(
        DEMO_AGENT + readme_yaml("Evaluations: insights, scores and pass rules")
    )
    (evaluation,) = scenario.defined_evaluations
    assert [i.name for i in evaluation.insights if i.gating] == ["resolved", "empathy"]
    assert scenario.tool_args_judge[0].verdict_id == "tool_args.lookup_order"
    assert scenario.explain_failures is True
