"""`OpenAIAgentsAdapter`: an OpenAI Agents SDK `Agent` as the agent under test (extra
`openai-agents`).

Each turn is one `Runner.run(agent, input_items)`. The reply is the run's final output (text
as is, structured output as canonical JSON); tool calls are the run's tool-call and handoff
items with the matching output as result; token counts come from the run's usage. After a
handoff the conversation continues with the agent that answered last, as the SDK advises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import JsonValue

from sparring.targets.adapters._base import (
    FrameworkAdapter,
    Turn,
    jsonable,
    missing_extra,
    reply_content,
    wrong_object,
)
from sparring.targets.templates import History
from sparring.transcript import Message, ToolCall

try:
    from agents import Agent, Runner, TResponseInputItem
    from agents.items import (
        HandoffCallItem,
        HandoffOutputItem,
        RunItem,
        ToolCallItem,
        ToolCallOutputItem,
    )
except ImportError as e:  # pragma: no cover - the dev environment has every extra
    raise missing_extra("the OpenAI Agents SDK adapter", "openai-agents") from e


@dataclass(frozen=True, slots=True)
class _Conversation:
    agent: Agent[Any]
    """The agent that answers next (the last one to answer, after handoffs)."""
    items: list[TResponseInputItem]


class OpenAIAgentsAdapter(FrameworkAdapter[_Conversation]):
    """Wraps an OpenAI Agents SDK `Agent` as `async adapter(history) -> Message`.

    Use it as a callable target: `CallableTarget(OpenAIAgentsAdapter(agent))` in Python, or
    `target: {type: callable, ref: "my_agent:target"}` with
    `target = OpenAIAgentsAdapter(agent)` in `my_agent.py`.

    Args:
        agent: The starting agent; shared by all conversations.
        remember: Conversations whose SDK input items are kept so the next turn continues
            from them (see `sparring.targets.adapters`).
        run_options: Passed to every `Runner.run(...)`, e.g. `context=...`, `max_turns=5`,
            `run_config=RunConfig(tracing_disabled=True)`.

    Raises:
        TypeError: `agent` is not an `agents.Agent` (what `Runner.run` takes).
    """

    def __init__(self, agent: Agent[Any], *, remember: int = 1024, **run_options: Any) -> None:
        if not isinstance(cast(object, agent), Agent):
            raise wrong_object(
                agent, adapter="OpenAIAgentsAdapter", expected="an OpenAI Agents SDK agents.Agent"
            )
        super().__init__(remember=remember)
        self.agent = agent
        self.run_options = run_options

    def _from_history(self, history: History) -> _Conversation:
        items = [
            cast(TResponseInputItem, {"role": m["role"], "content": m["content"]}) for m in history
        ]
        return _Conversation(self.agent, items)

    async def _run(self, native: _Conversation, text: str) -> Turn[_Conversation]:
        sent = cast(TResponseInputItem, {"role": "user", "content": text})
        result = await Runner.run(native.agent, [*native.items, sent], **self.run_options)
        content, raw = reply_content(result.final_output)
        usage = result.context_wrapper.usage
        message = Message(
            role="agent",
            content=content,
            raw=raw,
            tool_calls=_tool_calls(result.new_items),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )
        return Turn(message, _Conversation(result.last_agent, result.to_input_list()))


def _field(raw: object, name: str) -> Any:
    """A field of an SDK raw item, which is a pydantic model or a plain dict."""
    if isinstance(raw, dict):
        return cast(dict[str, Any], raw).get(name)
    return getattr(raw, name, None)


def _tool_calls(items: Sequence[RunItem]) -> tuple[ToolCall, ...]:
    results: dict[str, JsonValue] = {}
    for item in items:
        if isinstance(item, ToolCallOutputItem):
            results[str(_field(item.raw_item, "call_id"))] = jsonable(item.output)
        elif isinstance(item, HandoffOutputItem):
            results[str(_field(item.raw_item, "call_id"))] = jsonable(
                _field(item.raw_item, "output")
            )
    calls: list[ToolCall] = []
    for item in items:
        if isinstance(item, ToolCallItem | HandoffCallItem):
            raw: object = item.raw_item
            call_id = _field(raw, "call_id") or _field(raw, "id")
            name = _field(raw, "name") or _field(raw, "type") or "tool"
            arguments = _field(raw, "arguments")
            calls.append(
                ToolCall.from_arguments(
                    str(name),
                    arguments if isinstance(arguments, str) else jsonable(arguments),
                    id=None if call_id is None else str(call_id),
                    result=results.get(str(call_id)),
                )
            )
    return tuple(calls)
