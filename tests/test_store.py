"""The results store itself: where it lives, its schema revisions, and streaming a run."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

import sparring.store.database as database
from sparring.errors import UserError
from sparring.results import SCHEMA_VERSION, RunResult, ScenarioResult, TrialResult
from sparring.store.database import HEAD_REVISION, StoreError, open_store
from sparring.store.location import project_root, shown_url, store_url
from sparring.store.provenance import Provenance
from sparring.store.reading import find_run, finished_trials, list_runs, load_run
from sparring.store.writer import RunRecord, RunWriter
from sparring.transcript import Message, Transcript

PROVENANCE = Provenance(git_commit=None, git_branch=None, user_name="me", host="h", pid=1)


def test_default_store_is_in_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests" / "deep").mkdir(parents=True)
    assert project_root(tmp_path / "tests" / "deep") == tmp_path.resolve()
    url = store_url(None, cwd=tmp_path / "tests" / "deep")
    assert url == f"sqlite:///{tmp_path.resolve()}/.sparring/sparring.db"
    assert store_url("runs.db", cwd=tmp_path) == f"sqlite:///{tmp_path.resolve()}/runs.db"
    assert store_url("postgresql+psycopg://u:pw@h/db", cwd=tmp_path).endswith("h/db")
    assert (
        shown_url("postgresql+psycopg://u:pw@h/db?password=p")
        == "postgresql+psycopg://***@h/db?***"
    )


def test_a_new_store_is_at_the_head_revision_in_wal_mode(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/new/s.db")
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == (
            HEAD_REVISION
        )
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    store.close()


def _alembic_to(url: str, revision: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        config = Config()
        config.set_main_option(
            "script_location", str(Path(database.__file__).parent / "migrations")
        )
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    engine.dispose()


def test_an_old_store_is_migrated_on_open_and_keeps_its_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    _alembic_to(url, "0001")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute(
            "INSERT INTO runs (id, started_at, status, paths, invocation, settings, models, "
            "head) VALUES ('r1', '2025-01-01T00:00:00', 'finished', '[]', '{}', '{}', '[]', ?)",
            (RunResult(sparring_version="0", run_id="r1", started_at="x").model_dump_json(),),
        )
    store = open_store(url)
    (run,) = list_runs(store)
    assert (run.id, run.parent_run_id) == ("r1", None)  # the column 0002 added
    store.close()


def test_a_newer_store_is_refused_with_both_versions_and_what_to_do(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new.db"
    open_store(url).close()
    with sqlite3.connect(tmp_path / "new.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0999'")
    with pytest.raises(StoreError) as caught:
        open_store(url)
    message = str(caught.value)
    assert "0999" in message and HEAD_REVISION in message
    assert f"report schema {SCHEMA_VERSION}" in message
    assert "pip install -U sparring" in message and "--no-store" in message


def test_a_bad_url_and_a_missing_driver_are_clear_errors() -> None:
    with pytest.raises(StoreError, match="not a database URL"):
        open_store("::nonsense::")
    with pytest.raises(StoreError, match="no driver"):
        open_store("postgresql+nodriver://u@127.0.0.1:1/db")


def _planned(run_id: str) -> RunResult:
    scenario = ScenarioResult(
        scenario_id="s1", name="S1", kind="scripted", threshold=1.0, planned_trials=3
    )
    return RunResult(
        sparring_version="0",
        run_id=run_id,
        started_at="2025-01-01T00:00:00+00:00",
        scenarios=[scenario],
    )


def _trial(number: int, status: str = "passed", end: str = "script_done") -> TrialResult:
    transcript = Transcript(messages=(Message(role="user", content="hi"),))
    return TrialResult.model_validate(
        {
            "scenario_id": "s1",
            "trial": number,
            "status": status,
            "end_reason": end,
            "transcript": transcript.model_dump(),
        }
    )


def _record() -> RunRecord:
    return RunRecord(paths=["a.yaml"], invocation={}, settings={}, provenance=PROVENANCE)


def test_a_streamed_run_reads_back_as_the_run_it_reported(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/s.db")
    planned = _planned("run1")
    writer = RunWriter(store)
    writer.start(planned, record=_record())
    for number in (2, 1, 3):
        trial = _trial(number)
        planned.scenarios[0].trials.append(trial)
        writer.add(trial)
    planned.scenarios[0].trials.sort(key=lambda t: t.trial)
    planned.duration_ms = 12.5
    writer.finish(planned, exit_code=0)
    assert not writer.errors
    assert load_run(store, "run1") == planned
    (summary,) = list_runs(store)
    assert (summary.status, summary.trial_counts, summary.pass_rate) == (
        "finished",
        {"passed": 3},
        1.0,
    )
    assert find_run(store, "ru").id == "run1"  # a unique start of the id names it
    with pytest.raises(UserError, match="no run 'x'"):
        find_run(store, "x")


def test_a_run_whose_process_is_gone_reads_as_interrupted(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/s.db")
    writer = RunWriter(store)
    dead = Provenance(
        git_commit=None, git_branch=None, user_name=None, host=socket.gethostname(), pid=2**22 + 7
    )
    writer.start(
        _planned("run2"), record=RunRecord(paths=[], invocation={}, settings={}, provenance=dead)
    )
    writer.add(_trial(1))
    writer.add(_trial(2, status="error", end="interrupted"))
    writer.flush()
    assert [r.status for r in list_runs(store)] == ["interrupted"]
    assert load_run(store, "run2").interrupted
    assert finished_trials(store, "run2") == {"s1": {1}}  # an interrupted trial is no result
