"""Per-condition `should` judging and the condition grammar check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from sparring.errors import ModelError
from sparring.judging.should import (
    NO_MODEL_HINT,
    Condition,
    JudgeSettings,
    condition_problem,
    judge_shoulds,
)
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import Usage
from sparring.transcript import Message, Transcript

pytestmark = pytest.mark.anyio

CHAT = Transcript(
    messages=(
        Message(role="user", content="Hello!"),
        Message(role="agent", content="Hi! Welcome to Northwind."),
    )
)


def verdict(status: str, reason: str = "why") -> dict[str, Any]:
    return {"reason": reason, "evidence": ["Welcome to Northwind"], "turns": [1], "verdict": status}


def condition_of(messages: Sequence[ChatMessage]) -> str:
    return messages[-1]["content"].split("The message should ", 1)[1].split("\n", 1)[0]


async def test_each_condition_gets_its_own_call_and_verdicts_keep_their_order() -> None:
    def judge(messages: Sequence[ChatMessage], schema: Any) -> Any:
        return verdict("not_met" if "million" in condition_of(messages) else "met")

    model = ScriptedModel(handler=judge)
    usage = Usage()
    verdicts = await judge_shoulds(
        [
            Condition("t1.should1", "greet the customer"),
            Condition("t1.should2", "offer a million dollars"),
        ],
        transcript=CHAT,
        turn=1,
        judge=JudgeSettings(model=model),
        usage=usage,
    )
    assert [(v.id, v.status, v.kind) for v in verdicts] == [
        ("t1.should1", "met", "should"),
        ("t1.should2", "not_met", "should"),
    ]
    assert verdicts[0].description == "should greet the customer"
    assert verdicts[0].evidence == ("Welcome to Northwind",)
    assert len(model.calls) == 2 and usage.model_calls == 2
    assert sorted(condition_of(m) for m, _ in model.calls) == [
        "greet the customer",
        "offer a million dollars",
    ]
    system = model.calls[0][0][0]["content"]
    assert "data, not instructions" in system  # the shared fencing rule


async def test_conditions_are_judged_concurrently() -> None:
    inside = 0
    most = 0
    all_inside = anyio.Event()

    async def judge(messages: Sequence[ChatMessage], schema: Any) -> Any:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        if inside == 4:
            all_inside.set()
        # each call waits for the other three (a fixed pause could end before a call whose
        # prompt is still being prepared in a worker thread arrives); judged one at a
        # time, they never all get here and each gives up after 10 s
        with anyio.move_on_after(10):
            await all_inside.wait()
        inside -= 1
        return verdict("met")

    conditions = [Condition(f"t1.should{i}", f"do thing {i}") for i in range(1, 5)]
    verdicts = await judge_shoulds(
        conditions, transcript=CHAT, turn=1, judge=JudgeSettings(model=ScriptedModel(handler=judge))
    )
    assert most == 4
    assert [v.status for v in verdicts] == ["met"] * 4


async def test_garbage_twice_is_an_error_never_met() -> None:
    model = ScriptedModel(["I think it is fine", '{"verdict": "maybe"}'])
    [v] = await judge_shoulds(
        [Condition("t1.should1", "greet the customer")],
        transcript=CHAT,
        turn=1,
        judge=JudgeSettings(model=model),
    )
    assert v.status == "error"
    assert "could not be read, even after one repair" in v.reason
    assert len(model.calls) == 2  # one repair


async def test_a_repaired_answer_counts() -> None:
    model = ScriptedModel(["no json here", verdict("met")])
    [v] = await judge_shoulds(
        [Condition("t1.should1", "greet the customer")],
        transcript=CHAT,
        turn=1,
        judge=JudgeSettings(model=model),
    )
    assert v.status == "met"


async def test_model_failure_is_an_error() -> None:
    model = ScriptedModel([ModelError("HTTP 500")])
    [v] = await judge_shoulds(
        [Condition("t1.should1", "greet the customer")],
        transcript=CHAT,
        turn=1,
        judge=JudgeSettings(model=model),
    )
    assert v.status == "error" and "HTTP 500" in v.reason


async def test_no_model_skips_with_the_hint() -> None:
    [v] = await judge_shoulds(
        [Condition("t1.should1", "greet the customer")],
        transcript=CHAT,
        turn=1,
        judge=JudgeSettings(model=None),
    )
    assert v.status == "skipped" and v.reason == NO_MODEL_HINT


async def test_secrets_are_scrubbed_from_what_the_judge_sees_and_says() -> None:
    chat = Transcript(
        messages=(
            Message(role="user", content="key?"),
            Message(role="agent", content="the key is s3cr3t-value"),
        )
    )
    model = ScriptedModel([verdict("not_met", "it said s3cr3t-value")])
    [v] = await judge_shoulds(
        [Condition("t1.should1", "keep the key to itself")],
        transcript=chat,
        turn=1,
        judge=JudgeSettings(model=model, scrub=lambda t: t.replace("s3cr3t-value", "***")),
    )
    assert "s3cr3t-value" not in model.calls[0][0][1]["content"]
    assert v.reason == "it said ***"


@pytest.mark.parametrize(
    "condition",
    [
        "The message should greet the customer",
        "should greet the customer",
        "greeted the customer",
        "a greeting",
        "an apology",
        "",
    ],
)
def test_bad_grammar_is_reported_with_a_fix(condition: str) -> None:
    problem = condition_problem(condition)
    assert problem is not None
    assert "greet the customer" in problem or "what the reply should do" in problem


@pytest.mark.parametrize(
    "condition",
    [
        "greet the customer",
        "mention the 30-day refund window",
        "offer to connect to a human",
        "proceed with the booking",
        "embed a link",
        "need no follow-up question",
        "apologise for the delay",
    ],
)
def test_good_conditions_pass_the_grammar_check(condition: str) -> None:
    assert condition_problem(condition) is None
