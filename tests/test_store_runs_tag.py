"""`sparring runs --tag T`: only the stored runs holding a scenario with one of the tags."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli

AGENT = "def agent(history):\n    return 'fine'\n"
PLAIN = """target: {type: callable, ref: 'tag_agent:agent'}
scenarios:
  - {id: plain, prompt: hi, checks: [{contains: fine}]}
"""
TAGGED = """target: {type: callable, ref: 'tag_agent:agent'}
scenarios:
  - {id: other, prompt: hi, checks: [{contains: fine}]}
  - {id: marked, prompt: hi, tags: [x, smoke], checks: [{contains: fine}]}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tag_agent.py").write_text(AGENT)
    (tmp_path / "plain.yaml").write_text(PLAIN)
    (tmp_path / "tagged.yaml").write_text(TAGGED)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delenv("SPARRING_STORE", raising=False)
    yield tmp_path


def _sparring(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _run(project: Path, path: str) -> str:
    done = _sparring("run", path, "--no-live", "-o", "r.json")
    assert done.exit_code == 0, done.output
    return json.loads((project / "r.json").read_text())["run_id"]


def test_runs_tag_lists_only_runs_holding_a_scenario_with_that_tag(project: Path) -> None:
    plain, tagged = _run(project, "plain.yaml"), _run(project, "tagged.yaml")
    every = _sparring("runs")
    assert plain in every.output and tagged in every.output
    listed = _sparring("runs", "--tag", "x")
    assert listed.exit_code == 0, listed.output
    assert tagged in listed.output and plain not in listed.output
    either = _sparring("runs", "--tag", "nope", "--tag", "smoke")
    assert tagged in either.output and plain not in either.output


def test_runs_with_an_unknown_tag_lists_none_and_says_so(project: Path) -> None:
    plain, tagged = _run(project, "plain.yaml"), _run(project, "tagged.yaml")
    listed = _sparring("runs", "--tag", "unknown")
    assert listed.exit_code == 0, listed.output
    assert plain not in listed.output and tagged not in listed.output
    assert "No stored run has a scenario tagged 'unknown'." in listed.output
