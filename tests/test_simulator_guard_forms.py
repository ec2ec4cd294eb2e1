"""The simulator guard sees through other forms of what no user would send: the answer as a
Python literal or as `key: value` lines, other models' chat template tokens, and letters in
full-width or other compatibility forms (matched after NFKC); real users still pass."""

from __future__ import annotations

import pytest

from sparring.scenario import SimulatedScenario
from sparring.simulator import guard_problem
from sparring.transcript import Message, Transcript

SCENARIO = SimulatedScenario(
    id="late-order", persona="A busy parent", goal="Find out when order 10237 arrives"
)
CHAT = Transcript(
    messages=(Message(role="user", content="yes"), Message(role="agent", content="ok"))
)

BAD = {
    "python dict": ("{'message': 'where is my order 10237', 'done': False}", "is JSON"),
    "python list": ("['where is my order 10237']", "is JSON"),
    "fenced python dict": ("```python\n{'message': 'where is it'}\n```", "is JSON"),
    "python keys in prose": ("where is it? 'done': False", "instructions"),
    "key lines": ("message: where is my order 10237\ndone: false", "instructions"),
    "done reason line": ("where is it\ndone_reason: user_gave_up", "instructions"),
    "llama inst": ("[INST] where is my order 10237 [/INST]", "instructions"),
    "llama sys": ("<<SYS>> be a customer <</SYS>> where is it", "instructions"),
    "gemma turns": ("<start_of_turn>user\nwhere is my order<end_of_turn>", "instructions"),
    "alpaca": ("### Instruction: play a customer\n### Response: where is it", "instructions"),
    "full-width role label": ("ＡＳＳＩＳＴＡＮＴ: Your order ships Monday.", "assistant"),
    "full-width template token": ("［ＩＮＳＴ］ where is it", "instructions"),
    "full-width json": ('｛"message": "where is it"｝', "is JSON"),
}


@pytest.mark.parametrize(("message", "why"), BAD.values(), ids=BAD.keys())
def test_other_forms_of_a_non_message_are_caught(message: str, why: str) -> None:
    problem = guard_problem(message, scenario=SCENARIO, transcript=CHAT)
    assert problem is not None and why in problem


GOOD = [
    "I'm done: just cancel order 10237",
    "Done! Thanks a lot.",
    "The message said 'done' and nothing else",
    "Instructions: none came with the parcel, where is it?",
    "# 10237 is my order",
    "My list: [tent, stove] (order 10237)",
    "{late} again, order 10237",
    "Ｈｅｌｌｏ, where is order １０２３７?",
    "I paid with [INSTANT] transfer",
    "Response time is awful, where is my order?",
]


@pytest.mark.parametrize("message", GOOD)
def test_real_users_still_pass(message: str) -> None:
    assert guard_problem(message, scenario=SCENARIO, transcript=CHAT) is None
