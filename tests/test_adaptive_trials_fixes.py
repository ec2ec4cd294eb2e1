"""Adaptive trials as a new user met them: a threshold of 100%, thresholds `max` cannot
confirm, a test file's own `trials: N` under `--adaptive`, and `undecided` scenarios under
group gates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparring.config import GroupGate
from sparring.errors import TargetError
from sparring.gates import evaluate, gated_exit_code, run_records
from sparring.results import RunResult, ScenarioResult, TrialResult, TrialStatus
from sparring.runner import RunSettings, run_scenarios
from sparring.runner.adaptive import ADAPTIVE_DEFAULT, trial_range, unconfirmable
from sparring.runner.code import CodeScenario
from sparring.scenario import ScriptedScenario
from sparring.scenario.base import TrialRange
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Transcript

AGENT = "target: {type: callable, ref: 'sparring.demo.agent:chat'}\n"
PASSING_TURN = "    turns: [{user: 'Hi, where is my order?', checks: [{contains: order}]}]\n"


def scenario(sid: str = "s", **spec: Any) -> ScriptedScenario:
    """One user turn whose `contains: ok` check decides the trial: no model needed."""
    turns = [{"user": "hi", "checks": [{"contains": "ok"}]}]
    return ScriptedScenario.model_validate({"id": sid, "turns": turns, **spec})


def agent(passes: Callable[[int], bool]) -> ScriptedTarget:
    """An agent whose n-th reply (1-based) passes when `passes(n)`."""
    calls = 0

    def reply(transcript: Transcript) -> str:
        nonlocal calls
        calls += 1
        return "ok" if passes(calls) else "no"

    return ScriptedTarget([reply])


async def run(target: ScriptedTarget, *scenarios: ScriptedScenario, **settings: Any) -> RunResult:
    return await run_scenarios(
        list(scenarios),
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        settings=RunSettings(parallel=1, **settings),
    )


# --- 1. a threshold of 100% ------------------------------------------------------------


@pytest.mark.anyio
async def test_a_threshold_of_100_percent_passes_once_max_trials_all_passed() -> None:
    result = await run(agent(lambda n: True), scenario(trials={"min": 3, "max": 8}))
    (r,) = result.scenarios
    assert (len(r.trials), r.decision, r.status, result.exit_code) == (8, "passed", "passed", 0)


@pytest.mark.anyio
async def test_a_threshold_of_100_percent_fails_at_the_first_failed_trial() -> None:
    result = await run(agent(lambda n: n != 5), scenario(trials={"min": 3, "max": 30}))
    (r,) = result.scenarios
    assert (len(r.trials), r.status, result.exit_code) == (5, "failed", 1)


@pytest.mark.anyio
async def test_a_threshold_of_100_percent_with_an_error_is_never_passed() -> None:
    calls = 0

    def reply(transcript: Transcript) -> str:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise TargetError("down")
        return "ok"

    result = await run(ScriptedTarget([reply]), scenario(trials={"min": 3, "max": 4}))
    (r,) = result.scenarios
    assert (len(r.trials), r.passed_trials, r.decision, r.status) == (4, 3, None, "error")


def test_unconfirmable_names_the_scenarios_max_cannot_confirm() -> None:
    scenarios = [
        scenario("open", threshold=0.95),  # --adaptive gives it 3 to 30
        scenario("short", threshold=0.8, trials={"min": 3, "max": 10}),
        scenario("enough", threshold=0.8, trials={"min": 3, "max": 16}),
        scenario("every", trials={"min": 3, "max": 5}),  # 100%: every trial must pass
        scenario("fixed", threshold=0.95, trials=5),
    ]
    warning = unconfirmable(scenarios, adaptive=True)
    assert warning == (
        "adaptive trials cannot confirm the threshold of open (95% needs 73 passes in a row, "
        "max is 30); short (80% needs 16 passes in a row, max is 10): even an agent that "
        "always passes ends `undecided` (exit 3). Raise `max` in `trials: {min, max}`, or "
        "lower `threshold`."
    )
    assert "open" not in (unconfirmable(scenarios, adaptive=False) or "")
    assert unconfirmable(scenarios[2:], adaptive=True) is None
    many = [scenario(f"s{i}", threshold=0.999) for i in range(7)]
    assert "s0, s1, s2, s3, s4 and 2 more (99.9% needs more than 1000 passes" in (
        unconfirmable(many, adaptive=True) or ""
    )


# --- 2. a test file's own trials under --adaptive --------------------------------------


@pytest.mark.anyio
async def test_an_explicit_trial_count_stays_fixed_under_adaptive() -> None:
    fixed, one, open_ = (
        scenario("fixed", threshold=0.5, trials=5),
        scenario("one", threshold=0.5, trials=1),
        scenario("open", threshold=0.5),
    )
    result = await run(agent(lambda n: True), fixed, one, open_, adaptive=True)
    shown = [(len(r.trials), r.max_trials, r.status) for r in result.scenarios]
    # 4 of 4 is the first run of passes whose interval clears 50%
    assert shown == [(5, None, "passed"), (1, None, "passed"), (4, 30, "passed")]


def test_python_tests_keep_repetitions_above_1_under_adaptive() -> None:
    def body(trial: object) -> None:
        return None

    def code(trials: int) -> CodeScenario:
        return CodeScenario(id="t", display_name="t", body=body, trials=trials)

    assert trial_range(code(5), adaptive=True) is None
    assert trial_range(code(1), adaptive=True) == ADAPTIVE_DEFAULT
    assert trial_range(code(1), adaptive=False) is None
    own = scenario(trials={"min": 2, "max": 9})
    assert trial_range(own, adaptive=False) == TrialRange(min=2, max=9)


def sparring(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_adaptive_passes_always_passing_scenarios_and_keeps_trials_5(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    suite = AGENT + "scenarios:\n"
    suite += "  - id: every\n" + PASSING_TURN
    suite += "  - id: most\n    threshold: 0.8\n" + PASSING_TURN
    suite += "  - id: five\n    trials: 5\n" + PASSING_TURN
    (tmp_path / "ad.yaml").write_text(suite, encoding="utf-8")
    args = ("run", "ad.yaml", "--adaptive", "-p", "4", "--no-store", "-o", "r.json")
    done = sparring(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    shown = {s["scenario_id"]: (len(s["trials"]), s["status"]) for s in report["scenarios"]}
    # 100%: all 30 must pass; 80%: 16 passes in a row clear it; `trials: 5` stays 5
    assert shown == {"every": (30, "passed"), "most": (16, "passed"), "five": (5, "passed")}


def test_adaptive_warns_once_at_start_about_an_unconfirmable_threshold(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    suite = AGENT + "scenarios:\n  - id: high\n    threshold: 0.95\n"
    suite += "    trials: {min: 1, max: 3}\n" + PASSING_TURN
    (tmp_path / "high.yaml").write_text(suite, encoding="utf-8")
    done = sparring("run", "high.yaml", "--adaptive", "--no-store", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.count("warning: adaptive trials cannot confirm") == 1
    assert "high (95% needs 73 passes in a row, max is 3)" in done.stderr
    assert "exit code 3: 1 scenario undecided" in done.stdout


# --- 3. undecided scenarios under group gates ------------------------------------------


def _scenario(sid: str, statuses: list[TrialStatus], *, tags: list[str]) -> ScenarioResult:
    """A scenario with these trials; `undecided` takes adaptive trials at a threshold of
    50% with `max` 1: one pass cannot clear it."""
    trials = [
        TrialResult(scenario_id=sid, trial=i, status=status, end_reason="script_done")
        for i, status in enumerate(statuses, start=1)
    ]
    adaptive = sid.startswith("undecided")
    return ScenarioResult(
        scenario_id=sid,
        name=sid,
        kind="scripted",
        threshold=0.5 if adaptive else 1.0,
        tags=tags,
        trials=trials,
        planned_trials=len(trials),
        max_trials=len(trials) if adaptive else None,
    )


def _run(*scenarios: ScenarioResult) -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=list(scenarios),
    )


def test_undecided_scenarios_in_no_group_are_no_failed_tests() -> None:
    run = _run(
        _scenario("ok", ["passed"], tags=["a"]),
        _scenario("undecided-1", ["passed"], tags=[]),
        _scenario("undecided-2", ["passed"], tags=[]),
    )
    assert [s.status for s in run.scenarios] == ["passed", "undecided", "undecided"]
    report = evaluate({"a": GroupGate(tags=("a",))}, run_records(run))
    assert [r.outcome for r in run_records(run)] == ["passed", "undecided", "undecided"]
    assert not report.tests_failed and not report.ungated_failures
    assert report.lines(overridden_to=gated_exit_code(run, report)) == [
        "a: 1/1 passed, 100% [21%, 100%], 100% required (needs 1 of 1): PASSED"
    ]
    assert run.exit_code == gated_exit_code(run, report) == 3


def test_an_undecided_member_is_not_passed_and_is_listed_apart() -> None:
    run = _run(
        _scenario("ok", ["passed"], tags=["a"]),
        _scenario("bad", ["failed"], tags=["a"]),
        _scenario("undecided", ["passed"], tags=["a"]),
    )
    report = evaluate({"a": GroupGate(threshold=0.3, tags=("a",))}, run_records(run))
    code = gated_exit_code(run, report)
    lines = report.lines(overridden_to=code)
    assert lines[0].startswith("a: 1/3 passed, 33.3% ")
    assert lines[1:3] == ["  failed: bad", "  undecided: undecided"]
    assert (run.exit_code, code) == (1, 3)  # the failure is tolerated, the undecided is not
    assert lines[-1].startswith("exit code overridden to 3:")


def test_an_undecided_must_pass_test_fails_its_gate() -> None:
    run = _run(_scenario("undecided", ["passed"], tags=[]))
    report = evaluate({"pins": GroupGate(must_pass=("undecided",))}, run_records(run))
    assert report.lines() == [
        "pins: must_pass only: FAILED",
        "  must_pass: undecided undecided",
        "no test failed, so the gates change nothing",
    ]


def test_gate_lines_and_exit_code_agree_for_undecided_scenarios(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sparring.toml").write_text(
        '[groups.status]\nthreshold = 0.5\ntags = ["status"]\n', encoding="utf-8"
    )
    suite = AGENT + "scenarios:\n  - id: ok\n    tags: [status]\n" + PASSING_TURN
    for sid in ("maybe-1", "maybe-2"):  # 1 of 1 cannot clear 50%: undecided
        suite += f"  - id: {sid}\n    threshold: 0.5\n    trials: {{min: 1, max: 1}}\n"
        suite += PASSING_TURN
    (tmp_path / "suite.yaml").write_text(suite, encoding="utf-8")
    done = sparring("run", "suite.yaml", "--no-store", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    gates = done.stdout[done.stdout.index("Group gates") :]
    assert "failed" not in gates.lower() and "stays 1" not in gates
    assert "exit code 3: 2 scenarios undecided" in gates
