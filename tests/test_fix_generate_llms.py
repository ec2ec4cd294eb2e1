"""llms.txt's Python examples of mixed scripts do what it says, against the demo agent:
`response.check` runs YAML's checks, `session.simulate` lets the simulated user (a scripted
OpenAI-compatible server) write the next message, `expect_failure` passes a test that fails,
and without a model the simulating test is `skipped`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sparring.demo.server import DemoServer
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_cli import sparring
from tests.test_llms_txt import blocks


def simulated_user(request: dict[str, Any]) -> Reply:
    """Gives the order number, then is done once the agent said where the order is."""
    assert request["response_format"]["json_schema"]["name"] == "user_turn"
    seen = " ".join(str(m.get("content")) for m in request["messages"])
    done = "shipped" in seen
    return Reply(
        json.dumps(
            {
                "message": "" if done else "It's order 10234",
                "done": done,
                "done_reason": "goal_achieved" if done else None,
            }
        )
    )


def test_the_mixed_script_examples_run_as_llms_txt_says(tmp_path: Path) -> None:
    (block,) = blocks("python")
    pattern = ("-k", "written_then_simulated|known_gap")
    with DemoServer(port=0) as demo, ScriptedOpenAIServer([simulated_user] * 4) as llm:
        (tmp_path / "test_llms.py").write_text(block.replace("http://127.0.0.1:8787", demo.url))
        report = tmp_path / "report.json"
        done = sparring(
            *("run", "test_llms.py", *pattern, "--no-store", "-o", str(report)),
            *("--model", "openai-compatible:t", "--base-url", llm.base_url),
            cwd=tmp_path,
        )
        offline = sparring("run", "test_llms.py", *pattern, "--no-store", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    scenarios = {
        s["scenario_id"].split("::")[-1]: s for s in json.loads(report.read_text())["scenarios"]
    }
    simulated = scenarios["test_written_then_simulated"]["trials"][0]
    assert simulated["status"] == "passed"
    users = [m["content"] for m in simulated["transcript"]["messages"] if m["role"] == "user"]
    assert users == ["Where is my order?", "It's order 10234"]
    assert scenarios["test_known_gap"]["trials"][0]["error"].startswith("failed as expected")
    assert "Failed as expected (1)" in done.stdout
    assert re.search(r"test_written_then_simulated: skipped", offline.stdout), offline.stdout
    assert offline.returncode == 0, offline.stdout + offline.stderr
