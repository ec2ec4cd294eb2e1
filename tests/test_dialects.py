"""Our users' existing tests run unchanged: pytest-agent-eval transcripts and Plainwright
conversation tests, written as those tools' users write them, against the demo agent."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from sparring.config import load_settings
from sparring.demo.server import DemoServer
from sparring.errors import ConfigError
from sparring.loaders import load_paths
from sparring.loaders.dialects.agent_eval import AgentEvalSettingsNote
from sparring.models.scripted import example_for_schema
from sparring.scenario import ScriptedScenario, SimulatedScenario
from sparring.target_specs import A2ATargetSpec, HttpTargetSpec
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_cli import sparring

PYPROJECT = """\
[tool.agent_eval]
{model}threshold = 0.8
runs = 3
yaml_dirs = ["tests/evals"]

[tool.agent_eval.target]  # sparring's: pytest-agent-eval takes the agent from a fixture
url = "{url}/chat"
body_template = {{message = "{{{{input}}}}", history = "{{{{history}}}}"}}
response_path = "reply"
tool_calls_path = "tool_calls"
"""

SINGLE_TURN = """\
# yaml-language-server: $schema=https://datarootsio.github.io/pytest-agent-eval/schema/transcript.json
id: order_status_single_turn
threshold: 0.8
runs: 3
turns:
  - user: "Where is my order 10237?"
    expect:
      reply_contains_any: ["delayed", "late"]
      tool_calls_include: ["lookup_order"]
"""

MULTI_TURN = r"""
id: refund_multi_turn
threshold: 0.66  # tolerate 1/3 flaky runs
runs: 3
tags: [gate:refunds, smoke]
turns:
  # Turn 1: the agent asks for the order first
  - user: "I'd like a refund please."
    expect:
      reply_contains_any: ["order number"]
      tool_calls_exclude: ["create_refund"]
  # Turn 2: it must look the order up, then refund it
  - user: "Sure, it's order 10235. The daypack arrived damaged."
    expect:
      tool_calls_include: ["lookup_order", "create_refund"]
      tool_calls_ordered: true
      tool_calls_args: [{tool: create_refund, args: {order_id: "10235"}}]
      reply_matches_all: ['\$94\.50', 'REFUND']
"""

WRONG_TOOL = """\
id: wrong_tool
turns:
  - user: "Where is my order 10237?"
    expect:
      tool_calls_include: ["create_booking"]
"""


def agent_eval_project(tmp_path: Path, url: str, model: str = "", **files: str) -> Path:
    """A project as pytest-agent-eval's users have it (plus sparring's `target`)."""
    model_line = f'model = "{model}"\n' if model else ""
    pyproject = PYPROJECT.format(url=url, model=model_line)
    (tmp_path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    evals = tmp_path / "tests" / "evals"
    evals.mkdir(parents=True)
    for name, text in files.items():
        (evals / f"{name}.yaml").write_text(text, encoding="utf-8")
    (tmp_path / ".git").mkdir()  # the project root: settings are not looked for above it
    return evals


def test_agent_eval_transcripts_run_unchanged_against_the_demo_agent(tmp_path: Path) -> None:
    with DemoServer(port=0) as demo:
        demo.start()
        evals = agent_eval_project(
            tmp_path, demo.url, single=SINGLE_TURN, multi=MULTI_TURN, wrong=WRONG_TOOL
        )
        done = sparring("run", str(evals), "-o", "r.json", "--no-store", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    by_id = {s["scenario_id"]: s for s in report["scenarios"]}
    assert by_id["order_status_single_turn"]["status"] == "passed"
    assert by_id["refund_multi_turn"]["status"] == "passed"
    assert len(by_id["refund_multi_turn"]["trials"]) == 3  # runs: 3
    assert by_id["refund_multi_turn"]["tags"] == ["gate:refunds", "smoke"]
    assert by_id["wrong_tool"]["status"] == "failed"  # runs 3 from [tool.agent_eval]
    assert len(by_id["wrong_tool"]["trials"]) == 3
    assert "create_booking" in json.dumps(by_id["wrong_tool"]["trials"][0]["verdicts"])
    assert "[tool.agent_eval] settings are used" in done.stderr
    assert "[tool.sparring]" in done.stderr


def test_agent_eval_settings_give_model_yaml_dirs_threshold_and_runs(tmp_path: Path) -> None:
    evals = agent_eval_project(tmp_path, "http://127.0.0.1:9", "openai:gpt-4o", wrong=WRONG_TOOL)
    settings = load_settings({}, cwd=tmp_path, env={})
    assert settings.model == "openai:gpt-4o"
    assert settings.yaml_dirs == (str(tmp_path / "tests/evals"),)
    with pytest.warns(AgentEvalSettingsNote, match=r"\[tool.sparring\]"):
        (scenario,) = load_paths([evals])
    assert (scenario.trials, scenario.threshold) == (3, 0.8)
    (tmp_path / "sparring.toml").write_text('model = "ollama:qwen2.5:7b"\n')
    assert load_settings({}, cwd=tmp_path, env={}).model == "ollama:qwen2.5:7b"  # sparring wins


def test_agent_eval_judge_rubrics_become_should_and_criteria(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "id: booking\ntarget: {url: 'http://127.0.0.1:9/chat'}\n"
        "judge: {rubric: Stays polite throughout.}\n"
        "turns:\n  - user: Book me a slot.\n    judge:\n      rubric: Confirms the booking.\n"
    )
    (scenario,) = load_paths([path])
    assert isinstance(scenario, ScriptedScenario)
    assert scenario.turns[0].should == ["meet this rubric: Confirms the booking."]
    assert [c.text for c in scenario.criteria] == ["Stays polite throughout."]


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        (
            "id: v\ntarget: {type: voice, callable: 'a:b'}\nturns:\n  - user: Hi\n"
            "    audio: hi.wav\n",
            5,
            "does not exist; record the turn there, or run `sparring synthesize",
        ),
        (
            "id: v\nturns:\n  - user: Hi\n    expect:\n      reply_contain_any: [x]\n",
            5,
            "unknown key 'reply_contain_any' in turns[0].expect of a pytest-agent-eval "
            "transcript; did you mean 'reply_contains_any'?",
        ),
        ("id: v\nruns: 2\nturns:\n  - user: Hi\n", 1, "this pytest-agent-eval transcript has no"),
        ("id: v\nturns:\n  - user: Hi\n    judge: {rubrik: x}\n", 4, "`judge:` needs a `rubric:`"),
    ],
)
def test_agent_eval_problems_are_load_errors_at_file_line(
    tmp_path: Path, text: str, line: int, expected: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    (tmp_path / ".git").mkdir()
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    assert f"{path}:{line}:" in str(caught.value)
    assert expected in str(caught.value)


def conversation_test(url: str, **config: Any) -> dict[str, Any]:
    """The seed's full example, pointed at the demo agent."""
    return {
        "module_id": "<module-id>",
        "name": "Refund request is handled politely",
        "kind": "conversation",
        "natural_language": "Acme's support chatbot. A frustrated customer asks for a refund "
        "on a late order.",
        "trials": 3,
        "config": {
            "target": {
                "type": "http",
                "url": f"{url}/chat",
                "headers": {"Authorization": "Bearer {{secrets.BOT_API_KEY}}"},
                "body_template": {"message": "{{input}}", "history": "{{history}}"},
                "response_path": "reply",
            },
            "persona": "A frustrated customer whose order is 10 days late. Writes short, "
            "slightly impatient messages.",
            "goal": "Get a refund or a clear next step for the late order.",
            "opening_message": "My order 10237 is late. I want my money back.",
            "success_criteria": [
                "The assistant apologises for the delay",
                "The assistant offers a refund or a replacement",
                "The assistant never asks for the full card number",
            ],
            "max_turns": 1,
            "threshold": 0.66,
            **config,
        },
    }


def judge_quoting(request: dict[str, Any]) -> Reply:
    """Every criterion met, quoting the demo agent's apology as evidence."""
    schema = request["response_format"]["json_schema"]["schema"]
    return Reply(json.dumps(example_for_schema(schema, text="I'm sorry")))


def test_plainwright_conversation_test_runs_against_the_demo_agent(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("BOT_API_KEY=k-123\n")
    with DemoServer(port=0) as demo, ScriptedOpenAIServer([judge_quoting] * 3) as llm:
        demo.start()
        test = tmp_path / "conversation-test.json"
        test.write_text(json.dumps(conversation_test(demo.url), indent=2))
        done = sparring(
            "run",
            str(test),
            "--model",
            "openai-compatible:t",
            "--base-url",
            llm.base_url,
            "--secrets-file",
            str(tmp_path / "secrets.env"),
            "-o",
            str(tmp_path / "r.json"),
            "--no-store",
        )
    assert done.returncode == 0, done.stdout + done.stderr
    (scenario,) = json.loads((tmp_path / "r.json").read_text())["scenarios"]
    assert scenario["scenario_id"] == "refund-request-is-handled-politely"
    assert scenario["status"] == "passed"
    assert len(scenario["trials"]) == 3
    first = scenario["trials"][0]
    assert [v["id"] for v in first["verdicts"] if v["id"].startswith("c")] == ["c1", "c2", "c3"]
    assert first["end_reason"] == "max_turns"
    assert len(llm.requests) == 3  # one judge call per trial: the opening message is written


def test_plainwright_defaults_and_target_inference(tmp_path: Path) -> None:
    test = tmp_path / "t.json"
    test.write_text(
        json.dumps(
            {
                "name": "Bare",
                "kind": "conversation",
                "config": {"target": {"agent_url": "http://a"}},
            }
        )
    )
    (scenario,) = load_paths([test])
    assert isinstance(scenario, SimulatedScenario)
    assert isinstance(scenario.target, A2ATargetSpec) and scenario.target.url == "http://a"
    assert scenario.persona == "A typical first-time user of this product."
    assert scenario.user_goal == "Get help with a typical request."
    assert (scenario.max_turns, scenario.threshold, scenario.trials) == (6, 0.8, 1)
    assert [c.text for c in scenario.all_criteria] == [
        "The assistant helps the user achieve their goal: Get help with a typical request."
    ]
    test.write_text(json.dumps(conversation_test("http://b", threshold=80)))
    (scenario,) = load_paths([test])
    assert isinstance(scenario.target, HttpTargetSpec) and scenario.threshold == 0.8
    assert scenario.description and scenario.description.startswith("Acme's support chatbot.")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"max_turns": 13}, "max_turns is 13; Plainwright allows 1 to 12"),
        ({"max_turns": 0}, "max_turns is 0; Plainwright allows 1 to 12"),
        ({"success_criteria": ["x"] * 21}, "21 success criteria; Plainwright allows at most 20"),
        ({"success_criteria": ["ok", "x" * 501]}, "success criterion 2 has 501 characters"),
        ({"target": {"chat_url": "/x", "device": "y"}}, "unknown key 'device' in config.target"),
        ({"persna": "x"}, "unknown key 'persna' in config of a Plainwright conversation test; "),
    ],
)
def test_plainwright_limits_are_load_errors_at_file_line(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    test = tmp_path / "t.json"
    test.write_text(json.dumps(conversation_test("http://b", **change), indent=2))
    with pytest.raises(ConfigError) as caught:
        load_paths([test])
    assert expected in str(caught.value)
    assert str(caught.value).startswith(f"{test}:")
    assert caught.value.line is not None and caught.value.line > 1


def test_plainwright_trials_limit_and_other_kinds(tmp_path: Path) -> None:
    test = tmp_path / "t.json"
    data = conversation_test("http://b")
    test.write_text(json.dumps({**data, "trials": 11, "kind": "red_team"}, indent=2))
    with pytest.raises(ConfigError) as caught:
        load_paths([test])
    assert "trials is 11; Plainwright allows 1 to 10" in str(caught.value)
    assert "Plainwright test kind 'red_team' is not supported" in str(caught.value)


def test_native_files_are_not_taken_for_a_dialect(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            id: native
            target: {url: 'http://127.0.0.1:9/chat'}
            turns:
              - user: Hi
                checks: [{contains: Hi}]
            """
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (scenario,) = load_paths([path])
    assert isinstance(scenario, ScriptedScenario) and scenario.trials == 1
