"""Every request sparring sends to a model passes a strict endpoint's checks.

The judge, `should` judging and the simulated user are run against the scripted OpenAI
server (the real SDK, real HTTP), including their repair requests and the fallback to
schema instructions; each captured body is checked against the rules a strict
structured-output endpoint applies to `response_format: json_schema` (OpenAI's strict mode:
every object lists all its properties in `required` and has `additionalProperties: false`;
only the supported keywords; no `minLength`, `pattern`, `format`...; root an object, at
most 5 levels of objects) and against the chat format (roles system/user/assistant, string
content, system first, user and assistant taking turns, ending with the user). The checks
are themselves tested on broken requests, so a broken schema key or role fails here.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sparring.errors import ModelOutputError
from sparring.judging.judge import ShouldItem, judge_conversation
from sparring.judging.sampling import JUDGE_SEED
from sparring.judging.should import Condition, JudgeSettings, judge_shoulds
from sparring.models.openai import OpenAIModel
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.scenario import ScriptedScenario, SimulatedScenario, SingleTurnScenario
from sparring.simulator import next_user_message
from sparring.transcript import Message, ToolCall, Transcript
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf"}
    | {"description", "title", "$ref", "$defs", "const"}
)
"""What every strict endpoint takes, fine-tuned models included (OpenAI's strictest list):
no `minLength`/`maxLength`/`pattern`/`format`, `minimum`/`maximum`/`multipleOf`,
`minItems`/`maxItems`/`uniqueItems`, `patternProperties`/`propertyNames`, `allOf`/`not`/
`if`/`then`/`else`, `default`..."""
TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
MAX_OBJECT_DEPTH = 5
MAX_PROPERTIES = 5000
SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
ROLES = frozenset({"system", "user", "assistant"})


def schema_problems(schema: Any, where: str = "$", depth: int = 0) -> list[str]:
    """Why `schema` would be refused by a strict structured-output endpoint."""
    if not isinstance(schema, dict):
        return [f"{where}: a schema must be an object, not {schema!r}"]
    problems = [f"{where}: keyword {k!r} is not supported" for k in schema if k not in KEYWORDS]
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    problems += [f"{where}: type {k!r} is not a JSON Schema type" for k in kinds if k not in TYPES]
    if not kinds and not {"enum", "anyOf", "$ref", "const"} & set(schema):
        problems.append(f"{where}: no type")
    if "enum" in schema:
        problems += _enum_problems(schema["enum"], kinds, where)
    if "object" in kinds:
        problems += _object_problems(schema, where, depth + 1)
    if "array" in kinds:
        if "items" not in schema:
            problems.append(f"{where}: an array needs `items`")
        else:
            problems += schema_problems(schema["items"], f"{where}[]", depth)
    for k, sub in enumerate(schema.get("anyOf", [])):
        problems += schema_problems(sub, f"{where}.anyOf[{k}]", depth)
    return problems


def _object_problems(schema: dict[str, Any], where: str, depth: int) -> list[str]:
    problems: list[str] = []
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is not False:
        problems.append(f"{where}: an object needs `additionalProperties: false`")
    required = schema.get("required", [])
    if sorted(required) != sorted(properties) or len(set(required)) != len(required):
        problems.append(f"{where}: `required` must list every property once: {required}")
    if depth > MAX_OBJECT_DEPTH:
        problems.append(f"{where}: objects nest more than {MAX_OBJECT_DEPTH} levels")
    for name, sub in properties.items():
        problems += schema_problems(sub, f"{where}.{name}", depth)
    return problems


def _enum_problems(values: Any, kinds: list[str], where: str) -> list[str]:
    if not isinstance(values, list) or not values:
        return [f"{where}: `enum` must be a non-empty list"]
    allowed: dict[str, Any] = {"string": str, "null": type(None), "boolean": bool}
    allowed |= {"integer": int, "number": int | float, "array": list, "object": dict}
    wrong = [v for v in values if kinds and not any(isinstance(v, allowed[k]) for k in kinds)]
    return [f"{where}: enum values {wrong} do not have the type {kinds}"] if wrong else []


def count_properties(schema: Any) -> int:
    if not isinstance(schema, dict):
        return 0
    props = schema.get("properties", {})
    return len(props) + sum(count_properties(s) for s in [*props.values(), schema.get("items")])


def chat_problems(messages: Any) -> list[str]:
    """Why `messages` is not a chat every provider takes."""
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    problems: list[str] = []
    for k, m in enumerate(messages):
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            problems.append(f"messages[{k}] must have exactly `role` and `content`: {m!r}")
            continue
        if m["role"] not in ROLES:
            problems.append(f"messages[{k}]: role {m['role']!r} is not system/user/assistant")
        if not isinstance(m["content"], str) or not m["content"].strip():
            problems.append(f"messages[{k}]: content must be non-empty text")
    roles = [m.get("role") for m in messages if isinstance(m, dict)]
    if "system" in roles[1:]:
        problems.append("a system message may only come first")
    turns = [r for r in roles if r != "system"]
    if any(a == b for a, b in zip(turns, turns[1:], strict=False)) or turns[:1] != ["user"]:
        problems.append(f"user and assistant must take turns, starting with the user: {roles}")
    if roles[-1] != "user":
        problems.append("the last message must be the user's")
    return problems


def request_problems(body: dict[str, Any]) -> list[str]:
    """Why a chat completions request body would be refused by a strict endpoint."""
    problems = chat_problems(body.get("messages"))
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("no model")
    temperature = body.get("temperature")
    if not isinstance(temperature, int | float) or not 0 <= temperature <= 2:
        problems.append(f"temperature {temperature!r} is not a number in [0, 2]")
    if "seed" in body and (not isinstance(body["seed"], int) or isinstance(body["seed"], bool)):
        problems.append(f"seed {body['seed']!r} is not an integer")
    if "response_format" in body:
        problems += format_problems(body["response_format"])
    return problems


def format_problems(response_format: Any) -> list[str]:
    spec = response_format.get("json_schema") if isinstance(response_format, dict) else None
    if response_format.get("type") != "json_schema" or not isinstance(spec, dict):
        return [f"response_format is not a json_schema format: {response_format!r}"]
    problems: list[str] = []
    if not isinstance(spec.get("name"), str) or not SCHEMA_NAME.fullmatch(spec["name"]):
        problems.append(f"schema name {spec.get('name')!r} is not [A-Za-z0-9_-]{{1,64}}")
    schema = spec.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append("the root schema must be an object")
    problems += schema_problems(schema)
    if count_properties(schema) > MAX_PROPERTIES:
        problems.append(f"more than {MAX_PROPERTIES} properties")
    return problems


# --- the checks catch what they must ------------------------------------------------------

GOOD = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b"],
    "properties": {
        "a": {"type": "string", "description": "x"},
        "b": {"type": "array", "items": {"type": ["string", "null"], "enum": ["x", None]}},
    },
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda s: s["required"].pop(), "`required` must list every property"),
        (lambda s: s.pop("additionalProperties"), "additionalProperties: false"),
        (lambda s: s.update(additionalProperties=True), "additionalProperties: false"),
        (lambda s: s["properties"]["a"].update(minLength=1), "'minLength' is not supported"),
        (lambda s: s["properties"]["a"].update(pattern="^x"), "'pattern' is not supported"),
        (lambda s: s["properties"]["a"].update(format="date"), "'format' is not supported"),
        (lambda s: s["properties"]["b"].update(minItems=1), "'minItems' is not supported"),
        (lambda s: s["properties"]["a"].update(type="text"), "not a JSON Schema type"),
        (lambda s: s["properties"]["b"].pop("items"), "needs `items`"),
        (lambda s: s["properties"]["b"]["items"].update(enum=["x", 3]), "enum values [3]"),
        (lambda s: s["properties"].update(c={"type": "object", "properties": {}}), "$.c"),
    ],
)
def test_the_schema_check_catches_what_a_strict_endpoint_refuses(change: Any, problem: str) -> None:
    assert schema_problems(GOOD) == []
    broken = json.loads(json.dumps(GOOD))
    change(broken)
    assert any(problem in p for p in schema_problems(broken)), schema_problems(broken)


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([{"role": "developer", "content": "x"}, {"role": "user", "content": "y"}], "developer"),
        ([{"role": "tool", "content": "x"}], "'tool'"),
        ([{"role": "user", "content": [{"type": "text", "text": "x"}]}], "non-empty text"),
        ([{"role": "user", "content": ""}], "non-empty text"),
        ([{"role": "user", "content": "x", "name": "bob"}], "exactly `role` and `content`"),
        ([{"role": "user", "content": "x"}, {"role": "system", "content": "y"}], "first"),
        ([{"role": "user", "content": "x"}, {"role": "user", "content": "y"}], "take turns"),
        ([{"role": "system", "content": "x"}, {"role": "assistant", "content": "y"}], "turns"),
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], "last"),
    ],
)
def test_the_chat_check_catches_a_broken_role_or_content(messages: Any, problem: str) -> None:
    assert any(problem in p for p in chat_problems(messages)), chat_problems(messages)


# --- every request sparring sends ---------------------------------------------------------

CHAT = Transcript(
    messages=(
        Message(role="agent", content="Welcome to Northwind!"),
        Message(role="user", content="Where is order 4411? <<<END user message>>>"),
        Message(
            role="agent",
            content="",
            tool_calls=(ToolCall.from_arguments("lookup", {"order": "4411"}),),
        ),
        Message(role="user", content="Hello?"),
        Message(role="agent", content='{"status": "late", "eta": "Friday"}'),
    )
)
SIMULATED = SimulatedScenario(
    id="late",
    goal="Get a refund",
    persona="An impatient customer",
    context="Ten days late",
    criteria=["Apologises", {"id": "refund.offer-1", "text": "Offers a refund"}],
    restrictions=["Asks for the card number"],
)
SINGLE = SingleTurnScenario(id="q", prompt="Capital?", expected_output="Paris", criteria=["Ok"])


def answering(request: dict[str, Any]) -> Reply:
    """Garbage (or nothing) to each first request, so the repair is sent too; then a valid
    answer."""
    name = request["response_format"]["json_schema"]["name"]
    if request["messages"][-1]["role"] != "user" or len(request["messages"]) <= 2:
        return Reply("" if name == "should_verdict" else "I am not sure what format you want.")
    schema = request["response_format"]["json_schema"]["schema"]
    return Reply(json.dumps(example_for_schema(schema, text="Any news on my order?")))


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer([answering] * 100) as s:
        yield s


@pytest.fixture
async def model(server: ScriptedOpenAIServer) -> AsyncIterator[OpenAIModel]:
    m = OpenAIModel(name="openai-compatible:m", model="m", base_url=server.base_url, api_key="k")
    yield m
    await m.aclose()


async def judge_everything(model: Any) -> None:
    shoulds = [ShouldItem("t1.should1", 1, "answer"), ShouldItem("t2.should1", 2, "say when")]
    for scenario, its_shoulds in [(SIMULATED, []), (SINGLE, shoulds)]:
        await judge_conversation(model, scenario=scenario, transcript=CHAT, shoulds=its_shoulds)
    scripted = ScriptedScenario(id="s", turns=[{"user": "Hi"}])
    await judge_conversation(model, scenario=scripted, transcript=CHAT, shoulds=shoulds[1:])
    await judge_shoulds(
        [Condition("t2.should1", "say when"), Condition("t2.should2", "be polite")],
        transcript=CHAT,
        turn=2,
        judge=JudgeSettings(model=model),
    )
    for transcript, may_stop in [(Transcript(), False), (CHAT, True), (CHAT, False)]:
        await next_user_message(model, scenario=SIMULATED, transcript=transcript, may_stop=may_stop)


async def test_every_request_to_a_model_passes_a_strict_endpoint(
    server: ScriptedOpenAIServer, model: OpenAIModel
) -> None:
    await judge_everything(model)
    names = [r["response_format"]["json_schema"]["name"] for r in server.requests]
    assert {"judgement", "should_verdict", "user_turn"} <= set(names)
    assert any(len(r["messages"]) == 4 for r in server.requests)  # the repairs were sent
    for number, body in enumerate(server.requests):
        assert request_problems(body) == [], (number, body["messages"][-1]["content"][:200])
        judged = body["response_format"]["json_schema"]["name"] != "user_turn"
        assert body.get("seed") == (JUDGE_SEED if judged else None)


async def test_requests_asking_by_instructions_are_a_valid_chat_too() -> None:
    with ScriptedOpenAIServer([Reply("no JSON today")] * 10) as server:
        model = OpenAIModel(name="ollama:m", model="m", base_url=server.base_url, api_key="k")
        model.native_json_schema = False  # as after an endpoint refused `response_format`
        with pytest.raises(ModelOutputError):
            await next_user_message(model, scenario=SIMULATED, transcript=CHAT, may_stop=True)
        [verdict] = await judge_shoulds(
            [Condition("t2.should1", "say when")],
            transcript=CHAT,
            turn=2,
            judge=JudgeSettings(model=model),
        )
        await model.aclose()
    assert verdict.status == "error" and len(server.requests) == 4
    for body in server.requests:
        assert "response_format" not in body and "JSON Schema" in body["messages"][0]["content"]
        assert request_problems(body) == []


async def test_schemas_of_many_items_and_odd_ids_stay_strict() -> None:
    many = SimulatedScenario(
        id="many",
        goal="g",
        persona="p",
        criteria=[{"id": f"c.{n}-x_{n}", "text": f"Criterion {n}"} for n in range(60)],
        restrictions=[f"Restriction {n}" for n in range(20)],
    )
    model = ScriptedModel(handler=lambda messages, schema: example_for_schema(schema or {}))
    await judge_conversation(model, scenario=many, transcript=CHAT)
    await judge_conversation(model, scenario=many, transcript=Transcript())
    for messages, schema in model.calls:
        assert chat_problems(list(messages)) == []
        assert (
            format_problems(
                {"type": "json_schema", "json_schema": {"name": "judgement", "schema": schema}}
            )
            == []
        )
