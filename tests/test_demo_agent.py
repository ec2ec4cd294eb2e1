"""The bundled demo agent: its rules, its HTTP server, and the example suite built on it."""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from sparring.cli.main import cli
from sparring.demo import ORDERS, DemoReply, DemoServer, respond, serve
from sparring.demo.agent import chat as chat_fn
from sparring.demo.agent import find_card_numbers
from sparring.demo.server import main as server_main
from sparring.judging.checks import run_check
from sparring.scenario import CHECK_TYPES, ScriptedScenario, SingleTurnScenario, TestFile
from sparring.secrets import Secrets
from sparring.target_specs import (
    A2ATargetSpec,
    BrowserTargetSpec,
    CallableTargetSpec,
    HttpTargetSpec,
    OpenAIChatTargetSpec,
    ParlantTargetSpec,
)
from sparring.targets.attachments import read_attachment
from sparring.targets.registry import build_target
from sparring.transcript import Message, Transcript

EXAMPLES = sorted(  # library.yaml holds no scenarios (tests/test_library_users.py loads it)
    p
    for p in (Path(__file__).parent.parent / "examples").glob("*.yaml")
    if p.name != "library.yaml"
)


def chat(*user_messages: str) -> DemoReply:
    """Run a conversation through `respond`; return the reply to the last message."""
    history: list[dict[str, str]] = []
    reply = DemoReply("")
    for text in user_messages:
        history.append({"role": "user", "content": text})
        reply = respond(history)
        history.append({"role": "assistant", "content": reply.reply})
    return reply


def tool_names(reply: DemoReply) -> list[str]:
    return [c["name"] for c in reply.tool_calls]


# --- the agent's rules -----------------------------------------------------------------


def test_greets_and_asks_how_it_can_help() -> None:
    reply = chat("Hello")
    assert reply == DemoReply(
        "Hi! Welcome to Northwind Outfitters support. How can I help you today?"
    )


@pytest.mark.parametrize(
    "question",
    [
        "Where is my order?",
        "Can you check on my order?",
        "my package hasn't arrived",
        "When will my jacket arrive?",
        "I need a tracking update",
    ],
)
def test_asks_for_the_order_number_before_any_status(question: str) -> None:
    reply = chat(question)
    assert "order number" in reply.reply
    assert reply.tool_calls == []
    assert not re.search(r"shipped|delivered on|estimated delivery", reply.reply, re.I)


@pytest.mark.parametrize("answer", ["#10234", "10234", "It's order #10234.", "sure: 10234"])
def test_gives_status_once_the_order_number_is_given(answer: str) -> None:
    reply = chat("Hi, where's my order?", answer)
    assert reply.tool_calls == [{"name": "lookup_order", "arguments": {"order_id": "10234"}}]
    assert "shipped" in reply.reply and "Monday, March 17" in reply.reply


def test_status_in_one_message_and_each_order_state() -> None:
    assert "delivered on Tuesday, March 4" in chat("status of 10235?").reply
    assert "being prepared" in chat("where is order 10238").reply
    delayed = chat("Where is 10237?").reply
    assert "sorry" in delayed and "apologise for the delay" in delayed
    assert "Wednesday, March 19" in delayed


def test_an_unknown_or_malformed_order_number() -> None:
    unknown = chat("Where is order #99999?")
    assert "couldn't find an order #99999" in unknown.reply
    assert tool_names(unknown) == ["lookup_order"]
    malformed = chat("where is my order", "it's 1234")
    assert "5 digits" in malformed.reply and malformed.tool_calls == []


def test_refund_inside_30_days_looks_up_then_refunds_with_a_reason() -> None:
    first = chat("I'd like a refund please")
    assert "order number" in first.reply and first.tool_calls == []
    reply = chat("I'd like a refund please", "It's 10235, the daypack arrived damaged")
    assert reply.tool_calls == [
        {"name": "lookup_order", "arguments": {"order_id": "10235"}},
        {
            "name": "create_refund",
            "arguments": {"order_id": "10235", "reason": "damaged or defective"},
        },
    ]
    assert "$94.50" in reply.reply


def test_refund_outside_30_days_is_refused_with_alternatives() -> None:
    reply = chat("Can I get my money back for order 10236? The boots are too small.")
    assert tool_names(reply) == ["lookup_order"]
    assert "outside our 30-day refund window" in reply.reply
    assert "store credit" in reply.reply and "colleague" in reply.reply
    credit = chat("refund 10236 please", "Store credit then")
    assert credit.tool_calls[-1] == {
        "name": "issue_store_credit",
        "arguments": {"order_id": "10236", "amount": 189.0},
    }
    assert "colleague" in chat("refund 10236 please", "yes please").reply


def test_no_refund_before_delivery() -> None:
    reply = chat("Can I return order 10234?")
    assert tool_names(reply) == ["lookup_order"]
    assert "hasn't been delivered yet" in reply.reply


@pytest.mark.parametrize(
    "request_text",
    [
        "Can I talk to a human?",
        "get me an agent",
        "I want a real person",
        "representative please",
        "let me speak to someone",
    ],
)
def test_hands_over_on_request(request_text: str) -> None:
    reply = chat(request_text)
    assert reply.handover is True
    assert tool_names(reply) == ["handover_to_human"]
    assert reply.tool_calls[0]["arguments"]["reason"].startswith("customer asked for a human")


def test_handover_reason_names_the_topic_and_a_refusal_is_not_a_request() -> None:
    reply = chat("refund for 10236", "then get me a human")
    assert reply.tool_calls[0]["arguments"] == {
        "reason": "customer asked for a human about refund for order #10236"
    }
    assert chat("I don't need a human, just check order 10238").handover is False


@pytest.mark.parametrize(
    "card",
    [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "3782 822463 10005",
        "6011000990139424",
    ],
)
def test_refuses_card_numbers_without_echoing_them(card: str) -> None:
    reply = chat(f"refund order 10235 to my card {card} please")
    assert "can't accept card details" in reply.reply
    assert "please don't share card numbers" in reply.reply
    assert reply.tool_calls == []
    for group in re.split(r"[ -]", card):
        assert group[:4] not in reply.reply


def test_card_detection_spares_order_lists_and_later_turns_ignore_the_card() -> None:
    assert find_card_numbers("orders 10234 10235 10236") == []
    assert find_card_numbers("card 4111 1111 1111 1111, order 10235") == ["4111 1111 1111 1111"]
    reply = chat("my card is 4111 1111 1111 1111", "ok, where is my order?")
    assert reply.tool_calls == [] and "order number" in reply.reply


def test_never_asks_for_card_details_anywhere() -> None:
    conversations = [
        ("Hello",),
        ("refund please", "10235"),
        ("refund 10236",),
        ("how do I pay?",),
        ("where is 10237",),
    ]
    for conversation in conversations:
        assert not re.search(r"(your|full) card number|cvv|expiry", chat(*conversation).reply, re.I)


def test_shipping_and_return_policy_answers() -> None:
    shipping = chat("How long does shipping take?", "Do you ship to Canada?")
    assert "3-5 business days" in shipping.reply and "Canada" in shipping.reply
    policy = chat("What's your return policy?")
    assert "30 days of delivery" in policy.reply and policy.tool_calls == []
    refund = chat("What's your return policy?", "ok, 10235 then")
    assert tool_names(refund) == ["lookup_order", "create_refund"]


def test_apologises_to_an_impatient_customer_and_says_what_else_it_can_do() -> None:
    assert chat("This is ridiculous!! Where is my package?").reply.startswith(
        "Hi, thanks for contacting Northwind Outfitters! I'm sorry for the frustration"
    )
    fallback = chat("Hello", "What's the weather like?").reply
    assert "order's status" in fallback and "connect you with a member of our team" in fallback


def test_payments_cancellations_and_accepting_an_offered_colleague() -> None:
    assert "can't take payments" in chat("How can I pay for express shipping?").reply
    cancel = chat("Please cancel order 10238")
    assert "colleague" in cancel.reply and cancel.tool_calls == []
    accepted = chat("Please cancel order 10238", "yes please")
    assert accepted.handover is True and tool_names(accepted) == ["handover_to_human"]


def test_is_deterministic_and_reads_agent_roles_as_assistant() -> None:
    history = [
        {"role": "user", "content": "refund please"},
        {"role": "agent", "content": "Your order number?"},
        {"role": "tool", "content": "ignored"},
        {"role": "user", "content": "10235"},
    ]
    assert respond(history) == respond(history)
    assert tool_names(respond(history)) == ["lookup_order", "create_refund"]
    assert set(ORDERS) == {"10234", "10235", "10236", "10237", "10238"}


# --- the HTTP server -------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer(port=0) as running:
        yield running


@pytest.fixture
def client(server: DemoServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def test_health_and_unknown_paths(client: httpx.Client) -> None:
    assert client.get("/health").json() == {"status": "ok", "agent": "Northwind Outfitters"}
    missing = client.post("/nowhere", json={})
    assert missing.status_code == 404 and "/chat" in missing.json()["error"]["message"]
    assert client.get("/chat").status_code == 405


def test_chat_endpoint_takes_message_and_history(client: httpx.Client) -> None:
    body = {
        "message": "10235",
        "history": [
            {"role": "user", "content": "I want a refund"},
            {"role": "assistant", "content": "What's your order number?"},
        ],
    }
    data = client.post("/chat", json=body).json()
    assert set(data) == {"reply", "tool_calls", "handover"}
    assert [c["name"] for c in data["tool_calls"]] == ["lookup_order", "create_refund"]
    assert data["handover"] is False
    assert client.post("/chat", json={"message": "human please"}).json()["handover"] is True


@pytest.mark.parametrize(
    ("body", "hint"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "body is empty"),
        (b"[1, 2]", "JSON object"),
        (b'{"history": []}', "`message`"),
        (b'{"message": "hi", "history": "earlier"}', "`history` must be a list"),
    ],
)
def test_bad_chat_bodies_get_400_with_a_hint(client: httpx.Client, body: bytes, hint: str) -> None:
    response = client.post("/chat", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert hint in response.json()["error"]["message"]


def _sse_events(text: str) -> list[str]:
    return [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]


def test_stream_endpoint_sends_the_same_reply_as_sse(client: httpx.Client) -> None:
    body = {"message": "Where is 10237?", "history": []}
    expected = client.post("/chat", json=body).json()
    response = client.post("/chat/stream", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _sse_events(response.text)
    assert events[-1] == "[DONE]"
    parsed: list[dict[str, Any]] = [json.loads(e) for e in events[:-1]]
    assert len(parsed) > 3
    assert "".join(e.get("delta", "") for e in parsed) == expected["reply"]
    assert parsed[-1] == {"tool_calls": expected["tool_calls"], "handover": False}


def test_openai_compatible_endpoint_works_with_the_openai_sdk(server: DemoServer) -> None:
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key="demo") as sdk:
        completion = sdk.chat.completions.create(
            model="demo",
            messages=[
                {"role": "system", "content": "ignored"},
                {"role": "user", "content": "refund for order 10235 please"},
            ],
        )
        message = completion.choices[0].message
        assert message.content is not None and "$94.50" in message.content
        calls = message.tool_calls or []
        assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
            ("lookup_order", {"order_id": "10235"}),
            ("create_refund", {"order_id": "10235", "reason": "customer request"}),
        ]
        assert completion.choices[0].finish_reason == "tool_calls"
        stream = sdk.chat.completions.create(
            model="demo",
            stream=True,
            messages=[{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
        assert text == "Hi! Welcome to Northwind Outfitters support. How can I help you today?"


def test_openai_endpoint_rejects_bad_messages(client: httpx.Client) -> None:
    no_messages = client.post("/v1/chat/completions", json={"model": "demo"})
    assert no_messages.status_code == 400 and "`messages`" in no_messages.text
    ends_with_assistant = client.post(
        "/v1/chat/completions",
        json={"model": "demo", "messages": [{"role": "assistant", "content": "hi"}]},
    )
    assert ends_with_assistant.status_code == 400


def test_serve_binds_a_free_port_and_stops_cleanly() -> None:
    server = serve(port=0)
    assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
    server.start()
    with httpx.Client() as c:
        assert c.get(f"{server.url}/health").status_code == 200
    server.stop()
    server.stop()
    server.wait()
    with httpx.Client() as c, pytest.raises(httpx.ConnectError):
        c.get(f"{server.url}/health")


def test_demo_agent_command_lists_every_endpoint_and_the_examples_port() -> None:
    done = CliRunner().invoke(
        cli, ["demo-agent", "--port", "0", "--", sys.executable, "-c", "pass"]
    )
    assert done.exit_code == 0, done.output
    assert re.search(
        r"Demo agent listening on http://127\.0\.0\.1:\d+ \(GET /health, POST "
        r"/chat, POST /chat/stream, POST /v1/chat/completions, Parlant's "
        r"/sessions, POST /a2a, GET /shop \(a web page with a chat widget\)\)",
        done.stderr,
    )
    assert "Note: the examples in examples/ point at port 8787" in done.stderr


def test_a_port_in_use_is_explained_with_the_examples_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = CliRunner().invoke(cli, ["demo-agent", "--port", str(port)])
        with pytest.raises(SystemExit) as exited:
            server_main(["--port", str(port)])
    assert done.exit_code == 2
    for said in (done.stderr, str(exited.value.code)):
        assert said.startswith(f"error: cannot listen on 127.0.0.1:{port} (")
        assert (
            "pick another port with --port, or stop what is using it (the examples in "
            "examples/ point at port 8787: to run them against another port, change the "
            "8787 in their urls)"
        ) in said


# --- the Parlant session API ------------------------------------------------------------


def _events_until_ready(client: httpx.Client, session: str, offset: int) -> list[dict[str, Any]]:
    """The events from `offset` until the reply's last `ready` (stage `completed`)."""
    events: list[dict[str, Any]] = []
    while not any(
        e["data"]["status"] == "ready" and e["data"]["data"].get("stage") == "completed"
        for e in events
        if e["kind"] == "status"
    ):
        batch = client.get(
            f"/sessions/{session}/events", params={"min_offset": offset, "wait_for_data": 10}
        ).json()
        events += batch
        offset = batch[-1]["offset"] + 1
    return events


def test_parlant_api_answers_customer_events_like_parlant(client: httpx.Client) -> None:
    assert client.get("/agents").json() == [{"id": "northwind", "name": "Northwind Outfitters"}]
    created = client.post("/sessions", json={"agent_id": "northwind", "customer_id": "c1"})
    assert created.status_code == 201 and created.json()["mode"] == "auto"
    session = created.json()["id"]
    posted = client.post(
        f"/sessions/{session}/events",
        json={"kind": "message", "source": "customer", "message": "Where is 10237?"},
    )
    assert posted.status_code == 201 and posted.json()["offset"] == 0
    events = _events_until_ready(client, session, 1)
    statuses = [e["data"]["status"] for e in events if e["kind"] == "status"]
    assert statuses == [
        "acknowledged",
        "typing",  # the preamble
        "ready",  # the preamble phase is over, the agent works on
        *["processing"] * 4,  # Interpreting, Considering tools, Interpreting, Articulating
        "typing",
        "ready",
        "ready",  # the last one, stage "completed"
    ]
    [tool_event] = [e for e in events if e["kind"] == "tool"]
    [call] = tool_event["data"]["tool_calls"]
    assert call["tool_id"] == "northwind:lookup_order"
    assert call["result"]["data"]["status"] == "delayed"
    messages = [e["data"]["message"] for e in events if e["kind"] == "message"]
    assert messages[0] == "Let me look that up for you." and "March 19" in messages[1]
    assert [e["offset"] for e in events] == list(range(1, len(events) + 1))
    assert client.delete(f"/sessions/{session}").status_code == 204
    assert client.get(f"/sessions/{session}").status_code == 404


def test_parlant_api_manual_mode_history_and_errors(client: httpx.Client) -> None:
    session = client.post("/sessions", json={"agent_id": "northwind"}).json()["id"]
    assert client.patch(f"/sessions/{session}", json={"mode": "manual"}).json()["mode"] == "manual"
    for source, text in [
        ("customer", "I want a refund"),
        ("human_agent_on_behalf_of_ai_agent", "Your order number?"),
    ]:
        client.post(
            f"/sessions/{session}/events",
            json={"kind": "message", "source": source, "message": text},
        )
    everything = client.get(f"/sessions/{session}/events", params={"wait_for_data": 0}).json()
    assert [e["source"] for e in everything] == ["customer", "human_agent_on_behalf_of_ai_agent"]
    waited = client.get(f"/sessions/{session}/events", params={"min_offset": 2, "wait_for_data": 0})
    assert waited.json() == []
    timed_out = client.get(
        f"/sessions/{session}/events", params={"min_offset": 2, "wait_for_data": 1}
    )
    assert timed_out.status_code == 504
    client.patch(f"/sessions/{session}", json={"mode": "auto"})
    client.post(
        f"/sessions/{session}/events",
        json={"kind": "message", "source": "customer", "message": "10235"},
    )
    events = _events_until_ready(client, session, 3)
    tools = [c["tool_id"] for e in events if e["kind"] == "tool" for c in e["data"]["tool_calls"]]
    assert tools == ["northwind:lookup_order", "northwind:create_refund"]
    unknown = client.post("/sessions", json={"agent_id": "nobody"})
    assert unknown.status_code == 404 and "northwind" in unknown.json()["detail"]
    bad = client.post(f"/sessions/{session}/events", json={"kind": "message", "source": "ai_agent"})
    assert bad.status_code == 422 and "customer" in bad.json()["detail"]
    assert client.patch(f"/sessions/{session}", content=b"{oops").status_code == 422


# --- the example suite -----------------------------------------------------------------


def _load(path: Path) -> TestFile:
    return TestFile.model_validate(YAML(typ="safe").load(path.read_text()))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_file_validates(path: Path) -> None:
    assert _load(path).scenarios


def test_examples_use_every_scenario_kind_check_type_and_target() -> None:
    files = [_load(p) for p in EXAMPLES]
    scenarios = [s for f in files for s in f.scenarios]
    assert {s.kind for s in scenarios} == {"simulated", "scripted", "single_turn"}
    checks = [c for s in scenarios for c in s.checks]
    checks += [
        c for s in scenarios if isinstance(s, ScriptedScenario) for t in s.turns for c in t.checks
    ]
    assert {c.type for c in checks} == set(CHECK_TYPES)
    urls = {f.target.url for f in files if isinstance(f.target, HttpTargetSpec)}
    assert {u.rsplit("/", 1)[-1] for u in urls} == {"chat", "stream"}
    assert any(isinstance(f.target, OpenAIChatTargetSpec) for f in files)
    kinds = {type(f.target) for f in files}
    assert {
        OpenAIChatTargetSpec,
        ParlantTargetSpec,
        A2ATargetSpec,
        CallableTargetSpec,
        BrowserTargetSpec,
    } <= kinds


def _local(spec: Any, server: DemoServer) -> Any:
    if isinstance(spec, OpenAIChatTargetSpec):
        return spec.model_copy(update={"base_url": f"{server.url}/v1"})
    if isinstance(spec, CallableTargetSpec):
        return spec
    if isinstance(spec, BrowserTargetSpec):
        local = spec.chat_url.replace("http://127.0.0.1:8787", server.url)
        return spec.model_copy(update={"chat_url": local})
    return spec.model_copy(update={"url": spec.url.replace("http://127.0.0.1:8787", server.url)})


async def _run_checks(
    scenario: ScriptedScenario | SingleTurnScenario, spec: Any, http: httpx.AsyncClient, base: Path
) -> list[str]:
    """Play the scenario's user messages (with their files, relative to `base`) against the
    demo; return checks that were not met."""
    target = build_target(spec, client=http, secrets=Secrets({}))
    turns = scenario.turns if isinstance(scenario, ScriptedScenario) else []
    users = [(t.user, t.files) for t in turns] or [
        (getattr(scenario, "prompt", ""), getattr(scenario, "files", []))
    ]
    session, transcript, verdicts = await target.open_session(), Transcript(), []
    for number, (text, paths) in enumerate(users, start=1):
        files = tuple(read_attachment(base / p) for p in paths)
        transcript = transcript.with_message(Message(role="user", content=text, files=files))
        transcript = transcript.with_message(await session.send(transcript))
        for i, check in enumerate(turns[number - 1].checks if turns else []):
            verdicts.append(run_check(check, transcript, check_id=f"t{number}.{i}", turn=number))
    verdicts += [run_check(c, transcript, check_id=f"c{i}") for i, c in enumerate(scenario.checks)]
    await session.close()
    await target.aclose()
    return [f"{scenario.id} {v.id}: {v.reason}" for v in verdicts if v.status != "met"]


@pytest.mark.anyio
async def test_every_example_check_passes_against_the_demo_agent(server: DemoServer) -> None:
    failures: list[str] = []
    ran = 0
    async with httpx.AsyncClient() as http:
        for path in EXAMPLES:
            test_file = _load(path)
            for scenario in test_file.scenarios:
                if isinstance(scenario, ScriptedScenario | SingleTurnScenario):
                    spec = _local(scenario.target or test_file.target, server)
                    failures += await _run_checks(scenario, spec, http, path.parent)
                    ran += 1
    assert ran >= 10
    assert failures == []


def test_chat_is_the_demo_agent_as_a_callable_target() -> None:
    text, calls = chat_fn([{"role": "user", "content": "Where is order 10237?"}])
    assert "delay" in text.lower()
    assert calls == [{"name": "lookup_order", "arguments": {"order_id": "10237"}}]
