"""Scripts that mix written user lines, written agent lines and simulated stretches
(`agent:` and `simulate: N` steps), with checks and `should`s after any step."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sparring.loaders.yaml import load_text
from sparring.models.scripted import ScriptedModel
from sparring.scenario import ScriptedScenario
from sparring.targets.scripted import ScriptedTarget
from tests.test_runner import judge_says, run, user_says

pytestmark = pytest.mark.anyio

MIXED = """
target: {url: "http://127.0.0.1:9/chat"}
scenarios:
  - id: mixed
    persona: An impatient customer
    goal: Learn where order 10234 is
    turns:
      - agent: Hi, I'm Ada from Northwind. How can I help?
      - user: Where is my order?
        checks: [{contains: order number}]
      - simulate: 2
        should: give the order's status
      - user: Thanks, bye
"""


def mixed() -> ScriptedScenario:
    (scenario,) = load_text(MIXED, path="mixed.yaml")
    assert isinstance(scenario, ScriptedScenario)
    return scenario


async def test_written_agent_lines_simulated_stretches_and_checks_in_one_script() -> None:
    target = ScriptedTarget(
        ["What's your order number?", "Which order?", "Order 10234 has shipped.", "Bye!"]
    )
    model = ScriptedModel(
        [
            user_says("It's 10234"),
            user_says("10234, I said"),
            judge_says("Order 10234 has shipped", **{"t3.should1": "met"}),
        ]
    )
    result, _ = await run([mixed()], target, model=model)
    (trial,) = result.scenarios[0].trials
    assert trial.status == "passed", trial
    roles = [(m.role, m.content) for m in trial.transcript.messages]
    assert roles[0] == ("agent", "Hi, I'm Ada from Northwind. How can I help?")
    assert [c for r, c in roles if r == "user"] == [
        "Where is my order?",
        "It's 10234",
        "10234, I said",
        "Thanks, bye",
    ]
    # the target got the written opening line as history with the first message
    first = target.seen[0].messages
    assert [m.role for m in first] == ["agent", "user"]
    statuses = {v.id: v.status for v in trial.verdicts}
    assert (statuses["t1.check1"], statuses["t3.should1"]) == ("met", "met")
    assert len(model.calls) == 3  # two simulated messages + one judge call


async def test_a_simulated_user_done_early_ends_its_stretch_only() -> None:
    target = ScriptedTarget(["What's your order number?", "It has shipped.", "Bye!"])
    model = ScriptedModel(
        [
            user_says("It's 10234"),
            user_says("", done=True, reason="goal_achieved"),
            judge_says("It has shipped", **{"t2.should1": "met"}),
        ]
    )
    result, _ = await run([mixed()], target, model=model)
    (trial,) = result.scenarios[0].trials
    users = [m.content for m in trial.transcript.messages if m.role == "user"]
    assert users == ["Where is my order?", "It's 10234", "Thanks, bye"]
    assert any(v.id == "t2.should1" and v.status == "met" for v in trial.verdicts)


async def test_a_script_that_simulates_is_skipped_without_a_model_and_sends_nothing() -> None:
    target = ScriptedTarget([])
    result, _ = await run([mixed()], target)
    (trial,) = result.scenarios[0].trials
    assert trial.status == "skipped"
    assert target.seen == []


async def test_a_bad_simulated_user_in_a_script_makes_the_trial_invalid() -> None:
    target = ScriptedTarget(["What's your order number?"])
    bad: list[Any] = [user_says('{"done": true}')] * 2
    result, _ = await run([mixed()], target, model=ScriptedModel(bad))
    (trial,) = result.scenarios[0].trials
    assert trial.status == "invalid"
    assert "simulate: 2" in (trial.error or "")
    assert len(target.seen) == 1  # the guarded message never reached the agent


async def test_scripts_without_simulate_steps_still_run_without_a_model() -> None:
    scenario = ScriptedScenario(
        id="opening",
        turns=[{"agent": "Hello!"}, {"user": "Hi", "checks": [{"contains": "order"}]}],
    )
    target = ScriptedTarget(["Your order number?"])
    result, _ = await run([scenario], target)
    (trial,) = result.scenarios[0].trials
    assert trial.status == "passed"
    assert trial.verdicts[0].id == "t1.check1"


@pytest.mark.parametrize(
    ("turn", "problem"),
    [
        ({"user": "a", "agent": "b"}, "exactly one of `user: TEXT`"),
        ({"checks": [{"contains": "x"}]}, "it has none"),
        ({"agent": "Hello", "should": "greet"}, "an `agent:` turn is written history"),
        ({"simulate": 0}, "greater than or equal to 1"),
        ({"simulate": 2, "files": ["a.txt"]}, "no files"),
    ],
)
def test_bad_steps_are_load_errors_that_say_how_to_write_them(
    turn: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem.replace("`", ".")):
        ScriptedScenario(id="x", goal="g", turns=[{"user": "hi"}, turn])


def test_simulate_needs_a_goal_and_checks_count_simulated_turns() -> None:
    with pytest.raises(ValidationError, match="needs the scenario's `goal`"):
        ScriptedScenario(id="x", turns=[{"simulate": 2}])
    with pytest.raises(ValidationError, match="sends the agent nothing"):
        ScriptedScenario(id="x", turns=[{"agent": "hello"}])
    ok = ScriptedScenario(
        id="x", goal="g", turns=[{"simulate": 2, "checks": [{"contains": "a", "turn": 2}]}]
    )
    assert ok.simulates
    with pytest.raises(ValidationError, match="looks at turn 3"):
        ScriptedScenario(
            id="x", goal="g", turns=[{"simulate": 2, "checks": [{"contains": "a", "turn": 3}]}]
        )


def test_a_bad_step_in_a_file_is_an_error_at_its_line() -> None:
    from sparring.errors import ConfigError

    text = MIXED.replace("      - simulate: 2\n", "      - simulate: 2\n        user: hi\n")
    with pytest.raises(ConfigError) as caught:
        load_text(text, path="mixed.yaml")
    assert "mixed.yaml:11:9" in str(caught.value)
    assert "exactly one of `user: TEXT`" in str(caught.value)
