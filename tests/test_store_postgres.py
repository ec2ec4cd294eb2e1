"""The results store on a real PostgreSQL server started by the tests (Debian's
`postgresql` package; `.ci/run` installs it where it is missing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from sparring.store.database import HEAD_REVISION, StoreError, open_store
from sparring.store.reading import list_runs, load_run
from sparring.store.writer import RunWriter
from tests.support.postgres_server import initdb_path, postgres_server
from tests.test_cli import sparring
from tests.test_store import _planned, _record, _trial
from tests.test_store_cli import _project

INITDB = initdb_path()
pytestmark = pytest.mark.skipif(
    INITDB is None,
    reason="no PostgreSQL initdb (apt-get install postgresql; .ci/run installs it)",
)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    assert INITDB is not None
    with postgres_server(INITDB) as url:
        yield url


@pytest.fixture
def pg_url(server_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on the server for each test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield server_url.rsplit("/", 1)[0] + "/" + name
    admin.dispose()


def test_a_run_streamed_to_postgres_reads_back_whole(pg_url: str) -> None:
    store = open_store(pg_url)
    planned = _planned("pgrun")
    writer = RunWriter(store)
    writer.start(planned, record=_record())
    for number in (1, 2, 3):
        planned.scenarios[0].trials.append(_trial(number))
        writer.add(planned.scenarios[0].trials[-1])
    writer.finish(planned, exit_code=0)
    assert not writer.errors
    assert load_run(store, "pgrun") == planned
    assert [r.trial_counts for r in list_runs(store)] == [{"passed": 3}]
    store.close()


def test_a_newer_postgres_store_is_refused(pg_url: str) -> None:
    store = open_store(pg_url)
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    store.close()
    with pytest.raises(StoreError, match=f"0999, newer than this sparring's {HEAD_REVISION}"):
        open_store(pg_url)


def test_three_processes_write_one_postgres_store(pg_url: str, tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "go").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    env["SPARRING_STORE"] = pg_url
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sparring.cli",
                "run",
                "suite.yaml",
                "--trials",
                "4",
                "-o",
                f"r{i}.json",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    for proc in procs:
        assert "Stored as run" in proc.communicate(timeout=120)[1]
    store = open_store(pg_url)
    with store.engine.connect() as conn:
        counts = conn.execute(
            text("SELECT count(*), count(DISTINCT (run_id, scenario_id, trial)) FROM trials")
        ).one()
    assert tuple(counts) == (48, 48)
    run_id = json.loads((tmp_path / "r0.json").read_text())["run_id"]
    again = sparring("report", run_id, "--store", pg_url, "-o", "again.json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "r0.json").read_bytes()
    store.close()
