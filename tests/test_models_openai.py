"""OpenAIModel through the real openai SDK against a scripted local server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sparring.errors import ModelError, UserError
from sparring.models.base import ChatMessage, Model
from sparring.models.openai import OpenAIModel, with_schema_instructions
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

PROMPT: list[ChatMessage] = [
    {"role": "system", "content": "You grade."},
    {"role": "user", "content": "Hi"},
]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        yield s


@pytest.fixture
async def model(server: ScriptedOpenAIServer) -> AsyncIterator[OpenAIModel]:
    m = OpenAIModel(
        name="openai-compatible:test-model",
        model="test-model",
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=2,
    )
    yield m
    await m.aclose()


async def test_plain_completion_sends_prompt_and_returns_text(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(
        Reply(
            "Hello there", usage={"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
        )
    )
    completion = await model.complete(PROMPT, temperature=0.7)
    assert completion.text == "Hello there"
    assert (completion.input_tokens, completion.output_tokens) == (12, 3)
    request = server.requests[0]
    assert request["model"] == "test-model"
    assert request["messages"] == PROMPT
    assert request["temperature"] == 0.7
    assert "response_format" not in request
    assert server.paths == ["/v1/chat/completions"]
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert isinstance(model, Model)


async def test_missing_usage_gives_none_tokens(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(Reply("x", usage={}))
    completion = await model.complete(PROMPT, temperature=0)
    assert completion.input_tokens is None and completion.output_tokens is None


async def test_schema_is_sent_as_json_schema_response_format(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(Reply('{"ok": true}'))
    completion = await model.complete(
        PROMPT, temperature=0, json_schema=SCHEMA, schema_name="grade"
    )
    assert completion.text == '{"ok": true}'
    assert server.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "grade", "schema": SCHEMA, "strict": False},
    }
    assert server.requests[0]["messages"] == PROMPT


async def test_rejected_response_format_falls_back_to_instructions_and_remembers(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(
        Reply("response_format 'json_schema' is not supported by this model", status=400),
        Reply('{"ok": true}'),
        Reply('{"ok": false}'),
    )
    first = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
    second = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
    assert (first.text, second.text) == ('{"ok": true}', '{"ok": false}')
    assert "response_format" in server.requests[0]
    for request in server.requests[1:]:
        assert "response_format" not in request
        system = request["messages"][0]
        assert system["role"] == "system"
        assert system["content"].startswith("You grade.\n\nAnswer with one JSON object only")
        assert '"required":["ok"]' in system["content"]
    assert model.native_json_schema is False
    assert len(server.requests) == 3


async def test_other_400_is_a_model_error_not_a_fallback(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(Reply("temperature must be at most 2", status=400))
    with pytest.raises(ModelError, match="HTTP 400: temperature must be at most 2"):
        await model.complete(PROMPT, temperature=5, json_schema=SCHEMA)
    assert model.native_json_schema is True


def test_schema_instructions_add_a_system_message_when_none() -> None:
    out = with_schema_instructions([{"role": "user", "content": "Hi"}], SCHEMA)
    assert [m["role"] for m in out] == ["system", "user"]
    assert out[0]["content"].startswith("Answer with one JSON object only")


async def test_429_with_retry_after_is_retried_then_succeeds(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(
        Reply("slow down", status=429, headers={"retry-after-ms": "1"}),
        Reply("slow down", status=429, headers={"retry-after": "0.001"}),
        Reply("finally"),
    )
    completion = await model.complete(PROMPT, temperature=0)
    assert completion.text == "finally"
    assert len(server.requests) == 3
    assert server.headers[2]["x-stainless-retry-count"] == "2"


async def test_500_is_retried_then_succeeds(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(Reply("boom", status=500, headers={"retry-after-ms": "1"}), Reply("ok"))
    assert (await model.complete(PROMPT, temperature=0)).text == "ok"
    assert len(server.requests) == 2


async def test_persistent_429_becomes_model_error_after_retries(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(*[Reply("rate limited", status=429, headers={"retry-after-ms": "1"})] * 3)
    with pytest.raises(ModelError, match=r"HTTP 429.*after 2 retries.*lower the concurrency"):
        await model.complete(PROMPT, temperature=0)
    assert len(server.requests) == 3


async def test_a_500_the_server_says_not_to_retry_is_not_called_retried(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(Reply("boom", status=500, headers={"x-should-retry": "false"}))
    with pytest.raises(ModelError) as info:
        await model.complete(PROMPT, temperature=0)
    message = str(info.value)
    assert "HTTP 500: boom" in message
    assert "(not retried: the server answered x-should-retry: false)" in message
    assert "after" not in message and len(server.requests) == 1


async def test_a_500_names_the_retries_really_made(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(
        Reply("boom", status=500, headers={"retry-after-ms": "1"}),
        Reply("still boom", status=500, headers={"x-should-retry": "false"}),
    )
    with pytest.raises(
        ModelError,
        match=r"HTTP 500: still boom\. The server failed after 1 "
        "retry;",
    ):
        await model.complete(PROMPT, temperature=0)
    assert len(server.requests) == 2


async def test_slow_reply_beyond_timeout_is_a_model_error(server: ScriptedOpenAIServer) -> None:
    server.add(Reply("late", delay_s=5))
    model = OpenAIModel(
        name="openai-compatible:m",
        model="m",
        base_url=server.base_url,
        api_key="k",
        timeout_s=0.2,
        max_retries=0,
    )
    try:
        with pytest.raises(ModelError, match=r"no answer within 0.2 s \(no retries\)") as info:
            await model.complete(PROMPT, temperature=0)
        assert "`model_timeout_s` in sparring.toml" in str(info.value)
        assert "SPARRING_MODEL_TIMEOUT_S" in str(info.value)
    finally:
        await model.aclose()


async def test_401_says_to_set_the_key(server: ScriptedOpenAIServer, model: OpenAIModel) -> None:
    server.add(Reply("Incorrect API key provided", status=401))
    with pytest.raises(ModelError) as info:
        await model.complete(PROMPT, temperature=0)
    message = str(info.value)
    assert "HTTP 401: Incorrect API key provided" in message
    assert "OPENAI_API_KEY" in message and "api_key" in message
    assert "sk-test" not in message
    assert len(server.requests) == 1  # 401 is not retried


async def test_404_points_at_the_model_name(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(Reply("model 'test-model' not found", status=404))
    with pytest.raises(ModelError, match=r"Check the model name 'test-model'"):
        await model.complete(PROMPT, temperature=0)


async def test_connection_refused_says_to_check_base_url() -> None:
    with ScriptedOpenAIServer() as s:
        dead_url = s.base_url
    model = OpenAIModel(name="ollama:m", model="m", base_url=dead_url, api_key="k", max_retries=0)
    try:
        with pytest.raises(ModelError, match="check --base-url and that the server runs") as first:
            await model.complete(PROMPT, temperature=0)
        assert "timed out" not in str(first.value) and "no answer within" not in str(first.value)
    finally:
        await model.aclose()


async def test_refusal_is_a_model_error(server: ScriptedOpenAIServer, model: OpenAIModel) -> None:
    server.add(
        Reply(
            body={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "refusal": "I can't help with that",
                        },
                    }
                ],
            }
        )
    )
    with pytest.raises(ModelError, match="refused to answer: I can't help with that"):
        await model.complete(PROMPT, temperature=0)


async def test_no_choices_is_a_model_error(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(
        Reply(
            body={"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
        )
    )
    with pytest.raises(ModelError, match="returned no choices"):
        await model.complete(PROMPT, temperature=0)


_CHAT = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("<html><body>502 Bad Gateway</body></html>", "the body is not JSON: '<html>"),
        ('{"choices": [', "the body is not JSON"),
        ("", "the body is not JSON"),
        ("[1, 2]", "the body is a list, not a JSON object"),
        ('"hello"', "the body is a string 'hello', not a JSON object"),
        ({"choices": "abc"}, "`choices` is a string 'abc', not a list"),
        ({"object": "list", "data": []}, "no `choices` key"),
        ({"choices": [{}]}, "choices[0] has no `message` object: {}"),
        ({"choices": ["x"]}, "choices[0] has no `message` object"),
        (
            {"choices": [{"message": {"content": {"text": "hi"}}}]},
            "choices[0].message.content is an object, not text",
        ),
        ({"choices": [{"message": {"content": 42}}]}, "content is a number, not text"),
        (
            {"choices": [{"message": {"content": ["hi"]}}]},
            'choices[0].message.content is a list, not text (nor content parts: item 0 is "hi", '
            "not an object with a `type`)",
        ),
        (
            {"choices": [{"message": {"content": [{"type": "text", "text": 5}]}}]},
            "choices[0].message.content[0].text is a number, not text",
        ),
        ({"error": {"message": "model is loading"}}, 'holds an error: {"message": "model is'),
    ],
)
async def test_malformed_answer_is_a_model_error_naming_the_endpoint(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
    body: dict[str, Any] | str,
    fragment: str,
) -> None:
    server.add(Reply(body=body))
    with pytest.raises(ModelError) as info:
        await model.complete(PROMPT, temperature=0)
    message = str(info.value)
    assert fragment in message
    assert message.startswith(
        f"openai-compatible:test-model at {server.base_url}: the answer is not a chat completion ("
    )
    assert "OpenAI-compatible /v1 endpoint" in message
    assert len(server.requests) == 1  # a malformed answer is not retried


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "lots", "completion_tokens": None},
        {"prompt_tokens": -3, "completion_tokens": 2.5},
        {"prompt_tokens": True, "completion_tokens": [1]},
        "many",
    ],
)
async def test_bad_usage_numbers_are_recorded_as_none(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
    usage: Any,
) -> None:
    server.add(Reply(body=_CHAT | {"choices": [{"message": {"content": "ok"}}], "usage": usage}))
    completion = await model.complete(PROMPT, temperature=0)
    assert (completion.text, completion.input_tokens, completion.output_tokens) == (
        "ok",
        None,
        None,
    )


async def test_sloppy_but_usable_answer_is_accepted(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    server.add(
        Reply(body={"choices": [{"message": {"content": None}}], "usage": {"prompt_tokens": 4}})
    )
    completion = await model.complete(PROMPT, temperature=0)
    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("", 4, None)


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ([{"type": "text", "text": "Hello"}], "Hello"),
        (
            [
                {"type": "text", "text": "Hel"},
                {"type": "image_url", "image_url": {"url": "x"}},
                {"type": "text", "text": "lo"},
            ],
            "Hello",
        ),
        ([{"type": "refusal", "refusal": "no"}], ""),
        ([], ""),
    ],
)
async def test_content_as_a_list_of_parts_joins_the_text_parts(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
    content: list[Any],
    text: str,
) -> None:
    server.add(
        Reply(body=_CHAT | {"choices": [{"message": {"role": "assistant", "content": content}}]})
    )
    completion = await model.complete(PROMPT, temperature=0)
    assert completion.text == text


def test_missing_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="export OPENAI_API_KEY"):
        OpenAIModel(name="openai:gpt-4o-mini", model="gpt-4o-mini")


async def test_concurrent_calls_share_one_client(
    server: ScriptedOpenAIServer,
    model: OpenAIModel,
) -> None:
    import anyio

    server.add(*[lambda req: Reply(req["messages"][-1]["content"].upper())] * 10)
    out: dict[int, str] = {}

    async def one(i: int) -> None:
        c = await model.complete([{"role": "user", "content": f"msg {i}"}], temperature=0)
        out[i] = c.text

    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(one, i)
    assert out == {i: f"MSG {i}" for i in range(10)}


def _with_credentials(base_url: str) -> tuple[str, str]:
    """`base_url` with a user, password and key in the query; and its masked form."""
    host = base_url.removeprefix("http://").removesuffix("/v1")
    return (f"http://admin:hunter2@{host}/v1?api-key=TOPSECRET", f"http://***@{host}/v1?***")


async def test_errors_mask_base_url_and_never_show_the_api_key(
    server: ScriptedOpenAIServer,
) -> None:
    key = "sk-model-key-0123456789abcdef"
    base_url, shown = _with_credentials(server.base_url)
    server.add(
        Reply(
            "x" * 265 + f" Invalid API key: Bearer {key} for admin:hunter2 (api-key=TOPSECRET)",
            status=401,
        )
    )
    model = OpenAIModel(
        name="openai-compatible:m", model="m", base_url=base_url, api_key=key, max_retries=0
    )
    try:
        with pytest.raises(ModelError) as info:
            await model.complete(PROMPT, temperature=0)
    finally:
        await model.aclose()
    message = str(info.value)
    assert f"openai-compatible:m at {shown}: HTTP 401: " in message
    assert "x" * 265 + " Invalid API key: Bearer ***" in message  # scrubbed, then cut
    for leak in ("sk-mod", "hunter2", "TOPSECRET", "admin"):
        assert leak not in message


async def test_connection_error_masks_base_url() -> None:
    with ScriptedOpenAIServer() as s:
        base_url, shown = _with_credentials(s.base_url)
    model = OpenAIModel(
        name="openai-compatible:m",
        model="m",
        base_url=base_url,
        api_key="sk-model-key",
        max_retries=0,
    )
    try:
        with pytest.raises(ModelError, match="could not connect") as info:
            await model.complete(PROMPT, temperature=0)
    finally:
        await model.aclose()
    assert shown in str(info.value)
    assert "hunter2" not in str(info.value) and "TOPSECRET" not in str(info.value)


async def test_a_short_api_key_is_not_scrubbed(server: ScriptedOpenAIServer) -> None:
    server.add(Reply("model 'k2' is not known", status=404))
    model = OpenAIModel(
        name="openai-compatible:k2",
        model="k2",
        base_url=server.base_url,
        api_key="k2",
        max_retries=0,
    )
    try:
        with pytest.raises(ModelError, match=r"HTTP 404: model 'k2' is not known"):
            await model.complete(PROMPT, temperature=0)
    finally:
        await model.aclose()
