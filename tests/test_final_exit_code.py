"""`sparring run` prints and stores the exit code it ends with: a report that cannot be
written makes it 3, and the console and the results store say 3, not the run's own 0."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.test_cli import sparring


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_report_that_cannot_be_written_is_exit_3_in_the_console_and_the_store(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "agent_module.py").write_text("def agent(history):\n    return 'fine'\n")
    (tmp_path / "t.yaml").write_text(
        "target: {type: callable, ref: 'agent_module:agent'}\n"
        "scenarios:\n  - {id: a, prompt: hi, checks: [{contains: fine}]}\n"
    )
    full = "/dev/full"  # every write fails: No space left on device
    done = sparring("run", "t.yaml", "--no-live", "-o", full, "--junit", "j.xml", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "could not write the JSON report to /dev/full" in done.stderr
    assert (tmp_path / "j.xml").exists()  # the other reports are written
    assert "exit code 3: a report could not be written" in done.stdout
    assert "else exit code 0: every scenario that ran passed" in done.stdout
    assert "exit code 0" not in done.stdout.replace("else exit code 0", "")
    with sqlite3.connect(tmp_path / ".sparring" / "sparring.db") as conn:
        assert conn.execute("SELECT exit_code FROM runs").fetchall() == [(3,)]
