"""A mock OpenAI-compatible model server for benchmarks: stdlib asyncio, fixed latency.

    python bench/mock_model.py --latency-ms 200   # prints its base URL, serves until stdin ends

Every `POST .../chat/completions` is answered after `--latency-ms` with JSON matching the
request's `response_format` schema (strings hold a quote of `AGENT_REPLY`, so a judge's
evidence is found in the transcript; a simulated user's `message` is numbered, so no two
are alike; enums take their first value: `met`, `done: false`). `GET /stats` returns what was
received since the last `GET /stats`: requests, prompt characters by purpose (`user` for the
simulated user's `user_turn` schema, `judge` for every other schema), the monotonic time of
the first request, and the most requests in flight at once.

Kept to the standard library on purpose: it is the model's side, not sparring's, and it
must stay cheap on a 2-core machine where it shares the CPU with the process measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

AGENT_REPLY = "I am sorry about the delay. Your refund of $42 is on its way today."
"""What the bench's agent answers every turn (bench/peer_agent.py)."""


class Stats:
    """Counters of what the server received."""

    def __init__(self) -> None:
        self.requests = 0
        self.chars: dict[str, int] = {"user": 0, "judge": 0}
        self.calls: dict[str, int] = {"user": 0, "judge": 0}
        self.first_request: float | None = None
        self.in_flight = 0
        self.peak_in_flight = 0

    def as_json(self) -> bytes:
        return json.dumps(
            {
                "requests": self.requests,
                "prompt_chars": self.chars,
                "calls": self.calls,
                "first_request_monotonic": self.first_request,
                "peak_in_flight": self.peak_in_flight,
            }
        ).encode()


def _fill(schema: dict[str, Any], text: str) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    kind: Any = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {k: _fill(v, text) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_fill(schema.get("items", {}), text)]
    return {"string": text, "boolean": False, "integer": 1, "number": 1, "null": None}.get(
        kind, text
    )


def _answer(request: dict[str, Any], stats: Stats) -> dict[str, Any]:
    fmt = request.get("response_format") or {}
    spec = fmt.get("json_schema") or {}
    purpose = "user" if spec.get("name") == "user_turn" else "judge"
    chars = sum(len(str(m.get("content") or "")) for m in request.get("messages", []))
    stats.chars[purpose] += chars
    stats.calls[purpose] += 1
    text = f"Where is my refund? (message {stats.requests})" if purpose == "user" else AGENT_REPLY
    content = json.dumps(_fill(spec.get("schema") or {"type": "string"}, text))
    return {
        "id": f"mock-{stats.requests}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "mock"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": chars // 4, "completion_tokens": len(content) // 4},
    }


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return method, path, body


def _response(status: int, data: bytes) -> bytes:
    return (
        f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n\r\n"
    ).encode() + data


async def _serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: Stats, latency: float
) -> None:
    try:
        while True:
            try:
                method, path, body = await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if method == "GET" and path.endswith("/stats"):
                writer.write(_response(200, stats.as_json()))
                stats.__init__()  # counts start again from zero
                continue
            stats.requests += 1
            if stats.first_request is None:
                stats.first_request = time.monotonic()
            stats.in_flight += 1
            stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
            answer = _answer(json.loads(body), stats)
            await asyncio.sleep(latency)
            stats.in_flight -= 1
            writer.write(_response(200, json.dumps(answer).encode()))
    finally:
        writer.close()


async def _main(latency: float) -> None:
    stats = Stats()
    server = await asyncio.start_server(
        lambda r, w: _serve_connection(r, w, stats, latency), "127.0.0.1", 0, backlog=4096
    )
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # serve until the parent closes stdin
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200)
    args = parser.parse_args()
    asyncio.run(_main(args.latency_ms / 1000))


if __name__ == "__main__":
    main()
