"""Replay answers each scenario only with its own recording (`--replay-strict`: each trial
only with its own), refuses a cassette line edited after it was recorded, and a `--resume
--record DIR` after a kill -9 keeps the trials recorded before the kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.errors import UserError
from tests.test_cli import sparring
from tests.test_store_cli import (
    _project,  # pyright: ignore[reportPrivateUsage]
    _stored_trials,  # pyright: ignore[reportPrivateUsage]
)

# The first call is answered "no", every later one "fine"; each call is logged.
AGENT = """
from pathlib import Path

def agent(history):
    log = Path("calls.log")
    said = log.read_text() if log.exists() else ""
    log.write_text(said + history[-1]["content"] + "\\n")
    return "fine" if said else "no"
"""
SUITE = """target: {type: callable, ref: 'twin_agent:agent'}
scenarios:
  - {id: a-first, prompt: Hello, checks: [{contains: fine}]}
  - {id: b-second, prompt: Hello, checks: [{contains: fine}]}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "twin_agent.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for key in ("SPARRING_MODEL", "SPARRING_USER_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    yield tmp_path
    sys.modules.pop("twin_agent", None)


def _run(*args: str) -> Result:
    return CliRunner().invoke(
        cli,
        ["run", "suite.yaml", "--no-live", "--no-store", "-p", "1", "-o", "r.json", *args],
        catch_exceptions=False,
    )


def _statuses() -> dict[str, tuple[str, str | None, list[str]]]:
    report = json.loads(Path("r.json").read_text())
    return {
        s["scenario_id"]: (
            s["trials"][0]["status"],
            s["trials"][0]["error"],
            [m["content"] for m in s["trials"][0]["transcript"]["messages"]],
        )
        for s in report["scenarios"]
    }


def _record_and_lose_a_first() -> None:
    recorded = _run("--record", "tapes")
    assert recorded.exit_code == 1, recorded.output  # a-first failed ("no")
    assert {k: v[0] for k, v in _statuses().items()} == {"a-first": "failed", "b-second": "passed"}
    lines = Path("tapes/agent.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"scenario": "a-first"' not in line]
    assert len(kept) == len(lines) - 1
    Path("tapes/agent.jsonl").write_text("\n".join(kept) + "\n")
    Path("calls.log").unlink()


def test_strict_replay_never_answers_a_scenario_with_another_scenarios_recording(
    project: Path,
) -> None:
    _record_and_lose_a_first()
    _run("--replay", "tapes", "--replay-strict")
    got = _statuses()
    assert got["a-first"][0] == "error" and "no recorded agent reply" in str(got["a-first"][1])
    assert "'a-first' trial 1" in str(got["a-first"][1])
    assert got["b-second"] == ("passed", None, ["Hello", "fine"])
    assert not Path("calls.log").exists()  # strict: the agent was never called


def test_replay_asks_live_what_its_scenario_did_not_record(project: Path) -> None:
    _record_and_lose_a_first()
    _run("--replay", "tapes")
    got = _statuses()
    assert Path("calls.log").read_text().splitlines() == ["Hello"]  # a-first only, live
    assert got["a-first"][0] == "failed"  # the live agent's first answer is "no"
    assert got["b-second"] == ("passed", None, ["Hello", "fine"])  # its own recording


def test_a_cassette_line_edited_after_recording_is_refused_with_its_file_and_line(
    project: Path,
) -> None:
    assert _run("--record", "tapes").exit_code == 1
    path = Path("tapes/agent.jsonl")
    lines = path.read_text().splitlines()
    number = next(n for n, line in enumerate(lines, start=1) if '"content": "no"' in line)
    lines[number - 1] = lines[number - 1].replace('"content": "no"', '"content": "fine"')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=rf"agent.jsonl:{number}: the line was changed after"):
        _run("--replay", "tapes", "--replay-strict")


def _kill_after_three_trials(tmp_path: Path, *args: str) -> None:
    """Start `sparring run suite.yaml -p 1 *args`, kill -9 it once three trials are stored
    (`slow` trial 2 is then in flight: it waits for the file `go`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparring.cli", "run", "suite.yaml", "-p", "1", "--no-live", *args],
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
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_resume_into_the_record_directory_keeps_the_trials_recorded_before_a_kill_9(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    _kill_after_three_trials(tmp_path, "--record", "tapes")
    (tmp_path / "go").write_text("")
    resumed = sparring("run", "--resume", "--no-live", "--record", "tapes", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr  # `broken` fails

    agent = (tmp_path / "tapes" / "agent.jsonl").read_text().splitlines()[1:]
    entries: list[dict[str, Any]] = [json.loads(line) for line in agent]
    recorded = sorted((e["scenario"], e["trial"]) for e in entries)
    expected = [("broken", 1), ("first", 1), ("first", 2), ("last", 1), ("last", 2)]
    assert recorded == [*expected, ("slow", 1), ("slow", 2), ("slow", 3)]  # each once

    replayed = sparring(
        "run", "suite.yaml", "--no-live", "--no-store", "--replay", "tapes", "--replay-strict",
        "-o", "r.json", cwd=tmp_path,
    )  # fmt: skip
    assert replayed.returncode == 1, replayed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    statuses = {(s["scenario_id"], t["trial"]): t["status"] for s in report["scenarios"]
                for t in s["trials"]}  # fmt: skip
    assert statuses.pop(("broken", 1)) == "failed"
    assert set(statuses.values()) == {"passed"} and len(statuses) == 7


def test_a_last_cassette_line_cut_short_by_a_kill_is_no_answer(project: Path) -> None:
    assert _run("--record", "tapes").exit_code == 1
    path = Path("tapes/agent.jsonl")
    whole = path.read_text()
    last = whole.splitlines()[-1]
    path.write_text(whole + last[: len(last) // 2])  # the kill came as it wrote this line
    _run("--replay", "tapes", "--replay-strict")
    assert {k: v[0] for k, v in _statuses().items()} == {"a-first": "failed", "b-second": "passed"}
    path.write_text(whole + last[: len(last) // 2] + "\n")  # ended: damaged, not cut short
    with pytest.raises(UserError, match=r"agent.jsonl:4: not a JSON line"):
        _run("--replay", "tapes", "--replay-strict")
