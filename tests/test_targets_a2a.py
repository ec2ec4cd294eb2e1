"""A2ATarget against real A2A agents built from the a2a-sdk's own server classes (see
`tests/support/a2a_server.py`), and the demo agent's A2A endpoint."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from sparring.demo import DemoServer
from sparring.errors import TARGET_TIMEOUT_HINT, TargetError, TargetTimeout, UserError
from sparring.loaders.yaml import load_text
from sparring.runner import RunSettings, TargetPool, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.secrets import Secrets
from sparring.target_specs import A2ATargetSpec
from sparring.targets.a2a import A2ASession, A2ATarget
from sparring.targets.registry import build_target
from sparring.transcript import Message, Transcript
from tests.support.a2a_server import A2AServer

pytestmark = pytest.mark.anyio

TOKEN = "a2a-token-0123456789"


@pytest.fixture(scope="module")
def server() -> Iterator[A2AServer]:
    with A2AServer(token=TOKEN) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(follow_redirects=False) as client:
        yield client


def target(
    http: httpx.AsyncClient, url: str, *, secrets: Secrets | None = None, **spec: object
) -> A2ATarget:
    return A2ATarget(
        A2ATargetSpec.model_validate({"type": "a2a", "url": url, **spec}),
        client=http,
        secrets=secrets or Secrets({}),
    )


async def say(session: A2ASession, *texts: str) -> Transcript:
    """Send each text in turn; the conversation with the agent's replies."""
    transcript = Transcript()
    for text in texts:
        transcript = transcript.with_message(Message(role="user", content=text))
        transcript = transcript.with_message(await session.send(transcript))
    return transcript


async def reply(http: httpx.AsyncClient, url: str, text: str, **spec: object) -> Message:
    agent = target(http, url, **spec)
    try:
        return (await say(await agent.open_session(), text)).messages[-1]
    finally:
        await agent.aclose()


# --- replies ---------------------------------------------------------------------------


async def test_artifact_and_status_message_are_both_the_reply(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    message = await reply(http, server.url("agent"), "both Order 10234 has shipped")
    assert message.role == "agent"
    assert message.content == "Order 10234 has shipped (artifact)\nOrder 10234 has shipped"
    assert message.parts == ("Order 10234 has shipped (artifact)", "Order 10234 has shipped")
    assert [(e.state, e.detail) for e in message.status_events] == [
        ("completed", "Order 10234 has shipped")
    ]
    assert message.latency_ms is not None and message.latency_ms > 0
    assert isinstance(message.raw, dict)
    assert message.raw["status"]["state"] == "TASK_STATE_COMPLETED"
    assert message.raw["artifacts"][0]["parts"] == [{"text": "Order 10234 has shipped (artifact)"}]


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("status Your order is on its way", "Your order is on its way"),
        ("artifact Just an artifact", "Just an artifact"),
        ("data", '{"ok": true, "order": 10234}'),
        ("message A direct message, no task", "A direct message, no task"),
    ],
)
async def test_reply_from_status_message_artifact_data_part_or_direct_message(
    server: A2AServer, http: httpx.AsyncClient, text: str, content: str
) -> None:
    message = await reply(http, server.url("agent"), text)
    assert message.content == content and message.parts == ()


@pytest.mark.parametrize(
    ("command", "state"),
    [
        ("fail", "failed"),
        ("reject", "rejected"),
        ("cancel", "canceled"),
        ("auth", "auth-required"),
    ],
)
async def test_unfinished_task_states_are_errors_naming_state_and_message(
    server: A2AServer, http: httpx.AsyncClient, command: str, state: str
) -> None:
    with pytest.raises(TargetError) as caught:
        await reply(http, server.url("agent"), f"{command} Out of stock, sorry")
    assert f"state {state!r}" in str(caught.value)
    assert "'Out of stock, sorry'" in str(caught.value)
    assert server.url("agent") in str(caught.value)


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_an_answer_that_ends_while_the_task_is_still_working_is_an_error(
    server: A2AServer, http: httpx.AsyncClient, streaming: bool
) -> None:
    with pytest.raises(TargetError, match="still in state 'working' .*'Looking it up'"):
        await reply(http, server.url("agent"), "working Looking it up", streaming=streaming)


# --- tool calls ------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_tool_calls_are_read_from_the_task_at_tool_calls_path(
    server: A2AServer, http: httpx.AsyncClient, streaming: bool
) -> None:
    message = await reply(
        http,
        server.url("agent"),
        "tools Order 10234 has shipped",
        streaming=streaming,
        tool_calls_path="metadata.toolCalls",
    )
    assert message.content == "Order 10234 has shipped"
    [call] = message.tool_calls
    assert (call.name, call.arguments) == ("lookup_order", {"order_id": "10234", "count": 2})


async def test_without_tool_calls_path_no_tool_calls_are_read(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    message = await reply(http, server.url("agent"), "tools Order 10234 has shipped")
    assert message.tool_calls == ()
    assert isinstance(message.raw, dict) and "toolCalls" in message.raw["metadata"]


@pytest.mark.parametrize("command", ["artifact", "message"])
async def test_a_reply_without_metadata_has_no_tool_calls(
    server: A2AServer, http: httpx.AsyncClient, command: str
) -> None:
    message = await reply(
        http, server.url("agent"), f"{command} no tools here", tool_calls_path="metadata.toolCalls"
    )
    assert isinstance(message.raw, dict) and "metadata" not in message.raw
    assert (message.content, message.tool_calls) == ("no tools here", ())


@pytest.mark.parametrize(
    ("path", "error"),
    [
        (
            "metadata.toolCall",
            "tool_calls_path 'metadata.toolCall' not found in the reply: "
            "at 'toolCall', no key 'toolCall'; did you mean 'toolCalls'?",
        ),
        ("status", "tool_calls_path 'status': tool call 1 is not an object with a `name`"),
    ],
)
async def test_a_wrong_tool_calls_path_is_an_error_not_no_calls(
    server: A2AServer, http: httpx.AsyncClient, path: str, error: str
) -> None:
    with pytest.raises(TargetError) as caught:
        await reply(http, server.url("agent"), "tools hi", tool_calls_path=path)
    assert error in str(caught.value)


def test_tool_calls_path_is_checked_when_the_test_file_loads() -> None:
    with pytest.raises(UserError, match="tool_calls_path: response path 'calls\\[' is not valid"):
        load_text(
            'target: {type: a2a, url: "http://127.0.0.1:9/a2a", '
            'tool_calls_path: "calls["}\n'
            "scenarios: [{id: a, prompt: hi, checks: [{contains: x}]}]\n"
        )


# --- conversations ---------------------------------------------------------------------


async def test_input_required_is_continued_in_the_same_task_then_a_new_task_starts(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    agent = target(http, server.url("agent"))
    session = await agent.open_session()
    transcript = await say(session, "ask Which order?")
    assert transcript.messages[-1].content == "Which order?"
    assert [e.state for e in transcript.messages[-1].status_events] == ["input-required"]
    waiting = session.task_id
    assert waiting
    transcript = await say(session, "10234")
    assert transcript.messages[-1].content == f"continued {waiting}: 10234"
    assert session.task_id == ""
    await say(session, "artifact next")
    first, second, third = server.seen[-3:]
    assert (first.task_id, second.task_id) == (waiting, waiting) and second.continued
    assert third.task_id != waiting and not third.continued
    assert first.context_id == second.context_id == third.context_id == session.context_id
    await agent.aclose()


async def test_one_context_per_session_kept_across_turns(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    agent = target(http, server.url("agent"))
    one, two = await agent.open_session(), await agent.open_session()
    first = await say(one, "ids", "ids")
    other = await say(two, "ids")
    contexts = {m.content.split()[0] for m in (*first.messages[1::2], *other.messages[1::2])}
    assert contexts == {f"context={one.context_id}", f"context={two.context_id}"}
    assert one.context_id != two.context_id
    await agent.aclose()


async def test_preload_replays_the_user_messages_live_in_the_sessions_context(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    agent = target(http, server.url("agent"))
    session = await agent.open_session()
    history = Transcript(
        messages=(
            Message(role="user", content="ask Which order?"),
            Message(role="agent", content="(written, never sent)"),
            Message(role="user", content="10234"),
            Message(role="agent", content="(written too)"),
        )
    )
    replayed = await session.preload(history)
    assert [m.role for m in replayed.messages] == ["user", "agent", "user", "agent"]
    assert replayed.messages[1].content == "Which order?"
    assert replayed.messages[3].content.startswith("continued ")
    assert not any("written" in s.text for s in server.seen)
    after = await say(session, "ids")
    assert after.messages[-1].content.startswith(f"context={session.context_id} ")
    assert server.seen[-3].context_id == session.context_id
    await agent.aclose()


# --- protocol versions, bindings and streaming -----------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize(
    "agent_path", ["agent", "legacy", "rest"], ids=["jsonrpc-1.0", "jsonrpc-0.3", "http-json-1.0"]
)
async def test_every_protocol_version_and_binding_converses(
    server: A2AServer, http: httpx.AsyncClient, agent_path: str, streaming: bool
) -> None:
    agent = target(http, server.url(agent_path), streaming=streaming)
    session = await agent.open_session()
    transcript = await say(session, "ask Which order?", "10234", "stream a b c")
    waiting = server.seen[-3].task_id
    replies = [m.content for m in transcript.messages[1::2]]
    assert replies == ["Which order?", f"continued {waiting}: 10234", "a b c"]
    states = [e.state for e in transcript.messages[-1].status_events]
    assert states == (["submitted", "working", "completed"] if streaming else ["completed"])
    await agent.aclose()


async def test_streaming_records_each_state_with_its_time(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    message = await reply(http, server.url("agent"), "stream one two three", streaming=True)
    assert message.content == "one two three"
    events = message.status_events
    assert [(e.state, e.detail) for e in events] == [
        ("submitted", ""),
        ("working", "thinking"),
        ("completed", ""),
    ]
    times = [e.at_ms for e in events if e.at_ms is not None]
    assert len(times) == 3 and times == sorted(times)
    assert isinstance(message.raw, dict)
    assert message.raw["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_streaming_is_not_used_when_the_card_says_the_agent_cannot(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    message = await reply(http, server.url("nostream"), "stream x y", streaming=True)
    assert message.content == "x y"
    assert [e.state for e in message.status_events] == ["completed"]


# --- HTTP, auth and card errors ----------------------------------------------------------


async def test_auth_header_from_a_secret(server: A2AServer, http: httpx.AsyncClient) -> None:
    secrets = Secrets({"AGENT_TOKEN": TOKEN})
    agent = target(
        http,
        server.url("secure"),
        secrets=secrets,
        headers={"Authorization": "Bearer {{secrets.AGENT_TOKEN}}"},
    )
    transcript = await say(await agent.open_session(), "artifact welcome in")
    assert transcript.messages[-1].content == "welcome in"
    await agent.aclose()


async def test_401_is_an_error_with_a_scrubbed_excerpt(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    wrong = "wrong-token-9876543210"
    agent = target(
        http,
        server.url("secure"),
        secrets=Secrets({"AGENT_TOKEN": wrong}),
        headers={"Authorization": "Bearer {{secrets.AGENT_TOKEN}}"},
    )
    with pytest.raises(TargetError) as caught:
        await agent.open_session()
    text = str(caught.value)
    assert caught.value.status == 401
    assert "HTTP 401" in text and "unauthorized: got Bearer ***" in text
    assert "credentials in `headers`" in text and "agent-card.json" in text
    assert wrong not in text
    await agent.aclose()


async def test_an_html_page_instead_of_json_rpc_is_an_error(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    agent = target(http, server.url("html"))
    session = await agent.open_session()
    with pytest.raises(TargetError) as caught:
        await say(session, "hello")
    text = str(caught.value)
    assert "Content-Type text/html, not JSON" in text and "Please log in" in text
    assert f"{server.url('html')}/" in text
    await agent.aclose()


@pytest.mark.parametrize(
    ("url", "card_path", "expected"),
    [
        ("nowhere", "/.well-known/agent-card.json", "HTTP 404"),
        ("html", "/page", "Content-Type text/html, not JSON"),
        ("html", "/health", "is not an A2A agent card"),
    ],
)
async def test_a_missing_or_wrong_card_says_which_url_and_how_to_fix_it(
    server: A2AServer, http: httpx.AsyncClient, url: str, card_path: str, expected: str
) -> None:
    agent = target(http, server.url(url), card_path=card_path)
    with pytest.raises(TargetError) as caught:
        await agent.open_session()
    text = str(caught.value)
    assert expected in text and server.url(url) + card_path in text
    assert "set `url` to the agent's base address" in text
    await agent.aclose()


async def test_a_card_without_a_usable_interface(
    server: A2AServer, http: httpx.AsyncClient
) -> None:
    agent = target(http, server.url("grpc"))
    with pytest.raises(TargetError, match="offers no interface sparring speaks .*GRPC 1.0"):
        await agent.open_session()
    await agent.aclose()


async def test_an_a2a_error_from_the_agent(server: A2AServer, http: httpx.AsyncClient) -> None:
    agent = target(http, server.url("agent"))
    session = await agent.open_session()
    session.task_id = "no-such-task"
    with pytest.raises(TargetError, match=r"answered with an A2A error \(TaskNotFoundError\)"):
        await say(session, "hello")
    await agent.aclose()


async def test_connection_refused(http: httpx.AsyncClient) -> None:
    agent = target(http, "http://127.0.0.1:9")
    with pytest.raises(TargetError, match=r"could not connect to http://127\.0\.0\.1:9/"):
        await agent.open_session()
    await agent.aclose()


async def test_a_slow_reply_times_out(server: A2AServer, http: httpx.AsyncClient) -> None:
    with pytest.raises(TargetTimeout) as caught:
        await reply(http, server.url("agent"), "sleep 1.5", timeout_s=0.2)
    assert caught.value.hint == TARGET_TIMEOUT_HINT


# --- configuration ---------------------------------------------------------------------


async def test_headers_take_only_secrets_and_must_be_set(http: httpx.AsyncClient) -> None:
    with pytest.raises(UserError, match=r"only use \{\{secrets.NAME\}\}, not \{\{input\}\}"):
        target(http, "http://127.0.0.1:1", headers={"X-Says": "{{input}}"})
    with pytest.raises(UserError, match=r"did you mean \{\{secrets.KEY\}\}"):
        target(http, "http://127.0.0.1:1", headers={"X-Key": "{{secret.KEY}}"})
    with pytest.raises(UserError, match="secret 'KEY'"):
        target(http, "http://127.0.0.1:1", headers={"X-Key": "{{secrets.KEY}}"})


def test_spec_rejects_placeholders_in_url_and_relative_card_paths() -> None:
    with pytest.raises(ValueError, match="put credentials in `headers`"):
        A2ATargetSpec.model_validate({"type": "a2a", "url": "{{secrets.URL}}"})
    with pytest.raises(ValueError, match="starting with '/'"):
        A2ATargetSpec.model_validate({"type": "a2a", "url": "http://a", "card_path": "x.json"})


async def test_missing_extra_is_a_user_error_with_the_install_line(
    monkeypatch: pytest.MonkeyPatch, http: httpx.AsyncClient
) -> None:
    monkeypatch.setitem(sys.modules, "a2a.client", None)
    monkeypatch.delitem(sys.modules, "sparring.targets.a2a")
    spec = A2ATargetSpec.model_validate({"type": "a2a", "url": "http://127.0.0.1:1"})
    with pytest.raises(UserError, match=r'pip install "sparring\[a2a\]"'):
        build_target(spec, client=http, secrets=Secrets({}))


# --- end to end ------------------------------------------------------------------------


async def test_a_scripted_scenario_runs_over_a2a(server: A2AServer) -> None:
    scenario = ScriptedScenario.model_validate(
        {
            "id": "a2a",
            "target": {"type": "a2a", "url": server.url("agent"), "streaming": True},
            "turns": [
                {"user": "ask Which order?", "checks": [{"contains": "Which order"}]},
                {"user": "10234", "checks": [{"regex": "^continued .*: 10234$"}]},
            ],
        }
    )
    async with TargetPool(secrets=Secrets({})) as pool:
        result = await run_scenarios(
            [scenario],
            targets=pool.for_scenario,
            user_model=None,
            judge_model=None,
            settings=RunSettings(),
        )
    [trial] = result.scenarios[0].trials
    assert trial.status == "passed", trial.error
    agent_messages = [m for m in trial.transcript.messages if m.role == "agent"]
    assert [m.status_events[-1].state for m in agent_messages] == ["input-required", "completed"]


async def test_the_example_suite_passes_against_the_demo_agents_a2a_endpoint() -> None:
    text = (Path(__file__).parent.parent / "examples" / "a2a.yaml").read_text()
    with DemoServer(port=0) as demo:
        scenarios = load_text(text.replace("http://127.0.0.1:8787", demo.url))
        async with TargetPool(secrets=Secrets({})) as pool:
            result = await run_scenarios(
                scenarios, targets=pool.for_scenario, user_model=None, judge_model=None
            )
    assert len(result.scenarios) == 2
    for scenario in result.scenarios:
        assert [t.status for t in scenario.trials] == ["passed"], scenario.trials[0].error


def test_demo_a2a_endpoint_answers_json_rpc_errors() -> None:
    with DemoServer(port=0) as demo, httpx.Client(base_url=demo.url) as client:
        card = client.get("/a2a/.well-known/agent-card.json").json()
        assert card["supportedInterfaces"] == [
            {"url": f"{demo.url}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
        legacy = client.post("/a2a", json={"jsonrpc": "2.0", "id": 7, "method": "message/send"})
        assert legacy.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32601,
                "message": "method 'message/send' is not served here; the demo "
                "agent speaks A2A 1.0 `SendMessage` only (no streaming)",
            },
        }
        empty = client.post(
            "/a2a",
            json={
                "jsonrpc": "2.0",
                "id": 8,
                "method": "SendMessage",
                "params": {"message": {"parts": []}},
            },
        )
        assert empty.json()["error"]["code"] == -32602
        assert client.post("/a2a", json=[1]).json()["error"]["code"] == -32600


# --- answers the SDK cannot read ----------------------------------------------------------


def fake_agent(
    body: object, *, version: str = "1.0", interface_url: str = "", stream: bool = False
) -> httpx.AsyncClient:
    """A client whose every request goes to an in-process A2A "agent": its card (JSONRPC,
    `version`) at the usual path, and `body` as the answer to any message, as JSON or as
    one server-sent event."""
    card = {
        "name": "fake",
        "description": "d",
        "version": "1",
        "skills": [],
        "capabilities": {"streaming": stream},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "supportedInterfaces": [
            {
                "url": interface_url or "http://agent.test/rpc",
                "protocolBinding": "JSONRPC",
                "protocolVersion": version,
            }
        ],
    }

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=card)
        if stream:
            return httpx.Response(
                200,
                content=f"data: {json.dumps(body)}\n\n".encode(),
                headers={"Content-Type": "text/event-stream"},
            )
        return httpx.Response(200, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


@pytest.mark.parametrize("version", ["1.0", "0.3"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": "1", "result": None},
        {"jsonrpc": "2.0", "id": "1", "result": 5},
        {"jsonrpc": "2.0", "id": "1", "result": {}},
        {"jsonrpc": "2.0", "id": "1", "result": {"task": 5}},
        {"jsonrpc": "2.0", "id": "1", "result": {"kind": "message", "messageId": 5, "parts": 7}},
        [1, 2],
        "just text",
    ],
    ids=["null", "number", "empty", "task-number", "v03-bad-message", "list", "string"],
)
async def test_an_answer_that_is_not_a2a_is_a_target_error(
    body: object, version: str, stream: bool
) -> None:
    async with fake_agent(body, version=version, stream=stream) as client:
        agent = target(client, "http://agent.test", streaming=stream)
        session = await agent.open_session()
        with pytest.raises(
            TargetError,
            match=r"^http://agent\.test/rpc (sent an answer that is "
            r"not a valid A2A reply|answered with neither a task nor a message)",
        ):
            await say(session, "hello")
        await agent.aclose()


@pytest.mark.parametrize("url", ["not a url", "/rpc", "ftp://agent.test/rpc", "http://"])
async def test_a_card_whose_interface_url_is_not_a_url_says_to_fix_the_card(url: str) -> None:
    async with fake_agent({}, interface_url=url) as client:
        agent = target(client, "http://agent.test")
        with pytest.raises(TargetError) as caught:
            await agent.open_session()
        await agent.aclose()
    assert str(caught.value).startswith(
        f"the agent card at http://agent.test/.well-known/agent-card.json names {url!r} as "
        "its interface URL (where messages go), which is not an http(s) URL; fix the agent "
        "card: its `supportedInterfaces[].url`"
    )
