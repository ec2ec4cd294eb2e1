# pyright: reportMissingTypeStubs=false
"""`SmolagentsAdapter`: a smolagents agent (`ToolCallingAgent`, `CodeAgent`) as the agent
under test (extra `smolagents`).

Each turn is one `agent.run(text, reset=False)` on the conversation's memory steps, in a
worker thread (smolagents is synchronous). The reply is the final answer (text as is, other
values as canonical JSON); tool calls are every call the run made, with each tool's output
as result, or the step's error text when the tool raised or was unknown (a `CodeAgent` step
is one `python_interpreter` call with `{"code": ...}` and the execution observations as
result); the `final_answer` tool call, which only carries the reply, is left out. Token
counts are summed over the new steps.

A smolagents agent keeps the conversation in `agent.memory`, so one agent runs one
conversation at a time: concurrent conversations wait for each other. Build the agent with
`verbosity_level=LogLevel.OFF` to keep its log out of sparring's console.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any, cast

import anyio.to_thread

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
    from smolagents import MultiStepAgent
    from smolagents.agents import ToolOutput
    from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep, TaskStep
    from smolagents.memory import ToolCall as SmolToolCall
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
            them (see `sparring.targets.adapters`).
        run_options: Passed to every `agent.run(...)`, e.g. `max_steps=5`.

    Raises:
        TypeError: `agent` has no `run` method and `memory` (not a smolagents agent).
    """

    def __init__(self, agent: MultiStepAgent, *, remember: int = 1024, **run_options: Any) -> None:
        if not (has_method(agent, "run") and hasattr(agent, "memory")):
            raise wrong_object(
                agent,
                adapter="SmolagentsAdapter",
                expected="a smolagents agent (ToolCallingAgent or CodeAgent)",
            )
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
                steps.append(
                    ActionStep(
                        step_number=0,
                        timing=Timing(start_time=0.0, end_time=0.0),
                        model_output=m["content"],
                        action_output=m["content"],
                        is_final_answer=True,
                    )
                )
        return steps

    async def _run(self, native: list[Step], text: str) -> Turn[list[Step]]:
        return await anyio.to_thread.run_sync(self._run_sync, native, text, abandon_on_cancel=True)

    def _run_sync(self, native: list[Step], text: str) -> Turn[list[Step]]:
        with self._lock:
            self.agent.memory.steps = list(native)
            events = list(
                cast(
                    Iterable[object],
                    self.agent.run(  # pyright: ignore[reportUnknownMemberType]
                        text, stream=True, reset=False, **self.run_options
                    ),
                )
            )  # a generator: stream=True
            steps = list(self.agent.memory.steps)
        answers = [e.output for e in events if isinstance(e, FinalAnswerStep)]
        content, raw = reply_content(answers[-1] if answers else None)
        input_tokens = output_tokens = None
        for step in steps[len(native) :]:
            if isinstance(step, ActionStep | PlanningStep) and step.token_usage is not None:
                input_tokens = add_tokens(input_tokens, step.token_usage.input_tokens)
                output_tokens = add_tokens(output_tokens, step.token_usage.output_tokens)
        message = Message(
            role="agent",
            content=content,
            raw=raw,
            tool_calls=_tool_calls(events),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        return Turn(message, steps)


def _tool_calls(events: Sequence[object]) -> tuple[ToolCall, ...]:
    """The turn's tool calls, in the order the run's `events` announce them.

    smolagents yields each call before running it and the call's `ActionStep` when the step
    ends. The events, not `step.tool_calls`, are read because a step whose tool raised (or
    was unknown) keeps `tool_calls = None` and only sets `step.error`: such a call is still
    recorded, with the error text as result.
    """
    calls: list[ToolCall] = []
    pending: list[SmolToolCall] = []
    outputs: dict[str, object] = {}
    for event in events:
        if isinstance(event, SmolToolCall):
            pending.append(event)
        elif isinstance(event, ToolOutput):
            outputs[event.id] = event.output
        elif isinstance(event, ActionStep):
            calls.extend(
                _call(c, outputs[c.id] if c.id in outputs else _step_result(event))
                for c in pending
                if c.name != _FINAL_ANSWER
            )
            pending, outputs = [], {}
    return tuple(calls)


def _call(call: SmolToolCall, result: object) -> ToolCall:
    arguments: Any = call.arguments
    if call.name == _CODE_TOOL and isinstance(arguments, str):
        arguments = {"code": arguments}
    return ToolCall.from_arguments(
        call.name,
        arguments if isinstance(arguments, str) else jsonable(arguments),
        id=call.id,
        result=jsonable(result),
    )


def _step_result(step: ActionStep) -> str | None:
    """The result of a call without its own output: the step's observations (a `CodeAgent`
    step's execution log), then its error if the step failed."""
    if step.error is None:
        return step.observations
    error = str(step.error)
    return f"{step.observations}\n{error}" if step.observations else error
