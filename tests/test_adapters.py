"""Framework adapters, offline: each framework's own fakes (pydantic-ai `FunctionModel`,
LangChain `GenericFakeChatModel` in a LangGraph graph, the OpenAI Agents SDK against the
scripted OpenAI-compatible server, smolagents with a scripted `Model`). Every adapter runs a
two-turn conversation through `CallableTarget` (tool call recorded with its result; the
second turn sees the first turn's tool call), continues a history it did not produce, and
passes a scripted scenario's `tool_called` checks in `run_scenarios`."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.secrets import Secrets
from sparring.target_specs import CallableTargetSpec
from sparring.targets.callable import CallableTarget
from sparring.targets.registry import build_target
from sparring.targets.templates import History
from sparring.transcript import Message, Transcript
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

Adapter = Callable[[History], Awaitable[Message]]
QUESTION, THANKS = "Where is order 7?", "Thanks!"


async def two_turns(adapter: Adapter) -> tuple[Message, Message]:
    """Turn 1 asks about order 7 (the agent calls `lookup`), turn 2 says thanks."""
    target = CallableTarget(adapter, name="agent")
    session = await target.open_session()
    first = await session.send(Transcript(messages=(Message(role="user", content=QUESTION),)))
    second = await session.send(
        Transcript(
            messages=(
                Message(role="user", content=QUESTION),
                first,
                Message(role="user", content=THANKS),
            )
        )
    )
    await session.close()
    return first, second


def assert_lookup(message: Message, *, result: Any) -> None:
    assert [(c.name, c.arguments, c.result) for c in message.tool_calls] == [
        ("lookup", {"order": 7}, result)
    ]


async def assert_tool_called_checks_pass(adapter: Adapter) -> None:
    scenario = ScriptedScenario.model_validate(
        {
            "id": "order",
            "turns": [
                {"user": QUESTION, "checks": [{"tool_called": ["lookup"]}, {"contains": "sent"}]},
                {"user": THANKS, "checks": [{"tool_called": {"exclude": ["lookup"]}}]},
            ],
        }
    )
    target = CallableTarget(adapter, name="agent")
    result = await run_scenarios(
        [scenario],
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        settings=RunSettings(),
    )
    trial = result.scenarios[0].trials[0]
    assert [(v.id, v.status) for v in trial.verdicts] == [
        ("t1.check1", "met"),
        ("t1.check2", "met"),
        ("t2.check1", "met"),
    ]
    assert trial.status == "passed" and result.exit_code == 0


def written_history() -> History:
    """A conversation the adapter did not produce (as in an unfold preload)."""
    return [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"},
    ]


def test_importing_the_package_imports_no_framework() -> None:
    code = (
        "import sys, sparring.targets.adapters; "
        "print(sorted(m for m in sys.modules if m.split('.')"
        "[0] in {'pydantic_ai', 'langchain_core', 'langgraph', 'agents', 'smolagents'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- pydantic-ai -----------------------------------------------------------------------


def pydantic_ai_agent(seen: list[list[Any]]) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append([p for m in messages for p in m.parts])
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"Order 7 was {last.content['status']}.")])
        assert isinstance(last, UserPromptPart)
        if last.content == QUESTION:
            return ModelResponse(parts=[ToolCallPart("lookup", {"order": 7})])
        return ModelResponse(parts=[TextPart(f"You said {last.content}")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def lookup(order: int) -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        return {"order": order, "status": "sent"}

    return agent


async def test_pydantic_ai_two_turns_keep_tool_calls_in_history() -> None:
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart, UserPromptPart

    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter

    seen: list[list[Any]] = []
    first, second = await two_turns(PydanticAIAdapter(pydantic_ai_agent(seen)))
    assert first.content == "Order 7 was sent."
    assert_lookup(first, result={"order": 7, "status": "sent"})
    assert first.input_tokens and first.output_tokens
    assert second.content == "You said Thanks!" and second.tool_calls == ()
    kinds = [type(p) for p in seen[-1]]
    assert kinds[:3] == [UserPromptPart, ToolCallPart, ToolReturnPart]


async def test_pydantic_ai_structured_output_and_written_history() -> None:
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter

    class Answer(BaseModel):
        text: str

    seen: list[list[Any]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from pydantic_ai.messages import ToolCallPart

        seen.append(
            [
                p.content
                for m in messages
                for p in m.parts
                if isinstance(p, UserPromptPart | TextPart)
            ]
        )
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"text": "ok"})])

    reply = await PydanticAIAdapter(Agent(FunctionModel(model), output_type=Answer))(
        written_history()
    )
    assert seen[0] == ["Hi", "Hello!", "Bye"]
    assert reply.content == '{"text": "ok"}' and reply.raw == {"text": "ok"}
    assert reply.tool_calls == ()  # the output tool carries the answer, it is no action


# --- LangChain / LangGraph ---------------------------------------------------------------


def langgraph_agent(replies: list[Any], seen: list[list[Any]]) -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AnyMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def lookup(order: int) -> dict[str, Any]:
        """Look up an order."""
        return {"order": order, "status": "sent"}

    chat = GenericFakeChatModel(messages=iter(replies))

    async def call_model(state: MessagesState) -> dict[str, list[AnyMessage]]:
        seen.append(list(state["messages"]))
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def langgraph_replies() -> list[Any]:
    from langchain_core.messages import AIMessage

    usage = {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}
    return [
        AIMessage(
            "",
            tool_calls=[{"name": "lookup", "args": {"order": 7}, "id": "c1"}],
            usage_metadata=usage,
        ),
        AIMessage("Order 7 was sent.", usage_metadata=usage),
        AIMessage([{"type": "text", "text": "You're"}, {"type": "text", "text": "welcome"}]),
    ]


async def test_langgraph_two_turns_keep_tool_calls_in_history() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from sparring.targets.adapters.langchain import LangChainAdapter

    seen: list[list[Any]] = []
    first, second = await two_turns(LangChainAdapter(langgraph_agent(langgraph_replies(), seen)))
    assert first.content == "Order 7 was sent."
    assert_lookup(first, result='{"order": 7, "status": "sent"}')
    assert (first.input_tokens, first.output_tokens) == (22, 6)
    assert second.content == "You're\nwelcome" and second.tool_calls == ()
    assert second.input_tokens is None
    assert [type(m) for m in seen[-1]] == [
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        HumanMessage,
    ]


async def test_langchain_written_history_and_wrong_output_shape() -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda

    from sparring.targets.adapters.langchain import LangChainAdapter

    seen: list[list[Any]] = []
    reply = await LangChainAdapter(langgraph_agent([AIMessage("Bye!")], seen))(written_history())
    assert reply.content == "Bye!"
    assert [(type(m), m.content) for m in seen[0]] == [
        (HumanMessage, "Hi"),
        (AIMessage, "Hello!"),
        (HumanMessage, "Bye"),
    ]
    with pytest.raises(TypeError, match='returned str without a list of messages under "mes'):
        await LangChainAdapter(RunnableLambda(lambda state: "text"))(written_history())


# --- OpenAI Agents SDK -------------------------------------------------------------------


def openai_agents_adapter(server: ScriptedOpenAIServer) -> tuple[Any, Any]:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from sparring.targets.adapters.openai_agents import OpenAIAgentsAdapter

    @function_tool
    def lookup(order: int) -> dict[str, Any]:
        """Look up an order."""
        return {"order": order, "status": "sent"}

    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    agent = Agent(
        name="support",
        instructions="Help with orders.",
        tools=[lookup],
        model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
    )
    return OpenAIAgentsAdapter(agent, run_config=RunConfig(tracing_disabled=True)), client


def openai_agents_replies() -> list[Reply]:
    return [
        Reply(
            tool_calls=[{"name": "lookup", "arguments": {"order": 7}, "id": "c1"}],
            usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        ),
        Reply(
            "Order 7 was sent.",
            usage={"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
        ),
        Reply("You're welcome."),
    ]


async def test_openai_agents_two_turns_keep_tool_calls_in_history() -> None:
    with ScriptedOpenAIServer(openai_agents_replies()) as server:
        adapter, client = openai_agents_adapter(server)
        try:
            first, second = await two_turns(adapter)
        finally:
            await client.close()
    assert first.content == "Order 7 was sent."
    assert_lookup(first, result={"order": 7, "status": "sent"})
    assert (first.input_tokens, first.output_tokens) == (30, 7)
    assert second.content == "You're welcome." and second.tool_calls == ()
    sent = server.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "lookup"
    assert sent[3]["tool_call_id"] == "c1"


async def test_openai_agents_written_history() -> None:
    with ScriptedOpenAIServer([Reply("Goodbye.")]) as server:
        adapter, client = openai_agents_adapter(server)
        try:
            reply = await adapter(written_history())
        finally:
            await client.close()
    assert reply.content == "Goodbye."
    assert [(m["role"], m["content"]) for m in server.requests[0]["messages"][1:]] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
        ("user", "Bye"),
    ]


# --- smolagents ----------------------------------------------------------------------------


def smolagents_agent(seen: list[list[Any]]) -> Any:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import LogLevel, TokenUsage

    @tool
    def lookup(order: int) -> dict[str, Any]:
        """Look up an order.

        Args:
            order: The order number.
        """
        return {"order": order, "status": "sent"}

    def call(name: str, arguments: dict[str, Any], id: str) -> ChatMessage:
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            token_usage=TokenUsage(input_tokens=9, output_tokens=2),
            tool_calls=[
                ChatMessageToolCall(
                    ChatMessageToolCallFunction(name=name, arguments=arguments),
                    id=id,
                    type="function",
                )
            ],
        )

    class Scripted(Model):
        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            texts = [
                "\n".join(b["text"] for b in m.content if b["type"] == "text") for m in messages
            ]
            seen.append(texts)
            if "Observation:\n{'order': 7, 'status': 'sent'}" in texts[-1]:
                return call("final_answer", {"answer": "Order 7 was sent."}, "f1")
            if QUESTION in texts[-1]:
                return call("lookup", {"order": 7}, f"c{len(seen)}")
            return call("final_answer", {"answer": "You're welcome."}, "f2")

    return ToolCallingAgent(tools=[lookup], model=Scripted(), verbosity_level=LogLevel.OFF)


async def test_smolagents_two_turns_keep_tool_calls_in_history() -> None:
    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    seen: list[list[Any]] = []
    first, second = await two_turns(SmolagentsAdapter(smolagents_agent(seen)))
    assert first.content == "Order 7 was sent."
    assert_lookup(first, result={"order": 7, "status": "sent"})
    assert first.tool_calls[0].id == "c1"
    assert (first.input_tokens, first.output_tokens) == (18, 4)
    assert second.content == "You're welcome." and second.tool_calls == ()
    history = "\n".join(seen[-1])
    assert "lookup" in history and "Order 7 was sent." in history and THANKS in history


async def test_smolagents_written_history() -> None:
    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    seen: list[list[Any]] = []
    reply = await SmolagentsAdapter(smolagents_agent(seen))(written_history())
    assert reply.content == "You're welcome."
    history = "\n".join(seen[0])
    assert history.index("Hi") < history.index("Hello!") < history.index("Bye")


# --- end to end -----------------------------------------------------------------------------


async def test_every_adapter_passes_tool_called_checks_in_a_run() -> None:
    from sparring.targets.adapters.langchain import LangChainAdapter
    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter
    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    await assert_tool_called_checks_pass(PydanticAIAdapter(pydantic_ai_agent([])))
    await assert_tool_called_checks_pass(LangChainAdapter(langgraph_agent(langgraph_replies(), [])))
    await assert_tool_called_checks_pass(SmolagentsAdapter(smolagents_agent([])))
    with ScriptedOpenAIServer(openai_agents_replies()) as server:
        adapter, client = openai_agents_adapter(server)
        try:
            await assert_tool_called_checks_pass(adapter)
        finally:
            await client.close()


async def test_remember_zero_converts_the_text_history_every_turn() -> None:
    from pydantic_ai.messages import TextPart, UserPromptPart

    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter

    seen: list[list[Any]] = []
    await two_turns(PydanticAIAdapter(pydantic_ai_agent(seen), remember=0))
    assert [type(p) for p in seen[-1]] == [UserPromptPart, TextPart, UserPromptPart]


async def test_an_adapter_named_by_a_callable_ref(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`target: {type: callable, ref: "sp_adapted:target"}` with the adapter in that module."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_callable adds the directory
    monkeypatch.delitem(sys.modules, "sp_adapted", raising=False)
    (tmp_path / "sp_adapted.py").write_text(
        "from pydantic_ai import Agent\nfrom pydantic_ai.models.test import TestModel\n"
        "from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter\n\n"
        "agent = Agent(TestModel(custom_output_text='hello from pydantic-ai'))\n"
        "target = PydanticAIAdapter(agent)\n",
        encoding="utf-8",
    )
    importlib.invalidate_caches()
    async with httpx.AsyncClient() as client:
        target = build_target(
            CallableTargetSpec.model_validate({"type": "callable", "ref": "sp_adapted:target"}),
            client=client,
            secrets=Secrets({}),
        )
        session = await target.open_session()
        reply = await session.send(Transcript(messages=(Message(role="user", content="hi"),)))
    assert target.name == "sp_adapted:target" and reply.content == "hello from pydantic-ai"


async def test_smolagents_code_agent_step_is_one_python_interpreter_call() -> None:
    from smolagents import CodeAgent, tool
    from smolagents.models import ChatMessage, MessageRole, Model
    from smolagents.monitoring import LogLevel

    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    @tool
    def lookup(order: int) -> str:
        """Look up an order.

        Args:
            order: The order number.
        """
        return f"order {order} sent"

    code = "status = lookup(order=7)\nprint(status)\nfinal_answer(status)"

    class Scripted(Model):
        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            return ChatMessage(
                role=MessageRole.ASSISTANT, content=f"Thought: look it up.\n<code>\n{code}\n</code>"
            )

    agent = CodeAgent(tools=[lookup], model=Scripted(), verbosity_level=LogLevel.OFF)
    reply = await SmolagentsAdapter(agent)([{"role": "user", "content": QUESTION}])
    assert reply.content == "order 7 sent"
    [call] = reply.tool_calls
    assert call.name == "python_interpreter" and call.arguments == {"code": code}
    assert isinstance(call.result, str) and "order 7 sent" in call.result
    assert reply.input_tokens is None


# --- calls that errored, were refused or never ran are still recorded --------------------


async def assert_exclude_check_fails(adapter: Adapter, tool: str) -> None:
    """A `tool_called: {exclude: [tool]}` check is not met when the agent called `tool`."""
    scenario = ScriptedScenario.model_validate(
        {
            "id": "refund",
            "turns": [{"user": "Refund order 7", "checks": [{"tool_called": {"exclude": [tool]}}]}],
        }
    )
    target = CallableTarget(adapter, name="agent")
    result = await run_scenarios(
        [scenario],
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        settings=RunSettings(),
    )
    trial = result.scenarios[0].trials[0]
    assert [(v.id, v.status) for v in trial.verdicts] == [("t1.check1", "not_met")]
    assert trial.status == "failed" and result.exit_code != 0


def smolagents_failing_agent() -> Any:
    """Step 1 calls `refund` (it raises), step 2 an unknown tool, step 3 answers."""
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import LogLevel

    @tool
    def refund(order: int) -> str:
        """Refund an order.

        Args:
            order: The order number.
        """
        raise RuntimeError("refunds are closed")

    script = iter(
        [
            ("refund", {"order": 7}),
            ("wire_money", {"to": "me"}),
            ("final_answer", {"answer": "Sorry."}),
        ]
    )

    class Scripted(Model):
        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            name, arguments = next(script)
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                tool_calls=[
                    ChatMessageToolCall(
                        ChatMessageToolCallFunction(name=name, arguments=arguments),
                        id=name,
                        type="function",
                    )
                ],
            )

    return ToolCallingAgent(tools=[refund], model=Scripted(), verbosity_level=LogLevel.OFF)


async def test_smolagents_records_a_call_whose_tool_raised_or_was_unknown() -> None:
    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    reply = await SmolagentsAdapter(smolagents_failing_agent())(
        [{"role": "user", "content": "Refund order 7"}]
    )
    assert reply.content == "Sorry."
    [refund, wire] = reply.tool_calls
    assert (refund.name, refund.arguments, wire.name) == ("refund", {"order": 7}, "wire_money")
    assert isinstance(refund.result, str) and "refunds are closed" in refund.result
    assert isinstance(wire.result, str) and "wire_money" in wire.result
    await assert_exclude_check_fails(SmolagentsAdapter(smolagents_failing_agent()), "refund")


async def test_smolagents_code_agent_error_is_the_call_result() -> None:
    from smolagents import CodeAgent
    from smolagents.models import ChatMessage, MessageRole, Model
    from smolagents.monitoring import LogLevel

    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    codes = ["print('trying')\nraise ValueError('no refunds')", "final_answer('Sorry.')"]
    script = iter(codes)

    class Scripted(Model):
        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            code = next(script)
            return ChatMessage(role=MessageRole.ASSISTANT, content=f"<code>\n{code}\n</code>")

    agent = CodeAgent(tools=[], model=Scripted(), verbosity_level=LogLevel.OFF)
    reply = await SmolagentsAdapter(agent)([{"role": "user", "content": QUESTION}])
    assert reply.content == "Sorry."
    [failed, answered] = reply.tool_calls
    assert failed.arguments == {"code": codes[0]}
    assert isinstance(failed.result, str)
    assert failed.result.index("trying") < failed.result.index("no refunds")
    assert answered.arguments == {"code": codes[1]}


async def test_pydantic_ai_records_retried_and_unknown_tool_calls() -> None:
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("refund", {"order": 7}, tool_call_id="a"),
                    ToolCallPart("wire_money", {}, tool_call_id="b"),
                ]
            )
        return ModelResponse(parts=[TextPart("Sorry.")])

    def agent() -> Agent[None, str]:
        built = Agent(FunctionModel(model))

        @built.tool_plain
        def refund(order: int) -> str:  # pyright: ignore[reportUnusedFunction]
            raise ModelRetry("refunds are closed")

        return built

    reply = await PydanticAIAdapter(agent())([{"role": "user", "content": "Refund order 7"}])
    [refund, wire] = reply.tool_calls
    assert (refund.name, refund.result) == ("refund", "refunds are closed")
    assert wire.name == "wire_money" and "wire_money" in str(wire.result)
    await assert_exclude_check_fails(PydanticAIAdapter(agent()), "refund")


def test_pydantic_ai_retry_prompt_part_answers_a_call() -> None:
    """Older pydantic-ai versions answer a retried call with a `RetryPromptPart`."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, RetryPromptPart, ToolCallPart

    from sparring.targets.adapters.pydantic_ai import (
        _tool_calls,  # pyright: ignore[reportPrivateUsage]
    )

    with pytest.warns(Warning, match="RetryPromptPart` is deprecated"):
        retry = RetryPromptPart("refunds are closed", tool_name="refund", tool_call_id="a")
    calls = _tool_calls(
        [
            ModelResponse(parts=[ToolCallPart("refund", {}, tool_call_id="a")]),
            ModelRequest(parts=[retry]),
        ]
    )
    assert [(c.name, c.result) for c in calls] == [("refund", "refunds are closed")]


async def test_langchain_records_failed_and_unparsable_tool_calls() -> None:
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.runnables import RunnableLambda

    from sparring.targets.adapters.langchain import LangChainAdapter

    def agent(state: dict[str, list[BaseMessage]]) -> dict[str, list[BaseMessage]]:
        return {
            "messages": [
                *state["messages"],
                AIMessage(
                    "",
                    tool_calls=[{"name": "refund", "args": {"order": 7}, "id": "a"}],
                    invalid_tool_calls=[
                        {
                            "name": "wire_money",
                            "args": "{to:",
                            "id": "b",
                            "error": "bad JSON",
                            "type": "invalid_tool_call",
                        }
                    ],
                ),
                ToolMessage("Error: refunds are closed", tool_call_id="a", status="error"),
                AIMessage("Sorry."),
            ]
        }

    reply = await LangChainAdapter(RunnableLambda(agent))(
        [{"role": "user", "content": "Refund order 7"}]
    )
    [refund, wire] = reply.tool_calls
    assert (refund.name, refund.result) == ("refund", "Error: refunds are closed")
    assert (wire.name, wire.arguments_raw, wire.result) == ("wire_money", "{to:", "bad JSON")
    assert wire.arguments_error is not None
    await assert_exclude_check_fails(LangChainAdapter(RunnableLambda(agent)), "wire_money")


async def test_openai_agents_records_a_call_whose_tool_raised() -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from sparring.targets.adapters.openai_agents import OpenAIAgentsAdapter

    @function_tool
    def refund(order: int) -> str:
        """Refund an order."""
        raise RuntimeError("refunds are closed")

    replies = [
        Reply(tool_calls=[{"name": "refund", "arguments": {"order": 7}, "id": "a"}]),
        Reply("Sorry."),
    ]
    with ScriptedOpenAIServer(replies) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        agent = Agent(
            name="support",
            tools=[refund],
            model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
        )
        try:
            reply = await OpenAIAgentsAdapter(agent, run_config=RunConfig(tracing_disabled=True))(
                [{"role": "user", "content": "Refund order 7"}]
            )
        finally:
            await client.close()
    [refund_call] = reply.tool_calls
    assert refund_call.name == "refund" and "error" in str(refund_call.result)


# --- LangChain runnables that return only the new messages -----------------------------------


async def test_langchain_node_shaped_output_is_appended_to_the_input() -> None:
    """A runnable returning `{"messages": [AIMessage]}` keeps the whole conversation."""
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.runnables import RunnableLambda

    from sparring.targets.adapters.langchain import LangChainAdapter

    seen: list[list[tuple[str, Any]]] = []

    def node(state: dict[str, list[BaseMessage]]) -> dict[str, list[BaseMessage]]:
        seen.append([(m.type, m.content) for m in state["messages"]])
        return {"messages": [AIMessage(f"reply {len(seen)}")]}

    target = CallableTarget(LangChainAdapter(RunnableLambda(node)), name="agent")
    session = await target.open_session()
    transcript = Transcript(messages=())
    for text in ("one", "two", "three"):
        transcript = transcript.with_message(Message(role="user", content=text))
        transcript = transcript.with_message(await session.send(transcript))
    await session.close()
    assert [m.content for m in transcript.messages] == [
        "one",
        "reply 1",
        "two",
        "reply 2",
        "three",
        "reply 3",
    ]
    assert seen[-1] == [
        ("human", "one"),
        ("ai", "reply 1"),
        ("human", "two"),
        ("ai", "reply 2"),
        ("human", "three"),
    ]


# --- adapters reject the wrong object when built ---------------------------------------------


def test_adapters_reject_objects_they_cannot_run() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from pydantic_ai import Agent

    from sparring.targets.adapters.langchain import LangChainAdapter
    from sparring.targets.adapters.openai_agents import OpenAIAgentsAdapter
    from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter
    from sparring.targets.adapters.smolagents import SmolagentsAdapter

    def reply(history: History) -> str:
        return "hi"

    cases: list[tuple[Callable[[Any], object], object, str]] = [
        (
            PydanticAIAdapter,
            reply,
            "PydanticAIAdapter needs a pydantic_ai.Agent; got function "
            "'test_adapters_reject_objects_they_cannot_run.<locals>.reply'",
        ),
        (PydanticAIAdapter, None, "PydanticAIAdapter needs a pydantic_ai.Agent; got None."),
        (PydanticAIAdapter, Agent, "got the class 'Agent' (pass an instance)"),
        (
            SmolagentsAdapter,
            Agent("test"),
            "SmolagentsAdapter needs a smolagents agent "
            "(ToolCallingAgent or CodeAgent); got a Agent object",
        ),
        (OpenAIAgentsAdapter, Agent("test"), "OpenAIAgentsAdapter needs an OpenAI Agents SDK"),
        (LangChainAdapter, "graph", "LangChainAdapter needs a LangChain Runnable"),
        (
            LangChainAdapter,
            GenericFakeChatModel(messages=iter([])),
            "got a GenericFakeChatModel object. A chat model alone answers one message and runs "
            "no tools: wrap it in a graph",
        ),
    ]
    for adapter, obj, message in cases:
        with pytest.raises(TypeError) as caught:
            adapter(obj)
        assert message in str(caught.value)


def test_a_callable_ref_to_a_misbuilt_adapter_fails_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sparring.errors import UserError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "sp_misbuilt", raising=False)
    (tmp_path / "sp_misbuilt.py").write_text(
        "from sparring.targets.adapters.pydantic_ai import PydanticAIAdapter\n\n"
        "def agent(history):\n    return 'hi'\n\ntarget = PydanticAIAdapter(agent)\n",
        encoding="utf-8",
    )
    importlib.invalidate_caches()
    with pytest.raises(
        UserError,
        match=r"sp_misbuilt:target.*TypeError: PydanticAIAdapter "
        r"needs a pydantic_ai.Agent; got function 'agent'",
    ):
        build_target(
            CallableTargetSpec.model_validate({"type": "callable", "ref": "sp_misbuilt:target"}),
            client=httpx.AsyncClient(),
            secrets=Secrets({}),
        )
