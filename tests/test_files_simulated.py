"""A simulated scenario's `files:` (a document the whole conversation is about, as in
Rhesis' multi-turn tests) go with every user message, resolved like other `files:`."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.errors import ConfigError
from sparring.loaders import load_paths
from sparring.models.scripted import ScriptedModel
from sparring.scenario import SimulatedScenario
from sparring.targets.scripted import ScriptedTarget
from tests.test_runner import judge_says, run, user_says

pytestmark = pytest.mark.anyio

TEST_FILE = """\
target: {url: "http://127.0.0.1:9/chat"}
scenarios:
  - id: about-the-receipt
    goal: Get a refund for the order on the receipt
    files: [receipt.txt]
    max_turns: 2
    criteria: [The assistant names the order on the receipt]
"""


def loaded(folder: Path) -> SimulatedScenario:
    (folder / "t.yaml").write_text(TEST_FILE)
    (scenario,) = load_paths([folder / "t.yaml"])
    assert isinstance(scenario, SimulatedScenario)
    return scenario


async def test_every_user_message_carries_the_scenarios_files(tmp_path: Path) -> None:
    (tmp_path / "receipt.txt").write_text("Order #10236, boots, 89.00")
    scenario = loaded(tmp_path)
    assert scenario.files == [str(tmp_path / "receipt.txt")]
    target = ScriptedTarget(["Which order?", "Order 10236: refund started."])
    model = ScriptedModel(
        [
            user_says("Refund please"),
            user_says("See the receipt"),
            judge_says("Order 10236", c1="met"),
        ]
    )
    result, _ = await run([scenario], target, model=model)
    (trial,) = result.scenarios[0].trials
    assert trial.status == "passed", trial.error
    sent = [m for m in target.seen[-1].messages if m.role == "user"]
    assert [[f.name for f in m.files] for m in sent] == [["receipt.txt"], ["receipt.txt"]]
    assert sent[0].files[0].text == "Order #10236, boots, 89.00"
    # the simulated user saw the file in the conversation when it wrote its second message
    second_prompt = " ".join(m["content"] for m in model.calls[1][0])
    assert "receipt.txt" in second_prompt


def test_a_missing_file_of_a_simulated_scenario_is_a_load_error_at_its_line(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as caught:
        loaded(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 't.yaml'}:5:13: files: 'receipt.txt'")
