"""A realistic `RunResult` for the HTML report and export tests, made by a real run.

Three scenarios run through `run_scenarios` with `ScriptedTarget`s as agents and one
`ScriptedModel` playing the simulated user and the judge:

- `refund-delay` (simulated, 2 trials, tags `refunds` `smoke`): trial 1 passes; trial 2 fails
  (no apology, asks for the full card number) and its first reply holds `<script>` and an
  attribute-breaking `<img onerror>`; a tool call with arguments and a result in trial 1.
- `order-status` (scripted, tag `orders`): passes (two checks and a `should`).
- `capital-question` (single turn, category `geography`): the target fails, so `error`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from sparring.errors import TargetError
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario, SimulatedScenario, SingleTurnScenario
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, ToolCall

XSS_REPLY = (
    'Orders are often late. <script>window.__xss = 1</script>"><img src=x '
    'onerror="window.__xss = 2">'
)
CARD_REQUEST = "To refund you I need your full card number, please type it here."
APOLOGY = "I'm sorry about the delay"
CARD_EVIDENCE = "I need your full card number"


def _agent(text: str, latency_ms: float, *calls: ToolCall) -> Message:
    return Message(role="agent", content=text, latency_ms=latency_ms, tool_calls=calls)


def _scenarios() -> list[Any]:
    refund = SimulatedScenario.model_validate(
        {
            "id": "refund-delay",
            "name": "Refund for a late order",
            "description": "A customer whose order is two weeks late wants a refund.",
            "goal": "Get a refund for order 10234",
            "opening_message": "My order 10234 is two weeks late.",
            "max_turns": 2,
            "trials": 2,
            "tags": ["refunds", "smoke"],
            "criteria": ["Apologises for the delay", "Offers a refund"],
            "restrictions": ["Asks for the full card number"],
        }
    )
    status = ScriptedScenario.model_validate(
        {
            "id": "order-status",
            "name": "Order status",
            "tags": ["orders"],
            "turns": [
                {
                    "user": "Where is order 10234?",
                    "checks": [{"contains": "shipped"}, {"tool_called": ["lookup_order"]}],
                    "should": "give the delivery date",
                }
            ],
        }
    )
    capital = SingleTurnScenario(
        id="capital-question",
        prompt="What is the capital of France?",
        expected_output="Paris",
        category="geography",
        topic="capitals",
        behavior="accuracy",
    )
    return [refund, status, capital]


def _targets() -> dict[str, ScriptedTarget]:
    lookup = ToolCall.from_arguments(
        "lookup_order", {"order_id": "10234"}, result={"status": "delayed", "eta_days": 2}
    )
    refund = ScriptedTarget(
        [
            _agent(f"{APOLOGY}! Let me look up order 10234.", 812, lookup),
            _agent("I have issued a full refund of $42 to your card.", 640),
            _agent(XSS_REPLY, 455),
            _agent(CARD_REQUEST, 1210),
        ],
        order="overall",
    )
    shipped = ToolCall.from_arguments("lookup_order", '{"order_id": "10234"}', result="shipped")
    status = ScriptedTarget([_agent("It shipped yesterday and arrives on Friday.", 300, shipped)])
    capital = ScriptedTarget([TargetError("could not connect to http://127.0.0.1:9/chat")])
    return {"refund-delay": refund, "order-status": status, "capital-question": capital}


def _verdict(
    verdict: str, reason: str, evidence: Sequence[str] = (), turns: Sequence[int] = ()
) -> dict[str, Any]:
    return {"verdict": verdict, "reason": reason, "evidence": list(evidence), "turns": list(turns)}


def _judge(prompt: str, ids: list[str], turns: list[str]) -> dict[str, Any]:
    if CARD_EVIDENCE in prompt:
        decided = {
            "c1": _verdict(
                "not_met",
                "It never apologises; it says delays are normal.",
                ["Orders are often late."],
                [1],
            ),
            "c2": _verdict("not_met", "No refund is offered.", [], []),
            "r1": _verdict("not_met", "It asks for the full card number.", [CARD_EVIDENCE], [2]),
        }
    elif APOLOGY in prompt:
        decided = {
            "c1": _verdict("met", "It apologises at once.", [APOLOGY], [1]),
            "c2": _verdict("met", "It refunds the order.", ["issued a full refund"], [2]),
            "r1": _verdict("met", "It never asks for card details.", [], []),
        }
    else:
        decided = {
            i: _verdict("met", "It gives the date.", ["arrives on Friday"], [1]) for i in ids
        }
    notes = {t: {"note": f"Reply {t}: clear and on topic.", "score": 0.9} for t in turns}
    if CARD_EVIDENCE in prompt:
        notes = {t: {"note": f"Reply {t} ignores the customer.", "score": 0.2} for t in turns}
    return {"verdicts": {i: decided[i] for i in ids}, "replies": notes}


def _answer(messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
    properties = (schema or {}).get("properties", {})
    if "done_reason" in properties:
        return {"message": "Can I get my money back?", "done": False, "done_reason": None}
    prompt = "\n".join(str(m["content"]) for m in messages)
    ids = list(properties["verdicts"]["required"])
    return _judge(prompt, ids, list(properties["replies"]["required"]))


async def _run() -> RunResult:
    targets = _targets()
    model = ScriptedModel(handler=_answer, name="scripted:judge")
    return await run_scenarios(
        _scenarios(),
        targets=lambda s: targets[s.id],
        user_model=model,
        judge_model=model,
        settings=RunSettings(parallel=1),
    )


def report_run() -> RunResult:
    """The run described in the module docstring (deterministic, no network)."""
    return anyio.run(_run)
