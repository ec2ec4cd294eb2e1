"""What every framework adapter shares: history in, agent `Message` out, and a memory of the
framework's own conversations so that later turns see earlier tool calls and their results.

A callable target hands an adapter the conversation as text (`[{"role", "content"}]`), which
has no room for tool calls. So after each turn an adapter remembers the framework's native
messages under the text conversation they correspond to; when the next history starts with
a remembered conversation, the framework continues from its own messages (tool calls and
results included). A history the adapter did not produce (unfold preloads, written agent
turns) is converted from its text.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import JsonValue
from pydantic_core import to_jsonable_python

from sparring.errors import UserError
from sparring.targets.templates import History
from sparring.transcript import Message, content_text

Native = TypeVar("Native")
"""A framework's own record of a conversation (e.g. pydantic-ai's `list[ModelMessage]`)."""

_Key = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Turn(Generic[Native]):
    """One framework run: the reply to show, and the framework's conversation after it."""

    message: Message
    native: Native


class FrameworkAdapter(ABC, Generic[Native]):
    """Base of the adapters: an async callable `adapter(history) -> Message`.

    Subclasses convert a text history to the framework's format (`_from_history`) and run
    one turn (`_run`). Instances may be shared by concurrent conversations.

    Args:
        remember: How many conversations (each remembered after every turn) to keep the
            framework's own messages for, least recently used dropped first; >= 0.
    """

    def __init__(self, *, remember: int) -> None:
        if remember < 0:
            raise UserError(f"remember must be 0 or more conversations, got {remember}")
        self._remember = remember
        self._memory: OrderedDict[_Key, Native] = OrderedDict()

    async def __call__(self, history: History) -> Message:
        """Answer the last message of `history` (a user message) as the framework's agent.

        Args:
            history: `[{"role": "user" | "assistant", "content": str}]`, ending with the
                user message to answer (what a callable target passes).

        Returns:
            The agent's reply with every tool call made in this turn and the token counts
            the framework reports.

        Raises:
            ValueError: `history` is empty or does not end with a user message, or its last
                message has files (adapters send text only).
            Exception: whatever the framework raises; a callable target records it as a
                target error.
        """
        if not history or history[-1].get("role") != "user":
            raise ValueError("an adapter is called with the history ending with a user message")
        if files := history[-1].get("files"):
            raise ValueError(
                f"{type(self).__name__} sends text only, so it cannot send the files of this "
                f"message ({', '.join(f['name'] for f in files)}); test files through an "
                "http, openai_chat, a2a or plain callable target"
            )
        earlier = history[:-1]
        native = self._recall(earlier)
        if native is None:
            native = self._from_history(earlier)
        turn = await self._run(native, history[-1]["content"])
        self._keep([*history, {"role": "assistant", "content": turn.message.content}], turn.native)
        return turn.message

    @abstractmethod
    def _from_history(self, history: History) -> Native:
        """The framework's conversation for `history` (text only; may be empty)."""

    @abstractmethod
    async def _run(self, native: Native, text: str) -> Turn[Native]:
        """Continue `native` with the user message `text`; the reply and the new native."""

    def _recall(self, history: History) -> Native | None:
        key = _key(history)
        native = self._memory.get(key)
        if native is not None:
            self._memory.move_to_end(key)
        return native

    def _keep(self, history: History, native: Native) -> None:
        if self._remember == 0:
            return
        key = _key(history)
        self._memory[key] = native
        self._memory.move_to_end(key)
        while len(self._memory) > self._remember:
            self._memory.popitem(last=False)


def _key(history: History) -> _Key:
    return tuple((m["role"], m["content"]) for m in history)


def jsonable(value: object) -> JsonValue:
    """`value` as JSON data (pydantic models and dataclasses dumped; unknown objects as
    their `str`), for tool results and structured replies."""
    data: JsonValue = to_jsonable_python(value, fallback=str)
    return data


def reply_content(output: object) -> tuple[str, JsonValue]:
    """A run's final output as `(content, raw)`: text as is with no raw; anything else
    (structured output) as canonical JSON text, its data kept as raw."""
    if isinstance(output, str):
        return output, None
    data = jsonable(output)
    return content_text(data), data


def has_method(obj: object, name: str) -> bool:
    """Whether `obj` is an instance (not a class) with a callable attribute `name`."""
    return not isinstance(obj, type) and callable(getattr(obj, name, None))


def wrong_object(obj: object, *, adapter: str, expected: str, hint: str = "") -> TypeError:
    """The error for an adapter built around the wrong object, e.g. "PydanticAIAdapter needs
    a pydantic_ai.Agent; got function 'reply'", followed by `hint` (a sentence) if given."""
    return TypeError(
        f"{adapter} needs {expected}; got {_describe(obj)}." + (f" {hint}" if hint else "")
    )


def _describe(obj: object) -> str:
    if obj is None:
        return "None"
    if isinstance(obj, type):
        return f"the class {obj.__qualname__!r} (pass an instance)"
    if inspect.isroutine(obj):
        return f"function {getattr(obj, '__qualname__', repr(obj))!r}"
    return f"a {type(obj).__qualname__} object"


def missing_extra(feature: str, extra: str) -> UserError:
    """The error for a framework that is not installed; raise it `from` the ImportError."""
    return UserError(f'{feature} needs: pip install "sparring[{extra}]"')
