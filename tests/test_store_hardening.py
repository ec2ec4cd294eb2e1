"""The results store after the breaker's findings: no credential of `--base-url` kept in
clear text (and `--resume` takes it from the current settings again), a corrupted store
file is a clear usage error, and one interrupted run is resumed by one process only."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sparring.models.scripted import example_for_schema
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_cli import sparring

AGENT = "def agent(history):\n    return 'Your order 10234 ships today.'\n"
SUITE = """target: {type: callable, ref: 'agent_module:agent'}
scenarios:
  - id: judged
    trials: 2
    turns:
      - user: Where is order 10234?
        should: say when the order ships
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "agent_module.py").write_text(AGENT)
    (tmp_path / "t.yaml").write_text(SUITE)
    return tmp_path


def _judge(request: dict[str, Any]) -> Reply:
    schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
    return Reply(json.dumps(example_for_schema(schema, text="Your order 10234 ships today.")))


def _db(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / ".sparring" / "sparring.db")


def _interrupt(tmp_path: Path) -> None:
    """The stored run as if killed before its second trial finished."""
    with _db(tmp_path) as conn:
        conn.execute("UPDATE runs SET status = 'interrupted'")
        conn.execute("DELETE FROM trials WHERE trial = 2")


def test_base_url_credentials_are_stored_masked_and_resume_takes_them_again(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    with ScriptedOpenAIServer([_judge] * 10) as server:
        port = server.base_url.split(":")[2].split("/")[0]
        url = f"http://usr:pwSECRET@127.0.0.1:{port}/v1?api-key=QKEY77"
        model = ("--model", "openai-compatible:j")
        done = sparring("run", "t.yaml", *model, "--base-url", url, "--no-live", cwd=tmp_path)
        assert "Stored as run" in done.stderr, done.stdout + done.stderr
        with _db(tmp_path) as conn:
            invocation, settings = conn.execute("SELECT invocation, settings FROM runs").fetchone()
        for kept in (invocation, settings):
            assert "pwSECRET" not in kept and "usr" not in kept and "QKEY77" not in kept
        assert json.loads(invocation)["options"]["base_url"] == (
            f"http://***@127.0.0.1:{port}/v1?***"
        )
        _interrupt(tmp_path)
        lost = sparring("run", "--resume", "--no-live", cwd=tmp_path)
        assert "stored masked" in lost.stderr and "give --base-url again" in lost.stderr
        server.paths.clear()
        resumed = sparring("run", "--resume", "--base-url", url, "--no-live", cwd=tmp_path)
        assert "stored masked" in resumed.stderr, resumed.stderr
        assert f"using http://***@127.0.0.1:{port}/v1?***" in resumed.stderr
        assert server.paths and all("api-key=QKEY77" in path for path in server.paths)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


def _corrupt_store(tmp_path: Path, content: bytes) -> Path:
    store = tmp_path / ".sparring" / "sparring.db"
    store.parent.mkdir()
    store.write_bytes(content)
    return store


def test_a_store_file_that_is_no_database_is_a_clear_usage_error(tmp_path: Path) -> None:
    store = _corrupt_store(_project(tmp_path), bytes(range(256)) * 20)
    for args in (["run", "t.yaml"], ["runs"], ["show", "abc123"]):
        done = sparring(*args, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        message = done.stderr
        assert f"{store} is not a sparring store: not a database" in message, message
        assert f"mv {store} {store}.broken" in message
        assert "--store OTHER.db" in message and "--no-store" in message
    assert sparring("run", "t.yaml", "--no-store", cwd=tmp_path).returncode == 0  # way out


def test_another_programs_sqlite_database_is_not_taken_for_a_store(tmp_path: Path) -> None:
    store = _corrupt_store(_project(tmp_path), b"")
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE customers (name TEXT)")
    done = sparring("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a sparring store: an SQLite database of something else" in done.stderr
    with sqlite3.connect(store) as conn:  # left as it was
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == [("customers",)]


BLOCKING_AGENT = """
import pathlib, time

def agent(history):
    with open("calls.log", "a") as log:
        log.write(history[-1]["content"] + "\\n")
    while not pathlib.Path("go").exists():
        time.sleep(0.02)
    return "fine"
"""


def _resume(tmp_path: Path, run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sparring.cli", "run", "--resume", run_id, "--no-live"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_resumes_of_one_run_at_once_run_each_missing_trial_once(tmp_path: Path) -> None:
    """The first claims the run; the second is refused (exit 2) while the first runs."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "agent_module.py").write_text(BLOCKING_AGENT)
    (tmp_path / "t.yaml").write_text(
        "target: {type: callable, ref: 'agent_module:agent'}\nscenarios:\n"
        "  - {id: a, prompt: hello, trials: 3, checks: [{contains: fine}]}\n"
    )
    (tmp_path / "go").write_text("")
    assert sparring("run", "t.yaml", "--no-live", cwd=tmp_path).returncode == 0
    _interrupt(tmp_path)
    (tmp_path / "go").unlink()
    (tmp_path / "calls.log").unlink()
    with _db(tmp_path) as conn:
        (run_id,) = conn.execute("SELECT id FROM runs").fetchone()
    first, second = _resume(tmp_path, run_id), _resume(tmp_path, run_id)
    with first, second:
        try:
            deadline = time.monotonic() + 90  # a guard, not a measurement
            while first.poll() is None and second.poll() is None:
                assert time.monotonic() < deadline, "both resumes run the missing trial"
                time.sleep(0.05)
        finally:
            (tmp_path / "go").write_text("")
        loser, winner = (first, second) if first.poll() is not None else (second, first)
        _, refused = loser.communicate(timeout=60)
        _, said = winner.communicate(timeout=120)
    assert loser.returncode == 2, refused
    claimed = f"run {run_id} is being resumed by another sparring process"
    assert claimed in refused or f"run {run_id} is running" in refused, refused
    assert winner.returncode == 0, said
    assert (tmp_path / "calls.log").read_text().splitlines() == ["hello"]  # trial 2, once
