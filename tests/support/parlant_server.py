"""`ScriptedParlantServer`: Parlant's session API on 127.0.0.1 with a scripted agent.

Sessions, events, long polling (`wait_for_data`, HTTP 504), manual mode and the event stream
of a Parlant 3.3 engine (acknowledged, the early `ready` of the preamble phase, processing
stages, tool events, typing, messages, the last `ready` with `stage: "completed"`, and
cancellation by a customer message posted while the agent works) come from
`sparring.demo.parlant.ParlantApi`, the in-memory API the demo agent also uses; this adds a
scripted agent, request recording, required headers and injected failures::

    from tests.support.parlant_server import Say, ScriptedParlantServer, tool

    with ScriptedParlantServer([
        Say("It shipped.", preamble="Let me check.",
            tools=[tool("lookup_order", {"id": 1}, "ok")]),
        Say(error="model overloaded"),       # a completed `ready`, then an `error` status
        Say("Too late.", delay_s=5),         # a slow reply (released when the server stops)
    ], require_headers={"authorization": "Bearer k"},
       failures={("DELETE", "/sessions/*"): 500}) as server:
        ... server.url ... server.requests ... server.histories ...

The agent answers each customer message (in `auto` mode) with the next `Say`: its preamble
(when Parlant's policy wants one: see `ParlantApi`) while it works, then after `delay_s` its
tool calls and messages; when they run out it fails with an `error` status saying so.
`histories` holds the conversation the agent was given each time, as `[{"role",
"content"}]`.
"""

from __future__ import annotations

import fnmatch
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from sparring.demo.parlant import AgentTurn, History, ParlantAgent, ParlantApi

__all__ = ["Request", "Say", "ScriptedParlantServer", "tool"]


@dataclass(frozen=True, init=False)
class Say:
    """One scripted answer: messages (one event each), a preamble, tool calls, a delay
    (the agent's work, after the preamble), or an error."""

    messages: tuple[str, ...]
    preamble: str | None = None
    tools: Sequence[dict[str, Any]] = ()
    delay_s: float = 0
    error: str | None = None

    def __init__(
        self,
        *messages: str,
        preamble: str | None = None,
        tools: Sequence[dict[str, Any]] = (),
        delay_s: float = 0,
        error: str | None = None,
    ) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "preamble", preamble)
        object.__setattr__(self, "tools", tools)
        object.__setattr__(self, "delay_s", delay_s)
        object.__setattr__(self, "error", error)


def tool(
    name: str, arguments: dict[str, Any], result: Any, *, service: str = "shop"
) -> dict[str, Any]:
    """A Parlant tool-call object `{tool_id: "service:name", arguments, result: {data}}`."""
    return {
        "tool_id": f"{service}:{name}",
        "arguments": arguments,
        "result": {"data": result, "metadata": {}, "control": {}},
    }


@dataclass(frozen=True)
class Request:
    """One request the server received (header names lower-cased; `body` parsed JSON)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class _State:
    agent_id: str
    replies: list[Say]
    require_headers: dict[str, str]
    failures: dict[tuple[str, str], int]
    canned: bool
    version: tuple[int, int]
    indicator_delay_s: float
    requests: list[Request] = field(default_factory=list[Request])
    histories: list[History] = field(default_factory=list[History])
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    api: ParlantApi = field(init=False)

    def __post_init__(self) -> None:
        agent = ParlantAgent(self.agent, self.preamble, canned=self.canned)
        self.api = ParlantApi(
            {self.agent_id: agent},
            version=self.version,
            indicator_delay_s=self.indicator_delay_s,
        )

    def preamble(self, history: History) -> str | None:
        """The preamble of the `Say` the agent is about to give."""
        with self.lock:
            index = len(self.histories)
        return self.replies[index].preamble if index < len(self.replies) else None

    def agent(self, history: History) -> AgentTurn:
        with self.lock:
            self.histories.append(history)
            index = len(self.histories) - 1
        if index >= len(self.replies):
            raise RuntimeError(f"no scripted reply left for customer message {index + 1}")
        say = self.replies[index]
        if say.delay_s and self.closing.wait(say.delay_s):
            raise RuntimeError("server stopped")
        if say.error is not None:
            raise RuntimeError(say.error)
        return AgentTurn(say.messages, tuple(say.tools))

    def answer(self, request: Request) -> tuple[int, Any]:
        with self.lock:
            self.requests.append(request)
        for name, value in self.require_headers.items():
            if request.headers.get(name) != value:
                got = request.headers.get(name, "(none)")
                return 401, {"detail": f"invalid credentials: {name} was {got}"}
        for (method, pattern), status in self.failures.items():
            if method == request.method and fnmatch.fnmatch(request.path, pattern):
                return status, {"detail": f"scripted failure of {method} {request.path}"}
        return self.api.handle(request.method, request.path, request.query, request.body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        request = Request(
            self.command,
            url.path.rstrip("/"),
            parse_qs(url.query),
            {k.lower(): v for k, v in self.headers.items()},
            json.loads(raw) if raw.strip() else None,
        )
        status, payload = cast(_Server, self.server).state.answer(request)
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _serve  # noqa: N815 (stdlib names)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        """Keep test output quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout tests) is expected; stay quiet."""


class ScriptedParlantServer:
    """Parlant's session API with a scripted agent (see the module docstring).

    Args:
        replies: One `Say` per customer message the agent answers, in order.
        agent_id: The one agent id sessions may be created for.
        canned: A canned-response agent (preamble messages, a `ready` after each message);
            False: Parlant's default `FLUID` mode (no preamble message, no per-message
            `ready`; the early `ready` still comes).
        version: The Parlant version to answer as (`ParlantApi`): `(3, 1)` is a server whose
            readies all look alike (no `stage: "completed"`).
        indicator_delay_s: The pause after the preamble phase's `ready` (Parlant: 1-2 s).
        require_headers: Headers every request must carry (else HTTP 401 whose body quotes
            the header received, to test that secrets are scrubbed).
        failures: `(method, path glob) -> HTTP status` answered instead of the API.
    """

    def __init__(
        self,
        replies: Sequence[Say] = (),
        *,
        agent_id: str = "agent-1",
        canned: bool = True,
        version: tuple[int, int] = (3, 3),
        indicator_delay_s: float = 0,
        require_headers: Mapping[str, str] | None = None,
        failures: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self._state = _State(
            agent_id,
            list(replies),
            dict(require_headers or {}),
            dict(failures or {}),
            canned,
            version,
            indicator_delay_s,
        )
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self._state
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (the base address a `parlant` target takes)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[Request]:
        """Requests received, in order."""
        return self._state.requests

    @property
    def histories(self) -> list[History]:
        """The conversation the agent was given for each customer message it answered."""
        return self._state.histories

    def calls(self, method: str, pattern: str = "*") -> list[Request]:
        """The requests with this method whose path matches the glob `pattern`."""
        return [r for r in self.requests if r.method == method and fnmatch.fnmatch(r.path, pattern)]

    def start(self) -> ScriptedParlantServer:
        """Serve in a background thread; returns self."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Release delayed replies and long polls, stop serving, free the port."""
        self._state.closing.set()
        self._state.api.close()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> ScriptedParlantServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
