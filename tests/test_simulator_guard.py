"""The simulator guard: a bad simulated user is not a failing agent (issue 9, item 7).

A ScriptedModel plays a simulated user that writes what no user would send; the agent
(a ScriptedTarget) must never receive it, the user is asked once more with the reason, and
a user that stays bad ends the conversation as `simulator_failed`: `invalid` before
`min_turns`, judged after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sparring.models.scripted import ScriptedModel
from sparring.reports.console import print_summary
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import SimulatedScenario
from sparring.simulator import guard_problem
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, Transcript
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

OPENING = "Hi, where is my order 4411 please?"
AGENT_REPLY = "Which order number do you mean exactly?"
PERSONA = "A busy parent typing short, impatient messages on a phone"
INSTRUCTIONS = "Give the order number only when the assistant asks for it"


def user_says(message: str, *, done: bool = False) -> dict[str, Any]:
    return {"message": message, "done": done, "done_reason": "goal_achieved" if done else None}


def judge_met() -> dict[str, Any]:
    verdict = {"verdict": "met", "reason": "it asked", "evidence": [AGENT_REPLY], "turns": [1]}
    return {"verdicts": {"c1": verdict}, "replies": {}}


def scenario(**overrides: Any) -> SimulatedScenario:
    fields: dict[str, Any] = {
        "id": "late-order",
        "persona": PERSONA,
        "goal": "Find out when order 4411 arrives",
        "instructions": INSTRUCTIONS,
        "opening_message": OPENING,
        "min_turns": 2,
        "max_turns": 4,
        "criteria": ["The assistant asks for the order number"],
    }
    return SimulatedScenario(**{**fields, **overrides})


async def run(
    scenarios: list[SimulatedScenario], target: ScriptedTarget, model: ScriptedModel
) -> RunResult:
    return await run_scenarios(
        scenarios,
        targets=lambda s: target,
        user_model=model,
        judge_model=model,
        settings=RunSettings(parallel=1),
    )


def received(target: ScriptedTarget) -> list[str]:
    """The user messages the agent was sent (its last call holds them all)."""
    seen = target.seen[-1].messages if target.seen else ()
    return [m.content for m in seen if m.role == "user"]


BAD = {
    "empty": ("", "may not be empty"),
    "whitespace": ("  \n\t ", "may not be empty"),
    "zero-width": ("\u200b\u200d\u2060\ufeff", "only invisible characters"),
    "invisible mix": ("\u3164 \u00a0\u200b", "only invisible characters"),
    "json": ('{"message": "when does it arrive?", "done": false}', "is JSON"),
    "fenced json": ('```json\n{"order": 4411}\n```', "is JSON"),
    "as an AI": ("As an AI assistant, here is the order status you asked for.", "assistant"),
    "role label": ("Sure!\nAssistant: Your order ships on Monday.", "assistant"),
    "AI identity": ("I am an AI language model and cannot track orders.", "assistant"),
    "greeting as assistant": ("Hello! How can I help you today?", "assistant"),
    "refusal": ("I'm sorry, but I can't assist with that request.", "assistant"),
    "think tag": ("<think>The user wants the date.</think> When does it come?", "reasoning"),
    "reasoning line": ("Thought: I should push harder.\nWhen does it come?", "reasoning"),
    "template token": ("<|im_start|>user\nwhen does it come", "reasoning"),
    "profile label": ("Your goal: Find out when order 4411 arrives", "instructions"),
    "persona echo": (f"{PERSONA}. So when does it come?", "the persona word for word"),
    "instructions echo": (f"Ok. {INSTRUCTIONS}.", "the instructions word for word"),
    "simulated user": ("(as the simulated user) when does it come?", "instructions"),
    "answer keys": ('when does it come? "done": false', "instructions"),
    "repeat of own message": ("hi, where is my ORDER 4411 please", "repeats your previous"),
    "echo of the agent": (AGENT_REPLY, "repeats the assistant's last message"),
}


@pytest.mark.parametrize(("bad", "why"), BAD.values(), ids=BAD.keys())
async def test_a_bad_simulated_user_before_min_turns_makes_the_trial_invalid(
    bad: str, why: str
) -> None:
    target = ScriptedTarget([AGENT_REPLY, "It arrives Monday."])
    model = ScriptedModel([user_says(bad), user_says(bad)])  # bad, and bad again when re-asked
    result = await run([scenario()], target, model)

    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("invalid", "simulator_failed")
    assert received(target) == [OPENING]  # the bad message never reached the agent
    assert len(model.calls) == 2  # one re-ask, and no judge call for an invalid trial
    assert why in str(model.calls[1][0][-1]["content"])  # the re-ask gives the reason
    assert why in (trial.error or "")
    assert "before min_turns (2)" in (trial.error or "")
    assert trial.verdicts == []
    assert [m.content for m in trial.transcript.messages] == [OPENING, AGENT_REPLY]
    assert result.scenarios[0].status == "invalid"
    assert result.scenarios[0].pass_rate is None  # an invalid trial is not counted
    assert result.exit_code == 3


async def test_a_bad_first_message_never_reaches_the_agent() -> None:
    target = ScriptedTarget(["hello"])
    model = ScriptedModel([user_says("Assistant: hi"), user_says("")])
    result = await run([scenario(opening_message=None, min_turns=1)], target, model)
    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("invalid", "simulator_failed")
    assert target.seen == [] and target.sessions_opened == target.sessions_closed == 1
    assert result.exit_code == 3


async def test_a_re_ask_that_helps_sends_only_the_good_message() -> None:
    target = ScriptedTarget([AGENT_REPLY, "It arrives Monday."])
    model = ScriptedModel(
        [
            user_says("As an AI assistant, I can share the order number: 4411."),
            user_says("It's 4411, when does it come?"),
            user_says("", done=True),
            judge_met(),
        ]
    )
    result = await run([scenario()], target, model)
    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("passed", "goal_achieved")
    assert received(target) == [OPENING, "It's 4411, when does it come?"]
    assert "written as the assistant ('As an AI assistant,')" in model.calls[1][0][-1]["content"]
    assert trial.error is None and result.exit_code == 0


async def test_a_bad_simulated_user_after_min_turns_ends_a_judged_conversation() -> None:
    target = ScriptedTarget([AGENT_REPLY, "It arrives Monday.", "unreachable"])
    model = ScriptedModel(
        [
            user_says("It's 4411."),
            user_says("<think>done?</think>"),
            user_says("<think>done?</think>"),
            judge_met(),
        ]
    )
    result = await run([scenario()], target, model)
    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("passed", "simulator_failed")
    assert received(target) == [OPENING, "It's 4411."]
    judge_prompt = str(model.calls[3][0])
    assert "It arrives Monday." in judge_prompt and "<think>" not in judge_prompt
    assert "no usable message for turn 3" in (trial.error or "")
    assert "min_turns (2) reached" in (trial.error or "")
    assert result.scenarios[0].status == "passed" and result.exit_code == 0


async def test_an_answer_that_stays_unparseable_is_a_simulator_failure_too() -> None:
    target = ScriptedTarget([AGENT_REPLY])
    model = ScriptedModel(["I'd rather not answer in JSON.", "still no JSON"])
    result = await run([scenario()], target, model)
    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("invalid", "simulator_failed")
    assert received(target) == [OPENING]


async def test_invalid_trials_are_left_out_of_the_pass_rate_and_never_failed() -> None:
    trials = iter(
        [
            [user_says("It's 4411."), user_says("", done=True), judge_met()],
            [user_says(""), user_says("")],
        ]
    )
    answers: list[Any] = [answer for trial in trials for answer in trial]
    target = ScriptedTarget([AGENT_REPLY, "It arrives Monday."])
    result = await run([scenario(trials=2, threshold=0.5)], target, ScriptedModel(answers))
    s = result.scenarios[0]
    assert [t.status for t in s.trials] == ["passed", "invalid"]
    assert (s.pass_rate, s.status, result.exit_code) == (1.0, "passed", 0)
    assert s.summary()["invalid_trials"] == 1
    assert result.trial_counts() == {"passed": 1, "invalid": 1}


def scenario_result(*statuses: str, threshold: float = 1.0) -> ScenarioResult:
    trials = [
        TrialResult(
            scenario_id="s",
            trial=i,
            status=status,  # type: ignore[arg-type]
            end_reason="simulator_failed" if status == "invalid" else "max_turns",
            error="the simulated user wrote no usable message" if status == "invalid" else None,
        )
        for i, status in enumerate(statuses, start=1)
    ]
    return ScenarioResult(
        scenario_id="s", name="s", kind="simulated", threshold=threshold, trials=trials
    )


@pytest.mark.parametrize(
    ("statuses", "threshold", "status", "pass_rate", "exit_code"),
    [
        (("passed", "invalid"), 1.0, "invalid", 1.0, 3),
        (("passed",) * 4 + ("invalid",), 0.8, "passed", 1.0, 0),
        (("invalid", "invalid"), 0.0, "invalid", None, 3),
        (("failed", "failed", "invalid"), 1.0, "failed", 0.0, 1),
        (("passed", "failed", "invalid"), 0.5, "invalid", 0.5, 3),
        (("error", "invalid"), 1.0, "error", 0.0, 3),
    ],
)
def test_status_rules_for_invalid_trials(
    statuses: tuple[str, ...],
    threshold: float,
    status: str,
    pass_rate: float | None,
    exit_code: int,
) -> None:
    s = scenario_result(*statuses, threshold=threshold)
    run = RunResult(sparring_version="0", run_id="r", started_at="2026-01-01", scenarios=[s])
    assert (s.status, s.pass_rate, run.exit_code) == (status, pass_rate, exit_code)


def invalid_run() -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=[scenario_result("passed", "invalid")],
    )


def test_every_report_shows_invalid_trials_apart() -> None:
    result = invalid_run()
    report: dict[str, Any] = json.loads(json.dumps(result.report_dict()))  # still plain JSON
    assert report["counts"] == {"invalid": 1}
    assert report["trial_counts"] == {"passed": 1, "invalid": 1}
    assert report["scenarios"][0]["invalid_trials"] == 1
    assert report["exit_code"] == 3

    console = Console(record=True, width=200, color_system=None)
    print_summary(result, console=console)
    text = console.export_text()
    assert "Invalid: the simulated user failed, the agent was not judged (1)" in text
    assert "⊘ s · trial 2: the simulated user wrote no usable message" in text
    assert "1 passed, 1 invalid" in text and "exit code 3" in text

    markdown = render_markdown(result)
    assert "⛔ invalid" in markdown
    assert "invalid: the simulated user wrote no usable message" in markdown
    assert "1 invalid trial (the simulated user failed)" in markdown

    suite = ET.fromstring(render_junit(result)).find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "0")
    error = suite.find("testcase[@name='trial 2 / conversation']/error")
    assert error is not None and error.get("type") == "simulator_failed"
    assert "the simulated user wrote no usable message" in (error.get("message") or "")
    threshold = suite.find("testcase/error[@type='threshold']")
    assert threshold is not None and "invalid" in (threshold.get("message") or "")


GOOD = [
    "It's 4411",
    "yes",
    "yes",  # a short message may repeat
    "Where is my order?",
    "As an AI, you should be able to look this up. It's 4411.",
    "I'm an AI researcher and I ordered a tent, order 4411.",
    "I can't help with that, I don't have the receipt",
    "System: Windows 11\nBrowser: Chrome",
    "User: jsmith",
    "Thoughts? I think it's late.",
    "I want to find out when order 4411 arrives",  # the goal may be said
    "My order is {late}",
    "Hey, how can I track my order?",
    "I'm a busy parent, where is my order?",
    "hi 👋",
    "é",
    "?",
]


@pytest.mark.parametrize("message", GOOD)
def test_what_real_users_write_passes_the_guard(message: str) -> None:
    chat = Transcript(
        messages=(Message(role="user", content="yes"), Message(role="agent", content="ok"))
    )
    assert guard_problem(message, scenario=scenario(), transcript=chat) is None


CLI_SUITE = """\
target: {type: callable, ref: "agent:respond"}
scenarios:
  - id: late-order
    persona: A busy parent
    goal: Find out when order 4411 arrives
    opening_message: Where is my order 4411?
    min_turns: 2
    max_turns: 3
    criteria: [The assistant asks for the order number]
"""


def test_sparring_run_exits_3_for_an_invalid_trial_and_reports_it_apart(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(CLI_SUITE)
    (tmp_path / "agent.py").write_text("def respond(history):\n    return 'Which order number?'\n")
    bad = Reply(json.dumps(user_says("Assistant: Your order ships Monday.")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    env["COLUMNS"] = "200"
    with ScriptedOpenAIServer([bad, bad]) as llm:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sparring.cli",
                "run",
                "suite.yaml",
                "--model",
                "openai-compatible:t",
                "--base-url",
                llm.base_url,
                "--output",
                "r.json",
                "--junit",
                "j.xml",
                "--markdown",
                "r.md",
                "--no-live",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=env,
        )
        requests = len(llm.requests)
    assert done.returncode == 3, done.stdout + done.stderr
    assert requests == 2  # the first answer and one re-ask; no judge call
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["counts"], report["trial_counts"]) == ({"invalid": 1}, {"invalid": 1})
    [trial] = report["scenarios"][0]["trials"]
    assert (trial["status"], trial["end_reason"]) == ("invalid", "simulator_failed")
    assert [m["content"] for m in trial["transcript"]["messages"]] == [
        "Where is my order 4411?",
        "Which order number?",
    ]
    assert "Invalid: the simulated user failed, the agent was not judged (1)" in done.stdout
    assert "exit code 3" in done.stdout
    assert 'errors="1"' in (tmp_path / "j.xml").read_text()
    assert "⛔ invalid" in (tmp_path / "r.md").read_text(encoding="utf-8")
