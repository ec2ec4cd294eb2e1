"""`sparring diff [BASE] [RUN]` and `sparring baseline RUN`: pass-rate changes with their
confidence, newly failing/passing scenarios and criteria, cost and latency; exit 1 on a
regression with --fail-on-regression; the baseline mark (store revision 0003)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sparring.reports.diff import diff_runs, render_diff
from sparring.results import RunResult, ScenarioResult, TrialResult, Usage, Verdict
from sparring.store.database import open_store
from sparring.store.reading import list_runs
from tests.test_cli import sparring
from tests.test_store import _alembic_to  # pyright: ignore[reportPrivateUsage]


def _trial(scenario_id: str, n: int, passed: bool, *, criterion: bool = True) -> TrialResult:
    verdict = Verdict(
        id="polite",
        kind="criterion",
        description="is polite",
        status="met" if criterion else "not_met",
    )
    return TrialResult(
        scenario_id=scenario_id,
        trial=n,
        status="passed" if passed else "failed",
        end_reason="max_turns",
        verdicts=[verdict],
        usage=Usage(cost_usd=0.01),
    )


def _run(run_id: str, **passes: list[bool]) -> RunResult:
    scenarios = [
        ScenarioResult(
            scenario_id=sid,
            name=sid,
            kind="simulated",
            threshold=0.5,
            trials=[_trial(sid, i + 1, p, criterion=p) for i, p in enumerate(results)],
        )
        for sid, results in passes.items()
    ]
    return RunResult(sparring_version="0", run_id=run_id, started_at="x", scenarios=scenarios)


def test_a_change_is_significant_only_when_the_intervals_do_not_overlap() -> None:
    base = _run("b", drop=[True] * 10, noisy=[True] * 3, fixed=[False] * 2, gone=[True])
    run = _run("r", drop=[False] * 10, noisy=[True, True, False], fixed=[True] * 2, new=[True] * 3)
    compared = diff_runs(base, run)
    by_id = {c.scenario_id: c for c in compared.scenarios}
    assert list(by_id) == ["drop", "noisy", "fixed", "new", "gone"]
    assert by_id["drop"].significant and by_id["drop"].newly_failing
    assert by_id["drop"].newly_failing_criteria == ["polite"]
    assert not by_id["noisy"].significant and not by_id["noisy"].regressed  # 3/3 -> 2/3
    assert by_id["fixed"].newly_passing and by_id["fixed"].newly_passing_criteria == ["polite"]
    assert [c.scenario_id for c in compared.regressions] == ["drop"]
    text = "\n".join(render_diff(compared))
    assert "drop: passed 100% [72%, 100%] -> failed 0% [0%, 28%] (-100 points, significant" in text
    assert "noisy: passed 100% [44%, 100%] -> passed 66.7% [21%, 94%] (-33 points, not sig" in text
    assert "new: new in this run" in text and "gone: not in this run" in text
    assert "Newly failing scenarios: drop" in text and "Newly passing scenarios: fixed" in text
    assert "newly failing criteria: polite" in text and "Regressions: drop" in text
    assert "Cost: $0.16 -> $0.18 (+$0.02)" in text


def test_a_significant_drop_without_a_status_change_is_a_regression() -> None:
    base = _run("b", s=[True] * 20)
    run = _run("r", s=[True] * 10 + [False] * 10)  # still passes its 0.5 threshold
    (change,) = diff_runs(base, run).scenarios
    assert not change.newly_failing and change.significant and change.regressed


AGENT = """
def agent(history):
    return "fine"
"""
SUITE = """target: {type: callable, ref: 'agent_module:agent'}
scenarios:
  - {id: greet, prompt: hi, trials: 3, checks: [{contains: fine}]}
  - {id: other, prompt: yo, checks: [{contains: fine}]}
"""


def _run_suite(tmp_path: Path, reply: str) -> str:
    (tmp_path / "agent_module.py").write_text(AGENT.replace("fine", reply))
    done = sparring("run", "suite.yaml", "--no-live", "-o", "r.json", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    return json.loads((tmp_path / "r.json").read_text())["run_id"]


def test_diff_defaults_to_the_previous_run_then_the_baseline_and_gates_on_regressions(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "suite.yaml").write_text(SUITE)
    alone = sparring("diff", cwd=tmp_path)
    assert alone.returncode == 2 and "no finished run" in alone.stderr
    good = _run_suite(tmp_path, "fine")
    only = sparring("diff", cwd=tmp_path)
    assert only.returncode == 2 and "sparring baseline RUN" in only.stderr
    bad = _run_suite(tmp_path, "nope")

    previous = sparring("diff", "--fail-on-regression", cwd=tmp_path)
    assert previous.returncode == 1, previous.stderr
    assert f"Diff: base {good} -> run {bad}" in previous.stdout
    assert "newly failing criteria: check1" in previous.stdout
    assert "Mean reply latency: " in previous.stdout
    assert "Newly failing scenarios: greet, other" in previous.stdout
    assert sparring("diff", cwd=tmp_path).returncode == 0  # only reported without the flag

    marked = sparring("baseline", bad[:8], cwd=tmp_path)
    assert marked.returncode == 0 and bad in marked.stdout
    fixed = _run_suite(tmp_path, "fine")
    against_baseline = sparring("diff", "--fail-on-regression", cwd=tmp_path)
    assert against_baseline.returncode == 0, against_baseline.stderr
    assert f"Diff: base {bad} -> run {fixed}" in against_baseline.stdout
    assert "Newly passing scenarios: greet, other" in against_baseline.stdout
    assert "No regressions against the base." in against_baseline.stdout
    named = sparring("diff", good, bad, "--fail-on-regression", cwd=tmp_path)
    assert named.returncode == 1 and f"base {good} -> run {bad}" in named.stdout
    assert "(baseline)" in sparring("runs", cwd=tmp_path).stdout.split(bad)[1].splitlines()[0]
    assert sparring("baseline", "nope", cwd=tmp_path).returncode == 2


def test_a_store_at_revision_0002_gains_the_baseline_mark_on_open(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    _alembic_to(url, "0002")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute(
            "INSERT INTO runs (id, started_at, status, paths, invocation, settings, models, "
            "head) VALUES ('r1', '2025-01-01T00:00:00', 'finished', '[]', '{}', '{}', '[]', ?)",
            (RunResult(sparring_version="0", run_id="r1", started_at="x").model_dump_json(),),
        )
    store = open_store(url)
    (run,) = list_runs(store)
    assert (run.id, run.baseline) == ("r1", False)
    store.close()
