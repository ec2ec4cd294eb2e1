"""The runner's error paths (issue 8): internal errors, duplicate ids, `--parallel 0`, a bare
`assert`'s message, hooks that raise what no hook error wraps."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sparring.api import Suite
from sparring.errors import UserError
from sparring.models.scripted import ScriptedModel
from sparring.reports.junit import render_junit
from sparring.results import RunResult
from sparring.runner import AnyRunnable, RunSettings, run_scenarios
from sparring.runner.code import CodeScenario
from sparring.runner.context import TrialContext
from sparring.scenario import ScriptedScenario, SingleTurnScenario
from sparring.targets.base import Target
from sparring.targets.scripted import ScriptedTarget

SECRET = "s3cret-value"


def scripted(**kw: Any) -> ScriptedScenario:
    return ScriptedScenario.model_validate(
        {"id": "s", "turns": [{"user": "x", "checks": [{"contains": "a"}]}], **kw}
    )


async def run(
    scenarios: list[AnyRunnable],
    target: Target,
    *,
    model: ScriptedModel | None = None,
    settings: RunSettings | None = None,
) -> RunResult:
    return await run_scenarios(
        scenarios,
        targets=lambda s: target,
        user_model=model,
        judge_model=model,
        settings=settings,
        scrub=lambda text: text.replace(SECRET, "***"),
    )


# --- an unexpected exception inside the runner ---------------------------------------------


@pytest.mark.anyio
async def test_an_unexpected_exception_is_an_internal_error_with_its_traceback() -> None:
    scenario = scripted(
        turns=[
            {"user": "one", "checks": [{"contains": "a"}]},
            {"user": "two", "checks": [{"contains": "b"}]},
        ]
    )
    target = ScriptedTarget(["a", KeyError(SECRET)])  # a bug: targets raise TargetError
    result = await run([scenario], target)

    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("error", "internal_error")
    assert [v.status for v in trial.verdicts] == ["met"]  # what passed so far is no pass
    assert trial.error == (
        "unexpected KeyError: '***'; please report this with the JSON report attached"
    )
    traceback = trial.traceback or ""
    assert traceback.startswith("Traceback (most recent call last):")
    assert "in respond" in traceback and traceback.rstrip().endswith("KeyError: '***'")
    assert SECRET not in result.model_dump_json()
    assert (result.scenarios[0].status, result.exit_code) == ("error", 3)
    assert "KeyError: '***'" in render_junit(result).split("Traceback", 1)[1]


@pytest.mark.anyio
async def test_a_model_that_raises_something_unexpected_never_passes_a_trial() -> None:
    scenario = SingleTurnScenario.model_validate(
        {"id": "q", "prompt": "Hi?", "criteria": ["Greets"]}
    )
    model = ScriptedModel([RuntimeError("the SDK broke")])  # not a ModelError
    result = await run([scenario], ScriptedTarget(["Hello!"]), model=model)
    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("error", "internal_error")
    assert "RuntimeError: the SDK broke" in (trial.traceback or "")
    assert result.exit_code == 3


# --- misconfigured runs fail before anything runs -----------------------------------------


@pytest.mark.anyio
async def test_duplicate_scenario_ids_are_a_usage_error_before_any_target_is_built() -> None:
    built: list[str] = []

    def targets(scenario: AnyRunnable) -> Target:
        built.append(scenario.id)
        return ScriptedTarget(["a"])

    scenarios: list[AnyRunnable] = [scripted(id="b"), scripted(id="a"), scripted(id="b")]
    scenarios.append(CodeScenario(id="a", display_name="a", body=lambda trial: None))
    with pytest.raises(UserError, match=r"^scenario ids must be unique; repeated: a, b$"):
        await run_scenarios(scenarios, targets=targets, user_model=None, judge_model=None)
    assert built == []


@pytest.mark.anyio
@pytest.mark.parametrize("parallel", [0, -2])
async def test_parallel_below_one_is_a_usage_error(parallel: int) -> None:
    target = ScriptedTarget(["a"])
    with pytest.raises(UserError, match=f"^--parallel must be at least 1, got {parallel}$"):
        await run([scripted()], target, settings=RunSettings(parallel=parallel))
    assert target.sessions_opened == 0


def test_sparring_run_with_parallel_zero_exits_2_naming_the_option(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(
        "target: {url: 'http://127.0.0.1:9/chat', body_template: {m: '{{input}}'}}\n"
        "scenarios:\n  - {id: a, prompt: hi, checks: [{contains: x}]}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "suite.yaml", "--parallel", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "parallel (from --parallel)" in done.stderr
    assert "greater than or equal to 1" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


# --- Python tests: a bare assert, hooks that raise ----------------------------------------

BARE_ASSERT = """\
from sparring.api import Suite

suite = Suite(target=lambda history: "hi")


@suite.scenario
async def test_sum() -> None:
    total = 1 + 1
    assert total == 3
"""


def test_a_bare_assert_names_its_line_and_expression(tmp_path: Path) -> None:
    # not named test_*.py, so pytest does not rewrite its asserts: as `sparring run` loads it
    path = tmp_path / "bare_assert_suite.py"
    path.write_text(BARE_ASSERT)
    spec = importlib.util.spec_from_file_location("bare_assert_suite", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    result = module.suite.run()
    [trial] = result.scenarios[0].trials
    assert trial.status == "failed"
    [verdict] = trial.verdicts
    assert (verdict.id, verdict.status) == ("assert", "not_met")
    assert verdict.reason == f"assertion failed at {path}:9: assert total == 3"


def hello(history: list[dict[str, str]]) -> str:
    return "hi"


def test_hooks_raising_plain_exceptions_make_the_trial_an_error_never_a_pass() -> None:
    ran: list[str] = []
    before = Suite(target=hello)

    @before.before_each
    def setup(test_name: str) -> None:
        raise ValueError("no fixture data")

    @before.scenario
    async def test_never_runs() -> None:
        ran.append("body")

    after = Suite(target=hello)

    @after.after_each
    async def teardown(test_name: str, passed: bool, error: str | None) -> None:
        raise ValueError(f"cleanup failed after {test_name} (passed={passed})")

    @after.scenario
    async def test_fine() -> None:
        ran.append("fine")

    [[failed_before], [failed_after]] = [s.run().scenarios[0].trials for s in (before, after)]
    assert ran == ["fine"]
    assert (failed_before.status, failed_before.end_reason) == ("error", "test_error")
    assert failed_before.error == "before_each hook setup() raised ValueError: no fixture data"
    assert (failed_after.status, failed_after.end_reason) == ("error", "test_error")
    assert failed_after.error == (
        "after_each hook teardown() raised ValueError: cleanup failed after test_fine (passed=True)"
    )


@pytest.mark.anyio
async def test_runner_hooks_raising_plain_exceptions_are_named() -> None:
    async def body(trial: TrialContext) -> None:
        pass

    async def broken_before() -> None:
        raise ValueError("setup")

    async def broken_after(passed: bool, error: str | None) -> None:
        raise LookupError(SECRET)

    tests: list[AnyRunnable] = [
        CodeScenario(id="before", display_name="before", body=body, before=broken_before),
        CodeScenario(id="after", display_name="after", body=body, after=broken_after),
    ]
    result = await run(tests, ScriptedTarget([]))
    errors = {s.scenario_id: (s.trials[0].status, s.trials[0].error) for s in result.scenarios}
    assert errors == {
        "before": ("error", "a before hook raised ValueError: setup"),
        "after": ("error", "the after hook raised LookupError: ***"),
    }
    assert result.exit_code == 3


@pytest.mark.anyio
async def test_a_reply_too_deep_to_read_is_a_target_error_not_an_internal_one() -> None:
    # what an SDK parsing a 100,000-level answer raises inside the target
    result = await run([scripted()], ScriptedTarget([RecursionError("maximum recursion depth")]))
    trial = result.scenarios[0].trials[0]
    assert (trial.status, trial.end_reason) == ("error", "target_error")
    assert trial.error is not None and "nested too deeply to read" in trial.error
