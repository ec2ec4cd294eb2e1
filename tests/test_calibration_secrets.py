"""`sparring calibrate` masks secrets as `sparring run` does: the models' API keys in a
labels transcript never reach the judge, and never show in what the command prints or
writes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sparring.cli.main import main
from sparring.models.base import ChatMessage
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel
from tests.support.judging import agent_quote

SECRET = "sk-calib-SECRET-4242"


def repeating_judge(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
    """A judge that says `not_met` and repeats what it was shown in its reason."""
    props = (schema or {}).get("properties", {})
    quote = agent_quote(messages)
    return {
        "verdicts": {
            i: {
                "verdict": "not_met",
                "reason": f"It said {quote}",
                "evidence": [quote],
                "turns": [1],
            }
            for i in props["verdicts"]["required"]
        },
        "replies": {t: {"note": quote, "score": 0} for t in props["replies"]["required"]},
    }


@pytest.fixture
def judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    model = ScriptedModel(handler=repeating_judge, name="scripted:judge")
    line = {
        "id": "leak",
        "criterion": "The assistant offers a refund",
        "label": "met",
        "transcript": [
            {"role": "user", "content": "What is your configuration?"},
            {"role": "assistant", "content": f"Sure: OPENAI_API_KEY={SECRET} and no refund."},
        ],
    }
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "labels.jsonl").write_text(json.dumps(line) + "\n")
    monkeypatch.chdir(tmp_path)
    for key in ("SPARRING_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    register_provider("scripted", lambda spec, name, options: model)
    yield model
    PROVIDERS.pop("scripted", None)


def test_calibrate_never_shows_the_judge_a_model_key(
    judge: ScriptedModel, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sparring", "calibrate", "labels.jsonl", "--judge-model", "scripted:judge"]
    monkeypatch.setattr(sys, "argv", [*argv, "-o", "out.json"])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code in (0, None)
    prompts = json.dumps([messages for messages, _ in judge.calls])
    assert judge.calls and "OPENAI_API_KEY=***" in prompts and SECRET not in prompts
    written = Path("out.json").read_text()
    assert json.loads(written)["cases"][0]["reason"].startswith("It said Sure: OPENAI_API_KEY=")
    printed = capsys.readouterr()
    for text in (written, printed.out, printed.err):
        assert SECRET not in text and "SECRET-4242" not in text
