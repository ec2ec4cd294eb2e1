"""`sparring run --shard K/N --run-id ID`: N processes each run one slice of the trials into
one run of a shared store; every trial is stored exactly once and the run ends `finished`
when the last slice ends, so `sparring report ID` holds them all."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from sparring.store.database import open_store
from sparring.store.reading import list_runs, load_run
from tests.support.postgres_server import initdb_path, postgres_server
from tests.test_cli import sparring
from tests.test_store_cli import AGENT, SUITE

EXPECTED = sorted(
    [("first", 1), ("first", 2), ("slow", 1), ("slow", 2), ("slow", 3)]
    + [("last", 1), ("last", 2), ("broken", 1)]
)


def _project(tmp_path: Path) -> None:
    """test_store_cli's project: 8 trials in 4 scenarios (`broken` fails), no model."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "agent_module.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "go").write_text("")


def _slices(tmp_path: Path, *args: str) -> list[subprocess.CompletedProcess[str]]:
    """Slices 1/3, 2/3 and 3/3 of suite.yaml into run `ci-42`, at the same time."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "sparring.cli", "run", "suite.yaml", "--no-live"]
            + ["--shard", f"{k}/3", "--run-id", "ci-42", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in (1, 2, 3)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    return [
        subprocess.CompletedProcess(p.args, p.returncode, out, err)
        for p, (out, err) in zip(procs, outs, strict=True)
    ]


def test_three_slices_store_every_trial_once_in_one_finished_run(tmp_path: Path) -> None:
    _project(tmp_path)
    done = _slices(tmp_path)
    assert all(d.returncode in (0, 1) for d in done), [d.stderr for d in done]
    assert all("in run ci-42" in d.stderr for d in done)
    with sqlite3.connect(tmp_path / ".sparring" / "sparring.db") as conn:
        rows = conn.execute("SELECT scenario_id, trial FROM trials WHERE run_id = 'ci-42'")
        stored = sorted(rows.fetchall())
        (status,) = conn.execute("SELECT status FROM runs WHERE id = 'ci-42'").fetchone()
        ends = conn.execute("SELECT shard, status FROM shards ORDER BY shard").fetchall()
    assert stored == EXPECTED
    assert status == "finished" and ends == [(1, "finished"), (2, "finished"), (3, "finished")]
    report = sparring("report", "ci-42", "-o", "r.json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    merged = json.loads((tmp_path / "r.json").read_text())
    trials = sorted(
        (t["scenario_id"], t["trial"]) for s in merged["scenarios"] for t in s["trials"]
    )
    assert trials == EXPECTED
    assert [s["scenario_id"] for s in merged["scenarios"]] == ["first", "slow", "last", "broken"]
    assert {s["scenario_id"]: s["status"] for s in merged["scenarios"]}["broken"] == "failed"
    listed = sparring("runs", cwd=tmp_path).stdout
    assert "ci-42" in listed and "finished" in listed and "8 trials: 1 failed, 7 passed" in listed
    (tmp_path / "suite.yaml").write_text(SUITE.replace("prompt: bad", "prompt: quick"))
    fixed = sparring("run", "suite.yaml", "--no-live", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    diff = sparring("diff", "ci-42", cwd=tmp_path)  # the merged run is the base
    assert diff.returncode == 0, diff.stderr
    assert "broken" in diff.stdout and "newly passing" in diff.stdout.lower()


def test_a_slice_runs_once_and_the_slices_agree_on_n(tmp_path: Path) -> None:
    _project(tmp_path)
    first = sparring("run", "suite.yaml", "--shard", "1/3", "--run-id", "r1", cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr
    again = sparring("run", "suite.yaml", "--shard", "1/3", "--run-id", "r1", cwd=tmp_path)
    assert again.returncode == 2 and "slice 1/3 of run r1 already ran" in again.stderr
    other = sparring("run", "suite.yaml", "--shard", "2/4", "--run-id", "r1", cwd=tmp_path)
    assert other.returncode == 2 and "is being run in 3 slices, not 4" in other.stderr
    alone = sparring("run", "suite.yaml", "--shard", "2/3", cwd=tmp_path)
    assert alone.returncode == 2 and "--shard K/N and --run-id ID go together" in alone.stderr
    bad = sparring("run", "suite.yaml", "--shard", "4/3", "--run-id", "r1", cwd=tmp_path)
    assert bad.returncode == 2 and "1 <= K <= N" in bad.stderr
    listed = sparring("runs", cwd=tmp_path).stdout
    assert "r1" in listed and "finished" not in listed  # 1 of 3 slices ended


INITDB = initdb_path()


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    """A database of its own on a PostgreSQL server started for this test."""
    if INITDB is None:
        pytest.skip("no PostgreSQL initdb (apt-get install postgresql; .ci/run installs it)")
    with postgres_server(INITDB) as url:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text('CREATE DATABASE "shards"'))
        admin.dispose()
        yield url.rsplit("/", 1)[0] + "/shards"


def test_three_slices_into_postgres_make_one_run_with_every_trial_once(
    tmp_path: Path, pg_url: str
) -> None:
    _project(tmp_path)
    done = _slices(tmp_path, "--store", pg_url)
    assert all(d.returncode in (0, 1) for d in done), [d.stderr for d in done]
    store = open_store(pg_url)
    try:
        (summary,) = list_runs(store)
        merged = load_run(store, "ci-42")
    finally:
        store.close()
    assert summary.id == "ci-42" and summary.status == "finished"
    trials = sorted((t.scenario_id, t.trial) for s in merged.scenarios for t in s.trials)
    assert trials == EXPECTED and not merged.interrupted
    report = sparring("report", "ci-42", "--store", pg_url, "-o", "r.json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert (
        len(
            [
                t
                for s in json.loads((tmp_path / "r.json").read_text())["scenarios"]
                for t in s["trials"]
            ]
        )
        == 8
    )
