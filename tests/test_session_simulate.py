"""Python tests that mix written and simulated turns: `session.simulate(turns=N)`,
`response.check(...)` with YAML's declarative checks, and `expect_failure`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from sparring.api import Suite
from sparring.errors import UserError
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.runner.context import ConditionsNotMet
from sparring.transcript import Message, ToolCall


def agent(history: list[dict[str, str]]) -> Message:
    said = history[-1]["content"]
    if "10234" in said:
        call = ToolCall.from_arguments("lookup_order", {"order_id": "10234"})
        return Message(role="agent", content="Order 10234 has shipped.", tool_calls=(call,))
    return Message(role="agent", content="What's your order number?")


def user_then_judge(messages: Sequence[ChatMessage], schema: Any) -> Any:
    """Simulated user: gives the order number, then is done. (No judge call here.)"""
    seen = " ".join(m["content"] for m in messages)
    if "has shipped" in seen:
        return {"message": "", "done": True, "done_reason": "goal_achieved"}
    return {"message": "It's order 10234", "done": False, "done_reason": None}


def test_simulate_writes_messages_with_the_suites_goal_and_check_runs_yaml_checks() -> None:
    model = ScriptedModel(handler=user_then_judge)
    suite = Suite(target=agent, model=model, goal="Learn where order 10234 is")
    seen: dict[str, Any] = {}

    @suite.scenario
    async def test_mixed() -> None:
        async with suite.session() as session:
            first = await session.send("Where is my order?")
            first.check(
                {"contains": "order number"}, {"tool_called": {"exclude": ["lookup_order"]}}
            )
            replies = await session.simulate(turns=3)
            seen["replies"] = [r.message for r in replies]
            replies[-1].check(
                {"tool_args": {"tool": "lookup_order", "args": {"order_id": "10234"}}}
            )

    result = suite.run(store=False)
    (scenario,) = result.scenarios
    trial = scenario.trials[0]
    assert scenario.status == "passed", trial.error
    # the user gave the number, then was done: one message of the three allowed
    assert seen["replies"] == ["Order 10234 has shipped."]
    users = [m.content for m in trial.transcript.messages if m.role == "user"]
    assert users == ["Where is my order?", "It's order 10234"]
    assert [v.id for v in trial.verdicts] == ["t1.check1", "t1.check2", "t2.check1"]
    assert "Learn where order 10234 is" in " ".join(m["content"] for m in model.calls[0][0])


def test_a_failed_check_fails_the_test_with_the_yaml_checks_reason() -> None:
    suite = Suite(target=agent)

    @suite.scenario
    async def test_fails() -> None:
        async with suite.session() as session:
            response = await session.send("hello")
            with pytest.raises(ConditionsNotMet, match="t1.check1"):
                response.check({"contains": "refund"})
            response.check({"contains": "refund"})

    (scenario,) = suite.run(store=False).scenarios
    assert scenario.status == "failed"
    verdict = scenario.trials[0].verdicts[-1]
    assert verdict.status == "not_met" and "refund" in verdict.reason


def test_simulate_without_a_model_skips_the_test_and_sends_nothing() -> None:
    sent: list[str] = []

    def recording(history: list[dict[str, str]]) -> str:
        sent.append(history[-1]["content"])
        return "ok"

    suite = Suite(target=recording, goal="anything")

    @suite.scenario
    async def test_simulates() -> None:
        async with suite.session() as session:
            await session.simulate(turns=2)
            raise AssertionError("never reached")

    (scenario,) = suite.run(store=False).scenarios
    assert scenario.trials[0].status == "skipped"
    assert sent == []


def test_simulate_needs_a_goal_and_check_needs_a_check() -> None:
    suite = Suite(target=agent, model=ScriptedModel(handler=user_then_judge))
    errors: list[str] = []

    @suite.scenario
    async def test_bad_calls() -> None:
        async with suite.session() as session:
            for call in (session.simulate(turns=2),):
                try:
                    await call
                except UserError as e:
                    errors.append(str(e))
            response = await session.send("hi")
            try:
                response.check()
            except UserError as e:
                errors.append(str(e))
            try:
                response.check({"contians": "x"})
            except UserError as e:
                errors.append(str(e))

    suite.run(store=False)
    assert "needs turns >= 1 and a goal" in errors[0]
    assert "needs at least one check" in errors[1]
    assert "contians" in errors[2]


@pytest.mark.parametrize(("reply", "status"), [("no refunds", "passed"), ("refund!", "failed")])
def test_expect_failure_inverts_pass_and_fail(reply: str, status: str) -> None:
    suite = Suite(target=lambda history: reply)

    @suite.scenario(expect_failure=True)
    async def test_must_fail() -> None:
        async with suite.session() as session:
            response = await session.send("Can I get a refund?")
            assert "refund!" in response.message

    (scenario,) = suite.run(store=False).scenarios
    trial = scenario.trials[0]
    assert trial.status == status
    if status == "passed":
        assert (trial.error or "").startswith("failed as expected")
    else:
        assert "expected to fail" in (trial.error or "")


def test_expect_failure_keeps_an_error_an_error() -> None:
    def broken(history: list[dict[str, str]]) -> str:
        raise RuntimeError("down")

    suite = Suite(target=broken)

    @suite.scenario(expect_failure=True)
    async def test_must_fail() -> None:
        async with suite.session() as session:
            await session.send("hi")

    (scenario,) = suite.run(store=False).scenarios
    assert scenario.trials[0].status == "error"
