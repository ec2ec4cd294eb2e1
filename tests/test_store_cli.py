"""`sparring run` keeps every run in the store as it happens; `runs`, `show`, `report`,
`--resume` after a kill -9, `--rerun-failed`, and several processes writing at once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.test_cli import sparring

# Answers "fine"; the second call for `slow` hangs until the file `go` exists, so a run can
# be killed while that trial is in flight.
AGENT = """
import pathlib, time
calls = {}

def agent(history):
    text = history[-1]["content"]
    calls[text] = calls.get(text, 0) + 1
    if text == "slow" and calls[text] == 2:
        while not pathlib.Path("go").exists():
            time.sleep(0.05)
    if text == "bad":
        return "no"
    return "fine"
"""
SUITE = """target: {type: callable, ref: 'agent_module:agent'}
scenarios:
  - {id: first, prompt: quick, trials: 2, checks: [{contains: fine}]}
  - {id: slow, prompt: slow, trials: 3, checks: [{contains: fine}]}
  - {id: last, prompt: quick, trials: 2, checks: [{contains: fine}]}
  - {id: broken, prompt: bad, checks: [{contains: fine}]}
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "agent_module.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    return tmp_path


def _db(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / ".sparring" / "sparring.db")


def _stored_trials(tmp_path: Path) -> list[tuple[str, int]]:
    """(scenario id, trial) of every stored trial; none while the store is being made."""
    if not (tmp_path / ".sparring" / "sparring.db").exists():
        return []
    try:
        with _db(tmp_path) as conn:
            rows = conn.execute("SELECT scenario_id, trial FROM trials ORDER BY 1, 2").fetchall()
    except sqlite3.OperationalError:  # no tables yet
        return []
    return [(s, n) for s, n in rows]


def test_reports_of_a_stored_run_are_identical_to_the_runs_own(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "go").write_text("")
    formats = ["-o", "r.json", "--junit", "j.xml", "--markdown", "m.md", "--html", "h.html"]
    done = sparring("run", "suite.yaml", "--no-live", *formats, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    run_id = json.loads((tmp_path / "r.json").read_text())["run_id"]
    assert f"Stored as run {run_id}" in done.stderr
    again = [f.replace(".", "2.") if "." in f else f for f in formats]
    report = sparring("report", run_id[:6], *again, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    for name in ("r.json", "j.xml", "m.md", "h.html"):
        assert (tmp_path / name).read_bytes() == (tmp_path / name.replace(".", "2.")).read_bytes()
    listed = sparring("runs", cwd=tmp_path).stdout
    assert run_id in listed and "finished" in listed and "8 trials: 1 failed, 7 passed" in listed
    shown = sparring("show", run_id, "--scenario", "broken", "--trial", "1", cwd=tmp_path).stdout
    assert "[1] agent" in shown and "not_met" in shown.split("[1] agent")[1]


def test_no_store_keeps_nothing(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "go").write_text("")
    done = sparring("run", "suite.yaml", "--no-store", "--no-live", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert not (tmp_path / ".sparring").exists()
    refused = sparring("run", "--resume", "--no-store", cwd=tmp_path)
    assert refused.returncode == 2 and "drop --no-store" in refused.stderr


def test_kill_9_loses_only_trials_in_flight_and_resume_runs_each_missing_trial_once(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparring.cli", "run", "suite.yaml", "-p", "1", "--no-live"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_stored_trials(tmp_path)) < 3:
            assert time.monotonic() < deadline, "the first trials were never stored"
            time.sleep(0.05)
        time.sleep(0.3)  # `slow` trial 2 is in flight (it waits for `go`)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _stored_trials(tmp_path) == [("first", 1), ("first", 2), ("slow", 1)]
    listed = sparring("runs", "--status", "interrupted", cwd=tmp_path).stdout
    assert "interrupted" in listed and "3 trials: 3 passed" in listed

    (tmp_path / "go").write_text("")
    resumed = sparring("run", "--resume", "--no-live", "-o", "r.json", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr  # `broken` fails
    expected = [("broken", 1), ("first", 1), ("first", 2), ("last", 1), ("last", 2)]
    expected += [("slow", 1), ("slow", 2), ("slow", 3)]
    assert _stored_trials(tmp_path) == expected  # each exactly once (unique in the table)
    report = json.loads((tmp_path / "r.json").read_text())
    got = sorted((s["scenario_id"], t["trial"]) for s in report["scenarios"] for t in s["trials"])
    assert got == expected and not report["interrupted"]
    with _db(tmp_path) as conn:
        assert conn.execute("SELECT count(*), min(status) FROM runs").fetchone() == (1, "finished")
    again = sparring("run", "--resume", cwd=tmp_path)
    assert again.returncode == 2 and "no interrupted run" in again.stderr


def test_rerun_failed_runs_only_what_failed_into_a_new_linked_run(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "go").write_text("")
    first = sparring("run", "suite.yaml", "--no-live", "-o", "r1.json", cwd=tmp_path)
    assert first.returncode == 1
    rerun = sparring("run", "--rerun-failed", "--no-live", "-o", "r2.json", cwd=tmp_path)
    assert rerun.returncode == 1, rerun.stderr
    report = json.loads((tmp_path / "r2.json").read_text())
    assert [s["scenario_id"] for s in report["scenarios"]] == ["broken"]
    parent = json.loads((tmp_path / "r1.json").read_text())["run_id"]
    with _db(tmp_path) as conn:
        linked = conn.execute("SELECT parent_run_id FROM runs WHERE id = ?", (report["run_id"],))
        assert linked.fetchone() == (parent,)
    (tmp_path / "agent_module.py").write_text(AGENT.replace('return "no"', 'return "fine"'))
    fixed = sparring("run", "--rerun-failed", "--no-live", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    nothing = sparring("run", "--rerun-failed", cwd=tmp_path)
    assert nothing.returncode == 2 and "nothing to rerun" in nothing.stderr


def test_four_processes_writing_one_store_lose_and_duplicate_no_trial(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "go").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "sparring.cli", "run", "suite.yaml", "--trials", "5"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for proc in procs:
        assert proc.communicate(timeout=120)[1].count("Stored as run") == 1
    with _db(tmp_path) as conn:
        per_run = conn.execute(
            "SELECT r.status, count(t.id), count(DISTINCT t.scenario_id || '/' || t.trial) "
            "FROM runs r JOIN trials t ON t.run_id = r.id GROUP BY r.id"
        ).fetchall()
    assert per_run == [("finished", 20, 20)] * 4
