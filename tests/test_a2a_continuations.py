"""A2A `input-required` continuations: a turn's reply is what the agent produced in that
turn (issue 9, item 22).

The agents are real a2a-sdk servers (tests/support/a2a_server.py). A non-streaming reply to a
continued task is the whole stored task, holding every artifact of every turn (research:
a2a-sdk 1.3.0 `TaskManager`, `DefaultRequestHandlerV2.on_message_send`); a streamed one
carries only the turn's own artifact updates.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from sparring.secrets import Secrets
from sparring.target_specs import A2ATargetSpec
from sparring.targets.a2a import A2ATarget
from sparring.transcript import Message, Transcript
from tests.support.a2a_server import A2AServer

pytestmark = pytest.mark.anyio

BINDINGS = [
    ("agent", False),
    ("agent", True),
    ("legacy", False),
    ("legacy", True),
    ("rest", False),
    ("rest", True),
]
"""(agent, streaming): A2A 1.0 JSON-RPC, A2A 0.3 JSON-RPC and A2A 1.0 HTTP+JSON, each
sending (`SendMessage`) and streaming."""
IDS = [f"{agent}-{'stream' if streaming else 'send'}" for agent, streaming in BINDINGS]


@pytest.fixture(scope="module")
def server() -> Iterator[A2AServer]:
    with A2AServer() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(follow_redirects=False) as client:
        yield client


async def converse(
    http: httpx.AsyncClient, url: str, *texts: str, streaming: bool
) -> list[Message]:
    spec = A2ATargetSpec.model_validate({"type": "a2a", "url": url, "streaming": streaming})
    target = A2ATarget(spec, client=http, secrets=Secrets({}))
    try:
        session = await target.open_session()
        transcript, replies = Transcript(), list[Message]()
        for text in texts:
            transcript = transcript.with_message(Message(role="user", content=text))
            replies.append(await session.send(transcript))
            transcript = transcript.with_message(replies[-1])
        return replies
    finally:
        await target.aclose()


@pytest.mark.parametrize(("agent", "streaming"), BINDINGS, ids=IDS)
async def test_each_turn_of_a_continued_task_replies_with_its_own_artifact(
    server: A2AServer, http: httpx.AsyncClient, agent: str, streaming: bool
) -> None:
    first, second, third = await converse(
        http, server.url(agent), "draft Paris trip", "add a museum", "done", streaming=streaming
    )
    task = server.seen[-1].task_id
    assert server.seen[-2].task_id == task and server.seen[-1].continued
    assert first.parts == ("draft: Paris trip", "Anything else?")
    assert second.parts == (f"continued {task}: add a museum", "Anything else?")
    assert third.content == f"continued {task}: done"
    assert [m.status_events[-1].state for m in (first, second, third)] == [
        "input-required",
        "input-required",
        "completed",
    ]


@pytest.mark.parametrize(("agent", "streaming"), BINDINGS, ids=IDS)
async def test_an_artifact_replaced_in_place_is_the_turns_reply(
    server: A2AServer, http: httpx.AsyncClient, agent: str, streaming: bool
) -> None:
    """`append: false` on an existing artifact id replaces it where it stands in the task."""
    first, second = await converse(
        http, server.url(agent), "revise a long answer", "make it shorter", streaming=streaming
    )
    assert first.parts == ("first: a long answer", "Shall I change it?")
    assert second.content == "revised: make it shorter"


@pytest.mark.parametrize(("agent", "streaming"), BINDINGS, ids=IDS)
async def test_parts_appended_to_an_earlier_artifact_are_the_turns_reply(
    server: A2AServer, http: httpx.AsyncClient, agent: str, streaming: bool
) -> None:
    """`append: true` on an artifact of an earlier turn: only the new parts are this turn's."""
    first, second = await converse(
        http, server.url(agent), "log packed the tent", "drove north", streaming=streaming
    )
    assert first.parts == ("packed the tent", "Go on?")
    assert second.content == "then: drove north"


async def test_the_raw_reply_is_still_the_whole_task(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    """Only the reply text is the turn's own; `raw` stays the task as the agent sent it."""
    _, second = await converse(
        http, server.url("agent"), "draft Paris trip", "done", streaming=False
    )
    raw: Any = second.raw
    texts = [a["parts"][0]["text"] for a in raw["artifacts"]]
    assert texts[0] == "draft: Paris trip" and texts[1].endswith(": done")
