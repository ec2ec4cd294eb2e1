"""The demo agent behind a small in-memory Parlant session API (stdlib only).

`ParlantApi` speaks the part of Parlant's REST API that `sparring.targets.parlant` uses, so
the example suite (and tests) can run a `type: parlant` target without a Parlant server:

    `GET    /agents`                    -> `[{id, name}]`
    `POST   /sessions`                  `{agent_id, customer_id?, title?}` -> 201 session
    `GET    /sessions/{id}`             -> the session
    `PATCH  /sessions/{id}`             `{mode: "auto" | "manual"}` -> the session
    `DELETE /sessions/{id}`             -> 204
    `POST   /sessions/{id}/events`      `{kind: "message", source, message}` -> 201 event;
                                        source `customer` (answered in `auto` mode) or
                                        `human_agent_on_behalf_of_ai_agent` (never answered)
    `GET    /sessions/{id}/events`      `?min_offset=&kinds=&wait_for_data=` -> `[event]`;
                                        waits up to `wait_for_data` s (default 60) for
                                        one, then HTTP 504; `0` answers at once

A customer message is answered in a background thread, as Parlant does: status events
`acknowledged`, `processing`, then one `tool` event when the agent called tools, `typing`,
the agent's messages (a short preamble first when it looks something up) and `ready`. An
agent that raises gets `ready` then an `error` status carrying the exception. Errors are
answered like Parlant's (FastAPI): `{"detail": "..."}`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from sparring.demo.agent import ORDERS, SHOP, respond

AGENT_ID = "northwind"
"""The demo agent's Parlant agent id."""
PREAMBLE = "Let me look that up for you."
_SOURCES = ("customer", "human_agent_on_behalf_of_ai_agent")
_MAX_WAIT_S = 60.0


@dataclass(frozen=True, slots=True)
class AgentTurn:
    """What an agent does in answer to the conversation so far.

    `messages` are sent one event each, in order; `tool_calls` are Parlant tool-call objects
    `{"tool_id": "service:name", "arguments": {...}, "result": {"data": ...}}`, sent as one
    `tool` event before the messages.
    """

    messages: tuple[str, ...]
    tool_calls: tuple[dict[str, Any], ...] = ()


Agent = Callable[[list[dict[str, str]]], AgentTurn]
"""`agent(history) -> AgentTurn`; `history` is `[{"role": "user" | "assistant", "content"}]`
ending with the customer's latest message (consecutive agent messages joined by newlines).
It runs in a background thread and may block; an exception becomes an `error` status."""

Answer = tuple[int, Any]
"""`(HTTP status, JSON body)`; a body of `None` means no content."""


def demo_agent(history: list[dict[str, str]]) -> AgentTurn:
    """The Northwind demo agent (`sparring.demo.agent.respond`) as a Parlant agent: a
    preamble before answers that needed a tool, tool ids `northwind:NAME`."""
    reply = respond(history)
    calls = tuple(_tool_call(c["name"], c["arguments"]) for c in reply.tool_calls)
    return AgentTurn((PREAMBLE, reply.reply) if calls else (reply.reply,), calls)


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"data": _tool_result(name, arguments), "metadata": {}}
    return {"tool_id": f"{AGENT_ID}:{name}", "arguments": arguments, "result": result}


def _tool_result(name: str, arguments: Mapping[str, Any]) -> Any:
    if name != "lookup_order":
        return {"ok": True}
    order = ORDERS.get(str(arguments.get("order_id")))
    if order is None:
        return {"found": False}
    return {
        "found": True,
        "status": order.status,
        "items": list(order.items),
        "total_usd": order.total_usd,
    }


class BadRequest(Exception):
    """An answer other than 2xx: `status` and the `detail` text."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass
class _Session:
    id: str
    agent_id: str
    customer_id: str
    title: str | None
    created: str
    mode: str = "auto"
    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def dto(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "customer_id": self.customer_id,
            "creation_utc": self.created,
            "modified_utc": self.created,
            "title": self.title,
            "mode": self.mode,
            "consumption_offsets": {"client": 0},
            "metadata": {},
            "labels": [],
        }


class ParlantApi:
    """In-memory Parlant sessions for some agents (see the module docstring). Thread-safe.

    Args:
        agents: Agent id -> agent; sessions may only be created for these ids.
    """

    def __init__(self, agents: Mapping[str, Agent] | None = None) -> None:
        self._agents = dict(agents or {AGENT_ID: demo_agent})
        self._sessions: dict[str, _Session] = {}
        self._ids = itertools.count(1)
        self._changed = threading.Condition()
        self._closed = False

    @staticmethod
    def owns(path: str) -> bool:
        """Whether `path` (without query) is one of this API's endpoints."""
        return path == "/agents" or path == "/sessions" or path.startswith("/sessions/")

    def handle(
        self, method: str, path: str, query: Mapping[str, Sequence[str]], body: Any
    ) -> Answer:
        """Answer one request (`body` is the parsed JSON, `None` without one)."""
        parts = path.strip("/").split("/")
        try:
            if parts == ["agents"] and method == "GET":
                return 200, [{"id": a, "name": SHOP} for a in self._agents]
            if parts == ["sessions"] and method == "POST":
                return 201, self._create(body)
            if len(parts) == 2 and parts[0] == "sessions":
                return self._session_call(method, parts[1], body)
            if len(parts) == 3 and parts[0] == "sessions" and parts[2] == "events":
                if method == "POST":
                    return 201, self._post_event(parts[1], body)
                if method == "GET":
                    return 200, self._list_events(parts[1], query)
            raise BadRequest(
                404 if method in ("GET", "POST", "PATCH", "DELETE") else 405,
                f"no endpoint {method} {path}",
            )
        except BadRequest as e:
            return e.status, {"detail": e.detail}

    def close(self) -> None:
        """Release long polls still waiting (they answer 504 at once)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise BadRequest(404, f"Session {session_id!r} not found")
        return session

    def _create(self, body: Any) -> dict[str, Any]:
        params = _object(body)
        agent_id = params.get("agent_id")
        if not isinstance(agent_id, str):
            raise BadRequest(422, "`agent_id` (a string) is required")
        if agent_id not in self._agents:
            raise BadRequest(
                404, f"Agent {agent_id!r} not found; agents: {', '.join(sorted(self._agents))}"
            )
        with self._changed:
            session = _Session(
                f"s{next(self._ids)}",
                agent_id,
                str(params.get("customer_id") or "guest"),
                params.get("title"),
                _now(),
            )
            self._sessions[session.id] = session
        return session.dto()

    def _session_call(self, method: str, session_id: str, body: Any) -> Answer:
        with self._changed:
            session = self._session(session_id)
            if method == "GET":
                return 200, session.dto()
            if method == "DELETE":
                del self._sessions[session_id]
                return 204, None
            if method == "PATCH":
                mode = _object(body).get("mode", session.mode)
                if mode not in ("auto", "manual"):
                    raise BadRequest(422, "`mode` must be 'auto' or 'manual'")
                session.mode = mode
                return 200, session.dto()
        raise BadRequest(405, f"{method} is not allowed on a session")

    def _post_event(self, session_id: str, body: Any) -> dict[str, Any]:
        params = _object(body)
        source, message = params.get("source"), params.get("message")
        if params.get("kind") != "message" or source not in _SOURCES:
            raise BadRequest(
                422,
                "only message events from 'customer' or "
                "'human_agent_on_behalf_of_ai_agent' can be posted here",
            )
        if not isinstance(message, str) or not message:
            raise BadRequest(422, "Missing 'message' field for event")
        with self._changed:
            session = self._session(session_id)
            event = self._emit(session, source, "message", {"message": message})
            answer = source == "customer" and session.mode == "auto"
        if answer:
            threading.Thread(
                target=self._answer, args=(session,), daemon=True, name=f"parlant-demo-{session.id}"
            ).start()
        return event

    def _emit(self, session: _Session, source: str, kind: str, data: Any) -> dict[str, Any]:
        """Append an event (the caller holds `_changed`) and wake the long polls."""
        offset = len(session.events)
        now = _now()
        event: dict[str, Any] = {
            "id": f"{session.id}-e{offset}",
            "source": source,
            "kind": kind,
            "offset": offset,
            "creation_utc": now,
            "modified_utc": now,
            "trace_id": f"{session.id}-t{offset}",
            "data": data,
            "metadata": {},
            "deleted": False,
        }
        session.events.append(event)
        self._changed.notify_all()
        return event

    def _answer(self, session: _Session) -> None:
        """Run the session's agent on the conversation and emit its events."""
        self._status(session, "acknowledged", {})
        self._status(session, "processing", {"stage": "Interpreting"})
        with self._changed:
            history = _history(session.events)
        try:
            turn = self._agents[session.agent_id](history)
        except Exception as e:  # the agent failed: Parlant says ready, then error
            self._status(session, "ready", {})
            self._status(session, "error", {"exception": f"{type(e).__name__}: {e}"})
            return
        with self._changed:
            if turn.tool_calls:
                self._emit(session, "ai_agent", "tool", {"tool_calls": list(turn.tool_calls)})
            self._emit(session, "ai_agent", "status", {"status": "typing", "data": {}})
            for text in turn.messages:
                self._emit(
                    session,
                    "ai_agent",
                    "message",
                    {
                        "message": text,
                        "participant": {"id": session.agent_id, "display_name": SHOP},
                    },
                )
            self._emit(session, "ai_agent", "status", {"status": "ready", "data": {}})

    def _status(self, session: _Session, status: str, data: dict[str, Any]) -> None:
        with self._changed:
            self._emit(session, "ai_agent", "status", {"status": status, "data": data})

    def _list_events(self, session_id: str, query: Mapping[str, Sequence[str]]) -> list[Any]:
        min_offset = _int(query, "min_offset", 0)
        wait_s = min(float(_int(query, "wait_for_data", 60)), _MAX_WAIT_S)
        kinds = {k for k in _first(query, "kinds").split(",") if k}
        with self._changed:

            def found() -> list[dict[str, Any]]:
                return [
                    e
                    for e in self._session(session_id).events[min_offset:]
                    if not kinds or e["kind"] in kinds
                ]

            if wait_s <= 0:
                return found()
            if (
                not self._changed.wait_for(lambda: found() or self._closed, timeout=wait_s)
                or self._closed
            ):
                raise BadRequest(504, "Request timed out")
            return found()


def _history(events: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The conversation for an agent: customer messages as `user`, the others as
    `assistant`, consecutive agent messages joined by newlines."""
    history: list[dict[str, str]] = []
    for event in events:
        if event["kind"] != "message":
            continue
        role = "user" if event["source"] == "customer" else "assistant"
        text = event["data"]["message"]
        if history and role == "assistant" and history[-1]["role"] == "assistant":
            history[-1]["content"] += "\n" + text
        else:
            history.append({"role": role, "content": text})
    return history


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest(422, "the body must be a JSON object")
    return {str(k): v for k, v in cast(dict[Any, Any], body).items()}


def _first(query: Mapping[str, Sequence[str]], name: str) -> str:
    values = query.get(name) or [""]
    return values[0]


def _int(query: Mapping[str, Sequence[str]], name: str, default: int) -> int:
    text = _first(query, name)
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise BadRequest(422, f"`{name}` must be an integer, not {text!r}") from None


def _now() -> str:
    return datetime.now(UTC).isoformat()
