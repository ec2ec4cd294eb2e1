"""`sparring run --replay-users RUN`: the simulated user messages of a stored run sent again,
trial by trial, to the current agent, with no simulator call; criteria still judged; clear
errors for an unknown run, a scenario the run does not hold, one that is not simulated."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.errors import ModelError, UserError
from sparring.events import MessageAdded, TrialStarted
from sparring.models.base import ChatMessage
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.runner.replay_cassettes import observe
from sparring.runner.replay_users import StoredConversation, StoredUsers
from sparring.transcript import Message
from tests.support.judging import agent_quote

# Logs every conversation it is sent (its user messages) to sent.jsonl.
AGENT = """
import json

def agent(history):
    with open("sent.jsonl", "a") as log:
        log.write(json.dumps([m["content"] for m in history if m["role"] == "user"]) + "\\n")
    return "VERSION: " + history[-1]["content"]
"""
SUITE = """target: {type: callable, ref: 'users_agent:agent'}
scenarios:
  - id: refund
    persona: A customer
    goal: Get a refund
    opening_message: Hi, I want a refund
    max_turns: 4
    trials: 3
    criteria: [The assistant answers]
  - id: booking
    prompt: Book me a slot at 10am
    should: confirm the booking
"""


class Models:
    """`scripted:user` writes numbered messages and, on every third, says its goal is
    achieved (so stored conversations differ in length); `scripted:judge` finds everything
    met; `scripted:broken` fails. Every model built is kept, to count calls."""

    def __init__(self) -> None:
        self.built: list[ScriptedModel] = []
        self.numbers = itertools.count(1)

    def build(self, name: str) -> ScriptedModel:
        def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
            if name == "broken":
                raise RuntimeError("a live model was called")
            if name == "user":
                number = next(self.numbers)
                done = number % 3 == 0
                return {"message": f"Message {number}", "done": done, "done_reason": None}
            return example_for_schema(schema or {}, text=agent_quote(messages))

        model = ScriptedModel(handler=answer, name=f"scripted:{name}")
        self.built.append(model)
        return model


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "users_agent.py").write_text(AGENT.replace("VERSION", "v1"))
    (tmp_path / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for key in ("SPARRING_MODEL", "SPARRING_USER_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(key, raising=False)
    made = Models()
    register_provider("scripted", lambda spec, name, options: made.build(name))
    yield made
    PROVIDERS.pop("scripted", None)
    sys.modules.pop("users_agent", None)


def _sparring(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _run(*args: str, report: str) -> dict[str, Any]:
    done = _sparring("run", "suite.yaml", "--no-live", "-p", "4", "-o", report, *args)
    assert done.exit_code in (0, 1, 3), done.output
    return json.loads(Path(report).read_text())


def _stored(models: Models) -> dict[str, Any]:
    """A stored run with the live simulated user; the log of what the agent got emptied,
    and the agent replaced by a new version."""
    run = _run("--user-model", "scripted:user", "--judge-model", "scripted:judge", report="r.json")
    Path("sent.jsonl").unlink()
    Path("users_agent.py").write_text(AGENT.replace("VERSION", "v2"))
    sys.modules.pop("users_agent", None)
    return run


def _conversations(report: dict[str, Any], scenario: str) -> dict[int, list[tuple[str, str]]]:
    (found,) = [s for s in report["scenarios"] if s["scenario_id"] == scenario]
    return {
        t["trial"]: [(m["role"], m["content"]) for m in t["transcript"]["messages"]]
        for t in found["trials"]
    }


def _user_side(conversation: list[tuple[str, str]]) -> list[str]:
    return [text for role, text in conversation if role == "user"]


def test_the_new_agent_gets_the_stored_user_messages_with_no_simulator_call(
    models: Models,
) -> None:
    stored = _stored(models)
    before = len(models.built)
    again = _run(
        "--user-model",
        "scripted:broken",
        "--judge-model",
        "scripted:judge",
        "--replay-users",
        stored["run_id"][:8],
        report="again.json",
    )
    assert [m.name for m in models.built[before:]] == ["scripted:judge"]  # no user model
    old, new = _conversations(stored, "refund"), _conversations(again, "refund")
    assert sorted(old) == sorted(new) == [1, 2, 3]
    for trial in (1, 2, 3):  # each trial the same user messages, the new agent's replies
        assert _user_side(new[trial]) == _user_side(old[trial])
        assert [t for r, t in new[trial] if r == "agent"] == [
            f"v2: {said}" for said in _user_side(old[trial])
        ]
    received: list[list[str]] = [
        json.loads(line) for line in Path("sent.jsonl").read_text().splitlines()
    ]
    finals = sorted(tuple(c) for c in received if c[0] == "Hi, I want a refund")
    wanted = sorted(
        tuple(_user_side(old[t])[:n]) for t in (1, 2, 3) for n in range(1, len(old[t]) // 2 + 1)
    )
    assert finals == wanted  # every message the agent got, turn by turn, trial by trial
    (refund,) = [s for s in again["scenarios"] if s["scenario_id"] == "refund"]
    old_ends = [t["end_reason"] for t in stored["scenarios"][0]["trials"]]
    assert [t["end_reason"] for t in refund["trials"]] == old_ends
    assert "goal_achieved" in old_ends  # a user that stopped stops again
    assert all(t["status"] == "passed" and t["verdicts"] for t in refund["trials"])  # judged
    assert again["user_model"] == f"stored:{stored['run_id']}"


def test_an_unknown_run_names_the_closest_stored_ones(models: Models) -> None:
    run_id = _stored(models)["run_id"]
    typo = run_id[:-1] + ("0" if run_id[-1] != "0" else "1")
    with pytest.raises(UserError, match=f"no such run in the store \\(did you mean {run_id}\\?\\)"):
        _sparring("run", "suite.yaml", "--replay-users", typo)


def test_a_scenario_the_run_does_not_hold_is_named(models: Models) -> None:
    run_id = _stored(models)["run_id"]
    Path("suite.yaml").write_text(SUITE.replace("id: refund", "id: return"))
    with pytest.raises(UserError, match=r"scenario return is not in that run \(its simulated "):
        _sparring("run", "suite.yaml", "--replay-users", run_id)


def test_a_scenario_that_is_not_simulated_is_refused(models: Models) -> None:
    run_id = _stored(models)["run_id"]
    with pytest.raises(UserError, match="none of the scenarios to run is simulated"):
        _sparring("run", "suite.yaml", "-k", "booking", "--replay-users", run_id)
    simulated = "    persona: A customer\n    goal: Get a refund\n"
    scripted = SUITE.replace(simulated, "    turns: [{user: Hi}]\n")
    scripted = scripted.replace("    opening_message: Hi, I want a refund\n    max_turns: 4\n", "")
    Path("suite.yaml").write_text(scripted)
    with pytest.raises(
        UserError, match="scenario refund was simulated in that run and is scripted"
    ):
        _sparring("run", "suite.yaml", "--replay-users", run_id)
    steps = "  - id: steps\n    persona: A customer\n    goal: Help\n"
    steps += "    turns: [{user: Hi}, {simulate: 2}]\n    criteria: [The assistant answers]\n"
    Path("suite.yaml").write_text(SUITE + steps)
    with pytest.raises(UserError, match="scenario steps has `simulate:` steps, whose simulated"):
        _sparring("run", "suite.yaml", "--replay-users", run_id)


def test_replay_users_refuses_options_that_change_the_trials(models: Models) -> None:
    with pytest.raises(UserError, match="--replay-users cannot go with --trials"):
        _sparring("run", "suite.yaml", "--replay-users", "abc", "--trials", "2")


def test_replayed_users_are_recorded_so_a_replay_needs_no_store(models: Models) -> None:
    stored = _stored(models)
    judge = ("--judge-model", "scripted:judge")
    users = _run(*judge, "--replay-users", stored["run_id"], "--record", "tapes", report="u.json")
    Path(".sparring/sparring.db").unlink()  # the stored run is gone
    again = _run("--replay", "tapes", "--replay-strict", "--no-store", report="again.json")
    assert _conversations(again, "refund") == _conversations(users, "refund")
    assert again["user_model"] == f"stored:{stored['run_id']}"


async def _ask(users: StoredUsers, scenario: str, trial: int) -> str:
    """Ask `users` from trial `trial` of `scenario`, as the runner's trial would."""
    observe(lambda event: None)(TrialStarted(scenario, scenario, trial))
    return (await users.complete([], temperature=0.7)).text


@pytest.mark.anyio
async def test_a_stored_user_with_nothing_more_to_say_or_none_at_all_errs_saying_why() -> None:
    users = StoredUsers(
        "run1",
        {"refund": [StoredConversation(("Hi",), "target_error")]},
        kinds={"refund": "simulated"},
    )
    counted = users.observe(lambda event: None)
    assert json.loads(await _ask(users, "refund", 1))["message"] == "Hi"
    counted(MessageAdded("refund", 1, Message(role="user", content="Hi")))
    with pytest.raises(ModelError, match="ended with target_error after 1 user message, so it"):
        await _ask(users, "refund", 1)
    with pytest.raises(ModelError, match="holds 1 conversation of scenario 'refund', none for"):
        await _ask(users, "refund", 2)
    with pytest.raises(ModelError, match="holds no simulated user of scenario 'test_x.py::t'"):
        await _ask(users, "test_x.py::t", 1)
