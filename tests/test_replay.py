"""`sparring run --record DIR` / `--replay DIR` / `--replay-strict` / `--live-role ROLE`:
every model answer and agent reply kept in cassettes (secrets masked) and a later run
answered from them, role by role; and `--replay-users RUN`: a stored run's simulated user
messages sent again to the current agent, with no simulator call (issue 11, section 3)."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.errors import UserError
from sparring.models.base import ChatMessage
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel, example_for_schema
from tests.support.judging import agent_quote

# Echoes the user; counts its calls in calls.log; refuses to answer once `forbid` exists.
AGENT = """
from pathlib import Path

def agent(history):
    if Path("forbid").exists():
        raise RuntimeError("the agent was called")
    with open("calls.log", "a") as log:
        log.write("call\\n")
    return "You said: " + history[-1]["content"]
"""
SUITE = """target: {type: callable, ref: 'replay_agent:agent'}
scenarios:
  - id: refund
    persona: A customer
    goal: Get a refund
    max_turns: 3
    trials: 3
    criteria: [The assistant answers]
  - id: booking
    prompt: Book me a slot at 10am
    trials: 2
    should: confirm the booking
"""


class Models:
    """The `scripted:` provider: `scripted:user` says a new numbered message each call (so
    every trial's conversation differs; the first is answered last, so the cassette does not
    hold the trials in the order they start), `scripted:judge` finds everything met, quoting
    the agent; `scripted:broken` fails every call. Every model built is kept, to count calls."""

    def __init__(self) -> None:
        self.built: list[ScriptedModel] = []
        self.numbers = itertools.count(1)

    def build(self, name: str) -> ScriptedModel:
        async def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
            if name == "broken":
                raise RuntimeError("a live model was called")
            if name == "user":
                number = next(self.numbers)
                if number == 1:  # answered last: recorded after the other trials' first
                    await anyio.sleep(0.2)
                return {"message": f"Message {number}", "done": False}
            return example_for_schema(schema or {}, text=agent_quote(messages))

        model = ScriptedModel(handler=answer, name=f"scripted:{name}")
        if name == "seedless":  # like Anthropic's: its judge calls send no seed
            model.sends_seed = False  # pyright: ignore[reportAttributeAccessIssue]
        self.built.append(model)
        return model

    @property
    def calls(self) -> int:
        return sum(len(m.calls) for m in self.built)


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "replay_agent.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for key in ("SPARRING_MODEL", "SPARRING_USER_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    made = Models()
    register_provider("scripted", lambda spec, name, options: made.build(name))
    yield made
    PROVIDERS.pop("scripted", None)
    sys.modules.pop("replay_agent", None)  # each test's agent is its own


def _sparring(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _run(*args: str, report: str = "r.json") -> dict[str, Any]:
    done = _sparring("run", "suite.yaml", "--no-live", "-p", "4", "-o", report, *args)
    assert done.exit_code in (0, 1, 3), done.output
    return json.loads(Path(report).read_text())


LIVE = ("--user-model", "scripted:user", "--judge-model", "scripted:judge")
DEAD = ("--user-model", "scripted:broken", "--judge-model", "scripted:broken")


def _agent_calls() -> int:
    log = Path("calls.log")
    return len(log.read_text().splitlines()) if log.exists() else 0


def _trials(report: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (scenario, trial): its status, transcript (without latencies) and verdicts."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for scenario in report["scenarios"]:
        for t in scenario["trials"]:
            messages = [(m["role"], m["content"]) for m in t["transcript"]["messages"]]
            verdicts = [(v["id"], v["status"], v["reason"]) for v in t["verdicts"]]
            out[scenario["scenario_id"], t["trial"]] = {
                "status": t["status"],
                "messages": messages,
                "verdicts": verdicts,
            }
    return out


def test_a_strict_replay_gives_the_recorded_run_with_no_live_call(models: Models) -> None:
    recorded = _run(*LIVE, "--record", "tapes")
    assert _agent_calls() == 3 * 3 + 2 and models.calls > 0
    assert {(k, t["status"]) for k, t in _trials(recorded).items()} == {
        (("refund", n), "passed") for n in (1, 2, 3)
    } | {(("booking", n), "passed") for n in (1, 2)}
    Path("forbid").write_text("")  # from now on the agent errs any trial that calls it
    calls = models.calls
    replayed = _run(*DEAD, "--replay", "tapes", "--replay-strict", report="again.json")
    assert models.calls == calls and _agent_calls() == 11  # nothing live
    assert _trials(replayed) == _trials(recorded)  # each trial its own conversation
    assert replayed["user_model"] == "scripted:broken"  # named as configured


def test_a_strict_replay_needs_no_model_configured_and_names_the_recorded_one(
    models: Models,
) -> None:
    recorded = _run(*LIVE, "--record", "tapes")
    replayed = _run("--replay", "tapes", "--replay-strict", report="again.json")
    assert _trials(replayed) == _trials(recorded)
    assert (replayed["user_model"], replayed["judge_model"]) == ("scripted:user", "scripted:judge")


def test_a_strict_miss_is_a_trial_error_naming_the_role_and_what_is_missing(
    models: Models,
) -> None:
    _run(*LIVE, "--record", "tapes")
    Path("suite.yaml").write_text(SUITE.replace("Book me a slot at 10am", "Book me at 11am"))
    replayed = _run(*DEAD, "--replay", "tapes", "--replay-strict", report="again.json")
    (booking,) = [s for s in replayed["scenarios"] if s["scenario_id"] == "booking"]
    assert [t["status"] for t in booking["trials"]] == ["error", "error"]
    error = booking["trials"][0]["error"]
    assert "replay: no recorded agent reply for turn 1 (the user says 'Book me at 11am')" in error
    assert "of scenario 'booking' trial 1" in error and "tapes/agent.jsonl" in error
    assert "--live-role agent" in error
    assert _agent_calls() == 11  # the miss called nothing
    refund = _trials(replayed)
    assert all(refund["refund", n]["status"] == "passed" for n in (1, 2, 3))


def test_a_judge_miss_is_an_error_verdict_naming_the_judge(models: Models) -> None:
    _run(*LIVE, "--record", "tapes")
    Path("suite.yaml").write_text(SUITE.replace("confirm the booking", "confirm the slot"))
    replayed = _run(*DEAD, "--replay", "tapes", "--replay-strict", report="again.json")
    booking = _trials(replayed)["booking", 1]
    assert booking["status"] == "error"
    ((_, status, reason),) = booking["verdicts"]
    assert status == "error" and "replay: no recorded judge answer" in reason
    assert "--live-role judge" in reason


def test_live_role_judge_replays_the_conversations_and_asks_only_the_judge(
    models: Models,
) -> None:
    recorded = _run(*LIVE, "--record", "tapes")
    Path("forbid").write_text("")
    before = len(models.built)
    replayed = _run(
        "--user-model",
        "scripted:broken",
        "--judge-model",
        "scripted:judge",
        "--replay",
        "tapes",
        "--replay-strict",
        "--live-role",
        "judge",
        report="again.json",
    )
    assert _trials(replayed) == _trials(recorded)
    (judge,) = models.built[before:]  # the replayed user's model is never even built
    assert judge.name == "scripted:judge" and len(judge.calls) == 3 + 2  # one per trial


def test_live_role_agent_sends_the_replayed_user_messages_to_the_live_agent(
    models: Models,
) -> None:
    _run(*LIVE, "--record", "tapes")
    Path("replay_agent.py").write_text(AGENT.replace("You said: ", "New agent heard: "))
    sys.modules.pop("replay_agent", None)
    replayed = _run(*LIVE, "--replay", "tapes", "--live-role", "agent", report="again.json")
    first = _trials(replayed)["refund", 1]["messages"][:2]
    # turn 1's user message is replayed (it depends on nothing the agent said), the agent
    # answers live, and the user's next message, asked about a new reply, is live too
    assert first == [("user", "Message 1"), ("agent", "New agent heard: Message 1")]
    assert _agent_calls() == 2 * 11


def test_a_replay_that_misses_without_strict_asks_live_and_records_it(models: Models) -> None:
    _run(*LIVE, "--record", "tapes")
    Path("suite.yaml").write_text(SUITE.replace("trials: 2", "trials: 3"))
    calls = _agent_calls()
    _run(*LIVE, "--replay", "tapes", "--record", "tapes", report="again.json")
    assert _agent_calls() == calls + 1  # only the new trial
    Path("forbid").write_text("")
    again = _run(*DEAD, "--replay", "tapes", "--replay-strict", report="third.json")
    assert [t["status"] for s in again["scenarios"] for t in s["trials"]] == ["passed"] * 6


def test_no_recorded_answer_is_used_twice_so_extra_trials_are_misses(models: Models) -> None:
    _run(*LIVE, "--record", "tapes")
    Path("suite.yaml").write_text(SUITE.replace("trials: 2", "trials: 3"))
    Path("forbid").write_text("")
    replayed = _run(*DEAD, "--replay", "tapes", "--replay-strict", report="again.json")
    booking = [s for s in replayed["scenarios"] if s["scenario_id"] == "booking"][0]
    assert [t["status"] for t in booking["trials"]] == ["passed", "passed", "error"]


def test_cassettes_are_json_lines_one_per_role(models: Models) -> None:
    _run(*LIVE, "--record", "tapes")
    for role in ("agent", "user", "judge"):
        lines = Path("tapes", f"{role}.jsonl").read_text().splitlines()
        assert json.loads(lines[0]) == {"cassette": role, "version": 2}
        entries = [json.loads(line) for line in lines[1:]]
        assert all(len(e["key"]) == 64 and e["scenario"] and e["trial"] >= 1 for e in entries)
    agent = [json.loads(line) for line in Path("tapes/agent.jsonl").read_text().splitlines()[1:]]
    booking = [e for e in agent if e["scenario"] == "booking"]
    assert booking[0]["request"] == {"turn": 1, "user": "Book me a slot at 10am"}
    assert booking[0]["reply"]["content"] == "You said: Book me a slot at 10am"
    judge = Path("tapes/judge.jsonl").read_text().splitlines()[1:]
    assert len(judge) == 5 and all(json.loads(line)["model"] == "scripted:judge" for line in judge)


def test_bad_replay_options_are_usage_errors(models: Models) -> None:
    with pytest.raises(UserError, match="--replay-strict goes with --replay DIR"):
        _sparring("run", "suite.yaml", "--replay-strict")
    with pytest.raises(UserError, match="--live-role goes with --replay DIR"):
        _sparring("run", "suite.yaml", "--live-role", "agent")
    with pytest.raises(UserError, match="--replay nowhere: no such directory"):
        _sparring("run", "suite.yaml", "--replay", "nowhere")
    Path("tapes").mkdir()
    Path("tapes/judge.jsonl").write_text('{"cassette": "judge", "version": 2}\nnot json\n')
    with pytest.raises(UserError, match=r"tapes/judge.jsonl:2: not a JSON line"):
        _sparring("run", "suite.yaml", "--replay", "tapes")
    Path("tapes/judge.jsonl").write_text('{"cassette": "user", "version": 2}\n')
    with pytest.raises(
        UserError, match=r'judge.jsonl:1: expected the header \{"cassette": "judge"'
    ):
        _sparring("run", "suite.yaml", "--replay", "tapes")
    Path("tapes/judge.jsonl").write_text('{"cassette": "judge", "version": 2}\n[1]\n')
    with pytest.raises(UserError, match=r"judge.jsonl:2: a cassette entry is a JSON object"):
        _sparring("run", "suite.yaml", "--replay", "tapes")


def test_a_judge_that_sends_no_seed_is_replayed_without_being_built(models: Models) -> None:
    recorded = _run("--user-model", "scripted:user", "--judge-model", "scripted:seedless",
                    "--record", "tapes")  # fmt: skip
    judge = json.loads(Path("tapes/judge.jsonl").read_text().splitlines()[1])
    assert judge["request"]["seed"] is None
    before = len(models.built)
    replayed = _run("--replay", "tapes", "--replay-strict", report="again.json")
    assert len(models.built) == before  # nothing built, so nothing says it sends no seed
    assert _trials(replayed) == _trials(recorded)


def test_a_refresh_that_cannot_start_leaves_the_cassettes_as_they_were(models: Models) -> None:
    _run(*LIVE, "--record", "tapes")
    before = {p.name: p.read_bytes() for p in Path("tapes").iterdir()}
    with pytest.raises(UserError, match="nosuch"):
        _sparring("run", "suite.yaml", "--replay", "tapes", "--record", "tapes",
                  "--live-role", "judge", "--judge-model", "nosuch:judge")  # fmt: skip
    assert {p.name: p.read_bytes() for p in Path("tapes").iterdir()} == before


PYTHON_TEST = """
from sparring.api import Suite

suite = Suite(target={"type": "callable", "ref": "replay_agent:agent"})

@suite.scenario(repetitions=2)
async def test_greets():
    async with suite.session() as session:
        response = await session.send("Hello there")
        await response.should("answer the greeting")
"""


def test_a_python_tests_session_and_should_are_replayed(models: Models) -> None:
    Path("test_greets.py").write_text(PYTHON_TEST)
    done = _sparring("run", "test_greets.py", "--no-live", "-o", "r.json", *LIVE, "--record", "t")
    assert done.exit_code == 0, done.output
    Path("forbid").write_text("")
    calls = models.calls
    again = _sparring("run", "test_greets.py", "--no-live", "-o", "again.json", *DEAD,
                      "--replay", "t", "--replay-strict")  # fmt: skip
    assert again.exit_code == 0, again.output
    assert models.calls == calls and _agent_calls() == 2
    assert _trials(json.loads(Path("again.json").read_text())) == _trials(
        json.loads(Path("r.json").read_text())
    )
