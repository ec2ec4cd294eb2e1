"""`ScriptedAnthropicServer`: a real Anthropic Messages API server with scripted replies.

Listens on 127.0.0.1 on a free port and answers each `POST /v1/messages` with the next
scripted `Reply`, in the API's own shapes, so tests go through the real anthropic SDK::

    from tests.support.anthropic_server import Reply, ScriptedAnthropicServer

    with ScriptedAnthropicServer([
        Reply("Hello", usage={"input_tokens": 12, "output_tokens": 3}),
        Reply(tool_use={"name": "answer", "input": {"ok": True}}),   # a tool_use block
        Reply("invalid x-api-key", status=401),                      # an error body
        lambda request: Reply(request["messages"][-1]["content"].upper()),
    ]) as server:
        client = AsyncAnthropic(base_url=server.base_url, api_key="test")

Replies are used in order, one per request (the SDK's retries consume replies too). When
they run out the server answers HTTP 500 with `x-should-retry: false`.

Reply fields: `text` (the text block; on an error status the error message), `status`
(>= 400 sends `{"type": "error", "error": {"type": ..., "message": ...}}`), `headers`,
`tool_use` (`{"name", "input"}`: a tool_use block after the text), `stop_reason` (default
`end_turn`, or `tool_use` with a tool_use block), `usage` (`None`: an estimate of about 4
characters per token; `{}`: left out), `body` (replaces the whole body: a dict as JSON, a
str verbatim), `delay_s` (wait before answering, for timeouts). Recorded per request:
`requests` (JSON bodies), `paths`, `headers` (lower-cased names).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

__all__ = ["Reply", "ScriptedAnthropicServer"]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer of `ScriptedAnthropicServer` (fields: see the module docstring)."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] | None = None
    tool_use: dict[str, Any] | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None
    body: dict[str, Any] | str | None = None
    delay_s: float = 0


ReplySource = Reply | Callable[[dict[str, Any]], Reply]


def _estimate(request: dict[str, Any], text: str) -> dict[str, int]:
    prompt = len(str(request.get("system", ""))) + sum(
        len(str(m.get("content", ""))) for m in request.get("messages", [])
    )
    return {"input_tokens": max(1, prompt // 4), "output_tokens": max(1, len(text) // 4)}


def _body(reply: Reply, request: dict[str, Any], number: int) -> dict[str, Any] | str:
    if reply.body is not None:
        return reply.body
    if reply.status >= 400:
        return {
            "type": "error",
            "error": {
                "type": ERROR_TYPES.get(reply.status, "api_error"),
                "message": reply.text or f"scripted HTTP {reply.status}",
            },
        }
    content: list[dict[str, Any]] = []
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text})
    if reply.tool_use is not None:
        content.append({"type": "tool_use", "id": f"toolu_{number}", **reply.tool_use})
    out: dict[str, Any] = {
        "id": f"msg_scripted_{number}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "scripted"),
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_use else "end_turn"),
        "stop_sequence": None,
    }
    shown = json.dumps(reply.tool_use) if reply.tool_use else reply.text or ""
    usage = _estimate(request, shown) if reply.usage is None else reply.usage
    if usage:
        out["usage"] = usage
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        request: dict[str, Any] = json.loads(raw) if raw else {}
        server = cast(_Server, self.server)
        reply, number = server.owner.next_reply(self.path, dict(self.headers.items()), request)
        if reply.delay_s and server.owner.closing.wait(reply.delay_s):
            return
        body = _body(reply, request, number)
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (reply.headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Keep test output quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedAnthropicServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout tests) is expected; stay quiet."""


class ScriptedAnthropicServer:
    """An Anthropic Messages API server on 127.0.0.1 (see the module docstring).

    Use as a context manager. `base_url` is the API root (the SDK adds `/v1/messages`).
    """

    def __init__(self, replies: Sequence[ReplySource] = ()) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, *replies: ReplySource) -> None:
        """Append more scripted replies."""
        self.replies.extend(replies)

    def next_reply(
        self, path: str, headers: dict[str, str], request: dict[str, Any]
    ) -> tuple[Reply, int]:
        """Record a request; return its reply and its 1-based number."""
        with self._lock:
            self.requests.append(request)
            self.paths.append(path)
            self.headers.append({k.lower(): v for k, v in headers.items()})
            index = len(self.requests) - 1
        if index >= len(self.replies):
            return Reply(
                f"ScriptedAnthropicServer: no reply left for request {index + 1}",
                status=500,
                headers={"x-should-retry": "false"},
            ), index + 1
        source = self.replies[index]
        return (source if isinstance(source, Reply) else source(request)), index + 1

    def __enter__(self) -> ScriptedAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()
