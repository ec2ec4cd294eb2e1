"""Reading Parlant's event stream as a Parlant 3.x server sends it (issue 9, item 20).

The scripted server (tests/support/parlant_server.py, over `sparring.demo.parlant`) emits
what Parlant's engine emits (research: Parlant 3.3.2's `core/engines/alpha/engine.py`): an
early `ready` without stage after the preamble phase, processing stages, one `tool` event per
call, a `ready` after each message of a canned-response agent, the last `ready` with
`data.data.stage == "completed"`, HTTP 504 for a long poll that timed out, and cancellation
of the agent's work by a customer message posted meanwhile.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest

from sparring.errors import TargetError
from sparring.secrets import Secrets
from sparring.target_specs import ParlantTargetSpec
from sparring.targets import parlant
from sparring.targets.parlant import ParlantSession, ParlantTarget
from sparring.transcript import Message, Transcript
from tests.support.parlant_server import Say, ScriptedParlantServer, tool

pytestmark = pytest.mark.anyio

LOOKUP = tool("lookup_order", {"order_id": "10234"}, {"status": "shipped"})


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


async def open_session(server: ScriptedParlantServer, http: httpx.AsyncClient) -> ParlantSession:
    spec = ParlantTargetSpec(type="parlant", url=server.url, agent_id="agent-1", timeout_s=10)
    return await ParlantTarget(spec, client=http, secrets=Secrets({})).open_session()


async def converse(session: ParlantSession, *texts: str) -> list[Message]:
    transcript, replies = Transcript(), list[Message]()
    for text in texts:
        transcript = transcript.with_message(Message(role="user", content=text))
        replies.append(await session.send(transcript))
        transcript = transcript.with_message(replies[-1])
    return replies


async def session_events(server: ScriptedParlantServer, http: httpx.AsyncClient) -> list[Any]:
    [created] = server.calls("POST", "/sessions/*/events")[:1]
    answer = await http.get(server.url + created.path, params={"wait_for_data": 0})
    return answer.json()


def statuses(events: list[Any]) -> list[tuple[str, str | None]]:
    return [
        (e["data"]["status"], e["data"]["data"].get("stage"))
        for e in events
        if e["kind"] == "status"
    ]


async def test_the_reply_runs_past_the_preamble_to_the_completed_ready(
    serve: Any, http: httpx.AsyncClient
) -> None:
    """Parlant's first `ready` follows the preamble while the agent still works; the answer,
    its tool call and the second message come after it."""
    server = serve(
        Say(
            "Order 10234 shipped on Monday.",
            "Anything else?",
            preamble="Let me check that for you.",
            tools=[LOOKUP],
            delay_s=0.3,
        ),
        Say("You're welcome!"),
    )
    session = await open_session(server, http)
    first, second = await converse(session, "Where is 10234?", "Thanks")
    assert first.parts == (
        "Let me check that for you.",
        "Order 10234 shipped on Monday.",
        "Anything else?",
    )
    [call] = first.tool_calls
    assert (call.name, call.result) == ("lookup_order", {"status": "shipped"})
    assert first.status_events[-1].detail == "completed"
    assert second.content == "You're welcome!"
    events = await session_events(server, http)
    assert ("cancelled", None) not in statuses(events)  # sparring never cut the agent off
    assert server.histories[1][-2:] == [
        {
            "role": "assistant",
            "content": "Let me check that for you.\nOrder 10234 shipped on Monday.\nAnything else?",
        },
        {"role": "user", "content": "Thanks"},
    ]


async def test_the_early_ready_of_a_fluid_agent_is_not_an_empty_reply(
    serve: Any, http: httpx.AsyncClient
) -> None:
    """Parlant's default (FLUID) agent sends no preamble message, but still a stage-less
    `ready` when its preamble phase ends, and `processing` only 1-2 s later."""
    server = serve(Say("Hello! How can I help?"), canned=False, indicator_delay_s=1.5)
    [reply] = await converse(await open_session(server, http), "Hi")
    assert reply.content == "Hello! How can I help?"
    states = statuses(await session_events(server, http))
    assert states == [
        ("acknowledged", None),
        ("ready", None),
        ("processing", "Interpreting"),
        ("typing", None),
        ("ready", "completed"),
    ]


async def test_a_server_without_completion_marks_ends_the_turn_when_the_agent_is_idle(
    serve: Any, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parlant 3.0 / 3.1 send the same stage-less `ready` after the preamble and after the
    answer: the turn ends at a `ready` after `processing` or after an answer, once the agent
    is quiet. From the fourth message on there is no preamble phase, and no `processing`."""
    monkeypatch.setattr(parlant, "_IDLE_S", 1)
    canned = serve(
        Say("It shipped.", "Anything else?", preamble="One moment.", tools=[LOOKUP], delay_s=0.3),
        Say("Bye!"),
        version=(3, 1),
    )
    first, second = await converse(await open_session(canned, http), "Where is it?", "No")
    assert first.parts == ("One moment.", "It shipped.", "Anything else?")
    assert len(first.tool_calls) == 1 and second.content == "Bye!"
    states = statuses(await session_events(canned, http))
    assert ("cancelled", None) not in states and ("ready", "completed") not in states

    fluid = serve(
        Say("It shipped.", tools=[LOOKUP]),
        Say("Anything else?"),
        Say("Sure."),
        Say("Bye!", delay_s=0.3),
        version=(3, 1),
        canned=False,
    )
    replies = await converse(await open_session(fluid, http), "Where?", "Ok", "Thanks", "Bye")
    assert [r.content for r in replies] == ["It shipped.", "Anything else?", "Sure.", "Bye!"]
    assert [s.state for s in replies[3].status_events] == ["acknowledged", "typing", "ready"]
    assert ("cancelled", None) not in statuses(await session_events(fluid, http))


async def test_an_error_status_is_named_by_its_exception_not_its_traceback(
    serve: Any, http: httpx.AsyncClient
) -> None:
    """Parlant's `error` data is `pformat(traceback.format_exception(e))`, after the
    completed `ready`."""
    server = serve(Say(error="model overloaded"))
    session = await open_session(server, http)
    with pytest.raises(TargetError) as caught:
        await converse(session, "Hi")
    assert "reported an error instead of a reply: 'RuntimeError: model overloaded'" in str(
        caught.value
    )
    assert "Traceback" not in str(caught.value)
    assert statuses(await session_events(server, http))[-2:] == [
        ("ready", "completed"),
        ("error", None),
    ]


async def test_an_error_after_the_preamble_fails_the_turn(
    serve: Any, http: httpx.AsyncClient
) -> None:
    """The preamble is no answer: the `error` right after the completed `ready` is read."""
    server = serve(Say(preamble="Let me check.", error="the order service is down"))
    session = await open_session(server, http)
    with pytest.raises(TargetError, match="'RuntimeError: the order service is down'"):
        await converse(session, "Where is 10234?")


async def test_someone_else_posting_while_the_agent_works_cancels_the_turn(
    serve: Any, http: httpx.AsyncClient
) -> None:
    """A customer message posted during the agent's work makes Parlant cancel it: the old
    run ends `cancelled` + completed `ready`, a new run answers both messages."""
    # the first reply takes longer than any loaded machine needs to post the second message
    # (the server's close ends the wait)
    server = serve(Say("Too late.", delay_s=60), Say("Answering both."))
    session = await open_session(server, http)
    failure: list[TargetError] = []

    async def send() -> None:
        try:
            await converse(session, "First question")
        except TargetError as e:
            failure.append(e)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(send)
        while not server.histories:  # the agent is working on the first message
            await anyio.sleep(0.01)
        [posted] = server.calls("POST", "/sessions/*/events")
        await http.post(
            server.url + posted.path,
            json={"kind": "message", "source": "customer", "message": "Second question"},
        )
    assert "Parlant cancelled the agent's reply" in str(failure[0])
    events: list[Any] = []
    with anyio.move_on_after(60):  # a guard for a busy machine, not a measurement
        while True:
            events = await session_events(server, http)
            if statuses(events)[-1] == ("ready", "completed") and len(server.histories) == 2:
                break
            await anyio.sleep(0.02)
    states = statuses(events)
    cancelled = states.index(("cancelled", None))
    assert states[cancelled + 1 : cancelled + 3] == [("ready", "completed"), ("acknowledged", None)]
    assert [m["content"] for m in server.histories[1]] == ["First question", "Second question"]
    messages = [e["data"]["message"] for e in events if e["kind"] == "message"]
    assert messages == ["First question", "Second question", "Answering both."]


async def test_the_fake_engine_emits_events_shaped_like_parlants(
    serve: Any, http: httpx.AsyncClient
) -> None:
    """Event shapes from Parlant 3.3.2's `EventDTO` and `EventPublisher`: engine events have
    `source: ai_agent` (tool events too), one `trace_id` (= `correlation_id`) per run,
    contiguous offsets; a preamble is tagged `__preamble__`; a tool event holds one call with
    a full `ToolResult`; a long poll that times out is HTTP 504."""
    server = serve(Say("It shipped.", preamble="Checking.", tools=[LOOKUP, LOOKUP]))
    await converse(await open_session(server, http), "Where is it?")
    events = await session_events(server, http)
    assert [e["offset"] for e in events] == list(range(len(events)))
    customer, *engine = events
    assert customer["source"] == "customer" and customer["data"]["tags"] == []
    assert {e["source"] for e in engine} == {"ai_agent"}
    assert len({e["trace_id"] for e in engine}) == 1
    assert all(e["correlation_id"] == e["trace_id"] and len(e["id"]) == 10 for e in events)
    preamble, answer = (e["data"] for e in engine if e["kind"] == "message")
    assert preamble["tags"] == ["__preamble__"] and "tags" not in answer
    tools = [e["data"]["tool_calls"] for e in engine if e["kind"] == "tool"]
    assert [len(calls) for calls in tools] == [1, 1]
    assert set(tools[0][0]["result"]) == {
        "data",
        "metadata",
        "control",
        "canned_responses",
        "canned_response_fields",
        "guidelines",
    }
    waited = await http.get(
        server.url + server.calls("POST", "/sessions/*/events")[0].path,
        params={"min_offset": len(events), "wait_for_data": 1},
    )
    assert (waited.status_code, waited.json()) == (504, {"detail": "Request timed out"})
