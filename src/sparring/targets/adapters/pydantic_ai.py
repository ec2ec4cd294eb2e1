"""`PydanticAIAdapter`: a pydantic-ai `Agent` as the agent under test (extra `pydantic-ai`).

Each turn is one `agent.run(text, message_history=...)`. The reply is the run's output (text
as is, structured output as canonical JSON); tool calls are the run's `ToolCallPart`s with
the matching `ToolReturnPart` (or `RetryPromptPart`) content as result, so a call whose
tool raised `ModelRetry`, was unknown, or got invalid arguments is recorded with the error.
pydantic-ai's output tools (named `final_result...`), which carry structured output rather
than an action, are left out. Token counts are summed over the run's model responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparring.results import add_tokens
from sparring.targets.adapters._base import (
    FrameworkAdapter,
    Turn,
    has_method,
    jsonable,
    missing_extra,
    reply_content,
    wrong_object,
)
from sparring.targets.templates import History
from sparring.transcript import Message, ToolCall

try:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as e:  # pragma: no cover - the dev environment has every extra
    raise missing_extra("the pydantic-ai adapter", "pydantic-ai") from e

_OUTPUT_TOOL = "final_result"


class PydanticAIAdapter(FrameworkAdapter[list[ModelMessage]]):
    """Wraps a pydantic-ai `Agent` as `async adapter(history) -> Message`.

    Use it as a callable target: `CallableTarget(PydanticAIAdapter(agent))` in Python, or
    `target: {type: callable, ref: "my_agent:target"}` with `target = PydanticAIAdapter(agent)`
    in `my_agent.py`.

    Args:
        agent: The agent under test; shared by all conversations.
        remember: Conversations whose pydantic-ai messages are kept so the next turn continues
            from them (see `sparring.targets.adapters`).
        run_options: Passed to every `agent.run(...)`, e.g. `deps=...`, `model_settings=...`.

    Raises:
        TypeError: `agent` has no `run` method (not a pydantic-ai agent).
    """

    def __init__(self, agent: Agent[Any, Any], *, remember: int = 1024, **run_options: Any) -> None:
        if not has_method(agent, "run"):
            raise wrong_object(agent, adapter="PydanticAIAdapter", expected="a pydantic_ai.Agent")
        super().__init__(remember=remember)
        self.agent = agent
        self.run_options = run_options

    def _from_history(self, history: History) -> list[ModelMessage]:
        return [
            ModelRequest(parts=[UserPromptPart(m["content"])])
            if m["role"] == "user"
            else ModelResponse(parts=[TextPart(m["content"])])
            for m in history
        ]

    async def _run(self, native: list[ModelMessage], text: str) -> Turn[list[ModelMessage]]:
        result = await self.agent.run(text, message_history=list(native), **self.run_options)
        new = result.new_messages()
        content, raw = reply_content(result.output)
        input_tokens = output_tokens = None
        for m in new:
            if isinstance(m, ModelResponse):
                input_tokens = add_tokens(input_tokens, m.usage.input_tokens)
                output_tokens = add_tokens(output_tokens, m.usage.output_tokens)
        message = Message(
            role="agent",
            content=content,
            tool_calls=_tool_calls(new),
            raw=raw,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        return Turn(message, result.all_messages())


def _tool_calls(messages: Sequence[ModelMessage]) -> tuple[ToolCall, ...]:
    """The run's `ToolCallPart`s (output tools left out), each with the content of the part
    that answered it: a `ToolReturnPart`, or the `RetryPromptPart` older pydantic-ai versions
    send when the tool raised `ModelRetry`, was unknown, or got invalid arguments."""
    results = {
        p.tool_call_id: p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
        or (p.part_kind == "retry-prompt" and p.tool_name is not None)
    }
    return tuple(
        ToolCall.from_arguments(
            p.tool_name, p.args, id=p.tool_call_id, result=jsonable(results.get(p.tool_call_id))
        )
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart) and not _is_output_tool(p.tool_name)
    )


def _is_output_tool(name: str) -> bool:
    return name == _OUTPUT_TOOL or name.startswith(_OUTPUT_TOOL + "_")
