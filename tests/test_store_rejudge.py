"""`sparring rejudge RUN`: stored transcripts graded again by another judge, without calling
the agent, into a new run linked to the original; `--repeat K` measures the judge's own
agreement and flags a criterion whose answers flip as "unstable judge"."""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.errors import UserError
from sparring.models.base import ChatMessage
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel

# Counts its calls in calls.log; refuses to answer once the file `forbid` exists.
AGENT = """
from pathlib import Path

def agent(history):
    if Path("forbid").exists():
        raise RuntimeError("the agent was called during rejudge")
    with open("calls.log", "a") as log:
        log.write("call\\n")
    return "Your slot is booked for 10am"
"""
SUITE = """target: {type: callable, ref: 'rejudge_agent:agent'}
scenarios:
  - id: booking
    prompt: Book me a slot at 10am
    trials: 2
    should: confirm the booking
"""
REPLY = "Your slot is booked for 10am"
SECRET = "tok-rejudge-5ecret-98765"


def _judge(name: str) -> ScriptedModel:
    """`met`, `not_met`, `alternate` (met on odd calls, not met on even ones), or `leak`
    (not met, repeating `SECRET` in its reason and note)."""
    calls = itertools.count(1)

    def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> dict[str, Any]:
        props = (schema or {}).get("properties", {})
        verdict = {"alternate": "met" if next(calls) % 2 else "not_met", "leak": "not_met"}
        verdict = verdict.get(name, name)
        said = f"says {verdict}" + (f" {SECRET}" if name == "leak" else "")
        return {
            "verdicts": {
                i: {"verdict": verdict, "reason": said, "evidence": [REPLY], "turns": [1]}
                for i in props["verdicts"]["required"]
            },
            "replies": {t: {"note": said, "score": 1} for t in props["replies"]["required"]},
        }

    return ScriptedModel(handler=answer, name=f"scripted:{name}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "rejudge_agent.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for key in ("SPARRING_STORE", "SPARRING_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    register_provider("scripted", lambda spec, name, options: _judge(name))
    yield tmp_path
    PROVIDERS.pop("scripted", None)


def _sparring(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _stored_run(project: Path, *options: str) -> str:
    done = _sparring(
        "run", "suite.yaml", "--no-live", "--model", "scripted:met", "-o", "r.json", *options
    )
    assert done.exit_code == 0, done.output
    (project / "forbid").write_text("")  # from now on a call to the agent errs the trial
    return json.loads((project / "r.json").read_text())["run_id"]


def _calls(project: Path) -> int:
    return len((project / "calls.log").read_text().splitlines())


def test_rejudge_with_a_stricter_judge_fails_the_run_without_calling_the_agent(
    project: Path,
) -> None:
    run_id = _stored_run(project)
    assert _calls(project) == 2
    done = _sparring("rejudge", run_id, "--judge-model", "scripted:not_met")
    assert done.exit_code == 1, done.output
    assert _calls(project) == 2  # no agent call
    new_id = done.output.split("as run ")[1].split()[0]
    with sqlite3.connect(project / ".sparring" / "sparring.db") as conn:
        parent = conn.execute("SELECT parent_run_id FROM runs WHERE id = ?", (new_id,)).fetchone()
    assert parent == (run_id,)
    report = _sparring("report", new_id, "-o", "new.json")
    assert report.exit_code == 0, report.output
    new = json.loads((project / "new.json").read_text())
    old = json.loads((project / "r.json").read_text())
    (scenario,) = new["scenarios"]
    assert scenario["status"] == "failed" and new["judge_model"] == "scripted:not_met"
    assert [t["status"] for t in scenario["trials"]] == ["failed", "failed"]
    assert [t["transcript"] for t in scenario["trials"]] == [
        t["transcript"] for t in old["scenarios"][0]["trials"]
    ]


def test_repeat_flags_a_criterion_whose_judge_answers_flip_as_unstable(project: Path) -> None:
    # one trial: its three answers are met, not met, met whatever order they run in (with
    # two trials judged at once, one could get all three "met" and the other all "not met")
    run_id = _stored_run(project, "--trials", "1")
    done = _sparring("rejudge", run_id, "--judge-model", "scripted:alternate", "--repeat", "3")
    assert "booking t1.should1: 66.7%  unstable judge" in done.output, done.output
    new_id = done.output.split("as run ")[1].split()[0]
    report = _sparring("report", new_id, "--markdown", "new.md")
    assert report.exit_code == 0, report.output
    assert "unstable judge: `t1.should1`" in (project / "new.md").read_text()
    steady = _sparring("rejudge", run_id, "--judge-model", "scripted:met", "--repeat", "3")
    assert steady.exit_code == 0, steady.output
    assert "booking t1.should1: 100%" in steady.output and "unstable" not in steady.output


def test_rejudge_names_the_scenarios_the_test_files_no_longer_hold(project: Path) -> None:
    run_id = _stored_run(project)
    (project / "suite.yaml").write_text(SUITE.replace("id: booking", "id: renamed"))
    with pytest.raises(UserError, match=r"no longer in its test files \(suite.yaml\): booking"):
        _sparring("rejudge", run_id, "--judge-model", "scripted:met")


def test_what_the_judge_writes_is_stored_with_the_model_keys_masked(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _stored_run(project)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)  # a model key the judge repeats
    done = _sparring("rejudge", run_id, "--judge-model", "scripted:leak")
    assert done.exit_code == 1, done.output
    assert "says not_met" in done.output and SECRET not in done.output
    stored = b"".join(p.read_bytes() for p in (project / ".sparring").iterdir())
    assert b"says not_met" in stored and SECRET.encode() not in stored


def test_python_tests_are_kept_as_stored_with_a_note(project: Path) -> None:
    (project / "test_bot.py").write_text(
        "from sparring.api import Suite\n\nsuite = Suite(target='http://127.0.0.1:9/chat')\n"
        "\n\n@suite.scenario\nasync def test_hello() -> None:\n    pass\n"
    )
    done = _sparring(
        "run", "suite.yaml", "test_bot.py", "--no-live", "--model", "scripted:met", "-o", "r.json"
    )
    assert done.exit_code == 0, done.output
    old = json.loads((project / "r.json").read_text())
    again = _sparring("rejudge", old["run_id"], "--judge-model", "scripted:not_met")
    assert again.exit_code == 1, again.output
    (code,) = [s for s in old["scenarios"] if s["kind"] == "python"]
    assert f"note: {code['scenario_id']} is a Python test" in again.output
    new_id = again.output.split("as run ")[1].split()[0]
    assert _sparring("report", new_id, "-o", "new.json").exit_code == 0
    new = json.loads((project / "new.json").read_text())
    kept = next(s for s in new["scenarios"] if s["kind"] == "python")
    assert kept["trials"] == code["trials"]
