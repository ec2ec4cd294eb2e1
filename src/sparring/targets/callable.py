"""`CallableTarget`: a Python function as the agent under test (DESIGN.md section 4).

The function gets the conversation so far, `history`, a list of
`{"role": "user" | "assistant", "content": str}` dicts ending with the current user
message; a user message sent with files also has `"files"`: `[{"name": str, "mime_type":
str, "data": str}]`, `data` the file's bytes in base64 (`base64.b64decode(f["data"])`).
It returns the reply as:

- a `str`;
- `(text, tool_calls)`, tool calls as `ToolCall`s or dicts `{name, arguments}` (arguments
  an object or a JSON string; OpenAI's `{function: {name, arguments}}` also works);
- a `Message` (its role is set to `agent`; its `latency_ms` is kept when given);
- a dict, list, number or pydantic model: shown as canonical JSON text, kept in `raw`.

`async def` functions are awaited; plain functions run in a daemon thread so they never
block the event loop. Anything the function raises becomes a `TargetError`, even
`SystemExit`; only cancellation, `KeyboardInterrupt` and `GeneratorExit` pass through.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from pydantic import BaseModel, JsonValue

from sparring.errors import TARGET_TIMEOUT_HINT, RunError, TargetError, TargetTimeout, UserError
from sparring.targets.base import StatelessSession
from sparring.targets.templates import History, chat_history, tool_calls_from
from sparring.transcript import Message, Transcript, content_text

AgentFunction = Callable[[History], Any]


class CallableTarget:
    """Calls `fn(history)` for each user message; stateless (history is passed each time).

    Args:
        fn: Sync or async function of the history (see module docstring).
        name: Shown in reports; default is the function's qualified name.
        timeout_s: Limit for one reply, in seconds. A sync function that overruns is
            abandoned (its thread finishes in the background).
    """

    def __init__(
        self, fn: AgentFunction, *, name: str | None = None, timeout_s: float = 60
    ) -> None:
        if not callable(fn):
            raise UserError(f"a callable target needs a function, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        self.timeout_s = timeout_s
        self._is_async = _is_async(fn)

    async def open_session(self) -> CallableSession:
        """Start a conversation."""
        return CallableSession(self)

    async def aclose(self) -> None:
        """Nothing to release."""

    async def call(self, history: History) -> Message:
        """Call the function with `history` (ending with the user message); return its reply.

        Raises:
            TargetError: the function raised (also `SystemExit` and other BaseExceptions,
                except cancellation and `KeyboardInterrupt`), or returned something that is
                not a reply.
            TargetTimeout: no reply within `timeout_s`.
        """
        start = time.perf_counter()
        try:
            with anyio.fail_after(self.timeout_s):
                reply = await self._invoke(history)
        except TimeoutError:
            raise TargetTimeout(
                target=self.name, timeout_seconds=self.timeout_s, hint=TARGET_TIMEOUT_HINT
            ) from None
        latency_ms = round((time.perf_counter() - start) * 1000, 3)
        return reply_message(reply, latency_ms=latency_ms, target=self.name)

    async def _invoke(self, history: History) -> Any:
        """Run the function; its own exceptions (even TimeoutError) become TargetError."""
        try:
            if self._is_async:
                result = await self.fn(history)
            else:
                result = await run_in_daemon_thread(self.fn, history)
                if inspect.isawaitable(result):
                    result = await result
        except RunError:
            raise
        except Exception as e:
            raise TargetError(f"target {self.name!r} raised {type(e).__name__}: {e}") from e
        except BaseException as e:
            if _passes_through(e):
                raise
            raise TargetError(
                f"target {self.name!r} raised {type(e).__name__}({_args(e)}), which ends "
                "programs (e.g. sys.exit()); an agent function must return its reply, or "
                "raise an Exception when it fails"
            ) from e
        return result


async def run_in_daemon_thread(fn: Callable[[History], Any], history: History) -> Any:
    """`fn(history)` in a new daemon thread, awaited without blocking the event loop.

    Unlike a worker-pool thread, a daemon thread that never returns (an agent stuck in a
    blocking call) is abandoned on timeout or Ctrl-C and cannot keep the process alive at
    exit. Exceptions, `SystemExit` included, are re-raised here.
    """
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[tuple[bool, Any]] = []

    def work() -> None:
        try:
            outcome.append((True, fn(history)))
        except BaseException as e:  # handed to the awaiting task, which decides
            outcome.append((False, e))
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except RuntimeError:
            pass  # the event loop is gone: nobody is waiting any more

    threading.Thread(
        target=work, name=f"sparring-agent-{getattr(fn, '__name__', 'call')}", daemon=True
    ).start()
    await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


class CallableSession(StatelessSession):
    """One conversation with a `CallableTarget`."""

    def __init__(self, target: CallableTarget) -> None:
        self._target = target

    async def send(self, transcript: Transcript, /) -> Message:
        """Call the function with the whole transcript as history (user message last)."""
        messages = transcript.messages
        if not messages or messages[-1].role != "user":
            raise ValueError("a target session is sent a transcript ending with a user message")
        return await self._target.call(chat_history(messages))

    async def close(self) -> None:
        """Nothing to release."""


def _passes_through(error: BaseException) -> bool:
    """Cancellation (timeouts, shutdown), Ctrl-C and generator cleanup are not the agent's
    failures: they must reach the runner unchanged, also inside an exception group."""
    kinds = (anyio.get_cancelled_exc_class(), KeyboardInterrupt, GeneratorExit)
    if isinstance(error, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], error)
        return group.subgroup(lambda e: isinstance(e, kinds)) is not None
    return isinstance(error, kinds)


def _args(error: BaseException) -> str:
    return ", ".join(repr(a) for a in error.args)[:200]


def _is_async(fn: object) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004  # objects with `async def __call__`
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def reply_message(reply: object, *, latency_ms: float | None, target: str) -> Message:
    """Turn what an agent function returned into an agent `Message` (see module docstring).

    Raises:
        TargetError: `None` or a value that is not a reply.
    """
    if isinstance(reply, Message):
        update: dict[str, Any] = {"role": "agent"}
        if reply.latency_ms is None:
            update["latency_ms"] = latency_ms
        return reply.model_copy(update=update)
    if isinstance(reply, str):
        return Message(role="agent", content=reply, latency_ms=latency_ms)
    if isinstance(reply, tuple) and len(cast(tuple[object, ...], reply)) == 2:
        text, calls = cast(tuple[object, object], reply)
        where = f"target {target!r} tool calls"
        return Message(
            role="agent",
            content=_text(text, target),
            latency_ms=latency_ms,
            tool_calls=tool_calls_from(calls, where=where),
        )
    if isinstance(reply, BaseModel):
        reply = reply.model_dump(mode="json")
    if isinstance(reply, dict | list | int | float):  # bool is an int
        raw = cast(JsonValue, reply)
        return Message(role="agent", content=_text(raw, target), raw=raw, latency_ms=latency_ms)
    kind = "None" if reply is None else type(cast(object, reply)).__name__
    raise TargetError(
        f"target {target!r} returned {kind}; "
        "return a str, (text, tool_calls), a sparring Message, or a JSON-like dict/list"
    )


def _text(value: object, target: str) -> str:
    try:
        return content_text(value)
    except (TypeError, ValueError) as e:
        raise TargetError(
            f"target {target!r} returned a reply that is neither text nor "
            f"JSON ({e}); return a str or JSON-like dict/list"
        ) from None


def load_callable(ref: str) -> Callable[..., Any]:
    """Import `module:attribute` (attribute may be dotted); the current directory is importable.

    Raises:
        UserError: the ref is malformed, the module cannot be imported (including one that
            calls `sys.exit()` at import), the attribute is missing or not callable; the
            message says what failed and how to fix it.
    """
    module_name, sep, attr_path = ref.partition(":")
    if not sep or not module_name or not attr_path:
        raise UserError(
            f"callable ref {ref!r} must look like 'module:function', "
            "e.g. 'my_agent:reply' for reply() in my_agent.py"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = _import(module_name, ref)
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise UserError(
                f"callable ref {ref!r}: {getattr(obj, '__name__', module_name)!r} "
                f"has no attribute {part!r}.{hint}"
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise UserError(
            f"callable ref {ref!r} names a {type(obj).__name__}, not a function; "
            "point it at `def agent(history): ...`"
        )
    return cast(Callable[..., Any], obj)


def _import(module_name: str, ref: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise UserError(
                f"callable ref {ref!r}: cannot import module {module_name!r} (looked in "
                f"{os.getcwd()} and sys.path). Run sparring from the directory that holds "
                f"{module_name.split('.')[0]}.py, or install the package / set PYTHONPATH"
            ) from None
        raise UserError(
            f"callable ref {ref!r}: importing {module_name!r} failed because "
            f"{e.name!r} is not installed ({e}); install it"
        ) from None
    except Exception as e:
        raise UserError(
            f"callable ref {ref!r}: importing {module_name!r} raised "
            f"{type(e).__name__}: {e}; fix the error in that module"
        ) from None
    except SystemExit as e:
        raise UserError(
            f"callable ref {ref!r}: importing {module_name!r} called sys.exit({e.code!r}); "
            'put the module\'s script code under `if __name__ == "__main__":` so it only '
            "runs when the file is executed"
        ) from None
