"""`EchoServer`: a real HTTP agent on 127.0.0.1 whose every answer a test computes from the
request it got (query, headers, JSON body), so a test can make an agent echo what sparring
sent it: secrets filled into the url, headers and body, in any encoding::

    def answer(request: EchoRequest) -> Answer:
        return Answer({"reply": request.query["key"]})            # JSON, HTTP 200

    with EchoServer(answer) as server:
        url = server.url("/chat?key={{secrets.KEY}}")

`Answer(body, status=500)` answers an error; `Answer(events=[...])` streams each string as
one server-sent event (`data:` lines, then `data: [DONE]`). Serves from a background thread,
one thread per request; requests are not logged.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

__all__ = ["Answer", "EchoRequest", "EchoServer"]


@dataclass(frozen=True)
class EchoRequest:
    """What the agent got: `query` values and `headers` (lower-case names) decoded, `body`
    parsed as JSON (`None` when empty or not JSON)."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Answer:
    """An answer: `body` (a str or bytes sent as is, anything else as JSON) with `status`,
    or `events` sent as a `text/event-stream`."""

    body: Any = None
    status: int = 200
    events: list[str] = field(default_factory=list[str])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        request = EchoRequest(
            parts.path,
            dict(parse_qsl(parts.query)),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        answer = cast(_Server, self.server).answer(request)
        if answer.events:
            self._send(200, "text/event-stream", _sse(answer.events))
        elif isinstance(answer.body, str | bytes):
            text = answer.body.encode() if isinstance(answer.body, str) else answer.body
            self._send(answer.status, "text/plain; charset=utf-8", text)
        else:
            data = json.dumps(answer.body, ensure_ascii=False).encode()
            self._send(answer.status, "application/json", data)

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        pass


def _sse(events: list[str]) -> bytes:
    blocks = ["".join(f"data: {line}\n" for line in e.split("\n")) for e in [*events, "[DONE]"]]
    return "\n".join(blocks).encode() + b"\n"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: Callable[[EchoRequest], Answer]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer


class EchoServer:
    """Answers every POST with `answer(request)`; use it as a context manager."""

    def __init__(self, answer: Callable[[EchoRequest], Answer]) -> None:
        self._server = _Server(answer)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        """`http://127.0.0.1:PORT` + `path`."""
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
