"""`ParlantTarget`: an agent on a Parlant server (DESIGN.md section 4, `parlant`).

Speaks Parlant's session REST API under the spec's `url`:

- `POST /sessions` `{agent_id, customer_id?, title}` -> `{id, ...}`: one Parlant session per
  conversation, created on first use (no greeting is asked for).
- `POST /sessions/{id}/events` `{kind: "message", source: "customer", message}` -> the
  event, with its `offset` and `creation_utc`: the user's message; it starts the agent.
- `GET /sessions/{id}/events?min_offset=N&kinds=message,tool,status&wait_for_data=S`:
  long polling; answers the events at offset >= N as soon as there are any, or HTTP 504
  after S seconds (an integer) without one (then it is asked again).
- The turn ends at the `ready` status whose `data.data.stage` is `"completed"` (Parlant
  3.2+ emits it once per processing run, after the agent's messages). Parlant also emits
  `ready` without a stage while it works: after the preamble phase (with or without a
  preamble message) and, for canned-response agents, after each message; those do not
  end the turn. A server that never marks completion (Parlant 3.0 / 3.1) is read by how it
  behaves: the turn ends at a `ready` that comes after a `processing` status or after a
  message that is no preamble, once the agent has been quiet for `_IDLE_S` (the preamble
  phase's `ready` comes before both). Once a target has seen a completed `ready`, it waits
  for one on every turn.
- Every agent message of the turn (a preamble, tagged `__preamble__`, then the answer) is
  one part of the reply; `tool` events give the tool calls with their results; an `error`
  status (its `exception` is a formatted traceback: its last line is kept) or `cancelled`
  fails the turn. A turn without any message but a preamble is waited on for `_QUIET_S`
  more, because Parlant reports a failed reply as `ready` first and `error` right after.
- `preload`: `PATCH /sessions/{id}` `{mode: "manual"}` (Parlant's engine does not answer
  in manual mode), the history posted as events (user messages from `customer`, agent
  messages from `human_agent_on_behalf_of_ai_agent`, which never triggers the agent), then
  `{mode: "auto"}` again. Tool calls in the history are not posted (Parlant takes no tool
  events from clients).
- `close`: `DELETE /sessions/{id}`, best effort, within `_CLOSE_S`.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any, cast

import anyio
import httpx
from pydantic import JsonValue

from sparring.errors import TARGET_TIMEOUT_HINT, TargetError, TargetTimeout, UserError
from sparring.secrets import Secrets, mask_url, url_credentials
from sparring.target_specs import ParlantTargetSpec
from sparring.targets.headers import HeaderTemplate
from sparring.targets.parlant_events import Turn, event_offset, event_time, status_detail
from sparring.targets.templates import last_user_message, misspelt_placeholders, placeholder_names
from sparring.transcript import JsonTooDeep, Message, Transcript, content_text, parse_json

_EXCERPT_CHARS = 300
_MAX_WAIT_S = 60
"""Longest `wait_for_data` asked for in one long poll, in seconds."""
_QUIET_S = 1
"""After a `ready` with no agent message, how long an `error` status may still come (s)."""
_IDLE_S = 3
"""On a server that never marks a reply's last `ready` (Parlant 3.0 / 3.1): how long the
agent must stay quiet after a `ready` for the turn to be over, in whole seconds (Parlant
sends a follow-up message within 1.5 s)."""
_CLOSE_S = 5.0
"""Limit for deleting the session on close, in seconds."""
_KINDS = "message,tool,status"
_AGENT_SOURCE = "human_agent_on_behalf_of_ai_agent"


class ParlantTarget:
    """Talks to one agent on a Parlant server, one Parlant session per conversation.

    Args:
        spec: The server `url`, `agent_id`, optional `customer_id` (else Parlant's guest
            customer), `headers` (may use `{{secrets.NAME}}`) and `timeout_s` (limit for one
            reply, and for loading a history).
        client: The run's shared HTTP client; the target never closes it.
        secrets: Fills `{{secrets.NAME}}` in `headers`; its values (and any credentials in
            `url`) are scrubbed from error messages.

    Raises:
        UserError: a header uses a placeholder other than `{{secrets.NAME}}` (there is no
            per-message request to fill it in), an unset secret, or a header HTTP cannot
            carry.
    """

    def __init__(
        self, spec: ParlantTargetSpec, *, client: httpx.AsyncClient, secrets: Secrets
    ) -> None:
        self.spec, self._client = spec, client
        self.name = f"parlant:{spec.agent_id}"
        self._base = spec.url.rstrip("/")
        self._shown_url = mask_url(self._base)
        self._scrubber = secrets.scrubber_with(url_credentials(spec.url))
        values: list[JsonValue] = list(spec.headers.values())
        wrong = [
            f"{{{{{n}}}}}"
            for n in sorted(placeholder_names(values))
            if not n.startswith("secrets.")
        ] + misspelt_placeholders(values)
        if wrong:
            raise UserError(
                f"target {self.name!r}: headers can only use {{{{secrets.NAME}}}}, not "
                f"{', '.join(wrong)}; the user's message goes to Parlant as a session "
                "event, not in a header"
            )
        self._headers = {
            h.name: h.fill(message="", history=[], secrets=secrets)
            for h in (HeaderTemplate(k, v, secrets=secrets) for k, v in spec.headers.items())
        }
        self._timeout = httpx.Timeout(spec.timeout_s)
        self.marks_completion = False
        """Whether the server was seen ending a reply with a completed `ready` (Parlant
        3.2+); from then on only that ends a turn."""

    async def open_session(self) -> ParlantSession:
        """Start a conversation; its Parlant session is created on first use."""
        return ParlantSession(self)

    async def aclose(self) -> None:
        """Nothing to release: the shared client belongs to the runner."""

    @contextmanager
    def limit(self) -> Generator[None]:
        """Bound the block by `timeout_s`.

        Raises:
            TargetTimeout: the block did not finish in time.
        """
        try:
            with anyio.fail_after(self.spec.timeout_s):
                yield
        except (TimeoutError, httpx.TimeoutException):
            raise TargetTimeout(
                target=self.name, timeout_seconds=self.spec.timeout_s, hint=TARGET_TIMEOUT_HINT
            ) from None

    async def request(
        self,
        method: str,
        path: str,
        *,
        action: str,
        body: dict[str, JsonValue] | None = None,
        params: dict[str, str | int] | None = None,
        wait_s: int = 0,
    ) -> JsonValue:
        """One API call; returns the parsed JSON body (`None` for an empty one).

        Args:
            method: HTTP method.
            path: Below `url`, e.g. `/sessions`.
            action: What the call does, for errors, e.g. "create a session".
            body: JSON body, if any.
            params: Query parameters.
            wait_s: Seconds the server may hold the request (long polling).

        Raises:
            TargetError: a connection error, HTTP status >= 400 (with the body's start and
                a hint) or a body that is not JSON; secrets and URL credentials scrubbed.
        """
        timeout = httpx.Timeout(self.spec.timeout_s + wait_s)
        try:
            response = await self._client.request(
                method,
                self._base + path,
                json=body,
                params=params,
                headers=self._headers,
                timeout=timeout,
                follow_redirects=False,
            )
        except httpx.TimeoutException:
            raise
        except httpx.HTTPError as e:
            raise self._transport_error(e, action) from None
        if response.status_code >= 300:
            raise self._status_error(response, action)
        if not response.content.strip():
            return None
        try:
            return parse_json(response.content)
        except JsonTooDeep as e:
            raise TargetError(
                f"{self._shown_url}: could not {action}: the answer is {e}; no report could hold it"
            ) from None
        except ValueError:
            excerpt = self._scrubber.excerpt(response.text, _EXCERPT_CHARS)
            raise TargetError(
                f"{self._shown_url}: could not {action}: the answer is not JSON: {excerpt!r}. "
                "Check that `url` is the Parlant server's base address, e.g. "
                "http://localhost:8800"
            ) from None

    def _transport_error(self, error: httpx.HTTPError, action: str) -> TargetError:
        detail = self._scrubber.scrub(str(error) or type(error).__name__)
        if isinstance(error, httpx.ConnectError):
            return TargetError(
                f"could not connect to the Parlant server at {self._shown_url} "
                f"to {action}: {detail}. Check that it is running and that "
                "`url` (scheme, host, port) is right"
            )
        return TargetError(
            f"{self._shown_url}: could not {action}: {type(error).__name__}: "
            f"{detail}. The server may have crashed or dropped the "
            "connection; check its logs"
        )

    def _status_error(self, response: httpx.Response, action: str) -> TargetError:
        status = response.status_code
        excerpt = self._scrubber.excerpt(response.text, _EXCERPT_CHARS)
        return TargetError(
            f"{self._shown_url}: could not {action}: HTTP {status} "
            f"{response.reason_phrase}. Body starts: {excerpt!r}. "
            f"{self._hint(status, action)}",
            status=status,
        )

    def _hint(self, status: int, action: str) -> str:
        if status in (401, 403):
            return (
                "Check the credentials in `headers` (is the secret set and current?) and "
                "that they may use this agent"
            )
        if status == 404 and action == _CREATE:
            who = (
                f"agent {self.spec.agent_id!r} and customer {self.spec.customer_id!r} exist"
                if self.spec.customer_id
                else f"agent {self.spec.agent_id!r} exists"
            )
            return (
                f"Check that {who} on this server (GET {self._shown_url}/agents "
                "lists the agents) and that `url` is its base address"
            )
        if status == 404:
            return (
                "The session is gone (deleted, or the server restarted), or `url` is not "
                "a Parlant server's base address"
            )
        if status in (400, 405, 422):
            return "Check that `url` points at a Parlant server with the sessions API"
        if status < 400:
            return "Redirects are not followed: set `url` to the final address"
        if status >= 500:
            return "The Parlant server failed; see its logs"
        return "Check the target's `url` and `headers`"

    def event_list(self, value: JsonValue, path: str) -> list[dict[str, Any]]:
        """The event objects of the answer to `GET path` (a list-events call), in offset
        order.

        Raises:
            TargetError: the answer is not a JSON list (quoting its scrubbed start).
        """
        if not isinstance(value, list):
            excerpt = self._scrubber.excerpt(content_text(value), _EXCERPT_CHARS)
            raise TargetError(
                f"{self._shown_url}: GET {path} answered {excerpt!r}, not a list "
                "of events; check that `url` is a Parlant server's base address, "
                "e.g. http://localhost:8800"
            )
        events = [cast(dict[str, Any], e) for e in value if isinstance(e, dict)]
        return sorted(events, key=event_offset)

    def agent_error(self, state: str, data: JsonValue) -> TargetError:
        """The turn failed because the agent reported status `error` or `cancelled`."""
        detail = self._scrubber.excerpt(status_detail(data) or "(no detail)", _EXCERPT_CHARS)
        if state == "cancelled":
            return TargetError(
                f"{self.name}: Parlant cancelled the agent's reply ({detail!r}); "
                "something else posted to the session or the server is "
                "shutting down"
            )
        return TargetError(
            f"{self.name}: the agent reported an error instead of a reply: "
            f"{detail!r}. Check the Parlant server's logs"
        )


_CREATE = "create a session"


class ParlantSession:
    """One conversation: one Parlant session, created on the first `send` or `preload`."""

    def __init__(self, target: ParlantTarget) -> None:
        self._target = target
        self._id: str | None = None

    async def _session_id(self) -> str:
        if self._id is None:
            spec = self._target.spec
            body: dict[str, JsonValue] = {
                "agent_id": spec.agent_id,
                "title": "sparring test conversation",
            }
            if spec.customer_id is not None:
                body["customer_id"] = spec.customer_id
            created = await self._target.request(
                "POST", "/sessions", action=_CREATE, body=body, params={"allow_greeting": "false"}
            )
            session_id = created.get("id") if isinstance(created, dict) else None
            if not isinstance(session_id, str):
                raise TargetError(
                    f"{self._target.name}: the answer to POST /sessions has no "
                    "session `id`; check that `url` is a Parlant server"
                )
            self._id = session_id
        return self._id

    async def send(self, transcript: Transcript, /) -> Message:
        """Post the transcript's last (user) message; return everything the agent answered.

        Returns:
            An agent `Message`: `content` is the agent's messages joined by newlines,
            `parts` each of them (when more than one), `tool_calls` from `tool` events
            (with results), `status_events` with `at_ms` since the user's message (server
            clock), `latency_ms` from posting to the turn's end, `raw` the events.

        Raises:
            TargetError: HTTP errors, an `error` / `cancelled` status, or a message with
                files (a Parlant customer event carries text only).
            TargetTimeout: the turn did not end within `timeout_s`.
        """
        message, _ = last_user_message(transcript)
        target = self._target
        if transcript.messages[-1].files:
            raise TargetError(
                f"target {target.name!r} (parlant) cannot take files: a Parlant customer "
                "message is text only; remove `files:` from the scenarios on this target"
            )
        with target.limit():
            session_id = await self._session_id()
            start = time.perf_counter()
            posted = await self._post(session_id, "customer", message)
            turn = Turn(sent=event_time(posted))
            offset = await self._read_turn(session_id, turn, event_offset(posted) + 1)
            latency_ms = ((turn.ready_at or time.perf_counter()) - start) * 1000
            if not turn.answered and turn.failure is None:
                await self._poll(session_id, turn, offset, _QUIET_S)
            if turn.failure is not None:
                raise target.agent_error(*turn.failure)
            if turn.streaming:
                await self._reread(session_id, turn)
        parts = tuple(turn.parts)
        return Message(
            role="agent",
            content="\n".join(parts),
            parts=parts if len(parts) > 1 else (),
            tool_calls=tuple(turn.calls),
            status_events=tuple(turn.statuses),
            latency_ms=round(latency_ms, 3),
            raw=list(turn.events.values()),
        )

    async def _read_turn(self, session_id: str, turn: Turn, offset: int) -> int:
        """Poll from `offset` until the turn is over (see the module docstring); return the
        next offset to ask for."""
        target = self._target
        while not turn.over:
            if turn.maybe_over and not target.marks_completion:
                before = len(turn.events)
                offset = await self._poll(session_id, turn, offset, _IDLE_S)
                if len(turn.events) == before:
                    break  # quiet after a `ready`: a server without completion marks
            else:
                offset = await self._poll(session_id, turn, offset, _MAX_WAIT_S)
        target.marks_completion = target.marks_completion or turn.completed
        return offset

    async def _post(self, session_id: str, source: str, message: str) -> JsonValue:
        body: dict[str, JsonValue] = {"kind": "message", "source": source, "message": message}
        who = "the user's" if source == "customer" else "an agent"
        return await self._target.request(
            "POST", f"/sessions/{session_id}/events", action=f"post {who} message", body=body
        )

    async def _poll(self, session_id: str, turn: Turn, offset: int, wait_s: int) -> int:
        """Add the events from `offset` on to `turn` (waiting up to `wait_s` for the first);
        return the next offset to ask for."""
        params: dict[str, str | int] = {
            "min_offset": offset,
            "kinds": _KINDS,
            "wait_for_data": wait_s,
        }
        path = f"/sessions/{session_id}/events"
        try:
            events = await self._target.request(
                "GET", path, action="read the agent's events", params=params, wait_s=wait_s
            )
        except TargetError as e:
            if e.status == 504:  # Parlant's "nothing new within wait_for_data"
                return offset
            raise
        for event in self._target.event_list(events, path):
            if turn.failure is None:
                turn.add(event)
            offset = max(offset, event_offset(event) + 1)
        if turn.maybe_over or turn.completed:
            turn.ready_at = time.perf_counter()
        return offset

    async def _reread(self, session_id: str, turn: Turn) -> None:
        """Read streamed messages again now that the turn is over (their text grows in
        place after the event first appears)."""
        params: dict[str, str | int] = {
            "min_offset": min(turn.streaming),
            "kinds": "message",
            "wait_for_data": 0,
        }
        path = f"/sessions/{session_id}/events"
        events = await self._target.request(
            "GET", path, action="read the agent's messages", params=params
        )
        turn.update(self._target.event_list(events, path))

    async def preload(self, history: Transcript, /) -> Transcript:
        """Post `history` as events without the agent answering them (see the module
        docstring); returns `history`, which is now the session's conversation.

        Raises:
            TargetError: the server refused an event or the switch to manual mode.
            TargetTimeout: loading took longer than `timeout_s`.
        """
        spoken = [m for m in history.messages if m.role in ("user", "agent")]
        if not spoken:
            return history
        with self._target.limit():
            session_id = await self._session_id()
            await self._mode(session_id, "manual")
            for message in spoken:
                if message.role == "user":
                    await self._post(session_id, "customer", message.content)
                    continue
                for part in message.parts or (message.content,):
                    await self._post(session_id, _AGENT_SOURCE, part)
            await self._mode(session_id, "auto")
        return history

    async def _mode(self, session_id: str, mode: str) -> None:
        await self._target.request(
            "PATCH",
            f"/sessions/{session_id}",
            action=f"switch the session to {mode} mode",
            body={"mode": mode},
        )

    async def close(self) -> None:
        """Delete the Parlant session; errors are ignored and it never takes over
        `_CLOSE_S` seconds."""
        session_id, self._id = self._id, None
        if session_id is None:
            return
        with anyio.move_on_after(_CLOSE_S):
            try:
                await self._target.request(
                    "DELETE", f"/sessions/{session_id}", action="delete the session"
                )
            except (TargetError, httpx.HTTPError):
                pass  # best effort: the conversation is over either way
