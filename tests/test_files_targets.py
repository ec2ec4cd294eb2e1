"""Files sent with a user message reach each target its own way (issue 13, "Files"): each
test asserts what a real server received."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from sparring.errors import TargetError, UserError
from sparring.secrets import Secrets
from sparring.target_specs import (
    A2ATargetSpec,
    HttpTargetSpec,
    OpenAIChatTargetSpec,
    ParlantTargetSpec,
)
from sparring.targets.a2a import A2ATarget
from sparring.targets.attachments import attachment_of
from sparring.targets.callable import CallableTarget
from sparring.targets.http import HttpTarget
from sparring.targets.openai_chat import OpenAIChatTarget
from sparring.targets.parlant import ParlantTarget
from sparring.targets.templates import History, fill_template, misspelt_placeholders
from sparring.transcript import Attachment, Message, Transcript
from tests.support.a2a_server import A2AServer
from tests.support.echo_server import Answer, EchoRequest, EchoServer
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

RECEIPT = attachment_of("receipt.txt", b"Order #10235\nTotal: $94.50\n")
PHOTO = attachment_of("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00binary")
INVOICE = attachment_of("invoice.pdf", b"%PDF-1.4 not really a pdf\x00\xff")


def entry(f: Attachment) -> dict[str, str]:
    return {"name": f.name, "mime_type": f.mime_type, "data": f.data}


def user(text: str, *files: Attachment, before: Transcript | None = None) -> Transcript:
    return (before or Transcript()).with_message(Message(role="user", content=text, files=files))


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(follow_redirects=False) as client:
        yield client


# --- http: {{files}} ------------------------------------------------------------------------


@pytest.fixture
def echo() -> Iterator[tuple[EchoServer, list[EchoRequest]]]:
    got: list[EchoRequest] = []

    def answer(request: EchoRequest) -> Answer:
        got.append(request)
        return Answer({"reply": "ok"})

    with EchoServer(answer) as server:
        yield server, got


def http_target(server: EchoServer, client: httpx.AsyncClient, body: Any) -> HttpTarget:
    spec = HttpTargetSpec(url=server.url("/chat"), body_template=body, response_path="reply")
    return HttpTarget(spec, client=client, secrets=Secrets({}))


async def test_http_files_placeholder_sends_name_type_and_base64_data(
    echo: tuple[EchoServer, list[EchoRequest]], http: httpx.AsyncClient
) -> None:
    server, got = echo
    body = {"message": "{{input}}", "files": "{{files}}", "history": "{{history}}"}
    session = await http_target(server, http, body).open_session()
    first = user("my receipt", RECEIPT, PHOTO)
    reply = await session.send(first)
    await session.send(user("and now?", before=first.with_message(reply)))
    assert got[0].body["files"] == [entry(RECEIPT), entry(PHOTO)]
    assert base64.b64decode(got[0].body["files"][0]["data"]) == b"Order #10235\nTotal: $94.50\n"
    assert got[1].body["files"] == []  # the second message has none
    assert got[1].body["history"] == [
        {"role": "user", "content": "my receipt", "files": [entry(RECEIPT), entry(PHOTO)]},
        {"role": "assistant", "content": "ok"},
    ]


async def test_http_files_are_never_dropped_silently(
    echo: tuple[EchoServer, list[EchoRequest]], http: httpx.AsyncClient
) -> None:
    server, got = echo
    session = await http_target(server, http, {"message": "{{input}}"}).open_session()
    with pytest.raises(
        TargetError, match=r"no \{\{files\}\}.*add e\.g\. `files: \"\{\{files\}\}\"`"
    ):
        await session.send(user("my receipt", RECEIPT))
    assert got == []
    await session.send(user("no files, no problem"))
    assert got[0].body == {"message": "no files, no problem"}


def test_files_placeholder_inside_text_is_json_and_a_typo_is_caught() -> None:
    filled = fill_template(
        {"prompt": "{{input}} files={{files}}", "none": "{{files}}"},
        message="hi",
        history=[],
        secrets=Secrets({}),
        files=[entry(RECEIPT)],
    )
    assert filled == {
        "prompt": f"hi files={json.dumps([entry(RECEIPT)])}",
        "none": [entry(RECEIPT)],
    }
    assert misspelt_placeholders({"f": "{{file}}"}) == ["{{file}} (did you mean {{files}}?)"]
    with pytest.raises(UserError, match=r"\{\{files\}\}"):
        HttpTarget(
            HttpTargetSpec(
                url="http://127.0.0.1:1/x", body_template={"m": "{{input}}", "f": "{{fils}}"}
            ),
            client=httpx.AsyncClient(),
            secrets=Secrets({}),
        )


# --- openai_chat: content parts --------------------------------------------------------------


async def test_openai_chat_sends_image_file_and_text_parts() -> None:
    with ScriptedOpenAIServer([Reply("seen"), Reply("again"), Reply("a photo")]) as server:
        spec = OpenAIChatTargetSpec(base_url=server.base_url, model="agent-1")
        target = OpenAIChatTarget(spec, secrets=Secrets({}))
        session = await target.open_session()
        first = user("what do you see?", PHOTO, INVOICE, RECEIPT)
        reply = await session.send(first)
        await session.send(user("thanks", before=first.with_message(reply)))
        await session.send(user("", PHOTO))
        await target.aclose()
    photo = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PHOTO.data}"}}
    assert server.requests[2]["messages"] == [{"role": "user", "content": [photo]}]
    parts = [
        {"type": "text", "text": "what do you see?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PHOTO.data}"}},
        {
            "type": "file",
            "file": {
                "filename": "invoice.pdf",
                "file_data": f"data:application/pdf;base64,{INVOICE.data}",
            },
        },
        {"type": "text", "text": "File receipt.txt (text/plain):\nOrder #10235\nTotal: $94.50\n"},
    ]
    assert server.requests[0]["messages"] == [{"role": "user", "content": parts}]
    assert server.requests[1]["messages"] == [
        {"role": "user", "content": parts},  # earlier files go with the whole conversation
        {"role": "assistant", "content": "seen"},
        {"role": "user", "content": "thanks"},  # no files: plain text, as before
    ]


# --- a2a: file parts ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def a2a_server() -> Iterator[A2AServer]:
    with A2AServer() as running:
        yield running


@pytest.mark.parametrize("agent", ["agent", "legacy", "rest"])
async def test_a2a_sends_each_file_as_a_file_part_with_its_bytes(
    a2a_server: A2AServer, http: httpx.AsyncClient, agent: str
) -> None:
    spec = A2ATargetSpec.model_validate({"type": "a2a", "url": a2a_server.url(agent)})
    target = A2ATarget(spec, client=http, secrets=Secrets({}))
    session = await target.open_session()
    reply = await session.send(user(f"artifact files for {agent}", RECEIPT, PHOTO))
    await target.aclose()
    assert reply.content == "files for " + agent
    seen = next(s for s in a2a_server.seen if s.text == f"artifact files for {agent}")
    assert seen.files == (
        ("receipt.txt", "text/plain", b"Order #10235\nTotal: $94.50\n"),
        ("photo.png", "image/png", b"\x89PNG\r\n\x1a\n\x00\x00binary"),
    )


# --- callable: the history entry -----------------------------------------------------------


async def test_callable_gets_the_files_in_the_history_entry() -> None:
    got: list[Any] = []

    def agent(history: History) -> str:
        got.append(history)
        return "read it"

    session = await CallableTarget(agent).open_session()
    first = user("receipt", RECEIPT)
    reply = await session.send(first)
    await session.send(user("and?", before=first.with_message(reply)))
    expected_first = {"role": "user", "content": "receipt", "files": [entry(RECEIPT)]}
    assert got[0] == [expected_first]
    assert got[1] == [
        expected_first,
        {"role": "assistant", "content": "read it"},
        {"role": "user", "content": "and?"},  # no `files` key without files
    ]


# --- parlant: cannot take files ----------------------------------------------------------------


async def test_parlant_refuses_files_naming_the_target_type(http: httpx.AsyncClient) -> None:
    spec = ParlantTargetSpec(type="parlant", url="http://127.0.0.1:9/", agent_id="a1")
    session = await ParlantTarget(spec, client=http, secrets=Secrets({})).open_session()
    with pytest.raises(TargetError, match=r"\(parlant\) cannot take files.*remove `files:`"):
        await session.send(user("receipt", RECEIPT))


# --- framework adapters: text only ------------------------------------------------------------


async def test_a_framework_adapter_refuses_files_instead_of_dropping_them() -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter

    adapter = PydanticAIAdapter(Agent(TestModel()))
    session = await CallableTarget(adapter).open_session()
    with pytest.raises(TargetError, match=r"PydanticAIAdapter sends text only.*\(receipt\.txt\)"):
        await session.send(user("receipt", RECEIPT))
    assert (await session.send(user("no files"))).content
