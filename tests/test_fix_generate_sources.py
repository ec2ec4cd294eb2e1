"""`sparring generate --from`: Parlant's own exports (bare lists of guidelines and
journeys), lists of neither refused where they go wrong, other tools' test files and
single-scenario files varied through the test-file loader, and an output file made while
the model writes never overwritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparring.loaders import load_paths
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_cli import sparring
from tests.test_generate import generate, simulated

URL = "http://127.0.0.1:9/chat"
GUIDELINES: list[dict[str, Any]] = [  # as Parlant's `GET /guidelines` lists them
    {
        "id": "gd_1",
        "condition": "the customer asks for a refund",
        "action": "ask for the order number first",
        "enabled": True,
        "tags": [],
        "metadata": {},
    },
    {"id": "gd_2", "condition": "the customer is angry", "action": None, "enabled": True},
]
JOURNEYS = [  # as Parlant's `GET /journeys` lists them: conditions are guideline ids
    {"id": "jr_1", "title": "Refund", "description": "Check the window", "conditions": ["gd_1"]},
]


def test_parlants_bare_lists_of_guidelines_and_journeys_are_its_configuration(
    tmp_path: Path,
) -> None:
    (tmp_path / "guidelines.json").write_text(json.dumps(GUIDELINES))
    (tmp_path / "journeys.json").write_text(json.dumps(JOURNEYS))
    answer = {"scenarios": [simulated("refund", "Get a refund for order 10236")]}
    done, llm = generate(
        tmp_path,
        *("--from", "guidelines.json", "--from", "journeys.json", "--target", URL),
        *("-o", "out.yaml"),
        answers=[answer],
    )
    assert done.returncode == 0, done.stderr
    prompt = llm.requests[0]["messages"][1]["content"]
    assert "The agent's Parlant guidelines and journeys (guidelines.json)" in prompt
    assert "- when the customer asks for a refund: ask for the order number first" in prompt
    assert "- when the customer is angry: (observe)" in prompt
    assert "?()" not in prompt
    assert "- Refund: Check the window" in prompt
    (tmp_path / "both.json").write_text(json.dumps([*GUIDELINES, *JOURNEYS]))
    done, llm = generate(
        tmp_path, "--from", "both.json", "--target", URL, "-o", "both.yaml", answers=[answer]
    )
    assert done.returncode == 0, done.stderr
    # a journey's condition given as a guideline's id reads as that guideline's condition
    assert (
        "- Refund: Check the window (when: the customer asks for a refund)"
        in (llm.requests[0]["messages"][1]["content"])
    )


def test_a_list_of_neither_tools_nor_guidelines_is_refused_at_its_item(tmp_path: Path) -> None:
    (tmp_path / "people.yaml").write_text(
        "- name: refund\n  description: Refund an order\n- {first: Ada, last: Lovelace}\n"
    )
    (tmp_path / "mixed.json").write_text(
        json.dumps([GUIDELINES[0], {"name": "t", "parameters": {}}])
    )
    (tmp_path / "empty.json").write_text("[]")
    for name, said in (
        ("people.yaml", "people.yaml:3:3: item 2 of the list is neither a tool"),
        ("mixed.json", "mixed.json:1:1: the list mixes tools with Parlant guidelines"),
        ("empty.json", "empty.json: not agent configuration, and it does not load as a test"),
    ):
        done, llm = generate(
            tmp_path, "--from", name, "--target", URL, "-o", "out.yaml", answers=[]
        )
        assert done.returncode == 2, done.stdout
        assert f"--from {said}" in done.stderr
        assert llm.requests == []
    assert "Parlant guidelines and journeys (a list of {condition, action}" in done.stderr
    # a list of nothing known (here: scenarios) gets the loader's word on test files
    (tmp_path / "scenarios.yaml").write_text("- id: a\n  prompt: Hi\n")
    done, _ = generate(tmp_path, "--from", "scenarios.yaml", "-o", "out.yaml", answers=[])
    assert done.returncode == 2
    assert "put the list under `scenarios:`" in done.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_mcp_tools_are_listed_with_their_parameters(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    tool = {"name": "lookup_order", "description": "Find an order", "inputSchema": schema}
    (tmp_path / "mcp.json").write_text(json.dumps({"tools": [tool]}))
    answer = {"scenarios": [simulated("status", "Learn where order 10234 is")]}
    done, llm = generate(
        tmp_path, "--from", "mcp.json", "--target", URL, "-o", "out.yaml", answers=[answer]
    )
    assert done.returncode == 0, done.stderr
    assert "- lookup_order(order_id): Find an order" in llm.requests[0]["messages"][1]["content"]


AGENT_EVAL = """\
id: refund_multi_turn
threshold: 0.66
runs: 3
turns:
  - user: "I'd like a refund please."
    expect:
      reply_contains_any: ["order number"]
"""
PLAINWRIGHT = {
    "name": "Late parcel",
    "kind": "conversation",
    "natural_language": "A customer chases a late parcel",
    "config": {
        "target": {"url": URL},
        "persona": "A customer whose parcel is late",
        "goal": "Learn when order 10237 arrives",
        "success_criteria": ["The agent gives the new delivery date"],
    },
}
SINGLE = """\
id: boots
target: {url: "http://127.0.0.1:9/chat", response_path: reply}
persona: A customer whose boots arrived 40 days ago
goal: Get a refund for boots delivered 40 days ago
"""


def test_other_tools_test_files_and_single_scenarios_are_varied(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.agent_eval]\nthreshold = 0.8\n\n[tool.agent_eval.target]\nurl = "{URL}"\n'
    )
    (tmp_path / "refund.yaml").write_text(AGENT_EVAL)
    (tmp_path / "late.json").write_text(json.dumps(PLAINWRIGHT))
    (tmp_path / "boots.yaml").write_text(SINGLE)
    answer = {
        "scenarios": [
            simulated("boots-again", "Get a refund for boots delivered 40 days ago"),
            simulated("gift-card", "Swap a gift card for cash, politely but firmly"),
        ]
    }
    for name, seen in (
        ("refund.yaml", "I'd like a refund please."),
        ("late.json", "Learn when order 10237 arrives"),
        ("boots.yaml", "A customer whose boots arrived 40 days ago"),
    ):
        out = f"more-{name}.yaml"
        done, llm = generate(tmp_path, "--from", name, "-o", out, answers=[answer])
        assert done.returncode == 0, done.stderr
        prompt = llm.requests[0]["messages"][1]["content"]
        assert f"do not repeat them) ({name})" in prompt
        assert seen in prompt
        loaded = load_paths([tmp_path / out])
        assert loaded[-1].id == "gift-card"
        assert loaded[-1].tags == [f"source:{name}"]
        assert loaded[-1].target is not None and loaded[-1].target.model_dump()["url"] == URL
    # the single scenario's own target (response_path and all) is the generated file's,
    # and the generated repeat of its scenario is dropped, naming it
    assert [s.id for s in loaded] == ["gift-card"]
    assert loaded[0].target is not None
    assert loaded[0].target.model_dump()["response_path"] == "reply"
    assert "dropped 'boots-again' ('boots again'): nearly the same as 'boots' of boots.yaml" in (
        done.stderr
    )


def test_a_test_file_that_does_not_load_says_why_and_what_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "refund.yaml").write_text(AGENT_EVAL)  # no target anywhere
    done, llm = generate(tmp_path, "--from", "refund.yaml", "-o", "o.yaml", answers=[])
    assert done.returncode == 2
    assert "--from refund.yaml: not agent configuration, and it does not load" in done.stderr
    assert "refund.yaml:1:1: this pytest-agent-eval transcript has no target" in done.stderr
    assert "give a test file to vary" in done.stderr
    assert llm.requests == []


def test_an_output_file_made_while_the_model_writes_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "req.md").write_text("Refunds within 30 days.")
    answer = {"scenarios": [simulated("late", "Get a refund for boots delivered 40 days ago")]}

    def meanwhile(request: dict[str, Any]) -> Reply:
        (tmp_path / "out.yaml").write_text("written meanwhile")
        return Reply(content=json.dumps(answer))

    with ScriptedOpenAIServer([meanwhile]) as llm:
        done = sparring(
            *("generate", "--from", "req.md", "--target", URL, "-o", "out.yaml"),
            *("--model", "openai-compatible:t", "--base-url", llm.base_url),
            cwd=tmp_path,
        )
    assert done.returncode == 2
    assert "out.yaml exists; give --force to overwrite it" in done.stderr
    assert (tmp_path / "out.yaml").read_text() == "written meanwhile"
