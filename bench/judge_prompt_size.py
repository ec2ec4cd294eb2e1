"""Judge prompt size per trial: the peer workload's conversation (5 user turns, 3 criteria),
with and without one evaluation of 3 insights, in characters.

    python bench/judge_prompt_size.py

Printed: the characters of the judge's messages (what bench/mock_model.py counts as prompt
characters) and of the JSON Schema sent with them, for one trial's one judge call.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mock_model import AGENT_REPLY

from sparring.judging.judge import judge_conversation
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.scenario import SimulatedScenario
from sparring.transcript import Message, Transcript

_SCENARIO: dict[str, Any] = {
    "id": "late-refund",
    "name": "A customer chases a late refund",
    "persona": "Sam, a customer who returned a jacket three weeks ago and has not been "
    "refunded yet. Polite but firm; short messages.",
    "goal": "Find out when the refund for the returned jacket arrives.",
    "min_turns": 5,
    "max_turns": 5,
    "criteria": [
        "The assistant apologises for the delay",
        "The assistant says when the refund arrives",
        "The assistant states the refund amount",
    ],
}
_EVALUATION: dict[str, Any] = {
    "name": "support-quality",
    "prompt": "Assess how well the agent handled the customer's refund request.",
    "insights": [
        {
            "name": "resolved",
            "type": "boolean",
            "description": "The request was resolved",
            "pass_when": True,
        },
        {"name": "empathy", "type": "score", "description": "How empathetic the agent was"},
        {
            "name": "outcome",
            "type": "category",
            "options": ["refund", "replacement", "none"],
            "description": "What the customer got",
        },
    ],
}


def _transcript() -> Transcript:
    messages: list[Message] = []
    for turn in range(1, 6):
        messages.append(Message(role="user", content=f"Where is my refund? (message {turn})"))
        messages.append(Message(role="agent", content=AGENT_REPLY))
    return Transcript(messages=tuple(messages))


async def _measure(scenario: SimulatedScenario) -> tuple[int, int]:
    model = ScriptedModel(handler=lambda _m, schema: example_for_schema(schema or {}))
    await judge_conversation(
        model,
        scenario=scenario,
        transcript=_transcript(),
        evaluations=scenario.defined_evaluations,
    )
    messages, schema = model.calls[0]
    chars = sum(len(str(m["content"])) for m in messages)
    return chars, len(json.dumps(schema, separators=(",", ":")))


def main() -> None:
    """Print the judge prompt and schema characters of one trial, per case."""
    cases = {"3 criteria": _SCENARIO}
    if "evaluations" in SimulatedScenario.model_fields:
        cases["3 criteria + 1 evaluation (3 insights)"] = {
            **_SCENARIO,
            "evaluations": [_EVALUATION],
        }
    for label, raw in cases.items():
        chars, schema = anyio.run(_measure, SimulatedScenario.model_validate(raw))
        print(f"{label}: prompt {chars} chars, schema {schema} chars, total {chars + schema}")


if __name__ == "__main__":
    main()
