"""How many HTTP requests a model call sent: retries and refused requests count too.

A provider passes `count_request` as a request hook of its SDK's HTTP client and wraps each
call in `with requests_sent() as sent:`; `sent.count` is then what that call sent, whatever
other calls run concurrently (each task counts in its own context).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Sent:
    """Requests sent so far by the call in progress (see `requests_sent`)."""

    count: int = 0


_SENT: ContextVar[Sent | None] = ContextVar("sparring_requests_sent", default=None)


@contextmanager
def requests_sent() -> Generator[Sent]:
    """Count the requests that clients with the `count_request` hook send inside the block,
    from this task only."""
    sent = Sent()
    token = _SENT.set(sent)
    try:
        yield sent
    finally:
        _SENT.reset(token)


async def count_request(request: object) -> None:
    """The HTTP clients' request hook: runs in the task of the call, once per attempt."""
    sent = _SENT.get()
    if sent is not None:
        sent.count += 1
