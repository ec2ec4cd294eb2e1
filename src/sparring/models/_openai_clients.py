"""The openai SDK clients behind `OpenAIModel`s, shared, and the requests each call sent.

One SDK client (one connection pool) per event loop, endpoint, key, timeout and retry
limit, whichever models use it: a simulated user and a judge on the same server share their
connections. The client is made at the first call in a loop (HTTP connections belong to the
loop that opened them) and closed when the last model using it is closed.

The client runs on the SDK's aiohttp transport (sparring depends on `openai[aiohttp]`):
measured with `bench/run_bench.py --http`, it costs about half the CPU per call of the SDK's
default httpx transport, which is used where aiohttp is missing, for a `base_url` with
credentials in it (aiohttp refuses those beside an Authorization header), and on event
loops other than asyncio.

Every request the SDK sends (retries included) is counted for the call that sent it
(`sparring.models._requests`).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import openai

from sparring.errors import UserError
from sparring.models._requests import count_request

DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass
class _Entry:
    client: openai.AsyncOpenAI
    users: set[int] = field(default_factory=set[int])


_Key = tuple[object, str, str, float, int]
_POOL: dict[_Key, _Entry] = {}


class SharedClient:
    """The SDK client of one model: taken from (or added to) the shared pool at the first
    call in each event loop.

    Args:
        name: The model's spec, for the missing-key error.
        api_key: Bearer key; `None` reads `OPENAI_API_KEY`.
        base_url: Endpoint root; `None` reads `OPENAI_BASE_URL`, else OpenAI's.
        timeout_s: Limit for one HTTP attempt, in seconds.
        max_retries: Retries the SDK makes after the first attempt.

    Raises:
        UserError: no API key given and `OPENAI_API_KEY` unset.
    """

    def __init__(
        self,
        *,
        name: str,
        api_key: str | None,
        base_url: str | None,
        timeout_s: float,
        max_retries: int,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise UserError(
                f"model {name!r} needs an API key: export OPENAI_API_KEY=... or "
                "set SPARRING_API_KEY (local servers accept any non-empty key)"
            )
        self.api_key = key
        url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        head, sep, query = url.partition("?")
        self.base_url = head.rstrip("/") + sep + query
        """The endpoint root without a trailing `/`, e.g. `http://localhost:8000/v1`."""
        self._timeout_s, self._max_retries = timeout_s, max_retries
        self._keys: list[_Key] = []
        self._last: tuple[object, openai.AsyncOpenAI] | None = None

    async def post(self, body: dict[str, Any], *, retries: int | None = None) -> bytes:
        """POST `body` to `/chat/completions`; the answer's bytes, unchecked. `retries`
        overrides the client's retry limit for this call.

        The SDK's documented generic `post` (for "undocumented endpoints") keeps its
        retries, auth and error mapping but skips the per-call recursive transform of typed
        params, which costs about 2 ms of CPU per call with a judge schema.

        Raises:
            openai.OpenAIError: the SDK's errors, after its retries.
        """
        client = self._client()
        if retries is None:
            return await client.post("/chat/completions", body=body, cast_to=bytes)
        return await client.post(
            "/chat/completions", body=body, cast_to=bytes, options={"max_retries": retries}
        )

    def _client(self) -> openai.AsyncOpenAI:
        try:
            loop: object = asyncio.get_running_loop()
        except RuntimeError:  # another async library (trio): one client, httpx transport
            loop = None
        if self._last is not None and self._last[0] is loop:
            return self._last[1]
        key: _Key = (loop, self.base_url, self.api_key, self._timeout_s, self._max_retries)
        entry = _POOL.get(key)
        if entry is None:
            # aiohttp refuses a URL with credentials next to an Authorization header
            aiohttp = loop is not None and urlsplit(self.base_url).username is None
            entry = _POOL[key] = _Entry(self._new_client(aiohttp=aiohttp))
        entry.users.add(id(self))
        self._keys.append(key)
        self._last = (loop, entry.client)
        return entry.client

    def _new_client(self, *, aiohttp: bool) -> openai.AsyncOpenAI:
        options: dict[str, Any] = {
            "timeout": self._timeout_s,
            "event_hooks": {"request": [count_request]},
        }
        http: Any = None
        if aiohttp and (aio := getattr(openai, "DefaultAioHttpClient", None)) is not None:
            try:
                http = aio(**options)
            except RuntimeError:  # the SDK says aiohttp is not installed
                http = None
        if http is None:
            http = openai.DefaultAsyncHttpxClient(**options)
        return openai.AsyncOpenAI(
            api_key=self.api_key,
            base_url=self.base_url,
            timeout=self._timeout_s,
            max_retries=self._max_retries,
            http_client=http,
        )

    async def aclose(self) -> None:
        """Stop using the shared clients; close those no other model uses."""
        keys, self._keys, self._last = self._keys, [], None
        for key in keys:
            entry = _POOL.get(key)
            if entry is None:
                continue
            entry.users.discard(id(self))
            if not entry.users:
                del _POOL[key]
                await entry.client.close()
