"""`A2AServer`: a real A2A agent built from the a2a-sdk's own server classes, for tests.

One uvicorn server on 127.0.0.1 (free port, background thread) serves several agents, each
under its own path with its own agent card at `<path>/.well-known/agent-card.json`:

    `/agent`    A2A 1.0 JSON-RPC, streaming capable.
    `/nostream` the same, its card saying it does not stream.
    `/legacy`   the same agent, its card saying protocol 0.3 (the SDK's v0.3 compatibility
                on the same endpoint: `message/send`, `message/stream`).
    `/rest`     the same agent over A2A 1.0 HTTP+JSON (REST).
    `/secure`   needs `Authorization: Bearer <token>` on every request (card included);
                anything else gets HTTP 401 with a JSON body that quotes the header it got.
    `/html`     a valid card, but its endpoint answers every call with an HTML page;
                `GET /html/page` is that page and `GET /html/health` is `{"status": "ok"}`
                (for cards that are not JSON, or JSON but no card).
    `/grpc`     a card that offers only a gRPC interface.

The agent is a scripted `AgentExecutor`: the first word of the user's text says what it
does (the rest, `ARG`, is the text it answers with):

    `artifact ARG`   completed, ARG as an artifact
    `status ARG`     completed, ARG as the status message
    `both ARG`       completed, artifact `ARG (artifact)` and status message `ARG`
    `data`           completed, an artifact with a data part `{"order": 10234, "ok": true}`
    `ask ARG`        input-required, ARG as the status message; the next user message of
                     the task completes it with an artifact `continued TASK_ID: TEXT`
    `draft ARG`      an artifact `draft: ARG` (an id of its own), then input-required with
                     the status message `Anything else?`; each next user message of the
                     task adds an artifact `continued TASK_ID: TEXT` (a new id, as
                     `TaskUpdater.add_artifact` gives) and asks again, until the user says
                     `done` (completed)
    `revise ARG`     an artifact with id `answer`: `first: ARG`, then input-required (status
                     message `Shall I change it?`); the next user message replaces that
                     artifact in place (same id, `append` false) with `revised: TEXT` and
                     completes
    `log ARG`        an artifact with id `log` and one part `ARG`, then input-required
                     (`Go on?`); the next user message appends a part `then: TEXT` to it
                     (`append` true) and completes
    `fail ARG` / `reject ARG` / `cancel ARG` / `auth ARG`
                     failed / rejected / canceled / auth-required with ARG as the message
    `message ARG`    no task: a direct agent message ARG
    `working ARG`    working with ARG as the message, and nothing after it
    `ids`            completed, the artifact being `context=CONTEXT_ID task=TASK_ID`
    `stream ARG`     working (message `thinking`), then ARG word by word as appended
                     artifact chunks, then completed
    `sleep SECONDS`  waits, then completes with `slept`
    `tools ARG`      completed, ARG as an artifact, the final status update's metadata being
                     `{"toolCalls": [{"name": "lookup_order", "arguments": {"order_id":
                     "10234", "count": 2}}]}` (no A2A standard; the demo agent's shape)
    anything else    completed, artifact `echo: TEXT`

Each request's user text, context id, task id and file parts are recorded in `A2AServer.seen`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers import new_text_artifact, new_text_message
from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route

__all__ = ["A2AServer", "Seen"]


@dataclass(frozen=True)
class Seen:
    """One message the agent received."""

    text: str
    context_id: str
    task_id: str
    continued: bool
    """The message continued an existing task (`input-required`)."""
    files: tuple[tuple[str, str, bytes], ...] = ()
    """Its file parts with bytes, as (filename, media type, bytes)."""


_END_STATES = {
    "fail": TaskState.TASK_STATE_FAILED,
    "reject": TaskState.TASK_STATE_REJECTED,
    "cancel": TaskState.TASK_STATE_CANCELED,
    "auth": TaskState.TASK_STATE_AUTH_REQUIRED,
}


class ScriptedExecutor(AgentExecutor):
    """The agent: does what the first word of the user's text says (module docstring)."""

    def __init__(self, seen: list[Seen]) -> None:
        self._seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        text = "".join(p.text for p in message.parts)
        continued = context.current_task is not None
        task = context.current_task or new_task_from_user_message(message)
        files = tuple(
            (p.filename, p.media_type, p.raw)
            for p in message.parts
            if p.WhichOneof("content") == "raw"
        )
        self._seen.append(Seen(text, task.context_id, task.id, continued, files))
        command, _, arg = text.partition(" ")
        if command == "message":
            await event_queue.enqueue_event(new_text_message(arg, context_id=task.context_id))
            return
        if not continued:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        reply = self._agent_message(updater)
        if continued:
            await self._continue(updater, task, text)
        elif command in _END_STATES:
            await updater.update_status(_END_STATES[command], reply(arg))
        elif command == "ask":
            await updater.requires_input(reply(arg))
        elif command == "draft":
            await self._artifact(updater, f"draft: {arg}")
            await updater.requires_input(reply("Anything else?"))
        elif command == "revise":
            await updater.add_artifact([_text_part(f"first: {arg}")], artifact_id="answer")
            await updater.requires_input(reply("Shall I change it?"))
        elif command == "log":
            await updater.add_artifact([_text_part(arg)], artifact_id="log")
            await updater.requires_input(reply("Go on?"))
        elif command == "working":
            await updater.start_work(reply(arg))
        elif command == "status":
            await updater.complete(reply(arg))
        elif command == "both":
            await self._artifact(updater, f"{arg} (artifact)")
            await updater.complete(reply(arg))
        elif command == "stream":
            await self._stream(updater, arg)
        elif command == "tools":
            await self._artifact(updater, arg)
            await updater.update_status(
                TaskState.TASK_STATE_COMPLETED,
                metadata={
                    "toolCalls": [
                        {"name": "lookup_order", "arguments": {"order_id": "10234", "count": 2}}
                    ]
                },
            )
        else:
            await self._complete_other(updater, command, arg, text, task.context_id)

    async def _continue(self, updater: TaskUpdater, task: Task, text: str) -> None:
        """The next user message of an input-required task (module docstring)."""
        ids = {a.artifact_id for a in task.artifacts}
        if ids & {"answer", "log"}:
            revised = "answer" in ids
            await updater.add_artifact(
                [_text_part(f"revised: {text}" if revised else f"then: {text}")],
                artifact_id="answer" if revised else "log",
                append=not revised,
            )
            await updater.complete()
            return
        await self._artifact(updater, f"continued {task.id}: {text}")
        drafting = any(a.parts and a.parts[0].text.startswith("draft: ") for a in task.artifacts)
        if drafting and text != "done":
            await updater.requires_input(self._agent_message(updater)("Anything else?"))
        else:
            await updater.complete()

    @staticmethod
    def _agent_message(updater: TaskUpdater) -> Callable[[str], Any]:
        return lambda text: updater.new_agent_message([new_text_message(text).parts[0]])

    @staticmethod
    async def _artifact(updater: TaskUpdater, text: str) -> None:
        artifact = new_text_artifact("reply", text)
        await updater.add_artifact(list(artifact.parts), name="reply")

    async def _stream(self, updater: TaskUpdater, arg: str) -> None:
        await updater.start_work(self._agent_message(updater)("thinking"))
        artifact_id = "streamed"
        for i, word in enumerate(arg.split(" ")):
            piece = word if i == 0 else " " + word
            await updater.add_artifact(
                [_text_part(piece)],
                artifact_id=artifact_id,
                name="reply",
                append=i > 0,
            )
        await updater.complete()

    async def _complete_other(
        self, updater: TaskUpdater, command: str, arg: str, text: str, context_id: str
    ) -> None:
        if command == "data":
            await updater.add_artifact([new_data_part({"order": 10234, "ok": True})])
        elif command == "ids":
            await self._artifact(updater, f"context={context_id} task={updater.task_id}")
        elif command == "sleep":
            await asyncio.sleep(float(arg))
            await self._artifact(updater, "slept")
        elif command == "artifact":
            await self._artifact(updater, arg)
        else:
            await self._artifact(updater, f"echo: {text}")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancelling is not scripted."""


def _text_part(text: str) -> Part:
    return new_text_message(text).parts[0]


def _card(
    url: str, *, version: str = "1.0", streaming: bool = True, binding: str = "JSONRPC"
) -> AgentCard:
    return AgentCard(
        name="Scripted test agent",
        description="Does what the first word says.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=url + "/" if binding == "JSONRPC" else url,
                protocol_binding=binding,
                protocol_version=version,
            )
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="script", name="script", description="scripted replies", tags=["test"])
        ],
    )


def _agent_routes(card: AgentCard, seen: list[Seen], *, legacy: bool = False) -> list[Any]:
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(seen), task_store=InMemoryTaskStore(), agent_card=card
    )
    if card.supported_interfaces[0].protocol_binding == "HTTP+JSON":
        return [*create_agent_card_routes(card), *create_rest_routes(handler)]
    return [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=legacy),
    ]


@dataclass
class A2AServer:
    """The agents above on `http://127.0.0.1:PORT`; use as a context manager.

    Args:
        token: The bearer token `/secure` requires.
    """

    token: str = "test-token-0123456789"
    seen: list[Seen] = field(default_factory=list[Seen])
    base: str = ""
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    def url(self, agent: str) -> str:
        """Base URL of one agent, e.g. `url("agent")`."""
        return f"{self.base}/{agent}"

    def _app(self) -> Starlette:
        token = self.token

        async def html(request: Request) -> Response:
            return HTMLResponse("<html><body><h1>Welcome</h1>Please log in</body></html>")

        secure = Starlette(routes=_agent_routes(_card(self.url("secure")), self.seen))

        async def guard(scope: Any, receive: Any, send: Any) -> None:
            headers = dict(scope.get("headers") or [])
            got = headers.get(b"authorization", b"").decode()
            if got != f"Bearer {token}":
                response = JSONResponse({"error": f"unauthorized: got {got}"}, status_code=401)
                await response(scope, receive, send)
                return
            await secure(scope, receive, send)

        async def health(request: Request) -> Response:
            return JSONResponse({"status": "ok"})

        html_routes = [
            *create_agent_card_routes(_card(self.url("html"))),
            Route("/", html, methods=["POST"]),
            Route("/page", html),
            Route("/health", health),
        ]
        return Starlette(
            routes=[
                Mount("/agent", routes=_agent_routes(_card(self.url("agent")), self.seen)),
                Mount(
                    "/nostream",
                    routes=_agent_routes(_card(self.url("nostream"), streaming=False), self.seen),
                ),
                Mount(
                    "/legacy",
                    routes=_agent_routes(
                        _card(self.url("legacy"), version="0.3"), self.seen, legacy=True
                    ),
                ),
                Mount(
                    "/rest",
                    routes=_agent_routes(_card(self.url("rest"), binding="HTTP+JSON"), self.seen),
                ),
                Mount("/secure", app=guard),
                Mount("/html", routes=html_routes),
                Mount(
                    "/grpc",
                    routes=create_agent_card_routes(_card(self.url("grpc"), binding="GRPC")),
                ),
            ]
        )

    def __enter__(self) -> A2AServer:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            self._app(), log_level="warning", lifespan="off", ws="none", http="h11"
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        while not server.started:
            threading.Event().wait(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)
