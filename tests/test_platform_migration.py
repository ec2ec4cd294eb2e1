"""Store revision 0005 (the platform): a store at 0004 holding runs is migrated on open,
keeps its runs, and takes assets, suites, overrides and accounts; on PostgreSQL too, the
asset lifecycle and a suite's guard."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect

from sparring.store import accounts, assets, overrides, suite_status, suites
from sparring.store.database import HEAD_REVISION, open_store
from sparring.store.reading import list_runs, load_run
from sparring.store.writer import RunWriter
from tests.support.postgres_server import initdb_path, postgres_server
from tests.test_platform_store import AGENT, EVALUATION, USER
from tests.test_store import _alembic_to, _planned, _record, _trial

PLATFORM_TABLES = {"assets", "asset_revisions", "suites", "suite_runs", "overrides", "accounts"}


def test_a_0004_store_with_runs_is_migrated_and_keeps_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    _alembic_to(url, "0004")
    planned = _planned("old")
    planned.scenarios[0].planned_trials = 1
    trial = _trial(1, status="failed")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute(
            "INSERT INTO runs (id, started_at, status, paths, invocation, settings, models, "
            "head, baseline) VALUES ('old', '2025-01-01T00:00:00', 'finished', '[]', '{}', "
            "'{}', '[]', ?, 1)",
            (planned.model_dump_json(exclude={"scenarios"}),),
        )
        conn.execute(
            "INSERT INTO scenarios VALUES ('old', 's1', 0, ?)",
            (planned.scenarios[0].model_dump_json(exclude={"trials"}),),
        )
        conn.execute(
            "INSERT INTO trials (run_id, scenario_id, trial, status, end_reason, duration_ms, "
            "cost_usd, finished_at, result) VALUES ('old', 's1', 1, 'failed', 'script_done', "
            "0, 0, '2025-01-01T00:00:01', ?)",
            (trial.model_dump_json(),),
        )
        conn.execute(
            "INSERT INTO shards VALUES ('old', 1, 2, 'finished', '2025-01-01', NULL, 0, 'h', 1)"
        )
    store = open_store(url)
    with store.engine.connect() as conn:
        assert PLATFORM_TABLES <= set(inspect(conn).get_table_names())
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == (
            HEAD_REVISION
        )
    (run,) = list_runs(store)
    assert (run.id, run.baseline, run.trial_counts) == ("old", True, {"failed": 1})
    assert load_run(store, "old").scenarios[0].trials == [trial]
    assert overrides.list_overrides(store) == [] and not accounts.has_accounts(store)
    assert assets.list_assets(store, "agent") == [] and suite_status.list_suites(store) == []
    store.close()


INITDB = initdb_path()


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    if INITDB is None:
        pytest.skip("no PostgreSQL initdb (apt-get install postgresql; .ci/run installs it)")
    with postgres_server(INITDB) as url:
        yield url


def test_the_asset_lifecycle_and_a_suite_on_postgres(pg_url: str) -> None:
    store = open_store(pg_url)
    evaluation = assets.create_asset(store, "evaluation", "Late delivery", EVALUATION)
    assets.publish_revision(store, evaluation.id, 1)
    user = assets.create_asset(store, "simulated_user", "Frustrated customer", USER)
    assets.save_draft(store, user.id, {**USER, "job_title": "Buyer"}, author="ann")
    assets.preview_revision(store, user.id, 2)
    assets.publish_revision(store, user.id, 2)
    clone = assets.clone_asset(store, user.id, number=1)
    assert (clone.name, clone.latest.content["job_title"]) == (
        "Frustrated customer - clone",
        "Customer",
    )
    reverted = assets.revert_to(store, user.id, 1)
    assert (reverted.number, reverted.state) == (3, "draft")
    assert [r.label for r in assets.get_asset(store, user.id).revisions] == [
        "Draft:1",
        "Published:2",
        "Draft:3",
    ]
    agent = assets.create_asset(store, "agent", "Support bot", AGENT)
    case = suites.SuiteCase(agent_id=agent.id, user_id=user.id)
    with pytest.raises(suites.SuiteError, match="'Support bot' in test case 1 has no Published"):
        suites.save_suite(store, "Booking", [case])
    assets.publish_revision(store, agent.id, 1)
    suite = suites.save_suite(store, "Booking", [case])
    resolved = suites.resolve_suite(store, suite.id)
    claim = suites.start_suite_run(store, resolved)
    with pytest.raises(suites.SuiteBusy):
        suites.start_suite_run(store, resolved)
    planned = _planned("pg1")
    planned.scenarios[0].planned_trials = 1
    writer = RunWriter(store)
    writer.start(planned, record=_record())
    suites.link_suite_run(store, claim, "pg1")
    planned.scenarios[0].trials.append(_trial(1))
    writer.add(planned.scenarios[0].trials[0])
    writer.finish(planned, exit_code=0)
    assert suite_status.suite_summary(store, suite.id).status == "passed"
    assets.archive_asset(store, user.id)
    with pytest.raises(suites.SuiteError, match="is archived"):
        suites.resolve_suite(store, suite.id)
    assert suites.delete_suite(store, suite.id) == ["pg1"]
    store.close()
