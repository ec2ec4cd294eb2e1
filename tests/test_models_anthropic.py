"""AnthropicModel through the real anthropic SDK against a scripted Messages API server."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import pytest

from sparring.errors import ModelError, UserError
from sparring.models.anthropic import AnthropicModel
from sparring.models.base import ChatMessage, Model
from sparring.models.registry import resolve_model
from sparring.models.structured import complete_json
from sparring.results import Usage
from tests.support.anthropic_server import Reply, ScriptedAnthropicServer

pytestmark = pytest.mark.anyio

KEY = "sk-ant-test-key-1234"
PROMPT: list[ChatMessage] = [
    {"role": "system", "content": "You grade."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello"},
    {"role": "user", "content": "Grade it"},
]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
REJECTED = "claude-3-haiku-20240307 does not support output_config.format"


@pytest.fixture
def server() -> Iterator[ScriptedAnthropicServer]:
    with ScriptedAnthropicServer() as s:
        yield s


@pytest.fixture
async def model(server: ScriptedAnthropicServer) -> AsyncIterator[AnthropicModel]:
    m = AnthropicModel(
        name="anthropic:claude-3-haiku",
        model="claude-3-haiku",
        base_url=server.base_url,
        api_key=KEY,
        max_retries=1,
    )
    yield m
    await m.aclose()


async def test_plain_text_maps_system_and_returns_tokens(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(Reply("Fine.", usage={"input_tokens": 21, "output_tokens": 4}))
    completion = await model.complete(PROMPT, temperature=1.4)
    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("Fine.", 21, 4)
    request = server.requests[0]
    assert request["system"] == "You grade."
    assert request["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Grade it"},
    ]
    assert request["model"] == "claude-3-haiku"
    assert request["temperature"] == 1.0  # Anthropic's maximum
    assert request["max_tokens"] > 0
    assert "output_config" not in request and "tools" not in request
    assert server.paths == ["/v1/messages"]
    headers = server.headers[0]  # x-api-key, or a bearer token in newer SDKs
    assert KEY in headers.get("x-api-key", "") + headers.get("authorization", "")
    assert "anthropic-version" in server.headers[0]
    assert isinstance(model, Model)


async def test_missing_or_odd_usage_gives_none_tokens(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(Reply("a", usage={}), Reply("b", usage={"input_tokens": -1, "output_tokens": "3"}))
    for _ in range(2):
        completion = await model.complete(PROMPT, temperature=0)
        assert (completion.input_tokens, completion.output_tokens) == (None, None)


async def test_schema_goes_out_as_native_structured_output(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(Reply('{"ok": true}', usage={"input_tokens": 1000, "output_tokens": 100}))
    usage = Usage()
    answer = await complete_json(
        model, PROMPT, schema=SCHEMA, validate=dict, temperature=0, usage=usage, schema_name="grade"
    )
    assert answer == {"ok": True}
    assert server.requests[0]["output_config"] == {
        "format": {"type": "json_schema", "schema": SCHEMA}
    }
    assert usage == Usage(
        model_calls=1,
        input_tokens=1000,
        output_tokens=100,
        cost_usd=(1000 * 0.25 + 100 * 1.25) / 1_000_000,
    )


async def test_rejected_structured_output_falls_back_to_a_forced_tool_and_remembers(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(
        Reply(REJECTED, status=400),
        Reply("Let me answer.", tool_use={"name": "grade", "input": {"ok": False}}),
        Reply(tool_use={"name": "grade", "input": {"ok": True}}),
    )
    first = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA, schema_name="grade")
    second = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA, schema_name="grade")
    assert (first.text, second.text) == ('{"ok": false}', '{"ok": true}')
    tool_request = server.requests[1]
    assert "output_config" not in tool_request
    assert tool_request["tools"][0]["name"] == "grade"
    assert tool_request["tools"][0]["input_schema"] == SCHEMA
    assert tool_request["tool_choice"] == {"type": "tool", "name": "grade"}
    assert "output_config" not in server.requests[2] and len(server.requests) == 3


@pytest.mark.parametrize("json_schema", [SCHEMA, None])
async def test_an_answer_with_only_a_tool_call_is_named_not_called_empty(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
    json_schema: dict[str, object] | None,
) -> None:
    server.add(Reply(tool_use={"name": "web_search", "input": {"q": "weather"}}))
    with pytest.raises(ModelError) as info:
        await model.complete(PROMPT, temperature=0, json_schema=json_schema)
    message = str(info.value)
    assert "answered with a tool_use block (web_search) instead of text" in message
    assert "empty" not in message and "base_url" in message


async def test_other_bad_requests_are_not_taken_for_a_missing_feature(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(Reply("messages: text content blocks must be non-empty", status=400))
    with pytest.raises(ModelError, match=r"HTTP 400: messages: text content blocks"):
        await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
    assert model.native_json_schema is True


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "key was rejected: set ANTHROPIC_API_KEY"),
        (403, "no access to model 'claude-3-haiku'"),
        (404, "Check the model name 'claude-3-haiku'"),
    ],
)
async def test_client_errors_say_what_to_fix_without_the_key(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
    status: int,
    hint: str,
) -> None:
    server.add(Reply(f"scripted failure, key {KEY}", status=status))
    with pytest.raises(ModelError) as info:
        await model.complete(PROMPT, temperature=0)
    message = str(info.value)
    assert f"anthropic:claude-3-haiku at {server.base_url}: HTTP {status}" in message
    assert hint in message
    assert KEY not in message and "***" in message
    assert len(server.requests) == 1  # not retried


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (429, "Rate limited after 1 retry;"),
        (529, "failed or was overloaded after 1 retry;"),
    ],
)
async def test_rate_limits_and_overload_are_retried_then_explained(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
    status: int,
    hint: str,
) -> None:
    busy = Reply("busy", status=status, headers={"retry-after-ms": "1"})
    server.add(busy, busy)
    with pytest.raises(ModelError, match=hint):
        await model.complete(PROMPT, temperature=0)
    assert len(server.requests) == 2


async def test_a_retry_after_a_rate_limit_can_succeed(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(Reply("slow down", status=429, headers={"retry-after-ms": "1"}), Reply("ok"))
    assert (await model.complete(PROMPT, temperature=0)).text == "ok"


async def test_timeout_names_the_setting(server: ScriptedAnthropicServer) -> None:
    server.add(Reply("late", delay_s=5))
    model = AnthropicModel(
        name="anthropic:m",
        model="m",
        base_url=server.base_url,
        api_key=KEY,
        timeout_s=0.2,
        max_retries=0,
    )
    with pytest.raises(
        ModelError,
        match=r"no answer within 0.2 s \(no retries\).*"
        "model_timeout_s",
    ):
        await model.complete(PROMPT, temperature=0)
    await model.aclose()


async def test_unreachable_api_fails_and_later_calls_are_still_sent() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = AnthropicModel(
        name="anthropic:m",
        model="m",
        base_url=f"http://127.0.0.1:{port}",
        api_key=KEY,
        max_retries=0,
    )
    with pytest.raises(ModelError, match="could not connect") as first:
        await model.complete(PROMPT, temperature=0)
    with pytest.raises(ModelError, match="could not connect") as second:
        await model.complete(PROMPT, temperature=0)
    assert second.value is not first.value  # tried again, not the first call's error
    await model.aclose()


@pytest.mark.parametrize("body", ["<html>gateway</html>", {"type": "message", "content": None}])
async def test_an_answer_that_is_not_a_message_is_a_model_error(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
    body: object,
) -> None:
    server.add(Reply(body=body))  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="not a Messages API answer.*without /v1"):
        await model.complete(PROMPT, temperature=0)


async def test_a_refusal_is_a_model_error(
    server: ScriptedAnthropicServer,
    model: AnthropicModel,
) -> None:
    server.add(Reply("", stop_reason="refusal"))
    with pytest.raises(ModelError, match="refused"):
        await model.complete(PROMPT, temperature=0)


def test_registry_resolves_anthropic_and_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError, match="export ANTHROPIC_API_KEY"):
        resolve_model("anthropic:claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = resolve_model("anthropic:claude-haiku-4-5", base_url="http://127.0.0.1:9")
    assert isinstance(model, AnthropicModel)
    assert (model.name, model.model, model.base_url) == (
        "anthropic:claude-haiku-4-5",
        "claude-haiku-4-5",
        "http://127.0.0.1:9",
    )
