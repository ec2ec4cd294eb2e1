"""`ScriptedOpenAIServer`: a real OpenAI-compatible HTTP server with scripted replies.

Use it in any test that needs a chat completions endpoint (sparring's own models, the
`openai_chat` target, CLI end-to-end runs). It listens on 127.0.0.1 on a free port, serves
from a background thread, and answers each `POST .../chat/completions` with the next
scripted `Reply`, so tests go through the real openai SDK and real HTTP::

    from tests.support.openai_server import Reply, ScriptedOpenAIServer

    with ScriptedOpenAIServer([
        Reply("hello"),                                          # a normal answer
        Reply(status=429, headers={"retry-after-ms": "1"}),      # rate limited, then...
        Reply('{"done": true}', usage={"prompt_tokens": 7, "completion_tokens": 3}),
        Reply(tool_calls=[{"name": "refund", "arguments": {"order": 42}}]),
        lambda request: Reply(request["messages"][-1]["content"].upper()),  # a function
    ]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
        ...
        assert server.requests[0]["model"] == "gpt-test"

Replies are used in order, one per request (retries by the SDK consume replies too). When
they run out the server answers HTTP 500 with a message saying so and the header
`x-should-retry: false`, so the SDK fails at once instead of retrying.

`refuse_response_format` makes the server answer a request whose `response_format` it does not
support before any scripted reply is used (such requests are recorded, but consume no reply),
exactly as these real servers do:

- `"llama-cpp-python"`: `python -m llama_cpp.server` (0.3.x) knows only `text` and
  `json_object`; any other type (sparring's `json_schema`) fails its request validation,
  which its error handler turns into HTTP 500 with `LLAMA_CPP_PYTHON_ERROR`'s body.
- `"llama-server"`: a llama.cpp `llama-server` build without `json_schema` answers HTTP 400
  with `LLAMA_SERVER_ERROR`'s body (current builds accept `json_schema`).

Reply fields:
    content: The assistant message text (`None` for a tool-call-only answer). On an error
        status it is the error message.
    status: HTTP status; >= 400 sends an OpenAI-style `{"error": {"message": ...}}` body.
    headers: Extra response headers, e.g. `{"retry-after-ms": "1"}`. The SDK honours
        `retry-after-ms` and `retry-after` (seconds, > 0); `Retry-After: 0` falls back to the
        SDK's own 0.5 s+ backoff, so use `retry-after-ms` to keep tests fast.
    delay_s: Seconds to wait before answering (for timeout tests).
    tool_calls: Tool calls of the assistant message. Each is either a full OpenAI dict
        (`{"id", "type": "function", "function": {"name", "arguments"}}`) or the short form
        `{"name": ..., "arguments": dict | str, "id": optional}`; a string `arguments` is
        sent verbatim, so invalid JSON can be tested.
    body: Replaces the whole response body (a dict is sent as JSON, a str verbatim), for
        malformed answers.
    usage: The `usage` object; `None` sends a small estimate (about 4 characters per
        token), `{}` leaves `usage` out.
    reset: Read the request, then close the connection with a TCP reset instead of
        answering (the SDK sees a connection error and retries).

Recorded per request, in order: `requests` (parsed JSON bodies), `paths` and `headers`
(lower-cased names).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast

__all__ = [
    "LLAMA_CPP_PYTHON_ERROR",
    "LLAMA_SERVER_ERROR",
    "Reply",
    "ScriptedOpenAIServer",
]

_VALIDATION_ERRORS = [
    {
        "type": "literal_error",
        "loc": ("body", "response_format", "type"),
        "msg": "Input should be 'text' or 'json_object'",
        "input": "json_schema",
        "ctx": {"expected": "'text' or 'json_object'"},
    }
]
LLAMA_CPP_PYTHON_ERROR = json.dumps(
    {  # its error handler sends str(RequestValidationError), the repr of pydantic's errors
        "error": {
            "message": str(_VALIDATION_ERRORS),
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    },
    separators=(",", ":"),
)
"""The exact HTTP 500 body of llama-cpp-python 0.3.x's server (with FastAPI 0.115) for
`response_format: {"type": "json_schema", ...}`."""

LLAMA_SERVER_ERROR = (
    '{"error":{"code":400,"message":"response_format type must be one of \\"text\\" or '
    '\\"json_object\\", but got: json_schema","type":"invalid_request_error"}}'
)
"""The HTTP 400 body of a llama.cpp `llama-server` that does not support `json_schema`."""

_REFUSALS: dict[str, tuple[int, str, frozenset[str]]] = {
    "llama-cpp-python": (500, LLAMA_CPP_PYTHON_ERROR, frozenset({"text", "json_object"})),
    "llama-server": (400, LLAMA_SERVER_ERROR, frozenset({"text", "json_object"})),
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer of `ScriptedOpenAIServer` (fields: see the module docstring)."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] | None = None
    delay_s: float = 0
    tool_calls: list[dict[str, Any]] | None = None
    body: dict[str, Any] | str | None = None
    usage: dict[str, Any] | None = None
    reset: bool = False


ReplySource = Reply | Callable[[dict[str, Any]], Reply]


@dataclass
class _Script:
    replies: list[ReplySource]
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    paths: list[str] = field(default_factory=list[str])
    headers: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    refuse: tuple[int, str, frozenset[str]] | None = None
    refused: int = 0

    def next_reply(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append(body)
            self.paths.append(path)
            self.headers.append(headers)
            if (refusal := self._refusal(body)) is not None:
                self.refused += 1
                return refusal
            index = len(self.requests) - 1 - self.refused
        if index >= len(self.replies):
            return Reply(
                f"ScriptedOpenAIServer: no reply left for request {index + 1}; it was given "
                f"{len(self.replies)}",
                status=500,
                headers={"x-should-retry": "false"},
            )
        source = self.replies[index]
        return source if isinstance(source, Reply) else source(body)

    def _refusal(self, body: dict[str, Any]) -> Reply | None:
        response_format: Any = body.get("response_format")
        if self.refuse is None or not isinstance(response_format, dict):
            return None
        status, error, accepted = self.refuse
        if cast(dict[str, Any], response_format).get("type") in accepted:
            return None
        return Reply(status=status, body=error)


def _tool_call(call: dict[str, Any], index: int) -> dict[str, Any]:
    if "function" in call:
        return call
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id", f"call_{index}"),
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }


def _estimate_usage(request: dict[str, Any], content: str | None) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "")) for m in request.get("messages", []))
    prompt_tokens, completion_tokens = max(1, prompt // 4), max(1, len(content or "") // 4)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _body(reply: Reply, request: dict[str, Any], number: int) -> dict[str, Any] | str:
    if reply.body is not None:
        return reply.body
    if reply.status >= 400:
        return {
            "error": {
                "message": reply.content or f"scripted HTTP {reply.status}",
                "type": "scripted_error",
                "param": None,
                "code": None,
            }
        }
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call(c, i) for i, c in enumerate(reply.tool_calls)]
    out: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
    }
    usage = _estimate_usage(request, reply.content) if reply.usage is None else reply.usage
    if usage:
        out["usage"] = usage
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        request: dict[str, Any]
        try:
            request = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            request = {"_unparsed": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        script = cast(_Server, self.server).script
        reply = script.next_reply(self.path, headers, request)
        if reply.delay_s and script.closing.wait(reply.delay_s):
            return
        if reply.reset:  # SO_LINGER 0: close() sends RST, not FIN
            linger = struct.pack("ii", 1, 0)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            self.close_connection = True
            self.connection.close()
            return
        body = _body(reply, request, len(script.requests))
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
    request_queue_size = 128
    script: _Script

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout tests) is expected; stay quiet."""


class ScriptedOpenAIServer:
    """An OpenAI-compatible chat completions server on 127.0.0.1 (see the module docstring).

    Args:
        replies: One `Reply` (or function `request_json -> Reply`) per request, in order.
        refuse_response_format: Answer a `response_format` the named server does not know
            as it does (`"llama-cpp-python"` or `"llama-server"`; see the module docstring).

    Use as a context manager, or call `start()` / `close()`. `base_url` ends in `/v1`.
    """

    def __init__(
        self,
        replies: Sequence[ReplySource] = (),
        *,
        refuse_response_format: Literal["llama-cpp-python", "llama-server"] | None = None,
    ) -> None:
        self._script = _Script(list(replies))
        if refuse_response_format is not None:
            self._script.refuse = _REFUSALS[refuse_response_format]
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.script = self._script
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies received, in order."""
        return self._script.requests

    @property
    def paths(self) -> list[str]:
        """Request paths received, in order (e.g. `/v1/chat/completions`)."""
        return self._script.paths

    @property
    def headers(self) -> list[dict[str, str]]:
        """Request headers received (lower-cased names), in order."""
        return self._script.headers

    def add(self, *replies: ReplySource) -> None:
        """Append more scripted replies."""
        self._script.replies.extend(replies)

    def start(self) -> ScriptedOpenAIServer:
        """Start serving in a daemon thread; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port; delayed replies are abandoned."""
        self._script.closing.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
