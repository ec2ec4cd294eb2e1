"""ParlantTarget against Parlant's session API on 127.0.0.1 (tests/support/parlant_server.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from sparring.errors import TargetError, TargetTimeout, UserError
from sparring.loaders.yaml import load_text
from sparring.runner import TargetPool, run_scenarios
from sparring.secrets import Secrets
from sparring.target_specs import ParlantTargetSpec
from sparring.targets.base import Target, TargetSession
from sparring.targets.parlant import ParlantTarget
from sparring.transcript import Message, Transcript
from tests.support.parlant_server import Say, ScriptedParlantServer, tool

pytestmark = pytest.mark.anyio

SECRET = "pk-live-0123456789"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(follow_redirects=False) as client:
        yield client


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ScriptedParlantServer] = []

    def start(*replies: Say, **options: Any) -> ScriptedParlantServer:
        servers.append(ScriptedParlantServer(replies, **options).start())
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def target(
    server: ScriptedParlantServer,
    http: httpx.AsyncClient,
    *,
    secrets: Secrets | None = None,
    **spec: Any,
) -> ParlantTarget:
    fields: dict[str, Any] = {
        "type": "parlant",
        "url": server.url,
        "agent_id": "agent-1",
        "timeout_s": 10,
        **spec,
    }
    return ParlantTarget(ParlantTargetSpec(**fields), client=http, secrets=secrets or Secrets({}))


def user(text: str, transcript: Transcript | None = None) -> Transcript:
    return (transcript or Transcript()).with_message(Message(role="user", content=text))


async def test_a_reply_is_read_from_the_session_events(serve: Any, http: httpx.AsyncClient) -> None:
    server = serve(Say("Hello! How can I help?"))
    parlant = target(server, http, customer_id="cust-7")
    assert isinstance(parlant, Target)
    session = await parlant.open_session()
    assert isinstance(session, TargetSession)
    reply = await session.send(user("Hi"))
    assert reply.role == "agent" and reply.content == "Hello! How can I help?"
    assert reply.parts == () and reply.tool_calls == ()
    assert reply.latency_ms is not None and reply.latency_ms > 0
    assert isinstance(reply.raw, list) and reply.raw
    [created] = server.calls("POST", "/sessions")
    assert created.body["agent_id"] == "agent-1" and created.body["customer_id"] == "cust-7"
    assert created.query["allow_greeting"] == ["false"]
    [posted] = server.calls("POST", "/sessions/*/events")
    assert posted.body == {"kind": "message", "source": "customer", "message": "Hi"}
    assert server.histories == [[{"role": "user", "content": "Hi"}]]


async def test_several_messages_tool_events_and_statuses(
    serve: Any, http: httpx.AsyncClient
) -> None:
    lookup = tool("lookup_order", {"order_id": "10234"}, {"status": "shipped"})
    server = serve(
        Say("It shipped on Monday.", preamble="One moment, checking.", tools=[lookup]),
        Say("You're welcome!"),
    )
    session = await target(server, http).open_session()
    first = await session.send(user("Where is 10234?"))
    assert first.parts == ("One moment, checking.", "It shipped on Monday.")
    assert first.content == "One moment, checking.\nIt shipped on Monday."
    [call] = first.tool_calls
    assert (call.name, call.arguments, call.result) == (
        "lookup_order",
        {"order_id": "10234"},
        {"status": "shipped"},
    )
    assert [(s.state, s.detail) for s in first.status_events] == [
        ("acknowledged", ""),
        ("typing", ""),
        ("ready", ""),  # the preamble phase is over; the agent still works
        ("processing", "Interpreting"),
        ("processing", "Considering tools"),
        ("processing", "Interpreting"),
        ("processing", "Articulating"),
        ("typing", ""),
        ("ready", ""),  # after each message of a canned-response agent
        ("ready", "completed"),
    ]
    times = [-1.0 if s.at_ms is None else s.at_ms for s in first.status_events]
    assert times[0] >= 0 and times == sorted(times)  # server clock, since the message
    second = await session.send(user("Thanks", user("Where is 10234?").with_message(first)))
    assert second.content == "You're welcome!" and second.tool_calls == ()
    assert len(server.calls("POST", "/sessions")) == 1  # one Parlant session per conversation
    assert server.histories[1][-2:] == [
        {"role": "assistant", "content": "One moment, checking.\nIt shipped on Monday."},
        {"role": "user", "content": "Thanks"},
    ]


async def test_preload_posts_the_history_without_the_agent_answering_it(
    serve: Any, http: httpx.AsyncClient
) -> None:
    server = serve(Say("Refund started."))
    history = Transcript(
        messages=(
            Message(role="user", content="I want a refund"),
            Message(
                role="agent",
                content="Sure.\nYour order number?",
                parts=("Sure.", "Your order number?"),
            ),
        )
    )
    session = await target(server, http).open_session()
    assert await session.preload(history) == history
    assert server.histories == []  # nothing was answered
    events = [
        (r.body["source"], r.body["message"]) for r in server.calls("POST", "/sessions/*/events")
    ]
    assert events == [
        ("customer", "I want a refund"),
        ("human_agent_on_behalf_of_ai_agent", "Sure."),
        ("human_agent_on_behalf_of_ai_agent", "Your order number?"),
    ]
    modes = [r.body["mode"] for r in server.calls("PATCH", "/sessions/*")]
    assert modes == ["manual", "auto"]
    reply = await session.send(user("10235", history))
    assert reply.content == "Refund started."
    assert server.histories == [
        [
            {"role": "user", "content": "I want a refund"},
            {"role": "assistant", "content": "Sure.\nYour order number?"},
            {"role": "user", "content": "10235"},
        ]
    ]
    assert await session.preload(Transcript()) == Transcript()


async def test_a_slow_agent_times_out(serve: Any, http: httpx.AsyncClient) -> None:
    server = serve(Say("Too late.", delay_s=30))
    # the limit applies to opening the session too, which must not reach it on a busy machine
    session = await target(server, http, timeout_s=2).open_session()
    with pytest.raises(TargetTimeout, match=r"'parlant:agent-1' did not reply within 2 s"):
        await session.send(user("Hi"))
    await session.close()


async def test_an_agent_error_status_fails_the_turn(serve: Any, http: httpx.AsyncClient) -> None:
    server = serve(Say(error="model overloaded"))
    session = await target(server, http).open_session()
    with pytest.raises(TargetError, match="reported an error instead of a reply.*overloaded"):
        await session.send(user("Hi"))


async def test_an_agent_that_says_nothing_gives_an_empty_reply(
    serve: Any, http: httpx.AsyncClient
) -> None:
    server = serve(Say())
    reply = await (await target(server, http).open_session()).send(user("ok"))
    assert reply.content == "" and reply.status_events[-1].state == "ready"


async def test_an_unknown_agent_is_a_404_with_a_hint(serve: Any, http: httpx.AsyncClient) -> None:
    server = serve()
    session = await target(server, http, agent_id="nobody").open_session()
    with pytest.raises(TargetError) as caught:
        await session.send(user("Hi"))
    assert caught.value.status == 404
    message = str(caught.value)
    assert "could not create a session: HTTP 404" in message
    assert "Check that agent 'nobody' exists on this server" in message
    assert f"GET {server.url}/agents" in message


async def test_the_auth_header_is_sent_and_its_secret_never_shown(
    serve: Any, http: httpx.AsyncClient
) -> None:
    server = serve(Say("Hi!"), require_headers={"authorization": f"Bearer {SECRET}"})
    headers = {"Authorization": "Bearer {{secrets.PARLANT_KEY}}"}
    good = target(server, http, headers=headers, secrets=Secrets({"PARLANT_KEY": SECRET}))
    assert (await (await good.open_session()).send(user("Hi"))).content == "Hi!"
    wrong = SECRET[::-1]
    bad = target(server, http, headers=headers, secrets=Secrets({"PARLANT_KEY": wrong}))
    with pytest.raises(TargetError) as caught:
        await (await bad.open_session()).send(user("Hi"))
    assert caught.value.status == 401
    assert wrong not in str(caught.value) and "Bearer ***" in str(caught.value)
    assert "Check the credentials in `headers`" in str(caught.value)


async def test_headers_take_secrets_only(http: httpx.AsyncClient) -> None:
    spec = ParlantTargetSpec(
        type="parlant",
        url="http://127.0.0.1:9",
        agent_id="a",
        headers={"X-Said": "{{input}}", "X-Key": "{{secret.KEY}}"},
    )
    with pytest.raises(
        UserError,
        match=r"only use \{\{secrets.NAME\}\}, not \{\{input\}\}, "
        r"\{\{secret.KEY\}\} \(did you mean",
    ):
        ParlantTarget(spec, client=http, secrets=Secrets({}))
    missing = spec.model_copy(update={"headers": {"X-Key": "{{secrets.UNSET_KEY}}"}})
    with pytest.raises(UserError, match="UNSET_KEY"):
        ParlantTarget(missing, client=http, secrets=Secrets({}))


async def test_close_deletes_the_session_and_ignores_failures(
    serve: Any, http: httpx.AsyncClient
) -> None:
    server = serve(Say("Hi!"), Say("Hi again!"))
    parlant = target(server, http)
    unused = await parlant.open_session()
    await unused.close()
    assert server.requests == []  # no session was created, none deleted
    session = await parlant.open_session()
    await session.send(user("Hi"))
    await session.close()
    [deleted] = server.calls("DELETE", "/sessions/*")
    assert deleted.path == server.calls("GET", "/sessions/*/events")[0].path.rsplit("/", 1)[0]
    failing = serve(Say("Hi!"), failures={("DELETE", "/sessions/*"): 500})
    other = await target(failing, http).open_session()
    await other.send(user("Hi"))
    await other.close()  # a failed delete is not the test's failure
    assert len(failing.calls("DELETE")) == 1


async def test_events_that_are_not_a_list_are_reported_not_waited_for(
    serve: Any, http: httpx.AsyncClient
) -> None:
    server = serve(Say("Hi!"), failures={("GET", "/sessions/*/events"): 200})
    session = await target(server, http, timeout_s=30).open_session()
    with pytest.raises(TargetError) as caught:
        await session.send(user("Hi"))
    text = str(caught.value)
    assert text.startswith(f"{server.url}: GET /sessions/")
    assert '/events answered \'{"detail": "scripted failure of GET /sessions/' in text
    assert "not a list of events; check that `url` is a Parlant server's base address" in text
    assert len(server.calls("GET", "/sessions/*/events")) == 1  # no waiting for a reply


async def test_an_unreachable_server_says_so(http: httpx.AsyncClient) -> None:
    spec = ParlantTargetSpec(type="parlant", url="http://127.0.0.1:9", agent_id="a")
    session = await ParlantTarget(spec, client=http, secrets=Secrets({})).open_session()
    with pytest.raises(
        TargetError,
        match="could not connect to the Parlant server at "
        r"http://127.0.0.1:9 to create a session",
    ):
        await session.send(user("Hi"))
    await session.close()


async def test_streamed_messages_are_read_again_when_the_turn_ends() -> None:
    """A streamed message first appears with its text still growing (`chunks` not ending
    with null); the reply has its final text."""

    def event(offset: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "offset": offset,
            "kind": kind,
            "source": "ai_agent",
            "data": data,
            "creation_utc": f"2025-01-01T00:00:0{offset}+00:00",
        }

    partial = event(1, "message", {"message": "", "chunks": ["Your order "]})
    final = event(
        1,
        "message",
        {"message": "Your order shipped.", "chunks": ["Your order ", "shipped.", None]},
    )
    ready = event(2, "status", {"status": "ready", "data": {"stage": "completed"}})

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/sessions":
            return httpx.Response(201, json={"id": "s1"})
        if request.method == "POST":
            return httpx.Response(
                201,
                json={"offset": 0, "kind": "message", "creation_utc": "2025-01-01T00:00:00+00:00"},
            )
        if request.url.params["kinds"] == "message":
            return httpx.Response(200, json=[final])
        return httpx.Response(200, json=[partial, ready])

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        spec = ParlantTargetSpec(
            type="parlant", url="http://parlant.test", agent_id="a", timeout_s=10
        )
        session = await ParlantTarget(spec, client=client, secrets=Secrets({})).open_session()
        reply = await session.send(user("Where is it?"))
    assert reply.content == "Your order shipped."
    assert [s.at_ms for s in reply.status_events] == [2000.0]
    assert json.dumps(reply.raw).count("shipped.") == 2  # the final reading is recorded


async def test_a_scripted_scenario_runs_end_to_end(serve: Any) -> None:
    lookup = tool("lookup_order", {"order_id": "10234"}, {"status": "shipped"})
    server = serve(
        Say("What's your order number?"),
        Say("Let me check.", "Order 10234 shipped; it arrives Monday.", tools=[lookup]),
    )
    scenarios = load_text(f"""
target: {{type: parlant, url: "{server.url}", agent_id: agent-1, timeout_s: 10}}
scenarios:
  - id: parlant/status
    turns:
      - user: Where is my order?
        checks:
          - contains: order number
          - tool_called: {{exclude: [lookup_order]}}
      - user: "10234"
        checks:
          - tool_args: {{tool: lookup_order, args: {{order_id: "10234"}}}}
          - contains: arrives Monday
""")
    async with TargetPool(secrets=Secrets({})) as pool:
        result = await run_scenarios(
            scenarios, targets=pool.for_scenario, user_model=None, judge_model=None
        )
    [trial] = result.scenarios[0].trials
    assert trial.status == "passed", trial.error
    assert [v.status for v in trial.verdicts] == ["met"] * 4
    assert trial.transcript.messages[-1].parts == (
        "Let me check.",
        "Order 10234 shipped; it arrives Monday.",
    )
    assert len(server.calls("DELETE", "/sessions/*")) == 1


async def test_an_answer_nested_too_deep_is_a_target_error_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(201, content=deep, headers={"content-type": "application/json"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        spec = ParlantTargetSpec(
            type="parlant", url="http://parlant.test", agent_id="a", timeout_s=10
        )
        with pytest.raises(TargetError, match="nested more than 100 levels deep"):
            session = await ParlantTarget(spec, client=client, secrets=Secrets({})).open_session()
            await session.send(user("Where is it?"))
