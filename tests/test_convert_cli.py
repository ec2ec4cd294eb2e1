"""`sparring convert`: other tools' test files rewritten as sparring YAML that loads the same."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from sparring.loaders import load_paths
from sparring.scenario import AnyScenario
from tests.test_cli import sparring
from tests.test_dialects import MULTI_TURN, SINGLE_TURN, agent_eval_project, conversation_test


def same(scenarios: list[AnyScenario]) -> list[dict[str, object]]:
    return [s.model_dump(exclude={"source"}) for s in scenarios]


def test_converted_files_load_to_the_same_scenarios(tmp_path: Path) -> None:
    evals = agent_eval_project(tmp_path, "http://127.0.0.1:9", single=SINGLE_TURN, multi=MULTI_TURN)
    plainwright = tmp_path / "conversation-test.json"
    plainwright.write_text(json.dumps(conversation_test("http://127.0.0.1:9"), indent=2))
    sources = [evals / "multi.yaml", evals / "single.yaml", plainwright]
    done = sparring("convert", *map(str, sources), "-o", "converted", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[tool.agent_eval] settings are used" in done.stderr
    out = tmp_path / "converted"
    assert sorted(p.name for p in out.iterdir()) == [
        "conversation-test.yaml",
        "multi.yaml",
        "single.yaml",
    ]
    for source in sources:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the [tool.agent_eval] note
            original = load_paths([source])
        converted = out / f"{source.stem}.yaml"
        assert same(load_paths([converted])) == same(original), converted.read_text()
        assert "expect:" not in converted.read_text() and "config:" not in converted.read_text()


def test_convert_never_overwrites_without_force(tmp_path: Path) -> None:
    test = tmp_path / "t.json"
    test.write_text(json.dumps(conversation_test("http://127.0.0.1:9")))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "t.yaml").write_text("mine\n")
    done = sparring("convert", str(test), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "t.yaml exists; give --force to overwrite it" in done.stderr
    assert (tmp_path / "out" / "t.yaml").read_text() == "mine\n"
    done = sparring("convert", str(test), "-o", str(tmp_path / "out"), "--force")
    assert done.returncode == 0, done.stderr
    assert "refund-request-is-handled-politely" in (tmp_path / "out" / "t.yaml").read_text()


def test_convert_refuses_native_files_and_dialect_errors_with_file_line(tmp_path: Path) -> None:
    native = tmp_path / "native.yaml"
    native.write_text("id: n\ntarget: {url: 'http://x/chat'}\nprompt: Hi\nshould: greet\n")
    done = sparring("convert", str(native), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert f"{native}:1:1: not a pytest-agent-eval transcript" in done.stderr
    no_target = tmp_path / "no_target.yaml"
    no_target.write_text("id: v\nruns: 2\nturns:\n  - user: Hi\n")
    done = sparring("convert", str(no_target), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert f"{no_target}:1:1: this pytest-agent-eval transcript has no target" in done.stderr
    assert not (tmp_path / "out").exists()
