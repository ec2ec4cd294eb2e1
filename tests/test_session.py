"""Sessions, responses, should, unfold, InteractionBuilder and add_events (no runner)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from sparring.api import (
    AgentMessage,
    ConditionsNotMet,
    ConditionsUndecided,
    CustomerMessage,
    InteractionBuilder,
    open_session,
)
from sparring.errors import TargetError, UserError
from sparring.judging.should import ConditionGrammarWarning
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.runner.context import TrialLog
from sparring.transcript import Message, StatusEvent, ToolCall, Transcript
from tests.support.judging import agent_quote
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio


class RecordingSession:
    def __init__(self, target: RecordingTarget) -> None:
        self.target = target
        self.preloaded: list[Transcript] = []
        self.sent: list[Transcript] = []
        self.closed = False

    async def preload(self, history: Transcript, /) -> Transcript:
        self.preloaded.append(history)
        if not self.target.replay:
            return history
        replayed = Transcript()  # as a2a does: each user message answered live
        for message in history.messages:
            if message.role == "user":
                replayed = replayed.with_message(message)
                replayed = replayed.with_message(await self.send(replayed))
        return replayed

    async def send(self, transcript: Transcript, /) -> Message:
        self.sent.append(transcript)
        self.target.in_flight += 1
        self.target.most_in_flight = max(self.target.most_in_flight, self.target.in_flight)
        await anyio.sleep(self.target.delay_s)
        self.target.in_flight -= 1
        text = transcript.messages[-1].content
        if text == "fail":
            raise TargetError("agent down")
        return Message(
            role="agent",
            content=f"echo: {text}",
            latency_ms=5,
            parts=(f"echo: {text}",) if text != "parts" else ("one", "two"),
            tool_calls=(ToolCall.from_arguments("lookup", {"q": text}),),
            status_events=(StatusEvent(state="ready"),),
        )

    async def close(self) -> None:
        self.closed = True


class RecordingTarget:
    """Echoes the user message; every session keeps what it was preloaded and sent. With
    `replay`, preloading sends the history's user messages instead (as an a2a target)."""

    def __init__(self, *, delay_s: float = 0.0, replay: bool = False) -> None:
        self.name = "recording"
        self.sessions: list[RecordingSession] = []
        self.delay_s = delay_s
        self.replay = replay
        self.in_flight = 0
        self.most_in_flight = 0

    async def open_session(self) -> RecordingSession:
        session = RecordingSession(self)
        self.sessions.append(session)
        return session

    async def aclose(self) -> None:
        pass


def judge_by_condition(*, unmet: Sequence[str] = ()) -> ScriptedModel:
    """A judge that says `not_met` for conditions containing any of `unmet`."""

    def handler(messages: Sequence[ChatMessage], schema: Any) -> Any:
        condition = messages[-1]["content"].split("The message should ", 1)[1]
        bad = any(u in condition.split("\n")[0] for u in unmet)
        return {
            "reason": "reason for " + condition.split("\n")[0],
            "evidence": [agent_quote(messages)],
            "turns": [],
            "verdict": "not_met" if bad else "met",
        }

    return ScriptedModel(handler=handler)


async def test_send_gives_a_response_with_every_part_of_the_reply() -> None:
    target = RecordingTarget()
    async with open_session(target, model=judge_by_condition()) as session:
        first = await session.send("hi")
        second = await session.send("parts")
    assert first.message == "echo: hi" and first.messages == ["echo: hi"]
    assert second.messages == ["one", "two"]
    assert [c.name for c in first.tool_calls] == ["lookup"]
    assert first.status_events == [StatusEvent(state="ready")]
    assert first.latency_ms == 5 and (first.turn, second.turn) == (1, 2)
    assert [m.content for m in target.sessions[0].sent[1].messages] == ["hi", "echo: hi", "parts"]
    assert target.sessions[0].closed


async def test_should_met_returns_verdicts_and_records_them() -> None:
    async with open_session(RecordingTarget(), model=judge_by_condition()) as session:
        response = await session.send("hi")
        verdicts = await response.should(["greet the customer", "offer help"])
        log = session.trial.recorder
    assert [(v.id, v.status) for v in verdicts] == [("t1.should1", "met"), ("t1.should2", "met")]
    assert isinstance(log, TrialLog) and log.verdicts == verdicts
    assert [m.role for m in log.transcript.messages] == ["user", "agent"]


async def test_should_not_met_names_every_unmet_condition_and_the_reply() -> None:
    model = judge_by_condition(unmet=["million", "poem"])
    async with open_session(RecordingTarget(), model=model) as session:
        response = await session.send("Hello!")
        with pytest.raises(ConditionsNotMet) as caught:
            await response.should(["greet the customer", "offer a million dollars", "write a poem"])
    text = str(caught.value)
    assert isinstance(caught.value, AssertionError)
    assert "2 of 3 conditions not met" in text
    assert "t1.should2 should offer a million dollars: reason for offer a million" in text
    assert "t1.should3 should write a poem" in text
    assert "greet the customer" not in text
    assert "echo: Hello!" in text


async def test_judge_garbage_is_undecided_never_passed() -> None:
    async with open_session(RecordingTarget(), model=ScriptedModel(["??", "still no"])) as s:
        response = await s.send("hi")
        with pytest.raises(ConditionsUndecided, match="t1.should1"):
            await response.should("greet the customer")
    assert [v.status for v in s.trial.recorder.verdicts] == ["error"]  # type: ignore[attr-defined]


async def test_without_a_model_should_is_skipped_not_raised(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPARRING_MODEL", raising=False)
    monkeypatch.delenv("SPARRING_JUDGE_MODEL", raising=False)
    async with open_session(RecordingTarget()) as session:
        verdicts = await (await session.send("hi")).should("greet the customer")
    assert [v.status for v in verdicts] == ["skipped"]
    assert "--model" in verdicts[0].reason


async def test_bad_condition_grammar_warns_with_the_fix() -> None:
    async with open_session(RecordingTarget(), model=judge_by_condition()) as session:
        response = await session.send("hi")
        with pytest.warns(ConditionGrammarWarning, match="'greet the customer'"):
            await response.should("The message should greet the customer")
    with pytest.warns(ConditionGrammarWarning, match="past tense"):
        AgentMessage("Hi", should="greeted the customer")


BOOKING = [
    CustomerMessage("book a flight"),
    AgentMessage("Happy to help! Where to?", should="ask where to"),
    CustomerMessage("Paris, Monday"),
    AgentMessage(
        "Checking Paris for Monday.", should=["confirm the destination", "confirm the date"]
    ),
    CustomerMessage("mornings please"),
    AgentMessage(
        "Here are the morning flights.",
        should="present flight options",
        checks=[{"contains": "mornings"}],
    ),
]


async def test_unfold_runs_each_assertion_point_in_a_fresh_preloaded_session() -> None:
    target = RecordingTarget(delay_s=0.05)
    async with open_session(target, model=judge_by_condition()) as session:
        subtests = await session.unfold(BOOKING)
    main, *fresh = target.sessions
    assert main.sent == [] and len(fresh) == 3  # the main session itself sends nothing
    assert target.most_in_flight == 3  # sub-tests run at once
    preloads = sorted(([m.content for m in s.preloaded[0].messages] for s in fresh), key=len)
    assert preloads == [
        [],
        ["book a flight", "Happy to help! Where to?"],
        [
            "book a flight",
            "Happy to help! Where to?",
            "Paris, Monday",
            "Checking Paris for Monday.",
        ],
    ]
    assert sorted(s.sent[0].messages[-1].content for s in fresh) == [
        "Paris, Monday",
        "book a flight",
        "mornings please",
    ]
    assert all(s.closed for s in fresh)
    assert [s.id for s in subtests] == ["unfold1.step2", "unfold1.step4", "unfold1.step6"]
    assert [s.status for s in subtests] == ["passed"] * 3
    assert [s.history for s in subtests] == ["as_written"] * 3
    assert [m.content for m in subtests[2].transcript.messages][-2:] == [
        "mornings please",
        "echo: mornings please",
    ]
    log = session.trial.recorder
    assert isinstance(log, TrialLog) and log.subtests == subtests
    assert [v.id for v in log.verdicts] == [
        "unfold1.step2.should1",
        "unfold1.step4.should1",
        "unfold1.step4.should2",
        "unfold1.step6.check1",
        "unfold1.step6.should1",
    ]


async def test_a_sub_test_on_a_target_that_replays_history_says_so() -> None:
    async with open_session(RecordingTarget(replay=True), model=judge_by_condition()) as s:
        subtests = await s.unfold(BOOKING)
    assert [sub.history for sub in subtests] == ["as_written", "replayed", "replayed"]
    assert [m.content for m in subtests[1].transcript.messages] == [
        "book a flight",
        "echo: book a flight",
        "Paris, Monday",
        "echo: Paris, Monday",
    ]
    assert s.trial.recorder.subtests[1].history == "replayed"  # type: ignore[attr-defined]


async def test_unfold_failures_name_each_sub_test_and_its_reply() -> None:
    model = judge_by_condition(unmet=["the date", "flight options"])
    async with open_session(RecordingTarget(), model=model) as session:
        with pytest.raises(ConditionsNotMet) as caught:
            await session.unfold(BOOKING)
    text = str(caught.value)
    assert "2 of 5 conditions not met" in text
    assert "unfold1.step4.should2 should confirm the date" in text
    assert "unfold1.step6.should1 should present flight options" in text
    assert "unfold1.step4 reply: 'echo: Paris, Monday'" in text
    statuses = [s.status for s in session.trial.recorder.subtests]  # type: ignore[attr-defined]
    assert statuses == ["passed", "failed", "failed"]


async def test_history_only_steps_are_not_tested() -> None:
    target = RecordingTarget()
    async with open_session(target, model=judge_by_condition()) as session:
        subtests = await session.unfold(
            [
                CustomerMessage("Hi"),
                AgentMessage("Hello! How can I help?"),
                CustomerMessage("balance?"),
                AgentMessage("$100.", should="state the balance"),
            ]
        )
    assert [s.id for s in subtests] == ["unfold1.step4"]
    assert [m.content for m in target.sessions[1].preloaded[0].messages] == [
        "Hi",
        "Hello! How can I help?",
    ]


async def test_a_sub_test_whose_target_fails_is_an_error_not_a_pass() -> None:
    async with open_session(RecordingTarget(), model=judge_by_condition()) as session:
        with pytest.raises(ConditionsUndecided, match="agent down"):
            await session.unfold([CustomerMessage("fail"), AgentMessage("x", should="reply")])
    [subtest] = session.trial.recorder.subtests  # type: ignore[attr-defined]
    assert subtest.status == "error" and "agent down" in (subtest.error or "")


async def test_unfold_rejects_plans_it_cannot_run() -> None:
    async with open_session(RecordingTarget()) as session:
        with pytest.raises(UserError, match="nothing to test"):
            await session.unfold([CustomerMessage("Hi"), AgentMessage("Hello")])
        with pytest.raises(UserError, match="does not follow a CustomerMessage"):
            await session.unfold([AgentMessage("Hello", should="greet")])
    with pytest.raises(UserError, match="invalid check"):
        AgentMessage("x", checks=[{"contains": []}])


async def test_unfold_tool_checks_need_a_target_that_records_tool_calls() -> None:
    steps = [
        CustomerMessage("refund order 1"),
        AgentMessage("Refunded.", should="confirm"),
        CustomerMessage("thanks"),
        AgentMessage("Bye.", checks=[{"tool_args": {"tool": "refund", "args": {}}}]),
    ]
    async with open_session({"type": "http", "url": "http://127.0.0.1:9/chat"}) as session:
        with pytest.raises(UserError) as caught:  # before anything is sent (port 9: nothing)
            await session.unfold(steps)
    assert str(caught.value).startswith(
        "unfold step 4 (AgentMessage 'Bye.') checks tool calls, but its http target does not "
        "say where they are in the reply, so it records none; add `tool_calls_path:` to the "
        "target (e.g. `tool_calls_path: tool_calls`"
    )
    assert session.trial.recorder.subtests == []  # type: ignore[attr-defined]
    spec = {"type": "http", "url": "http://127.0.0.1:9/chat", "tool_calls_path": "tool_calls"}
    async with open_session(spec) as session:
        with pytest.raises(ConditionsUndecided, match="could not run"):  # runs: port 9 refuses
            await session.unfold(steps)


async def test_interaction_builder_and_add_events_preload_the_live_session() -> None:
    history = (
        InteractionBuilder()
        .step(CustomerMessage("Hi, I need help"))
        .step(AgentMessage("Hello! How can I assist you today?"))
        .step(CustomerMessage("cancel my subscription"))
        .build()
    )
    target = RecordingTarget()
    async with open_session(target, model=judge_by_condition()) as session:
        await session.add_events(history)
        response = await session.send("I found a cheaper alternative")
        with pytest.raises(UserError, match="before the session's first send"):
            await session.add_events(history)
    [conn] = target.sessions
    assert [m.content for m in conn.preloaded[0].messages] == [
        "Hi, I need help",
        "Hello! How can I assist you today?",
        "cancel my subscription",
    ]
    assert [m.role for m in conn.sent[0].messages] == ["user", "agent", "user", "user"]
    assert response.turn == 3
    with pytest.raises(UserError, match="CustomerMessage or an AgentMessage"):
        InteractionBuilder().step("hi")  # type: ignore[arg-type]


async def test_a_session_must_be_entered() -> None:
    session = open_session(RecordingTarget())
    with pytest.raises(AttributeError):
        await session.send("hi")  # type: ignore[attr-defined]


async def test_add_events_refuses_steps_with_assertions_and_points_to_unfold() -> None:
    history = [CustomerMessage("Hi"), AgentMessage("Hello!", should="greet the customer")]
    async with open_session(RecordingTarget(), model=judge_by_condition()) as session:
        with pytest.raises(
            UserError,
            match=r"add_events step 2 \(AgentMessage 'Hello!'\) has "
            r"`should` or `checks`.*session\.unfold\(steps\)",
        ):
            await session.add_events(history)
        with pytest.raises(UserError, match="add_events step 2"):
            await session.add_events(
                [CustomerMessage("Hi"), AgentMessage("Hello!", checks=[{"contains": "Hi"}])]
            )
        assert session.transcript.messages == ()  # nothing was loaded


async def test_outside_a_run_the_judge_and_the_record_never_see_secret_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("SPARRING_TEST_BOT_KEY", secret)
    with ScriptedOpenAIServer([lambda body: Reply(f"your key is {body['auth']}")]) as agent:
        spec = {
            "url": f"{agent.base_url}/chat/completions",
            "body_template": {"auth": "{{secrets.SPARRING_TEST_BOT_KEY}}", "m": "{{input}}"},
            "response_path": "choices.0.message.content",
        }
        judge = judge_by_condition()
        async with open_session(spec, model=judge) as session:
            response = await session.send("what is my key?")
            await response.should("tell the customer their key")
    assert agent.requests[0]["auth"] == secret  # the target gets the real value
    assert response.message == f"your key is {secret}"  # and the test code the real reply
    prompts = str([messages for messages, _ in judge.calls])
    assert secret not in prompts and "your key is ***" in prompts
    log = session.trial.recorder
    assert isinstance(log, TrialLog)
    assert secret not in log.transcript.model_dump_json()
    assert log.transcript.messages[-1].content == "your key is ***"


def test_a_session_outside_a_run_keeps_its_verdicts_with_secrets_masked() -> None:
    from sparring.results import Verdict

    log = TrialLog(scrub=lambda text: text.replace("tok-s3cret", "***"))
    log.add_verdicts(
        [
            Verdict(
                id="t1.check1",
                kind="check",
                description='not_contains "tok-s3cret"',
                status="not_met",
                reason="turn 1 said: your token is tok-s3cret",
                evidence=("tok-s3cret",),
            )
        ]
    )
    kept = log.verdicts[0].model_dump_json()
    assert "tok-s3cret" not in kept and "***" in kept
