"""Record and replay in the runner (`sparring.runner.replay`): many trials at once write
whole cassette lines and each trial replays its own conversation; a replayed session that
misses goes live with the history; preloads and target errors are replayed; secrets never
reach a cassette and a masked request still matches."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import anyio
import pytest

from sparring.errors import TargetError
from sparring.events import TrialStarted
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.results import RunResult
from sparring.runner import RunSettings, run_scenarios
from sparring.runner.replay import Replay, ReplayOptions
from sparring.scenario import SimulatedScenario
from sparring.secrets import Secrets
from sparring.targets.base import Target
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, Transcript
from tests.support.judging import agent_quote

pytestmark = pytest.mark.anyio

SCENARIO = SimulatedScenario.model_validate(
    {
        "id": "many",
        "persona": "A customer",
        "goal": "Get help",
        "max_turns": 3,
        "trials": 24,
        "criteria": ["The assistant answers"],
    }
)


def _user() -> ScriptedModel:
    """Says a new message each call, after a random short wait, so trials interleave."""
    said = iter(range(1, 10_000))
    rng = random.Random(7)

    async def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        number = next(said)
        await anyio.sleep(rng.random() / 100)
        return {"message": f"Message {number}", "done": False, "done_reason": None}

    return ScriptedModel(handler=answer, name="scripted:user")


def _judge() -> ScriptedModel:
    def answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        return example_for_schema(schema or {}, text=agent_quote(messages))

    return ScriptedModel(handler=answer, name="scripted:judge")


def _echo(transcript: Transcript) -> str:
    return f"Echo: {transcript.messages[-1].content}"


def _recorder(directory: Path) -> Replay:
    """A started Replay recording every role into `directory`."""
    replay = Replay(ReplayOptions(record=directory), scrub=Secrets().scrub)
    replay.start()
    return replay


async def _run(
    replay: Replay, target: Target, user: ScriptedModel, judge: ScriptedModel
) -> RunResult:
    try:
        return await run_scenarios(
            [SCENARIO],
            targets=replay.targets(lambda s: target),
            user_model=replay.model("user", user, spec=user.name),
            judge_model=replay.model("judge", judge, spec=judge.name),
            settings=RunSettings(parallel=12),
            observer=replay.observe(lambda event: None),
        )
    finally:
        replay.close()


def _conversations(run: RunResult) -> dict[int, list[tuple[str, str]]]:
    return {
        t.trial: [(m.role, m.content) for m in t.transcript.messages]
        for t in run.scenarios[0].trials
    }


async def test_many_trials_at_once_record_whole_lines_and_each_replays_its_own(
    tmp_path: Path,
) -> None:
    live = ScriptedTarget([_echo] * 3, latency_seconds=0.001)
    record = _recorder(tmp_path)
    recorded = await _run(record, live, _user(), _judge())
    lines = {r: (tmp_path / f"{r}.jsonl").read_text().splitlines() for r in ("agent", "user")}
    assert len(lines["agent"]) == 1 + 24 * 3 and len(lines["user"]) == 1 + 24 * 3
    assert all(json.loads(line) for role in lines.values() for line in role)  # whole lines

    dead = ScriptedTarget([])  # any call fails
    user, judge = ScriptedModel(name="scripted:user"), ScriptedModel(name="scripted:judge")
    replay = Replay(ReplayOptions(replay=tmp_path, strict=True), scrub=Secrets().scrub)
    replayed = await _run(replay, dead, user, judge)
    assert dead.seen == [] and user.calls == [] and judge.calls == []
    assert _conversations(replayed) == _conversations(recorded)
    assert [t.status for t in replayed.scenarios[0].trials] == ["passed"] * 24
    assert replay.summary() == "replay: agent: 72 replayed, 0 live; user: 72 replayed, 0 live; " + (
        "judge: 24 replayed, 0 live"
    )


class StatefulTarget:
    """A target whose sessions keep what they were given (`preloaded`), like a server-side
    conversation; replies echo; `fail` makes every reply a TargetError (HTTP 503)."""

    name = "stateful"

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.preloaded: list[list[str]] = []
        self.sent: list[str] = []

    async def open_session(self) -> StatefulSession:
        return StatefulSession(self)

    async def aclose(self) -> None:
        pass


class StatefulSession:
    def __init__(self, target: StatefulTarget) -> None:
        self.target = target

    async def send(self, transcript: Transcript, /) -> Message:
        said = transcript.messages[-1].content
        self.target.sent.append(said)
        if self.target.fail:
            raise TargetError("the agent is down", status=503)
        return Message(role="agent", content=f"Echo: {said}", latency_ms=5)

    async def preload(self, history: Transcript, /) -> Transcript:
        self.target.preloaded.append([m.content for m in history.messages])
        return history

    async def close(self) -> None:
        pass


def _in_trial(replay: Replay) -> None:
    """Mark the current task as trial 1 of scenario `s`, as the runner's event does."""
    replay.observe(lambda event: None)(TrialStarted("s", "s", 1))


def _turn(*said: str) -> Transcript:
    messages: list[Message] = []
    for text in said:
        messages += [
            Message(role="user", content=text),
            Message(role="agent", content=f"Echo: {text}", latency_ms=5),
        ]
    return Transcript(messages=tuple(messages[:-1]))


@pytest.mark.parametrize("fail", [False, True])
async def test_preloads_and_target_errors_are_replayed(tmp_path: Path, fail: bool) -> None:
    history = Transcript(messages=(Message(role="user", content="Earlier"),))
    record = _recorder(tmp_path)
    _in_trial(record)
    session = await record.targets(lambda s: StatefulTarget(fail=fail))(SCENARIO).open_session()
    assert await session.preload(history) == history
    with pytest.raises(TargetError) if fail else nullcontext():
        await session.send(_turn("Hello"))
    record.close()

    inner = StatefulTarget()
    replay = Replay(ReplayOptions(replay=tmp_path, strict=True), scrub=Secrets().scrub)
    _in_trial(replay)
    session = await replay.targets(lambda s: inner)(SCENARIO).open_session()
    assert await session.preload(history) == history
    if fail:
        with pytest.raises(TargetError, match="the agent is down") as raised:
            await session.send(_turn("Hello"))
        assert raised.value.status == 503
    else:
        assert (await session.send(_turn("Hello"))).content == "Echo: Hello"
    assert inner.sent == [] and inner.preloaded == []


async def test_a_replayed_conversation_that_misses_goes_live_with_its_history(
    tmp_path: Path,
) -> None:
    record = _recorder(tmp_path)
    _in_trial(record)
    session = await record.targets(lambda s: StatefulTarget())(SCENARIO).open_session()
    for turn in (("Hello",), ("Hello", "Again"), ("Hello", "Again", "Bye")):
        await session.send(_turn(*turn))
    record.close()
    lines = (tmp_path / "agent.jsonl").read_text().splitlines()
    (tmp_path / "agent.jsonl").write_text("\n".join([*lines[:2], lines[3]]))  # turn 2 lost

    inner = StatefulTarget()
    replay = Replay(ReplayOptions(replay=tmp_path), scrub=Secrets().scrub)
    _in_trial(replay)
    session = await replay.targets(lambda s: inner)(SCENARIO).open_session()
    assert (await session.send(_turn("Hello"))).content == "Echo: Hello"
    assert inner.sent == []  # replayed
    assert (await session.send(_turn("Hello", "Again"))).content == "Echo: Again"
    assert inner.preloaded == [["Hello", "Echo: Hello"]] and inner.sent == ["Again"]
    await session.send(_turn("Hello", "Again", "Bye"))  # recorded, but the agent must hear it
    assert inner.sent == ["Again", "Bye"]
