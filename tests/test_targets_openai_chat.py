"""OpenAIChatTarget through the real openai SDK against a scripted local server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from sparring.errors import TargetError, TargetTimeout, UserError
from sparring.secrets import Secrets
from sparring.target_specs import OpenAIChatTargetSpec
from sparring.targets.base import Target, TargetSession
from sparring.targets.openai_chat import OpenAIChatTarget
from sparring.transcript import Message, ToolCall, Transcript
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

SECRETS = Secrets({"AGENT_KEY": "sk-agent-secret", "TENANT": "acme"})


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        yield s


def _target(server: ScriptedOpenAIServer, **fields: object) -> OpenAIChatTarget:
    spec = OpenAIChatTargetSpec.model_validate(
        {
            "base_url": server.base_url,
            "model": "agent-1",
            "api_key": "{{secrets.AGENT_KEY}}",
            **fields,
        }
    )
    return OpenAIChatTarget(spec, secrets=SECRETS)


def _transcript(*messages: Message) -> Transcript:
    return Transcript(messages=messages)


async def _send(target: OpenAIChatTarget, transcript: Transcript) -> Message:
    session = await target.open_session()
    try:
        return await session.send(transcript)
    finally:
        await session.close()


async def test_reply_text_latency_tokens_raw_and_request_shape(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(
        Reply(
            "Sure, order 42 is on its way.",
            usage={"prompt_tokens": 31, "completion_tokens": 8, "total_tokens": 39},
        )
    )
    target = _target(
        server,
        system_prompt="You are a shop bot.",
        temperature=0.2,
        headers={"X-Tenant": "{{secrets.TENANT}}"},
    )
    assert isinstance(target, Target)
    try:
        session = await target.open_session()
        assert isinstance(session, TargetSession)
        reply = await session.send(
            _transcript(
                Message(role="user", content="Where is my order?"),
                Message(role="agent", content="Which order?"),
                Message(role="user", content="42"),
            )
        )
    finally:
        await target.aclose()
    assert reply.role == "agent"
    assert reply.content == "Sure, order 42 is on its way."
    assert reply.tool_calls == ()
    assert reply.latency_ms is not None and reply.latency_ms > 0
    assert (reply.input_tokens, reply.output_tokens) == (31, 8)
    assert isinstance(reply.raw, dict)
    assert reply.raw["choices"][0]["message"]["content"] == reply.content
    request = server.requests[0]
    assert request["model"] == "agent-1"
    assert request["temperature"] == 0.2
    assert request["messages"] == [
        {"role": "system", "content": "You are a shop bot."},
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": "Which order?"},
        {"role": "user", "content": "42"},
    ]
    assert server.headers[0]["authorization"] == "Bearer sk-agent-secret"
    assert server.headers[0]["x-tenant"] == "acme"


async def test_tool_calls_valid_and_invalid_arguments_are_recorded(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(
        Reply(
            None,
            tool_calls=[
                {"id": "call_a", "name": "lookup_order", "arguments": {"order_id": 42}},
                {"id": "call_b", "name": "refund", "arguments": '{"amount": 10,'},
            ],
        )
    )
    target = _target(server)
    try:
        reply = await _send(target, _transcript(Message(role="user", content="Refund 42")))
    finally:
        await target.aclose()
    assert reply.content == ""
    good, bad = reply.tool_calls
    assert (good.name, good.id, good.arguments) == ("lookup_order", "call_a", {"order_id": 42})
    assert good.arguments_error is None
    assert (bad.name, bad.id, bad.arguments_raw) == ("refund", "call_b", '{"amount": 10,')
    assert bad.arguments is None
    assert bad.arguments_error is not None and "not valid JSON" in bad.arguments_error
    assert "temperature" not in server.requests[0]


async def test_earlier_tool_calls_are_sent_back_with_tool_messages(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply("Done."))
    target = _target(server)
    earlier = Message(
        role="agent",
        content="",
        tool_calls=(
            ToolCall.from_arguments("lookup", '{"id": 1}', id="call_1", result={"status": "ok"}),
            ToolCall.from_arguments("notify", "{}"),
        ),
    )
    try:
        await _send(
            target,
            _transcript(
                Message(role="user", content="Check 1"),
                earlier,
                Message(role="user", content="And?"),
            ),
        )
    finally:
        await target.aclose()
    messages = server.requests[0]["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"id": 1}'},
            },
            {
                "id": "call_1_1",
                "type": "function",
                "function": {"name": "notify", "arguments": "{}"},
            },
        ],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "ok"}'}
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_1_1"
    assert "does not run" in messages[3]["content"]
    assert messages[4] == {"role": "user", "content": "And?"}


async def test_http_error_is_a_target_error_with_status_and_no_secret(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(Reply("bad key sk-agent-secret", status=401))
    target = _target(server)
    try:
        with pytest.raises(TargetError) as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert info.value.status == 401
    assert "HTTP 401" in str(info.value)
    assert "sk-agent-secret" not in str(info.value)
    assert "check api_key" in str(info.value)


async def test_5xx_is_retried_then_reported_as_target_error(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(*[Reply("overloaded", status=503, headers={"retry-after-ms": "1"})] * 3)
    target = _target(server)
    try:
        with pytest.raises(TargetError) as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert info.value.status == 503
    assert len(server.requests) == 3


async def test_slow_reply_is_a_target_timeout(server: ScriptedOpenAIServer) -> None:
    server.add(Reply("late", delay_s=5))
    target = _target(server, timeout_s=0.2)
    try:
        with pytest.raises(TargetTimeout) as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert info.value.timeout_seconds == 0.2
    assert "raise `timeout_s` on the target" in str(info.value)
    assert "--reply-timeout" not in str(info.value)


async def test_unreachable_endpoint_is_a_target_error() -> None:
    with ScriptedOpenAIServer() as dead:
        url = dead.base_url
    spec = OpenAIChatTargetSpec(base_url=url, model="m", api_key="k")
    target = OpenAIChatTarget(spec, secrets=SECRETS, max_retries=0)
    try:
        with pytest.raises(TargetError, match="could not connect") as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert info.value.status is None


def test_missing_secret_is_a_user_error(server: ScriptedOpenAIServer) -> None:
    with pytest.raises(UserError, match="NOPE"):
        _target(server, api_key="{{secrets.NOPE}}")


async def test_default_api_key_falls_back_to_a_dummy_key(server: ScriptedOpenAIServer) -> None:
    server.add(Reply("hi"))
    spec = OpenAIChatTargetSpec(base_url=server.base_url, model="local")
    target = OpenAIChatTarget(spec, secrets=Secrets({}))
    try:
        await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert server.headers[0]["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("<!doctype html><title>Login</title>", "the body is not JSON: '<!doctype html>"),
        ("", "the body is not JSON"),
        ("[]", "the body is a list, not a JSON object"),
        ('"ok"', "the body is a string 'ok', not a JSON object"),
        ({"choices": "abc"}, "`choices` is a string 'abc', not a list"),
        ({"choices": [{}]}, "choices[0] has no `message` object"),
        ({"choices": [{"message": {"content": ["a", "b"]}}]}, "content is a list, not text"),
        (
            {"choices": [{"message": {"content": None, "tool_calls": "refund"}}]},
            "tool_calls is not a list",
        ),
        (
            {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c1"}]}}]},
            'tool call 0 has no `function.name`: {"id": "c1"}',
        ),
        ({"error": {"message": "bad key sk-agent-secret"}}, "holds an error"),
        # the secret straddles 200 characters of the item's JSON: scrubbed before any cut
        (
            {
                "choices": [
                    {
                        "message": {
                            "content": None,
                            "tool_calls": [{"id": "c1", "x": "a" * 175 + "sk-agent-secret"}],
                        }
                    }
                ]
            },
            "a" * 175 + "***",
        ),
    ],
)
async def test_malformed_answer_is_a_target_error(
    server: ScriptedOpenAIServer,
    body: dict[str, object] | str,
    fragment: str,
) -> None:
    server.add(Reply(body=body))
    target = _target(server)
    try:
        with pytest.raises(TargetError) as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    message = str(info.value)
    assert fragment in message
    assert message.startswith(
        f"openai_chat:agent-1 at {server.base_url}: the answer is not a chat completion ("
    )
    assert "OpenAI-compatible /v1 endpoint" in message
    assert "sk-" not in message and info.value.status is None


async def test_bad_usage_custom_tools_and_non_finite_numbers(
    server: ScriptedOpenAIServer,
) -> None:
    server.add(
        Reply(
            body='{"choices": [{"message": {"content": "hi", "tool_calls": ['
            '{"id": "t1", "type": "custom", "custom": {"name": "sql", '
            '"input": "select 1"}}]}}], "score": NaN, "max": Infinity, '
            '"usage": {"prompt_tokens": "lots", "completion_tokens": 2}}'
        )
    )
    target = _target(server)
    try:
        reply = await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert reply.content == "hi"
    assert (reply.input_tokens, reply.output_tokens) == (None, 2)
    assert [(c.name, c.arguments_raw, c.id) for c in reply.tool_calls] == [
        ("sql", "select 1", "t1")
    ]
    assert isinstance(reply.raw, dict)
    assert (reply.raw["score"], reply.raw["max"]) == ("NaN", "Infinity")
    json.dumps(reply.raw, allow_nan=False)  # strict JSON for the report


async def test_errors_mask_base_url_credentials_and_a_literal_api_key(
    server: ScriptedOpenAIServer,
) -> None:
    key = "sk-literal-agent-key-0123456789"
    port = server.base_url.split(":")[2].split("/")[0]
    base_url = f"http://admin:hunter2@127.0.0.1:{port}/v1?api-key=TOPSECRET"
    server.add(
        Reply(
            "x" * 247 + f" Invalid API key: Bearer {key} (api-key=TOPSECRET, user admin:hunter2)",
            status=401,
        )
    )
    secrets = Secrets({})
    spec = OpenAIChatTargetSpec(base_url=base_url, model="agent-1", api_key=key)
    target = OpenAIChatTarget(spec, secrets=secrets, max_retries=0)
    try:
        with pytest.raises(TargetError) as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    message = str(info.value)
    assert f"http://***@127.0.0.1:{port}/v1?***" in message
    assert "x" * 247 + " Invalid API key: Bearer ***" in message  # scrubbed, then cut
    for leak in ("hunter2", "TOPSECRET", "sk-lit", "admin"):
        assert leak not in message
    # The literal key stays out of errors only: transcripts keep their text.
    assert secrets.scrub(f"echo {key}") == f"echo {key}"


async def test_connection_error_masks_base_url() -> None:
    with ScriptedOpenAIServer() as dead:
        port = dead.base_url.split(":")[2].split("/")[0]
    spec = OpenAIChatTargetSpec(
        base_url=f"http://u:pw-9999@127.0.0.1:{port}/v1?k=QUERYKEY", model="m", api_key="k"
    )
    target = OpenAIChatTarget(spec, secrets=SECRETS, max_retries=0)
    try:
        with pytest.raises(TargetError, match="could not connect") as info:
            await _send(target, _transcript(Message(role="user", content="hi")))
    finally:
        await target.aclose()
    assert f"http://***@127.0.0.1:{port}/v1?***" in str(info.value)
    assert "pw-9999" not in str(info.value) and "QUERYKEY" not in str(info.value)
