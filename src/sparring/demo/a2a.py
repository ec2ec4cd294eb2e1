"""The demo agent over A2A (stdlib only, so the demo runs without the `a2a` extra).

A minimal A2A 1.0 JSON-RPC agent; `sparring.demo.server` routes these to one `A2AApi`:

    `GET  /a2a/.well-known/agent-card.json`  its agent card: one JSONRPC interface at `/a2a`,
                                            protocol 1.0, no streaming.
    `POST /a2a`  JSON-RPC 2.0 `SendMessage`: the reply of `respond` as a `completed` task
                 with the reply text as an artifact named `reply` and the tools it called in
                 the task's `metadata.toolCalls`.

One A2A context is one conversation: the agent keeps each context's history (the most
recent `MAX_CONTEXTS` contexts), so `respond` sees the whole conversation. A message without a
`contextId` starts a new one. Other methods, and requests that are not JSON-RPC, get a
JSON-RPC error saying what to send.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from sparring.demo.agent import SHOP, DemoReply, respond

PATH = "/a2a"
CARD_PATH = f"{PATH}/.well-known/agent-card.json"
MAX_CONTEXTS = 1000
_EXAMPLE = (
    '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
    '{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}}}'
)


def agent_card(base_url: str) -> dict[str, Any]:
    """The demo's A2A 1.0 agent card; `base_url` is where clients reach the server, e.g.
    `http://127.0.0.1:8787`."""
    return {
        "name": f"{SHOP} support (demo)",
        "description": "The sparring demo support agent: order status, refunds, returns.",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": base_url + PATH, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {
                "id": "support",
                "name": "Customer support",
                "description": "Order status, refunds, returns and shipping questions.",
                "tags": ["support"],
            }
        ],
    }


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        self.code, self.message = code, message
        super().__init__(message)


class A2AApi:
    """The JSON-RPC side of one demo server: conversation histories by context id (the
    least recently used dropped after `max_contexts`). Safe to use from several threads.
    """

    def __init__(self, *, max_contexts: int = MAX_CONTEXTS) -> None:
        self._limit = max_contexts
        self._histories: OrderedDict[str, list[dict[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def handle(self, body: Any) -> dict[str, Any]:
        """The JSON-RPC 2.0 response object to a parsed request body (never raises)."""
        request_id = _object(body).get("id")
        try:
            result = _send_message(body, self._reply)
        except _RpcError as e:
            return {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": e.code, "message": e.message},
            }
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _reply(self, context_id: str, text: str) -> DemoReply:
        """Add `text` to the context's history and answer it."""
        with self._lock:
            history = self._histories.pop(context_id, [])
            history.append({"role": "user", "content": text})
            answer = respond(history)
            history.append({"role": "assistant", "content": answer.reply})
            self._histories[context_id] = history
            while len(self._histories) > self._limit:
                self._histories.popitem(last=False)
        return answer


def _object(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else `{}`."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _send_message(body: Any, reply: Callable[[str, str], DemoReply]) -> dict[str, Any]:
    request = _object(body)
    if request.get("jsonrpc") != "2.0":
        raise _RpcError(-32600, f"send a JSON-RPC 2.0 request, e.g. {_EXAMPLE}")
    if request.get("method") != "SendMessage":
        raise _RpcError(
            -32601,
            f"method {request.get('method')!r} is not served here; the "
            "demo agent speaks A2A 1.0 `SendMessage` only (no streaming)",
        )
    message = _object(_object(request.get("params")).get("message"))
    parts: object = message.get("parts")
    if not isinstance(parts, list):
        raise _RpcError(-32602, f"`params.message` with `parts` is required, e.g. {_EXAMPLE}")
    text = "".join(str(_object(p).get("text", "")) for p in cast(list[object], parts))
    if not text.strip():
        raise _RpcError(
            -32602, 'the message has no text part; send parts like [{"text": "Where is my order?"}]'
        )
    context_id = str(message.get("contextId") or uuid.uuid4())
    answer = reply(context_id, text)
    task_id = str(uuid.uuid4())
    user = {**message, "contextId": context_id, "taskId": task_id}
    return {
        "task": {
            "id": task_id,
            "contextId": context_id,
            "status": {
                "state": "TASK_STATE_COMPLETED",
                "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            },
            "artifacts": [
                {
                    "artifactId": str(uuid.uuid4()),
                    "name": "reply",
                    "parts": [{"text": answer.reply}],
                }
            ],
            "history": [user],
            "metadata": {"toolCalls": answer.tool_calls},
        }
    }
