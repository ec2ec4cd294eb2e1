"""Cassette lines are strict JSON: a tool argument `1e999` (infinity once parsed) or a NaN is
written as `null`, as the JSON report has it, never as a bare `Infinity` that other JSON
readers reject; and the cassette still replays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from tests.support.echo_server import Answer, EchoRequest, EchoServer

REPLY = (
    '{"reply": "paid", "tool_calls": [{"name": "pay", '
    '"arguments": {"amount": 1e999, "fee": -1e999, "note": "1e999"}}]}'
)
"""The agent's answer, sent as is: JSON numbers too large for a float."""


def answer(request: EchoRequest) -> Answer:
    return Answer(REPLY)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with EchoServer(answer) as agent:
        (tmp_path / "pyproject.toml").write_text("")
        (tmp_path / "suite.yaml").write_text(
            f'target:\n  url: "{agent.url("/chat")}"\n'
            '  body_template: {message: "{{input}}"}\n'
            "  response_path: reply\n  tool_calls_path: tool_calls\n"
            "scenarios:\n  - id: pay\n    turns:\n      - user: pay it\n"
            "        checks:\n          - tool_called: pay\n",
            encoding="utf-8",
        )
        monkeypatch.chdir(tmp_path)
        yield tmp_path


def _run(*args: str) -> dict[str, Any]:
    done: Result = CliRunner().invoke(
        cli, ["run", "suite.yaml", "--no-live", "-o", "r.json", *args], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    return json.loads(Path("r.json").read_text(encoding="utf-8"))


def _strict(text: str) -> Any:
    def reject(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def _arguments(report: dict[str, Any]) -> Any:
    return report["scenarios"][0]["trials"][0]["transcript"]["messages"][1]["tool_calls"][0]


def test_a_non_finite_tool_argument_is_recorded_as_strict_json_and_replays(
    project: Path,
) -> None:
    recorded = _run("--record", "tapes")
    lines = [
        line
        for tape in sorted((project / "tapes").iterdir())
        for line in tape.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    entries = [_strict(line) for line in lines]  # every line, the header included
    replies = [e["reply"] for e in entries if "reply" in e]
    assert replies[0]["tool_calls"][0]["arguments"] == {
        "amount": None,
        "fee": None,
        "note": "1e999",
    }
    replayed = _run("--replay", "tapes", "--replay-strict")
    assert _arguments(replayed) == _arguments(recorded)
    assert _arguments(recorded)["arguments"] == {"amount": None, "fee": None, "note": "1e999"}
