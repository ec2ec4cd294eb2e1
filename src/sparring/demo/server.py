"""The demo agent over HTTP (stdlib only), for the example suite, tests and `sparring demo`.

Endpoints:
    `GET  /health`               -> `{"status": "ok", "agent": "Northwind Outfitters"}`
    `GET  /shop`                 the shop's web page with a chat widget (variants at
                                 `/shop/iframe`, `/shop/shadow`, `/shop/silent`,
                                 `/shop/custom`; see `sparring.demo.web`).
    `POST /chat`                 `{message, history}` -> `{reply, tool_calls, handover}`;
                                 `history` is `[{role, content}]` without the current message.
    `POST /chat/stream`          same request; the reply as Server-Sent Events:
                                 `data: {"delta": "..."}` chunks, then one
                                 `data: {"tool_calls": [...], "handover": bool}`, then
                                 `data: [DONE]`.
    `POST /v1/chat/completions`  OpenAI-compatible (`messages` in; `choices[0].message`
                                 with `content` and `tool_calls` out; `stream: true` works).
    `GET  /v1/models`            lists the one model, `demo`.
    `/agents`, `/sessions/...`   a Parlant session API over the same agent (agent id
                                 `northwind`; see `sparring.demo.parlant`).
    `POST /a2a`                  A2A 1.0 JSON-RPC `SendMessage`, agent card at
                                 `/a2a/.well-known/agent-card.json` (see `sparring.demo.a2a`).

Bad JSON or a wrong shape is answered 400 with what to send instead. Requests are not
logged unless `log_requests=True`.

Run it blocking with `serve(port=8787).serve_forever()` (or `python -m sparring.demo.server`),
or in the background with `with DemoServer(port=0) as server: ... server.url ...`.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeGuard
from urllib.parse import parse_qs, urlsplit

from sparring.demo.a2a import CARD_PATH, A2AApi, agent_card
from sparring.demo.agent import SHOP, DemoReply, respond
from sparring.demo.parlant import ParlantApi
from sparring.demo.web import web_file

MAX_BODY_BYTES = 1_000_000
_CHAT_EXAMPLE = '{"message": "Where is my order?", "history": []}'
_OPENAI_EXAMPLE = '{"model": "demo", "messages": [{"role": "user", "content": "Hi"}]}'
ENDPOINTS = (
    "GET /health, POST /chat, POST /chat/stream, POST /v1/chat/completions, "
    "Parlant's /sessions, POST /a2a, GET /shop (a web page with a chat widget)"
)
"""The endpoints, as named in 404 answers and in the startup banner."""
EXAMPLES_PORT = 8787
"""The port the example suite in `examples/` points its urls at."""


class BadRequest(Exception):
    """The request body cannot be used; the message says what to send instead."""


class _Server(ThreadingHTTPServer):
    """A ThreadingHTTPServer that can also drop its open keep-alive connections on stop,
    so stopping it looks to clients like the process went away."""

    daemon_threads = True
    request_queue_size = 128  # the default 5 stalls concurrent clients for a second

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        for connection in list(self.connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the client


class DemoServer:
    """The demo agent on `http://host:port`, bound on construction.

    Args:
        host: Interface to bind; keep the default (loopback) unless you mean to expose it.
        port: TCP port; 0 picks a free one (read it back from `port` or `url`).
        log_requests: Print one line per request to stderr.
        vulnerable: Serve the deliberately weak mode on `/chat` and `/v1/chat/completions`
            (it leaks a canary under one injection; see `respond`).

    Raises:
        OSError: the port is taken or the host cannot be bound.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_requests: bool = False,
        vulnerable: bool = False,
    ) -> None:
        self._parlant = ParlantApi()
        handler = type(
            "Handler",
            (_Handler,),
            {
                "log_requests": log_requests,
                "parlant": self._parlant,
                "a2a": A2AApi(),
                "vulnerable": vulnerable,
            },
        )
        self._httpd = _Server((host, port), handler)
        self._thread: threading.Thread | None = None
        self.host = host
        self.port: int = self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:8787` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    def serve_forever(self) -> None:
        """Serve in this thread until `stop()` is called from another thread or Ctrl-C."""
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._httpd.server_close()

    def start(self) -> DemoServer:
        """Serve in a background daemon thread; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"sparring-demo-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def wait(self) -> None:
        """Block until the background server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=0.2)

    def stop(self) -> None:
        """Stop serving and release the port (safe to call twice)."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._parlant.close()
        self._httpd.drop_connections()
        self._httpd.server_close()

    def __enter__(self) -> DemoServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def serve(*, host: str = "127.0.0.1", port: int, log_requests: bool = False) -> DemoServer:
    """Bind the demo agent; call `.serve_forever()` (blocking) or `.start()` (background)."""
    return DemoServer(host=host, port=port, log_requests=log_requests)


_EXAMPLES_NOTE = (
    f"the examples in examples/ point at port {EXAMPLES_PORT}: to run them "
    f"against another port, change the {EXAMPLES_PORT} in their urls"
)


def banner(server: DemoServer) -> str:
    """The startup message: where the agent listens and its endpoints, plus, on another
    port than `EXAMPLES_PORT`, that the examples' urls must be changed to match."""
    text = f"Demo agent listening on {server.url} ({ENDPOINTS})"
    return text if server.port == EXAMPLES_PORT else f"{text}\nNote: {_EXAMPLES_NOTE}"


def listen_error(host: str, port: int, error: OSError) -> str:
    """What to say when the agent cannot bind `host:port` (e.g. the port is in use)."""
    return (
        f"error: cannot listen on {host}:{port} ({error.strerror or error}); pick another "
        f"port with --port, or stop what is using it ({_EXAMPLES_NOTE})"
    )


# --- request bodies --------------------------------------------------------------------


def _is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """`isinstance(value, dict)` for parsed JSON, whose keys are strings and values untyped."""
    return isinstance(value, dict)


def _is_array(value: object) -> TypeGuard[list[Any]]:
    """`isinstance(value, list)` for parsed JSON, whose items are untyped."""
    return isinstance(value, list)


def _history(value: Any, *, field: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not _is_array(value):
        raise BadRequest(
            f"`{field}` must be a list of {{role, content}} objects, got "
            f"{type(value).__name__}; send [] when there is no history"
        )
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        if not _is_object(item) or "role" not in item:
            raise BadRequest(f"`{field}[{i}]` must be an object with `role` and `content`")
        role, content = str(item["role"]), _text(item.get("content"))
        out.append({"role": role, "content": content, "files": item.get("files") or []})
    return out


def _text(content: Any) -> str:
    """Message content as text: a string, OpenAI content parts (`[{type: text, text}]`)."""
    if content is None:
        return ""
    if _is_array(content):
        return "".join(str(p.get("text", "")) for p in content if _is_object(p))
    return str(content)


def chat_history(body: Any) -> list[dict[str, Any]]:
    """The conversation for `respond` from a `/chat` body `{message, history, files}`
    (`files`, optional: `[{name, mime_type, data}]` with base64 data, as sparring's
    `{{files}}` gives them; history entries may carry theirs too).

    Raises:
        BadRequest: not an object, `message` missing or not a string, bad `history`.
    """
    if not _is_object(body):
        raise BadRequest(f"the body must be a JSON object like {_CHAT_EXAMPLE}")
    message = body.get("message")
    if not isinstance(message, str):
        raise BadRequest(f"`message` (a string) is required, e.g. {_CHAT_EXAMPLE}")
    history = _history(body.get("history"), field="history")
    return [*history, {"role": "user", "content": message, "files": body.get("files") or []}]


def openai_history(body: Any) -> list[dict[str, Any]]:
    """The conversation for `respond` from an OpenAI chat completions body.

    Raises:
        BadRequest: not an object, `messages` missing or empty, or no user message last.
    """
    if not _is_object(body) or not _is_array(body.get("messages")):
        raise BadRequest(f"the body must be a JSON object with `messages`, e.g. {_OPENAI_EXAMPLE}")
    messages = _history(body["messages"], field="messages")
    spoken = [m for m in messages if m["role"] in ("user", "assistant")]
    if not spoken or spoken[-1]["role"] != "user":
        raise BadRequest(
            "the last user/assistant message in `messages` must be from the "
            "user: the demo agent answers it"
        )
    return spoken


# --- response bodies -------------------------------------------------------------------


def chat_payload(reply: DemoReply) -> dict[str, Any]:
    """`{"reply", "tool_calls": [{"name", "arguments"}], "handover"}`."""
    return {"reply": reply.reply, "tool_calls": reply.tool_calls, "handover": reply.handover}


def _openai_tool_calls(reply: DemoReply) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
        }
        for i, c in enumerate(reply.tool_calls, start=1)
    ]


def openai_payload(
    reply: DemoReply, *, model: str, history: list[dict[str, str]]
) -> dict[str, Any]:
    """A `chat.completion` object; token counts are word counts (the demo has no tokenizer)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.reply}
    if reply.tool_calls:
        message["tool_calls"] = _openai_tool_calls(reply)
    prompt_tokens = sum(len(m["content"].split()) for m in history)
    completion_tokens = len(reply.reply.split())
    return {
        "id": f"chatcmpl-demo-{len(history)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def text_chunks(text: str) -> list[str]:
    """`text` split into word-sized pieces that join back to exactly `text`."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _openai_stream_events(reply: DemoReply, *, model: str) -> list[dict[str, Any]]:
    base = {
        "id": "chatcmpl-demo",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in text_chunks(reply.reply)]
    if reply.tool_calls:
        deltas.append(
            {"tool_calls": [{"index": i, **c} for i, c in enumerate(_openai_tool_calls(reply))]}
        )
    events: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    finish = "tool_calls" if reply.tool_calls else "stop"
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return events


# --- the handler -----------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sparring-demo"
    disable_nagle_algorithm = True  # small replies otherwise wait ~40 ms for delayed ACKs
    log_requests = False
    vulnerable = False
    parlant: ParlantApi
    a2a: A2AApi

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        if self.log_requests:
            super().log_message(format, *args)

    def do_GET(self) -> None:  # noqa: N802 (stdlib name)
        path = self.path.split("?", 1)[0].rstrip("/")
        if self.parlant.owns(path):
            self._parlant("GET")
        elif path == "/health":
            self._json(200, {"status": "ok", "agent": SHOP})
        elif path == "/v1/models":
            self._json(
                200,
                {
                    "object": "list",
                    "data": [{"id": "demo", "object": "model", "owned_by": "sparring"}],
                },
            )
        elif path == CARD_PATH:
            self._json(200, agent_card(f"http://{self.headers.get('Host', '127.0.0.1')}"))
        elif (page := web_file(path)) is not None:
            self._send(200, *page)
        elif path in ("/chat", "/chat/stream", "/v1/chat/completions"):
            self._error(405, f"{path} takes POST with a JSON body, e.g. {_CHAT_EXAMPLE}")
        else:
            self._error(404, f"no endpoint {path or '/'}; try {ENDPOINTS}")

    def do_POST(self) -> None:  # noqa: N802 (stdlib name)
        path = self.path.split("?", 1)[0].rstrip("/")
        routes = {
            "/chat": self._chat,
            "/chat/stream": self._chat_stream,
            "/v1/chat/completions": self._openai,
            "/a2a": self._a2a,
        }
        if self.parlant.owns(path):
            return self._parlant("POST")
        try:
            if path not in routes:
                self._drain()
                self._error(404, f"no endpoint POST {path or '/'}; try {ENDPOINTS}")
                return
            routes[path](self._body())
        except BadRequest as e:
            self._error(400, str(e))
        except Exception as e:  # the demo must answer, never hang the client
            self._error(500, f"the demo agent failed: {type(e).__name__}: {e}")

    def do_PATCH(self) -> None:  # noqa: N802 (stdlib name)
        self._parlant("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802 (stdlib name)
        self._parlant("DELETE")

    def _parlant(self, method: str) -> None:
        url = urlsplit(self.path)
        try:
            raw = self._drain()
            body = json.loads(raw) if raw.strip() else None
        except (BadRequest, json.JSONDecodeError, UnicodeDecodeError) as e:
            self._json(422, {"detail": f"the body cannot be read: {e}"})
            return
        status, payload = self.parlant.handle(
            method, url.path.rstrip("/"), parse_qs(url.query), body
        )
        if payload is not None:
            self._json(status, payload)
            return
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _chat(self, body: Any) -> None:
        self._json(200, chat_payload(respond(chat_history(body), vulnerable=self.vulnerable)))

    def _chat_stream(self, body: Any) -> None:
        reply = respond(chat_history(body), vulnerable=self.vulnerable)
        events: list[dict[str, Any]] = [{"delta": p} for p in text_chunks(reply.reply)]
        events.append({"tool_calls": reply.tool_calls, "handover": reply.handover})
        self._sse(events)

    def _a2a(self, body: Any) -> None:
        self._json(200, self.a2a.handle(body))

    def _openai(self, body: Any) -> None:
        history = openai_history(body)
        reply = respond(history, vulnerable=self.vulnerable)
        model = str(body.get("model") or "demo")
        if body.get("stream"):
            self._sse(_openai_stream_events(reply, model=model))
        else:
            self._json(200, openai_payload(reply, model=model, history=history))

    def _drain(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(
                f"the body is {length} bytes; the demo agent takes at most {MAX_BODY_BYTES}"
            )
        return self.rfile.read(length) if length > 0 else b""

    def _body(self) -> Any:
        raw = self._drain()
        if not raw.strip():
            raise BadRequest(
                f"the body is empty; send JSON such as {_CHAT_EXAMPLE} with "
                "Content-Type: application/json"
            )
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadRequest(
                f"the body is not valid JSON ({e}); send JSON such as {_CHAT_EXAMPLE}"
            ) from None

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self._send(status, "application/json; charset=utf-8", data)

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        kind = {400: "invalid_request_error", 500: "server_error"}.get(status, "not_found_error")
        self._json(status, {"error": {"message": message, "type": kind, "code": status}})

    def _sse(self, events: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in events:
            line = f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
            self.wfile.write(line.encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> None:
    """`python -m sparring.demo.server [--host H] [--port 8787] [--log]`."""
    import argparse

    parser = argparse.ArgumentParser(description=f"Run the {SHOP} demo support agent.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=EXAMPLES_PORT)
    parser.add_argument("--log", action="store_true", help="log one line per request")
    args = parser.parse_args(argv)
    try:
        server = serve(host=args.host, port=args.port, log_requests=args.log)
    except OSError as e:
        sys.exit(listen_error(args.host, args.port, e))
    print(f"{banner(server)}\nPress Ctrl-C to stop.", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
