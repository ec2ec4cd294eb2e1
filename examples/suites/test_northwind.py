"""Python tests for the Northwind Outfitters demo agent, written with `sparring.api`.

Start the demo agent and run them (alone, or with the YAML examples):

    sparring demo-agent --port 8787 -- sparring run examples/suites/test_northwind.py
    sparring demo-agent --port 8787 -- sparring run examples/ --model openai:gpt-4o-mini

Without a model the `should` conditions are reported as skipped and the deterministic checks
still run; with `--model` every test here is expected to pass.
"""

from __future__ import annotations

from sparring.api import AgentMessage, CustomerMessage, InteractionBuilder, Suite

DEMO = "http://127.0.0.1:8787"

suite = Suite(
    target={
        "url": f"{DEMO}/chat",
        "body_template": {"message": "{{input}}", "history": "{{history}}"},
        "response_path": "reply",
        "tool_calls_path": "tool_calls",
    },
    response_timeout=10,
)


# Quick start: one message, one natural-language assertion.
@suite.scenario
async def test_greets_the_customer() -> None:
    async with suite.session() as session:
        response = await session.send("Hello!")
        await response.should("greet the customer")


# Repetitions: the reply must hold up every time, judged on several separate conditions.
@suite.scenario(repetitions=3)
async def test_explains_the_return_policy() -> None:
    async with suite.session() as session:
        response = await session.send("What's your return policy?")
        await response.should(
            [
                "mention the 30-day return window",
                "say that store credit is offered after 30 days",
                "offer to start a return",
            ]
        )


# unfold: three sub-tests, each a fresh conversation preloaded with the steps before it.
@suite.scenario
async def test_refund_outside_the_window() -> None:
    async with suite.session() as session:
        await session.unfold(
            [
                CustomerMessage("I'd like a refund please."),
                AgentMessage(
                    "I can help with that. Could you tell me your order number?",
                    should="ask for the order number",
                ),
                CustomerMessage("It's order 10236, the boots don't fit."),
                AgentMessage(
                    "I'm sorry, order #10236 is outside our 30-day refund window. I can offer "
                    "store credit for the full amount ($189.00) instead.",
                    should="explain that the order is outside the 30-day refund window",
                    checks=[
                        {"tool_called": {"include": ["lookup_order"], "exclude": ["create_refund"]}}
                    ],
                ),
                CustomerMessage("OK, store credit then."),
                AgentMessage(
                    "I've issued $189.00 in store credit for order #10236.",
                    should="confirm that store credit was issued",
                    checks=[
                        {"tool_args": {"tool": "issue_store_credit", "args": {"order_id": "10236"}}}
                    ],
                ),
            ]
        )


# History-only steps and InteractionBuilder: start the live conversation mid-way.
@suite.scenario
async def test_delayed_order_after_a_greeting() -> None:
    history = (
        InteractionBuilder()
        .step(CustomerMessage("Hi, I need some help"))
        .step(AgentMessage("Hello! How can I help you today?"))
        .step(CustomerMessage("Where is my order?"))
        .step(AgentMessage("Could you tell me your order number so I can check on it?"))
        .build()
    )
    async with suite.session() as session:
        await session.add_events(history)
        response = await session.send("It's 10237")
        assert [call.name for call in response.tool_calls] == ["lookup_order"]
        await response.should("apologise for the delay and give the new delivery date")


# Hooks and shared context: before_all uses the run's HTTP client on the agent's own API.
visited: list[str] = []


@suite.before_all
async def find_the_shop_name() -> None:
    health = await suite.client.get(f"{DEMO}/health")
    suite.context["shop"] = health.json()["agent"]


@suite.before_each
def remember(test_name: str) -> None:
    visited.append(test_name)


@suite.after_each
def record(test_name: str, passed: bool, error: str | None) -> None:
    suite.context.setdefault("outcomes", {})[test_name] = error or "passed"


@suite.scenario
async def test_greeting_names_the_shop() -> None:
    shop = suite.context["shop"]
    async with suite.session() as session:
        response = await session.send("Hello!")
        assert shop in response.message
        await response.should(f"mention {shop} by name")
