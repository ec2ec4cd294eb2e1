"""`sparring rejudge RUN --criteria-from FILES`: the stored transcripts graded against the
criteria of the scenarios in FILES (matched by id), not those of the run's own files."""

from __future__ import annotations

import json
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

AGENT = "def agent(history):\n    return 'Your slot is booked for 10am'\n"
SUITE = """target: {type: callable, ref: 'criteria_agent:agent'}
scenarios:
  - id: booking
    prompt: Book me a slot at 10am
    criteria: [{id: confirms, text: The assistant confirms the booking.}]
"""
NEW_SUITE = """target: {type: callable, ref: 'criteria_agent:agent'}
scenarios:
  - id: booking
    prompt: Book me a slot at 10am
    criteria: [{id: names_time, text: The assistant names the booked time of 10am.}]
"""
OTHER_SUITE = SUITE.replace("id: booking", "id: elsewhere")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The project directory as cwd; yields the text of every request the judge got."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "criteria_agent.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "new.yaml").write_text(NEW_SUITE)
    (tmp_path / "other.yaml").write_text(OTHER_SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for key in ("SPARRING_STORE", "SPARRING_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    requests: list[str] = []

    def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> dict[str, Any]:
        requests.append("\n".join(m["content"] for m in messages))
        props = (schema or {}).get("properties", {})
        return {
            "verdicts": {
                i: {"verdict": "met", "reason": "ok", "evidence": ["10am"], "turns": [1]}
                for i in props["verdicts"]["required"]
            },
            "replies": {t: {"note": "ok", "score": 1} for t in props["replies"]["required"]},
        }

    register_provider("scripted", lambda spec, name, options: ScriptedModel(handler=answer))
    yield requests
    PROVIDERS.pop("scripted", None)


def _sparring(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _report(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def test_criteria_from_grades_the_stored_transcript_with_the_new_criterion(
    project: list[str],
) -> None:
    done = _sparring("run", "suite.yaml", "--no-live", "--model", "scripted:met", "-o", "r.json")
    assert done.exit_code == 0, done.output
    old = _report("r.json")
    assert "The assistant confirms the booking." in project[-1]
    project.clear()
    again = _sparring("rejudge", old["run_id"], "--criteria-from", "new.yaml")
    assert again.exit_code == 0, again.output
    (request,) = project
    assert "The assistant names the booked time of 10am." in request
    assert "confirms the booking" not in request
    new_id = again.output.split("as run ")[1].split()[0]
    assert _sparring("report", new_id, "-o", "new.json").exit_code == 0
    (trial,) = _report("new.json")["scenarios"][0]["trials"]
    judged = [(v["id"], v["description"]) for v in trial["verdicts"] if v["kind"] == "criterion"]
    assert judged == [("names_time", "The assistant names the booked time of 10am.")]
    assert trial["transcript"] == old["scenarios"][0]["trials"][0]["transcript"]


def test_criteria_from_files_missing_a_stored_scenario_id_is_an_error_naming_it(
    project: list[str],
) -> None:
    done = _sparring("run", "suite.yaml", "--no-live", "--model", "scripted:met", "-o", "r.json")
    assert done.exit_code == 0, done.output
    project.clear()
    with pytest.raises(UserError, match=r"--criteria-from other.yaml has no .* booking"):
        _sparring("rejudge", _report("r.json")["run_id"], "--criteria-from", "other.yaml")
    assert project == []  # nothing was judged
