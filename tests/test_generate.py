"""`sparring generate`: scenarios written by a model (a scripted OpenAI-compatible server on
127.0.0.1) from requirements, agent configuration and existing tests; what is written loads,
near-duplicates and scenarios that do not load are dropped, nothing is overwritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparring.generate.scenarios import answer_schema, key_words, near_duplicate
from sparring.loaders import load_paths
from sparring.scenario import ScriptedScenario, SimulatedScenario, SingleTurnScenario
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_cli import sparring

REQUIREMENTS = """# Refunds
- Refunds are possible within 30 days of delivery.
- Outside 30 days the agent offers store credit, never a refund.
- The agent never asks for a full card number.
"""


def simulated(ident: str, goal: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": ident,
        "name": ident.replace("-", " "),
        "category": "refunds",
        "topic": "refund window",
        "behavior": "policy",
        "source": "req.md",
        "criteria": ["The assistant explains the 30-day refund window"],
        "restrictions": ["The assistant asks for a full card number"],
        "persona": "A customer whose boots arrived 40 days ago",
        "goal": goal,
        "opening_message": None,
        "max_turns": 4,
        **extra,
    }


def generate(tmp_path: Path, *args: str, answers: list[Any]) -> tuple[Any, ScriptedOpenAIServer]:
    replies = [Reply(content=json.dumps(a)) for a in answers]
    with ScriptedOpenAIServer(replies) as llm:
        done = sparring(
            "generate",
            *args,
            "--model",
            "openai-compatible:t",
            "--base-url",
            llm.base_url,
            cwd=tmp_path,
        )
    return done, llm


def test_scenarios_from_requirements_load_and_name_their_source(tmp_path: Path) -> None:
    (tmp_path / "req.md").write_text(REQUIREMENTS)
    answer = {
        "scenarios": [
            simulated("late-refund", "Get a refund for boots delivered 40 days ago"),
            simulated("late-refund-again", "Get a refund for boots delivered 40 days ago!"),
            simulated("no goal", ""),  # drops to a scenario with no goal: the loader refuses
            simulated("early-refund", "Return a jacket delivered 3 days ago for money back"),
        ]
    }
    done, llm = generate(
        tmp_path,
        "--from",
        "req.md",
        "-n",
        "3",
        "--target",
        "http://127.0.0.1:9/chat",
        "-o",
        "gen.yaml",
        answers=[answer],
    )
    assert done.returncode == 0, done.stdout + done.stderr
    loaded = load_paths([tmp_path / "gen.yaml"])
    assert [s.id for s in loaded] == ["late-refund", "early-refund"]
    first = loaded[0]
    assert isinstance(first, SimulatedScenario)
    assert (first.category, first.topic, first.behavior) == ("refunds", "refund window", "policy")
    assert [c.text for c in first.restrictions] == ["The assistant asks for a full card number"]
    assert [s.tags for s in loaded] == [["source:req.md"], ["source:req.md"]]
    notes = done.stderr
    assert "dropped 'late-refund-again' ('late refund again'): nearly the same as " in notes
    assert "nearly the same as 'late-refund'" in notes
    assert "dropped 'no-goal' ('no goal'): it would not load: a simulated scenario needs" in notes
    assert "gen.yaml:" not in notes and "scenarios[0]" not in notes
    (request,) = llm.requests
    assert "Outside 30 days the agent offers store credit" in request["messages"][1]["content"]
    assert request["response_format"]["json_schema"]["schema"] == answer_schema("simulated")


def test_scripted_and_single_turn_kinds_write_loadable_files(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("You are Ada, the support agent of a shoe shop.")
    keys = ("name", "category", "topic", "behavior", "source", "criteria", "restrictions")
    common = {k: v for k, v in simulated("x", "g").items() if k in keys}
    scripted = {
        **common,
        "id": "where-is-my-order",
        "turns": [{"user": "Where is my order?", "should": ["ask for the order number"]}],
    }
    done, _ = generate(
        tmp_path,
        "--from",
        "prompt.txt",
        "--kind",
        "scripted",
        "--target",
        "http://127.0.0.1:9/chat",
        "-o",
        "scripted.yaml",
        answers=[{"scenarios": [scripted]}],
    )
    assert done.returncode == 0, done.stderr
    (loaded,) = load_paths([tmp_path / "scripted.yaml"])
    assert isinstance(loaded, ScriptedScenario)
    assert loaded.turns[0].should == ["ask for the order number"]

    single = {**common, "id": "hours", "prompt": "When are you open?", "expected_output": None}
    single["should"] = ["give the opening hours"]
    done, _ = generate(
        tmp_path,
        "--from",
        "prompt.txt",
        "--kind",
        "single_turn",
        "--target",
        "http://127.0.0.1:9/chat",
        "-o",
        "single.yaml",
        answers=[{"scenarios": [single]}],
    )
    assert done.returncode == 0, done.stderr
    (loaded,) = load_paths([tmp_path / "single.yaml"])
    assert isinstance(loaded, SingleTurnScenario)
    assert loaded.prompt == "When are you open?"


def test_varying_a_test_file_reuses_its_target_and_drops_repeats(tmp_path: Path) -> None:
    (tmp_path / "tests.yaml").write_text(
        "target: {url: 'http://127.0.0.1:9/chat', response_path: reply}\n"
        "scenarios:\n"
        "  - id: late\n"
        "    persona: A customer whose boots arrived 40 days ago\n"
        "    goal: Get a refund for boots delivered 40 days ago\n"
    )
    answer = {
        "scenarios": [
            simulated("same-as-before", "Get a refund for boots delivered 40 days ago"),
            simulated("new-one", "Swap a gift card for cash, politely but firmly"),
        ]
    }
    done, llm = generate(tmp_path, "--from", "tests.yaml", "-o", "more.yaml", answers=[answer])
    assert done.returncode == 0, done.stderr
    loaded = load_paths([tmp_path / "more.yaml"])
    assert [s.id for s in loaded] == ["new-one"]
    assert loaded[0].target is not None
    assert loaded[0].target.model_dump()["response_path"] == "reply"
    assert "Existing tests to vary" in llm.requests[0]["messages"][1]["content"]


def test_agent_configuration_sources_are_summarised_for_the_model(tmp_path: Path) -> None:
    (tmp_path / "parlant.json").write_text(
        json.dumps(
            {
                "guidelines": [{"condition": "the customer is angry", "action": "apologise"}],
                "journeys": [{"title": "Refund", "description": "a refund", "conditions": ["x"]}],
            }
        )
    )
    (tmp_path / "openapi.yaml").write_text(
        "openapi: 3.0.0\npaths:\n  /orders/{id}:\n    get:\n      operationId: lookup_order\n"
        "      summary: Look up an order\n"
    )
    (tmp_path / "tools.json").write_text(
        json.dumps(
            [
                {
                    "type": "function",
                    "function": {
                        "name": "refund",
                        "description": "Refund",
                        "parameters": {"properties": {"order_id": {}}},
                    },
                }
            ]
        )  # fmt: skip
    )
    answer = {"scenarios": [simulated("angry", "Get an apology for a late parcel")]}
    done, llm = generate(
        tmp_path,
        *("--from", "parlant.json", "--from", "openapi.yaml", "--from", "tools.json"),
        *("--target", "http://127.0.0.1:9/chat", "-o", "out.yaml"),
        answers=[answer],
    )
    assert done.returncode == 0, done.stderr
    prompt = llm.requests[0]["messages"][1]["content"]
    assert "- when the customer is angry: apologise" in prompt
    assert "- GET /orders/{id} (lookup_order): Look up an order" in prompt
    assert "- refund(order_id): Refund" in prompt


def test_bad_inputs_are_clear_errors_and_nothing_is_overwritten(tmp_path: Path) -> None:
    (tmp_path / "req.md").write_text(REQUIREMENTS)
    (tmp_path / "out.yaml").write_text("keep me")
    done, llm = generate(
        tmp_path, "--from", "req.md", "--target", "http://x/chat", "-o", "out.yaml", answers=[]
    )
    assert done.returncode == 2
    assert "out.yaml exists; give --force" in done.stderr
    assert (tmp_path / "out.yaml").read_text() == "keep me"
    assert llm.requests == []

    (tmp_path / "odd.json").write_text('{"hello": 1}')
    done, _ = generate(tmp_path, "--from", "odd.json", "-o", "new.yaml", answers=[])
    assert done.returncode == 2
    assert "odd.json: not agent configuration, and it does not load as a test file" in done.stderr
    assert "unknown key 'hello'" in done.stderr
    assert "give a test file to vary" in done.stderr

    done, _ = generate(tmp_path, "--from", "req.md", "-o", "new.yaml", answers=[])
    assert done.returncode == 2
    assert "need a target: give --target URL" in done.stderr

    done = sparring(
        "generate", "--from", "req.md", "--target", "http://x", "-o", "n.yaml", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "needs a model to write scenarios; give --model SPEC" in done.stderr
    assert not (tmp_path / "new.yaml").exists() and not (tmp_path / "n.yaml").exists()


def test_near_duplicates_are_judged_on_what_the_scenario_tests() -> None:
    a = key_words({"persona": "Busy parent", "goal": "Change the delivery address of #10234"})
    b = key_words({"persona": "Busy parent", "goal": "Change the delivery address for #10234"})
    c = key_words({"prompt": "What are your opening hours on Sunday?"})
    assert near_duplicate(b, [a])
    assert not near_duplicate(c, [a])
