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
                                        waits up to `wait_for_data` s (an integer, default
                                        60) for one, then HTTP 504 `{"detail": "Request
                                        timed out"}`; `0` answers at once

A customer message starts a processing run in a background thread that emits what a Parlant
3.3 engine emits (read from Parlant's `core/engines/alpha/engine.py`; every event has
`source: "ai_agent"`, and one run's events share a `trace_id`):

1. status `acknowledged` `{}`;
2. the preamble phase, when Parlant's perceived-performance policy wants one (the session's
   first three customer messages, unless the last agent message was a preamble): for a
   canned-mode agent with a preamble, `typing` and the preamble message (tagged
   `__preamble__`); then, in every mode, a `ready` without a stage, `{}`, and a pause
   (`indicator_delay_s`);
3. `processing` `{"stage": "Interpreting"}`, then the agent runs (it may take its time; Parlant
   runs it during the preamble phase already, which changes timings only);
4. when it called tools: `processing` "Considering tools", one `tool` event per call,
   `processing` "Interpreting" again (the next preparation iteration);
5. (canned mode: `processing` "Articulating") `typing` and each message (canned mode: each
   followed by a `ready` `{}`); last, `ready` `{"stage": "completed", ...}`.

A customer message posted while a run is still preparing (steps 1-4) cancels it, as
Parlant's `BackgroundTaskService.restart` does: `cancelled` `{}` and a completed `ready`
for the old run, then a new run that answers both messages. An agent that raises gets the
completed `ready`, then, a moment later, an `error` status whose `exception` is the formatted
traceback.
An older `version` answers as that Parlant did (read from its wheel): before 3.3 there is
no "Considering tools" stage; before 3.2 the last `ready` has no `stage` (it looks like the
early one), and `processing` comes only after a preamble phase (step 3, once). Errors are
answered like Parlant's (FastAPI): `{"detail": "..."}`.
"""

from __future__ import annotations

import itertools
import random
import threading
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pprint import pformat
from typing import Any, cast

from sparring.demo.agent import ORDERS, SHOP, respond

AGENT_ID = "northwind"
"""The demo agent's Parlant agent id."""
PREAMBLE = "Let me look that up for you."
"""The demo agent's preamble, sent before answers that need a lookup."""
PREAMBLE_TAG = "__preamble__"
"""The tag Parlant puts on a preamble message's `data.tags`."""
_SOURCES = ("customer", "human_agent_on_behalf_of_ai_agent")
_MAX_WAIT_S = 60.0
_ERROR_DELAY_S = 0.1
"""From a failed run's last `ready` to its `error` status, in seconds."""
_PREAMBLE_TURNS = 3
"""Parlant's basic policy asks for a preamble while at most 2 customer waits came before."""
_ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"

History = list[dict[str, str]]
"""`[{"role": "user" | "assistant", "content"}]` ending with the customer's latest message
(consecutive agent messages joined by newlines)."""


@dataclass(frozen=True, slots=True)
class AgentTurn:
    """What an agent does in answer to the conversation so far.

    `messages` are sent one event each, in order; `tool_calls` are Parlant tool-call objects
    `{"tool_id": "service:name", "arguments": {...}, "result": {"data": ...}}`, each sent as
    a `tool` event of its own before the messages.
    """

    messages: tuple[str, ...]
    tool_calls: tuple[dict[str, Any], ...] = ()


def _no_preamble(history: History) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class ParlantAgent:
    """An agent as the engine runs it.

    Attributes:
        reply: `reply(history) -> AgentTurn`. It runs in a background thread and may block;
            an exception becomes an `error` status.
        preamble: `preamble(history) -> text or None`: the short message a canned-mode agent
            sends while it works, when Parlant's policy wants a preamble; `None` sends none.
        canned: A canned-response agent (Parlant's `CANNED_*` modes): preamble messages, an
            `Articulating` stage, a `ready` after each message. False: `FLUID` (the SDK's
            default), which never sends a preamble message (the early `ready` still comes).
        name: The display name on the agent's messages.
    """

    reply: Callable[[History], AgentTurn]
    preamble: Callable[[History], str | None] = _no_preamble
    canned: bool = True
    name: str = SHOP


def demo_agent(history: History) -> AgentTurn:
    """The Northwind demo agent (`sparring.demo.agent.respond`) as a Parlant agent: tool
    ids `northwind:NAME`."""
    reply = respond(history)
    calls = tuple(_tool_call(c["name"], c["arguments"]) for c in reply.tool_calls)
    return AgentTurn((reply.reply,), calls)


def demo_preamble(history: History) -> str | None:
    """`PREAMBLE` when the demo agent is going to look something up, else none."""
    return PREAMBLE if respond(history).tool_calls else None


DEMO_AGENT = ParlantAgent(demo_agent, demo_preamble)
"""The demo agent in canned mode, with its preamble."""


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"data": _tool_result(name, arguments)}
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


Answer = tuple[int, Any]
"""`(HTTP status, JSON body)`; a body of `None` means no content."""


class BadRequest(Exception):
    """An answer other than 2xx: `status` and the `detail` text."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass(eq=False)
class _Run:
    """One processing run: its `trace_id`, whether it has started (`acknowledged`) and
    whether a later customer message cancelled it (its thread then emits nothing more)."""

    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    acknowledged: bool = False
    cancelled: bool = False


@dataclass
class _Session:
    id: str
    agent_id: str
    customer_id: str
    title: str | None
    created: str
    mode: str = "auto"
    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    run: _Run | None = None
    """The run still preparing or answering, if any."""

    def dto(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "customer_id": self.customer_id,
            "creation_utc": self.created,
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
        version: The Parlant version to answer as, `(major, minor)`: `(3, 3)` and later,
            `(3, 2)`, or `(3, 1)` / `(3, 0)` (see the module docstring).
        indicator_delay_s: Seconds between the preamble phase's `ready` and the
            `processing` status (Parlant's basic policy waits 1-2 s).
    """

    def __init__(
        self,
        agents: Mapping[str, ParlantAgent] | None = None,
        *,
        version: tuple[int, int] = (3, 3),
        indicator_delay_s: float = 0,
    ) -> None:
        self._agents = dict(agents or {AGENT_ID: DEMO_AGENT})
        self._version = version
        self._indicator_delay_s = indicator_delay_s
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
                return 200, [{"id": a, "name": self._agents[a].name} for a in self._agents]
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
            who = session.customer_id if source == "customer" else session.agent_id
            data: dict[str, Any] = {
                "message": message,
                "participant": {"id": who, "display_name": who},
                "flagged": False,
                "tags": [],
            }
            event = self._emit(session, source, "message", data, uuid.uuid4().hex)
            if source == "customer" and session.mode == "auto":
                self._cancel(session)
                run = session.run = _Run()
                threading.Thread(
                    target=self._answer,
                    args=(session, run),
                    daemon=True,
                    name=f"parlant-{session.id}",
                ).start()
        return event

    def _cancel(self, session: _Session) -> None:
        """Cancel the session's run still preparing (the caller holds `_changed`)."""
        run, session.run = session.run, None
        if run is None:
            return
        run.cancelled = True
        if run.acknowledged:
            self._status(session, run, "cancelled", {})
            self._status(session, run, "ready", self._completed())

    def _emit(
        self, session: _Session, source: str, kind: str, data: Any, trace_id: str
    ) -> dict[str, Any]:
        """Append an event (the caller holds `_changed`) and wake the long polls."""
        event: dict[str, Any] = {
            "id": "".join(random.choices(_ID_ALPHABET, k=10)),
            "source": source,
            "kind": kind,
            "offset": len(session.events),
            "creation_utc": _now(),
            "trace_id": trace_id,
            "correlation_id": trace_id,
            "data": data,
            "metadata": {},
            "deleted": False,
        }
        session.events.append(event)
        self._changed.notify_all()
        return event

    def _status(self, session: _Session, run: _Run, status: str, data: dict[str, Any]) -> None:
        self._emit(session, "ai_agent", "status", {"status": status, "data": data}, run.trace_id)

    def _message(self, session: _Session, run: _Run, text: str, *, preamble: bool) -> None:
        agent = self._agents[session.agent_id]
        data: dict[str, Any] = {
            "message": text,
            "participant": {"id": session.agent_id, "display_name": agent.name},
        }
        if preamble:
            data["tags"] = [PREAMBLE_TAG]
        self._emit(session, "ai_agent", "message", data, run.trace_id)

    def _completed(self) -> dict[str, Any]:
        """The data of a run's last `ready`."""
        if self._version < (3, 2):
            return {}
        return {
            "stage": "completed",
            "matched_guidelines": [],
            "matched_journeys": [],
            "matched_journey_states": [],
        }

    def _answer(self, session: _Session, run: _Run) -> None:
        """One processing run (see the module docstring); stops emitting once cancelled."""
        agent = self._agents[session.agent_id]
        with self._changed:
            if run.cancelled:
                return
            run.acknowledged = True
            self._status(session, run, "acknowledged", {})
            history = _history(session.events)
            wants_preamble = _preamble_due(session.events)
        if wants_preamble and not self._preamble_phase(session, run, agent, history):
            return
        with self._changed:
            if run.cancelled:
                return
            if wants_preamble or self._version >= (3, 2):
                self._status(session, run, "processing", {"stage": "Interpreting"})
        try:
            turn = agent.reply(history)
        except Exception as e:  # the agent failed: Parlant says ready, then error
            self._fail(session, run, pformat(traceback.format_exception(e)))
            return
        with self._changed:
            if not run.cancelled:
                self._emit_answer(session, run, turn)
                session.run = None

    def _preamble_phase(
        self, session: _Session, run: _Run, agent: ParlantAgent, history: History
    ) -> bool:
        """A canned agent's preamble message, the stage-less `ready`, then the pause
        before the processing indicator; False when the run was cancelled meanwhile."""
        preamble = agent.preamble(history) if agent.canned else None
        with self._changed:
            if run.cancelled:
                return False
            if preamble:
                self._status(session, run, "typing", {})
                self._message(session, run, preamble, preamble=True)
            self._status(session, run, "ready", {})
            return not self._changed.wait_for(
                lambda: run.cancelled or self._closed, timeout=self._indicator_delay_s
            )

    def _fail(self, session: _Session, run: _Run, exception: str) -> None:
        """A failed run: its completed `ready`, then (a moment later, from the engine's
        `process()`) the `error` status."""
        with self._changed:
            if run.cancelled:
                return
            self._status(session, run, "ready", self._completed())
            session.run = None
            self._changed.wait_for(lambda: self._closed, timeout=_ERROR_DELAY_S)
            self._status(session, run, "error", {"exception": exception})

    def _emit_answer(self, session: _Session, run: _Run, turn: AgentTurn) -> None:
        """Tool events and messages of a run, then its last `ready` (lock held)."""
        canned = self._agents[session.agent_id].canned
        if turn.tool_calls and self._version >= (3, 3):
            self._status(session, run, "processing", {"stage": "Considering tools"})
        for call in turn.tool_calls:
            data = {"tool_calls": [_full_tool_call(call)]}
            self._emit(session, "ai_agent", "tool", data, run.trace_id)
        if turn.tool_calls and self._version >= (3, 2):
            self._status(session, run, "processing", {"stage": "Interpreting"})
        if canned:
            self._status(session, run, "processing", {"stage": "Articulating"})
        for text in turn.messages:
            self._status(session, run, "typing", {})
            self._message(session, run, text, preamble=False)
            if canned:
                self._status(session, run, "ready", {})
        self._status(session, run, "ready", self._completed())

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


def _full_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call as Parlant stores it: its `result` has every field of a `ToolResult`."""
    result: dict[str, Any] = {
        "data": None,
        "metadata": {},
        "control": {},
        "canned_responses": [],
        "canned_response_fields": {},
        "guidelines": [],
        **_object(call.get("result", {})),
    }
    return {**call, "result": result}


def _preamble_due(events: Sequence[Mapping[str, Any]]) -> bool:
    """Parlant's basic perceived-performance policy: a preamble for the first three customer
    messages, never right after a preamble."""
    messages = [e for e in events if e["kind"] == "message"]
    agent = [e for e in messages if e["source"] == "ai_agent"]
    if agent and PREAMBLE_TAG in agent[-1]["data"].get("tags", []):
        return False
    return sum(1 for e in messages if e["source"] == "customer") <= _PREAMBLE_TURNS


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
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")
