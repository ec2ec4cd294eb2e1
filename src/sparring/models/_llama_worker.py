"""`LlamaWorker`: one daemon thread that runs a loaded llama model's completions in turn.

llama is not safe for concurrent use and a completion cannot be interrupted, so calls queue
for the model's one thread. What a caller can do is stop waiting: `LlamaWorker.run` gives up
its place in the queue the moment it is cancelled, and when its completion is already
running it returns at once and the answer is dropped when it comes. The thread is a daemon,
so a completion still running never keeps the process alive after a run has ended.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, Literal

import anyio

_State = Literal["queued", "running", "finished", "dropped"]


class _Call:
    """One completion request and how it ended; shared by the caller and the thread."""

    def __init__(self, request: dict[str, Any], notify: Callable[[], object]) -> None:
        self.request = request
        self.answer: Any = None
        self.error: Exception | None = None
        self.state: _State = "queued"
        self._notify = notify
        self._lock = threading.Lock()

    def start(self) -> bool:
        """The thread takes the call: False when its caller has left the queue."""
        with self._lock:
            if self.state == "dropped":
                return False
            self.state = "running"
            return True

    def finish(self, answer: Any, error: Exception | None) -> None:
        """The thread is done: hand the outcome over, unless the caller left."""
        with self._lock:
            if self.state == "dropped":
                return
            self.answer, self.error, self.state = answer, error, "finished"
        try:
            self._notify()
        except RuntimeError:  # the caller's event loop is closed: nobody is waiting
            pass

    def drop(self) -> None:
        """The caller stops waiting (it was cancelled): skip or discard the completion."""
        with self._lock:
            if self.state != "finished":
                self.state = "dropped"


class LlamaWorker:
    """Runs `complete(request)` for one caller at a time, in the order asked, on a daemon
    thread started here.

    Args:
        complete: The blocking call, e.g. `llama.create_chat_completion(**request)`; what it
            returns or raises (an `Exception`) is what `run` returns or raises.
        name: The thread's name.
    """

    def __init__(self, complete: Callable[[dict[str, Any]], Any], *, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=_serve, args=(complete, self._calls), name=name, daemon=True
        )
        self._thread.start()

    async def run(self, request: dict[str, Any]) -> Any:
        """Queue `request` and wait for its completion (on an asyncio event loop).

        Cancelling the caller leaves the queue at once; a completion already running is
        not waited for, and its answer is dropped.

        Raises:
            Exception: whatever `complete` raised.
        """
        loop = asyncio.get_running_loop()
        done = anyio.Event()
        call = _Call(request, lambda: loop.call_soon_threadsafe(done.set))
        self._calls.put(call)
        try:
            await done.wait()
        finally:
            call.drop()  # no-op once finished; else the thread skips or discards it
        if call.error is not None:
            raise call.error
        return call.answer


def _serve(complete: Callable[[dict[str, Any]], Any], calls: queue.SimpleQueue[_Call]) -> None:
    """The thread: run each call that is still wanted, one at a time, forever."""
    while True:
        call = calls.get()
        if not call.start():
            continue
        try:
            answer, error = complete(call.request), None
        except Exception as e:  # handed to the caller
            answer, error = None, e
        call.finish(answer, error)
