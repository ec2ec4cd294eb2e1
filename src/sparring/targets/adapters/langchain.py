"""`LangChainAdapter`: a LangChain Runnable or LangGraph graph as the agent under test
(extra `langchain`).

The runnable takes `{"messages": [...]}` and returns a dict whose `"messages"` hold either
the conversation with the new messages appended (a LangGraph graph over `MessagesState`,
e.g. a ReAct agent) or only the new messages (the shape a graph node returns). The output
is taken as the whole conversation when it holds the user message sent (by id, else a
human message with its text); otherwise its messages are appended to the input. Each turn
is one `ainvoke` with the whole conversation, so build the graph without a checkpointer.
The reply is the last new `AIMessage`'s text; tool calls are the new `AIMessage.tool_calls`
(and `invalid_tool_calls`, with the parse error as result) with the matching `ToolMessage`
content as result; token counts are summed from `usage_metadata`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from uuid import uuid4

from pydantic import JsonValue

from sparring.results import add_tokens
from sparring.targets.adapters._base import (
    FrameworkAdapter,
    Turn,
    has_method,
    jsonable,
    missing_extra,
    wrong_object,
)
from sparring.targets.templates import History
from sparring.transcript import Message, ToolCall

try:
    from langchain_core.language_models import BaseLanguageModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.runnables import Runnable, RunnableConfig
except ImportError as e:  # pragma: no cover - the dev environment has every extra
    raise missing_extra("the LangChain adapter", "langchain") from e

_EXPECTED = 'a LangChain Runnable over {"messages": [...]}, such as a compiled LangGraph graph'


class LangChainAdapter(FrameworkAdapter[list[BaseMessage]]):
    """Wraps a Runnable over `{"messages": [...]}` as `async adapter(history) -> Message`.

    Use it as a callable target: `CallableTarget(LangChainAdapter(graph))` in Python, or
    `target: {type: callable, ref: "my_agent:target"}` with `target = LangChainAdapter(graph)`
    in `my_agent.py`.

    Args:
        runnable: A compiled LangGraph graph or other Runnable (see the module docstring);
            shared by all conversations.
        config: Passed to every `ainvoke`, e.g. `{"recursion_limit": 10}`.
        remember: Conversations whose LangChain messages are kept so the next turn continues
            from them (see `sparring.targets.adapters`).

    Raises:
        TypeError: `runnable` has no `ainvoke` method, or is a bare chat model or LLM.
    """

    def __init__(
        self,
        runnable: Runnable[Any, Any],
        *,
        config: RunnableConfig | None = None,
        remember: int = 1024,
    ) -> None:
        _check_runnable(runnable)
        super().__init__(remember=remember)
        self.runnable = runnable
        self.config = config

    def _from_history(self, history: History) -> list[BaseMessage]:
        return [
            HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"])
            for m in history
        ]

    async def _run(self, native: list[BaseMessage], text: str) -> Turn[list[BaseMessage]]:
        sent = HumanMessage(text, id=uuid4().hex)
        output = await self.runnable.ainvoke({"messages": [*native, sent]}, self.config)
        messages = _messages(output)
        start = _after(messages, sent)
        if start is None:  # only the new messages, as a graph node returns them
            new, messages = messages, [*native, sent, *messages]
        else:
            new = messages[start:]
        replies = [m for m in new if isinstance(m, AIMessage)]
        input_tokens = output_tokens = None
        for m in replies:
            if m.usage_metadata is not None:
                input_tokens = add_tokens(input_tokens, m.usage_metadata["input_tokens"])
                output_tokens = add_tokens(output_tokens, m.usage_metadata["output_tokens"])
        message = Message(
            role="agent",
            content=_text(replies[-1].content) if replies else "",
            tool_calls=_tool_calls(new),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        return Turn(message, messages)


def _check_runnable(runnable: object) -> None:
    if isinstance(runnable, BaseLanguageModel):
        raise wrong_object(
            cast(object, runnable),
            adapter="LangChainAdapter",
            expected=_EXPECTED,
            hint="A chat model alone answers one message and runs no tools: wrap it in a "
            "graph (e.g. langgraph.prebuilt.create_react_agent(model, tools)), or test "
            "the model's endpoint with the `openai_chat` target.",
        )
    if not has_method(runnable, "ainvoke"):
        raise wrong_object(runnable, adapter="LangChainAdapter", expected=_EXPECTED)


def _messages(output: object) -> list[BaseMessage]:
    """The `"messages"` of the runnable's output.

    Raises:
        TypeError: the output is not a mapping with a list of messages under `"messages"`.
    """
    found: object = None
    if isinstance(output, dict):
        found = cast(dict[str, object], output).get("messages")
    if not isinstance(found, list) or not all(
        isinstance(m, BaseMessage) for m in cast(list[object], found)
    ):
        kind = type(cast(object, output)).__name__
        raise TypeError(
            f'the runnable returned {kind} without a list of messages under "messages"; '
            'LangChainAdapter needs a Runnable that returns {"messages": [...]}, '
            "such as a LangGraph graph over MessagesState"
        )
    return cast(list[BaseMessage], found)


def _after(messages: Sequence[BaseMessage], sent: HumanMessage) -> int | None:
    """Index just past the user message sent, found by id, else as the last human message
    with its text; `None` when the output does not hold it (it holds only new messages)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].id == sent.id:
            return i + 1
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage) and messages[i].content == sent.content:
            return i + 1
    return None


def _text(content: str | list[str | dict[str, Any]]) -> str:
    """A message's text: the string, or its text blocks joined by newlines."""
    if isinstance(content, str):
        return content
    parts = [
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or b.get("type") == "text"
    ]
    return "\n".join(parts)


def _tool_calls(messages: Sequence[BaseMessage]) -> tuple[ToolCall, ...]:
    """The calls of the `AIMessage`s in `messages`, each with its `ToolMessage` content as
    result; a call the model made with arguments LangChain could not parse
    (`invalid_tool_calls`, never run) is kept too, with the parse error as result."""
    results: dict[str, JsonValue] = {
        m.tool_call_id: jsonable(m.content) for m in messages if isinstance(m, ToolMessage)
    }
    calls: list[ToolCall] = []
    for m in messages:
        if not isinstance(m, AIMessage):
            continue
        calls.extend(
            ToolCall.from_arguments(
                c["name"], c["args"], id=c["id"], result=results.get(c["id"] or "")
            )
            for c in m.tool_calls
        )
        calls.extend(
            ToolCall.from_arguments(
                c["name"] or "",
                c["args"],
                id=c["id"],
                result=results.get(c["id"] or "", c["error"]),
            )
            for c in m.invalid_tool_calls
        )
    return tuple(calls)
