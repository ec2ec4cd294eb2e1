# pyright: reportMissingTypeStubs=false
"""`SmolagentsAdapter`: a smolagents agent (`ToolCallingAgent`, `CodeAgent`) as the agent
under test (extra `smolagents`).

Each turn is one `agent.run(text, reset=False)` on the conversation's memory steps, in a
worker thread (smolagents is synchronous). The reply is the final answer (text as is, other
values as canonical JSON); tool calls are the new action steps' calls with each tool's
output as result (a `CodeAgent` step is one `python_interpreter` call with `{"code": ...}`
and the execution observations as result); the `final_answer` tool call, which only carries
the reply, is left out. Token counts are summed over the new steps.

A smolagents agent keeps the conversation in `agent.memory`, so one agent runs one
conversation at a time: concurrent conversations wait for each other. Build the agent with
`verbosity_level=LogLevel.OFF` to keep its log out of sparring's console.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any, cast

import anyio.to_thread
from pydantic import JsonValue

from sparring.adapters._base import (
    FrameworkAdapter,
    Turn,
    jsonable,
    missing_extra,
    reply_content,
)
from sparring.results import add_tokens
from sparring.targets.templates import History
from sparring.transcript import Message, ToolCall

try:
    from smolagents import MultiStepAgent
    from smolagents.agents import ToolOutput
    from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep, TaskStep
    from smolagents.monitoring import Timing
except ImportError as e:  # pragma: no cover - the dev environment has every extra
    raise missing_extra("the smolagents adapter", "smolagents") from e

Step = TaskStep | ActionStep | PlanningStep
"""What `agent.memory.steps` holds."""

_FINAL_ANSWER = "final_answer"
_CODE_TOOL = "python_interpreter"


class SmolagentsAdapter(FrameworkAdapter[list[Step]]):
    """Wraps a smolagents agent as `async adapter(history) -> Message`.

    Use it as a callable target: `CallableTarget(SmolagentsAdapter(agent))` in Python, or
    `target: {type: callable, ref: "my_agent:target"}` with `target = SmolagentsAdapter(agent)`
    in `my_agent.py`.

    Args:
        agent: The agent under test; its memory is replaced by the conversation's steps
            before each turn, so conversations run one at a time.
        remember: Conversations whose memory steps are kept so the next turn continues from
            them (see `sparring.adapters`).
        run_options: Passed to every `agent.run(...)`, e.g. `max_steps=5`.
    """

    def __init__(self, agent: MultiStepAgent, *, remember: int = 1024,
                 **run_options: Any) -> None:
        super().__init__(remember=remember)
        self.agent = agent
        self.run_options = run_options
        self._lock = threading.Lock()  # held by the worker thread, even an abandoned one

    def _from_history(self, history: History) -> list[Step]:
        steps: list[Step] = []
        for m in history:
            if m["role"] == "user":
                steps.append(TaskStep(task=m["content"]))
            else:
                steps.append(ActionStep(
                    step_number=0, timing=Timing(start_time=0.0, end_time=0.0),
                    model_output=m["content"], action_output=m["content"], is_final_answer=True))
        return steps

    async def _run(self, native: list[Step], text: str) -> Turn[list[Step]]:
        return await anyio.to_thread.run_sync(self._run_sync, native, text,
                                              abandon_on_cancel=True)

    def _run_sync(self, native: list[Step], text: str) -> Turn[list[Step]]:
        with self._lock:
            self.agent.memory.steps = list(native)
            outputs: dict[str, object] = {}
            answer: object = None
            events = cast(Iterable[object], self.agent.run(  # pyright: ignore[reportUnknownMemberType]
                text, stream=True, reset=False, **self.run_options))  # a generator: stream=True
            for event in events:
                if isinstance(event, ToolOutput):
                    outputs[event.id] = event.output
                elif isinstance(event, FinalAnswerStep):
                    answer = event.output
            steps = list(self.agent.memory.steps)
        new = steps[len(native):]
        content, raw = reply_content(answer)
        input_tokens = output_tokens = None
        for step in new:
            if isinstance(step, ActionStep | PlanningStep) and step.token_usage is not None:
                input_tokens = add_tokens(input_tokens, step.token_usage.input_tokens)
                output_tokens = add_tokens(output_tokens, step.token_usage.output_tokens)
        message = Message(role="agent", content=content, raw=raw,
                          tool_calls=_tool_calls(new, outputs),
                          input_tokens=input_tokens, output_tokens=output_tokens)
        return Turn(message, steps)


def _tool_calls(steps: Sequence[Step], outputs: dict[str, object]) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for step in steps:
        if not isinstance(step, ActionStep):
            continue
        for call in step.tool_calls or ():
            if call.name == _FINAL_ANSWER:
                continue
            arguments: Any = call.arguments
            if call.name == _CODE_TOOL and isinstance(arguments, str):
                arguments = {"code": arguments}
            result: JsonValue = jsonable(outputs[call.id] if call.id in outputs
                                         else step.observations)
            calls.append(ToolCall.from_arguments(
                call.name, arguments if isinstance(arguments, str) else jsonable(arguments),
                id=call.id, result=result))
    return tuple(calls)
