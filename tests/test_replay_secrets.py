"""Cassettes never hold a secret, in any encoding (`sparring run --record`), and a replay
matches the masked requests: without the secrets, hermetically (issue 11, section 3).

The agent (`tests.test_secret_canary.echo`, on 127.0.0.1) echoes the secrets of its url,
headers and body and the model key in every form; the judge writes the model key and the
canary into its answer."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.models.base import ChatMessage
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel, example_for_schema
from tests.support.echo_server import EchoServer
from tests.test_secret_canary import (
    CANARY,
    MODEL_KEY,
    SECRETS_FILE,
    assert_no_canary,
    canary_file,
    echo,
)


def _judge(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
    return example_for_schema(schema or {}, text=f"the key is {MODEL_KEY} and {CANARY}")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with EchoServer(echo) as agent:
        (tmp_path / "pyproject.toml").write_text("")
        (tmp_path / "canary.yaml").write_text(canary_file(agent.url("")), encoding="utf-8")
        (tmp_path / "secrets.env").write_text(SECRETS_FILE, encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", MODEL_KEY)
        for key in ("SPARRING_MODEL", "SPARRING_USER_MODEL", "SPARRING_JUDGE_MODEL"):
            monkeypatch.delenv(key, raising=False)
        register_provider("scripted", lambda spec, name, options: ScriptedModel(handler=_judge))
        yield tmp_path
        PROVIDERS.pop("scripted", None)


def _run(*args: str, report: str) -> dict[str, Any]:
    done: Result = CliRunner().invoke(
        cli,
        ["run", "canary.yaml", "--no-live", "-o", report, *args],
        catch_exceptions=False,
    )
    assert done.exit_code in (1, 3), done.output
    return json.loads(Path(report).read_text(encoding="utf-8"))


def _trials(report: dict[str, Any]) -> dict[tuple[str, int], Any]:
    """Per trial: its status, transcript and verdict statuses (a check's reason quotes the
    reply it saw: the real one when recorded, the masked one in a replay, cut elsewhere)."""
    return {
        (s["scenario_id"], t["trial"]): (
            t["status"],
            t["transcript"],
            [(v["id"], v["status"]) for v in t["verdicts"]],
        )
        for s in report["scenarios"]
        for t in s["trials"]
    }


def test_cassettes_hold_no_secret_and_replay_without_the_secrets(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _run(
        "--judge-model", "scripted:judge", "--secrets-file", "secrets.env", "--record", "tapes",
        report="r.json",
    )  # fmt: skip
    for role in ("agent", "user", "judge"):
        assert_no_canary(f"{role}.jsonl", (project / "tapes" / f"{role}.jsonl").read_text())
    agent = (project / "tapes" / "agent.jsonl").read_text()
    assert "***" in agent and agent.count("\n") > 10  # the echoes were kept, masked
    assert "***" in (project / "tapes" / "judge.jsonl").read_text()

    monkeypatch.delenv("OPENAI_API_KEY")
    assert "OPENAI_API_KEY" not in os.environ and "CANARY" not in os.environ
    replayed = _run("--replay", "tapes", "--replay-strict", report="again.json")  # no secrets
    assert replayed["judge_model"] == "scripted:judge"  # as recorded: none configured now
    assert _trials(replayed) == _trials(recorded)
    assert "replay: no recorded" not in json.dumps(replayed)  # nothing missed
