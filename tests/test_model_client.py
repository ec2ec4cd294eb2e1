"""The OpenAI-compatible model client against servers that misbehave the way real ones do.

Issue 9 items 12 (a failed request fails alone) and 21 (servers that refuse
`response_format: json_schema`, llama-cpp-python with HTTP 500), and the shared clients.
"""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import pytest

from sparring.errors import ModelError
from sparring.models.base import ChatMessage
from sparring.models.openai import OpenAIModel
from sparring.models.structured import complete_json
from sparring.results import Usage
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.targets.scripted import ScriptedTarget
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

PROMPT: list[ChatMessage] = [
    {"role": "system", "content": "You grade."},
    {"role": "user", "content": "Hi"},
]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
AGENT_REPLY = "Hello! How can I help you today?"


def _model(server: ScriptedOpenAIServer, *, max_retries: int = 1) -> OpenAIModel:
    return OpenAIModel(
        name="openai-compatible:m",
        model="m",
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=max_retries,
    )


def _fill(schema: dict[str, Any]) -> Any:
    """A value of `schema`'s shape: every string quotes the agent, enums take the first."""
    if "enum" in schema:
        return schema["enum"][0]
    kind: Any = schema.get("type")
    if isinstance(kind, list):
        kind = [k for k in cast(list[str], kind) if k != "null"][0]
    if kind == "object":
        return {k: _fill(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_fill(schema.get("items", {}))]
    return {"string": AGENT_REPLY, "boolean": True, "integer": 1, "number": 1}.get(kind)


def _schema_answer(request: dict[str, Any]) -> Reply:
    return Reply(json.dumps(_fill(request["response_format"]["json_schema"]["schema"])))


# --- item 12: a failure stays with its own request --------------------------------------


async def test_a_call_whose_connection_was_reset_on_every_try_does_not_fail_the_next() -> None:
    with ScriptedOpenAIServer([Reply(reset=True), Reply(reset=True), Reply("fine")]) as server:
        model = _model(server, max_retries=1)
        try:
            with pytest.raises(ModelError, match="could not connect after 1 retry") as failed:
                await model.complete(PROMPT, temperature=0)
            assert failed.value.requests == 2
            assert "no answer within" not in str(failed.value)  # a reset is not a timeout
            completion = await model.complete(PROMPT, temperature=0)
        finally:
            await model.aclose()
    assert (completion.text, completion.requests) == ("fine", 1)
    assert len(server.requests) == 3


async def test_one_judge_request_reset_through_its_retries_errors_only_its_trial() -> None:
    """The reported reproduction: `--parallel 1`, the first judge request's connection reset
    on every try; the healthy trials after it must all be judged."""
    # the first try alone (no response_format answered yet), then 1 + 1 retry: 3 resets
    replies = [*[Reply(reset=True)] * 3, *[_schema_answer] * 6]
    scenario = ScriptedScenario(
        id="greets",
        turns=[{"user": "Hi"}],  # pyright: ignore[reportArgumentType]
        criteria=["The assistant greets the user"],  # pyright: ignore[reportArgumentType]
        trials=7,
        require_evidence=False,
    )
    with ScriptedOpenAIServer(replies) as server:
        judge = _model(server, max_retries=1)
        try:
            result = await run_scenarios(
                [scenario],
                targets=lambda s: ScriptedTarget([AGENT_REPLY]),
                user_model=None,
                judge_model=judge,
                settings=RunSettings(parallel=1),
            )
        finally:
            await judge.aclose()
    trials = result.scenarios[0].trials
    assert [t.status for t in trials] == ["error"] + ["passed"] * 6
    assert "could not connect" in (trials[0].error or "")
    assert len(server.requests) == 9
    assert trials[0].usage.model_calls == 3  # every try was sent
    assert [t.usage.model_calls for t in trials[1:]] == [1] * 6


# --- item 21: servers that refuse response_format ---------------------------------------


@pytest.mark.parametrize("server_kind", ["llama-cpp-python", "llama-server"])
async def test_a_server_refusing_json_schema_gets_instructions_from_then_on(
    server_kind: Any, caplog: pytest.LogCaptureFixture
) -> None:
    answers = [Reply('{"ok": true}'), Reply('Sure: {"ok": false}'), Reply('{"ok": true}')]
    with ScriptedOpenAIServer(answers, refuse_response_format=server_kind) as server:
        model = _model(server, max_retries=1)
        try:
            with caplog.at_level(logging.WARNING, logger="sparring.models"):
                first = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
                second = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
                third = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
        finally:
            await model.aclose()
    refused = 1  # the first try goes out alone, so even a 500 is not retried
    assert (first.text, first.requests) == ('{"ok": true}', refused + 1)
    assert (second.requests, third.requests) == (1, 1)
    assert model.native_json_schema is False
    assert all("response_format" in r for r in server.requests[:refused])
    for request in server.requests[refused:]:
        assert "response_format" not in request
        assert request["messages"][0]["content"].startswith("You grade.\n\nAnswer with one JSON")
    warnings = [r.getMessage() for r in caplog.records if r.name == "sparring.models"]
    assert len(warnings) == 1  # said once, not per call
    assert "refused `response_format: json_schema`" in warnings[0]
    assert "instructions" in warnings[0] and "openai-compatible:m" in warnings[0]


async def test_llama_cpp_python_end_to_end_judges_with_tolerant_parsing_and_counts_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ScriptedOpenAIServer(
        [Reply('Here you go:\n```json\n{"ok": true}\n```')],
        refuse_response_format="llama-cpp-python",
    ) as server:
        model = _model(server, max_retries=1)
        usage = Usage()
        try:
            answer = await complete_json(
                model,
                PROMPT,
                schema=SCHEMA,
                validate=lambda value: value["ok"],
                temperature=0,
                usage=usage,
            )
        finally:
            await model.aclose()
    assert answer is True
    assert usage.model_calls == 2 == len(server.requests)  # 1 refused + 1 answered
    assert usage.unpriced_calls == 1  # refused requests cost nothing


async def test_a_failed_call_counts_every_request_it_sent() -> None:
    with ScriptedOpenAIServer(
        [Reply("boom", status=503, headers={"retry-after-ms": "1"})] * 4
    ) as server:
        model = _model(server, max_retries=2)
        usage = Usage()
        try:
            with pytest.raises(ModelError, match="HTTP 503"):
                await complete_json(
                    model, PROMPT, schema=SCHEMA, validate=bool, temperature=0, usage=usage
                )
        finally:
            await model.aclose()
    assert usage.model_calls == 4 == len(server.requests)  # a first try, then 1 + 2 retries
    assert usage.cost_usd == 0 and usage.unpriced_calls == 0


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (500, "CUDA out of memory"),
        (401, "Invalid response_format key in your API key"),
        (429, "too many json_schema requests"),
    ],
)
async def test_other_errors_are_not_taken_for_a_refused_response_format(
    status: int, message: str
) -> None:
    with ScriptedOpenAIServer(
        [Reply(message, status=status, headers={"x-should-retry": "false"})]
    ) as server:
        model = _model(server, max_retries=0)
        try:
            with pytest.raises(ModelError, match=f"HTTP {status}"):
                await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
        finally:
            await model.aclose()
    assert model.native_json_schema is True


# --- shared clients -----------------------------------------------------------------------


async def test_models_of_one_endpoint_share_a_client_until_the_last_is_closed() -> None:
    with ScriptedOpenAIServer([Reply("a"), Reply("b"), Reply("c")]) as server:
        user, judge = _model(server), _model(server)
        await user.complete(PROMPT, temperature=0)
        await judge.complete(PROMPT, temperature=0)
        assert user._client._client() is judge._client._client()  # pyright: ignore[reportPrivateUsage]
        await user.aclose()
        assert (await judge.complete(PROMPT, temperature=0)).text == "c"  # still open
        await judge.aclose()


async def test_the_first_try_alone_happens_only_until_json_schema_was_answered() -> None:
    retry = Reply("busy", status=503, headers={"retry-after-ms": "1"})
    with ScriptedOpenAIServer(
        [retry, Reply('{"ok": true}'), retry, Reply('{"ok": false}')]
    ) as server:
        model = _model(server, max_retries=1)
        try:
            first = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
            second = await model.complete(PROMPT, temperature=0, json_schema=SCHEMA)
        finally:
            await model.aclose()
    assert (first.requests, second.requests) == (2, 2)
    assert [h["x-stainless-retry-count"] for h in server.headers] == ["0", "0", "0", "1"]
    assert model.native_json_schema is True


async def test_without_aiohttp_the_sdk_default_transport_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import openai

    class Missing:  # what the SDK offers when its aiohttp extra is not installed
        def __init__(self, **options: object) -> None:
            raise RuntimeError("To use the aiohttp client you must have installed ...")

    monkeypatch.setattr(openai, "DefaultAioHttpClient", Missing)
    with ScriptedOpenAIServer([Reply("hello")]) as server:
        model = _model(server)
        try:
            completion = await model.complete(PROMPT, temperature=0)
        finally:
            await model.aclose()
    assert (completion.text, completion.requests) == ("hello", 1)


# --- the Anthropic provider counts its requests too ---------------------------------------


async def test_anthropic_calls_count_every_request_they_sent() -> None:
    from sparring.models.anthropic import AnthropicModel
    from tests.support.anthropic_server import Reply as AnthropicReply
    from tests.support.anthropic_server import ScriptedAnthropicServer

    overloaded = AnthropicReply(status=529, headers={"retry-after-ms": "1"})
    with ScriptedAnthropicServer([overloaded, AnthropicReply("hi"), *[overloaded] * 2]) as server:
        model = AnthropicModel(
            name="anthropic:m",
            model="m",
            base_url=server.base_url,
            api_key="sk-ant-test-key-1234",
            max_retries=1,
        )
        try:
            answered = await model.complete(PROMPT, temperature=0)
            with pytest.raises(ModelError, match="HTTP 529") as failed:
                await model.complete(PROMPT, temperature=0)
        finally:
            await model.aclose()
    assert (answered.text, answered.requests) == ("hi", 2)
    assert failed.value.requests == 2
