"""`A2ATarget`: an agent speaking the A2A protocol (DESIGN.md section 4, `a2a`; extra `a2a`).

Built on the official `a2a-sdk` client. The agent card is read once per target from
`url` + `card_path`; it says where to send messages and in which protocol. A2A 1.0
(JSON-RPC `SendMessage` / `SendStreamingMessage`, or HTTP+JSON) and A2A 0.3 (JSON-RPC
`message/send` / `message/stream`) both work, on the interface the agent prefers.
Streaming is used when the spec asks for it and the card says the agent streams.

Every request goes through the run's shared HTTP client with the spec's headers; the HTTP
status and content type of each answer are checked before the SDK parses it, so a 401 or an
HTML error page is reported as such, with a scrubbed excerpt of its body.

A user message is a text part, then one file part per attached file (its bytes, `filename`
and `mediaType`).

One conversation (session) is one A2A context: the first reply's `contextId` goes with
every later message. A task that ends `input-required` is continued by the next user
message (same `taskId`); after `completed` the next message starts a new task in the same
context. `failed`, `rejected`, `canceled` and `auth-required` are errors naming the state
and the agent's message.

The reply text is what the agent produced in this turn: the artifacts it added or changed
since the previous answer of the same task, then the task's final status message (see
`sparring.targets.a2a_wire`, which reads the SDK's events). Every task state seen is
recorded in `Message.status_events` (detail: the status message), and `raw` is the final
task (every artifact so far), or the agent's direct message, as A2A 1.0 JSON.

Tool calls: A2A has no standard for them, so they are read only when the spec has a
`tool_calls_path`, applied to `raw` (camelCase, as on the wire; `metadata` is an object even
when the agent sent none, so `metadata.toolCalls` on a reply without tool calls means none,
not an error). When streaming, the metadata of status updates is merged into the task's, as
the SDK's own task store does.

History: A2A has no way to hand an agent a conversation it did not take part in, so
`preload` replays it: each user message of the history is sent live in the session's
context, and the replayed conversation, with the agent's real replies, is returned.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import anyio
import httpx
from pydantic import JsonValue

from sparring.errors import TARGET_TIMEOUT_HINT, TargetError, TargetTimeout, UserError
from sparring.secrets import Secrets, mask_url
from sparring.target_specs import A2ATargetSpec, is_raw_mapping
from sparring.targets.attachments import attachment_bytes
from sparring.targets.headers import HeaderTemplate
from sparring.targets.response_paths import ResponsePath
from sparring.targets.templates import (
    last_user_message,
    misspelt_placeholders,
    placeholder_names,
    tool_calls_from,
)
from sparring.transcript import Attachment, Message, ToolCall, Transcript

try:
    from a2a.client import Client, ClientConfig, ClientFactory
    from a2a.client.card_resolver import parse_agent_card
    from a2a.client.errors import A2AClientTimeoutError
    from a2a.types.a2a_pb2 import AgentCard, Part, Role, SendMessageRequest
    from a2a.types.a2a_pb2 import Message as A2AMessage
    from a2a.utils.constants import TransportProtocol
    from a2a.utils.errors import A2AError
    from google.protobuf.json_format import ParseError

    from sparring.targets.a2a_wire import Answer, ArtifactParts, whole_numbers
except ImportError as e:
    raise UserError(
        f"the a2a target needs the A2A SDK, which is not installed ({e}): "
        'pip install "sparring[a2a]"'
    ) from e

_EXCERPT_CHARS = 300
_BINDINGS = (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON)
_MALFORMED = (ParseError, ValueError, TypeError, AttributeError, KeyError)
"""What the SDK raises, undocumented, for an answer that is JSON but not an A2A reply: e.g.
`"result": null` is a protobuf TypeError, a v0.3 answer that is a list an AttributeError.
Caught around the SDK's reading only, never around sparring's own code."""
_NOT_JSON_RPC = ("Invalid JSON-RPC response", "JSON Decode Error")
"""How the SDK's `A2AClientError` messages start for an answer that is no JSON-RPC response
at all (rather than an error the agent sent)."""


class A2ATarget:
    """Target for `type: a2a` (see `A2ATargetSpec` and the module docstring).

    Args:
        spec: The agent's base url, card path, headers, streaming, `tool_calls_path` and
            `timeout_s` (limit for one reply, and for reading the card, in seconds).
        client: The run's shared HTTP client (`follow_redirects=False`); every request goes
            through it. The target never closes it.
        secrets: Fills `{{secrets.NAME}}` in `headers`; its values are scrubbed from errors.

    Raises:
        UserError: a header uses a placeholder other than `{{secrets.NAME}}`, has a
            character HTTP cannot carry, or uses a secret that is not set.
    """

    def __init__(self, spec: A2ATargetSpec, *, client: httpx.AsyncClient, secrets: Secrets) -> None:
        self.spec, self._shared, self._secrets = spec, client, secrets
        self.name = f"a2a:{mask_url(spec.url)}"
        self._card_url = spec.url.rstrip("/") + spec.card_path
        self._http = httpx.AsyncClient(
            transport=_CheckedTransport(client, secrets),
            headers=self._headers(),
            timeout=spec.timeout_s,
            follow_redirects=False,
        )
        self._lock = anyio.Lock()
        self._connection: _Connection | None = None

    def _headers(self) -> dict[str, str]:
        texts: list[JsonValue] = [*self.spec.headers.values()]
        wrong = sorted(
            f"{{{{{n}}}}}" for n in placeholder_names(texts) if not n.startswith("secrets.")
        )
        if wrong or (wrong := misspelt_placeholders(texts)):
            raise UserError(
                f"target {self.name!r}: a2a headers can only use "
                f"{{{{secrets.NAME}}}}, not {', '.join(wrong)}; the user's "
                "message goes in the A2A message itself"
            )
        templates = [
            HeaderTemplate(k, v, secrets=self._secrets) for k, v in self.spec.headers.items()
        ]
        return {t.name: t.fill(message="", history=[], secrets=self._secrets) for t in templates}

    async def open_session(self) -> A2ASession:
        """Start a conversation; the agent card is read by the first session.

        Raises:
            TargetError: the card cannot be read, is not an A2A agent card, offers no
                interface sparring speaks, or gives an address that is not an http(s) URL.
            TargetTimeout: the card did not arrive within `timeout_s`.
        """
        async with self._lock:
            if self._connection is None:
                self._connection = self._connect(await self._read_card())
        return A2ASession(self._connection)

    async def aclose(self) -> None:
        """Release the SDK client (the shared HTTP client belongs to the runner)."""
        if self._connection is not None:
            await self._connection.client.close()
        await self._http.aclose()

    async def _read_card(self) -> AgentCard:
        url = mask_url(self._card_url)
        fix = (
            f"set `url` to the agent's base address, the one whose {self.spec.card_path} "
            "serves its card (agents on A2A 0.2 serve /.well-known/agent.json: set "
            "`card_path` to that)"
        )
        try:
            with anyio.fail_after(self.spec.timeout_s):
                response = await self._http.get(self._card_url)
        except (TimeoutError, httpx.TimeoutException):
            raise TargetTimeout(
                target=self.name, timeout_seconds=self.spec.timeout_s, hint=TARGET_TIMEOUT_HINT
            ) from None
        except httpx.HTTPError as e:
            raise _transport_error(e, url, "its agent card", self._secrets) from None
        except _BadResponse as e:
            raise TargetError(
                f"{e.url} (the agent card) {e.detail} {fix}", status=e.status
            ) from None
        return _parse_card(response, url, fix, self._secrets)

    def _connect(self, card: AgentCard) -> _Connection:
        endpoint = next(
            (i.url for i in card.supported_interfaces if i.protocol_binding in _BINDINGS),
            self.spec.url,
        )
        if not _is_http_url(endpoint):
            shown = self._secrets.excerpt(endpoint, _EXCERPT_CHARS)
            raise TargetError(
                f"the agent card at {mask_url(self._card_url)} names {shown!r} as its "
                "interface URL (where messages go), which is not an http(s) URL; fix the "
                "agent card: its "
                "`supportedInterfaces[].url` (`url` on A2A 0.3) must be the full address the "
                "agent answers on, e.g. http://localhost:9999/"
            )
        config = ClientConfig(
            streaming=self.spec.streaming,
            httpx_client=self._http,
            supported_protocol_bindings=[b.value for b in _BINDINGS],
        )
        try:
            client = ClientFactory(config).create(card)
        except ValueError:
            offered = ", ".join(
                f"{i.protocol_binding} {i.protocol_version or '(no version)'} at {mask_url(i.url)}"
                for i in card.supported_interfaces
            )
            raise TargetError(
                f"the agent card at {mask_url(self._card_url)} offers no interface sparring "
                f"speaks (it offers: {offered or 'none'}); sparring speaks A2A 0.3 and 1.0 "
                "over JSONRPC or HTTP+JSON"
            ) from None
        tool_calls = (
            ResponsePath(self.spec.tool_calls_path, option="tool_calls_path")
            if self.spec.tool_calls_path is not None
            else None
        )
        return _Connection(
            client,
            endpoint=mask_url(endpoint),
            name=self.name,
            timeout_s=self.spec.timeout_s,
            secrets=self._secrets,
            tool_calls=tool_calls,
        )


class _Connection:
    """The SDK client made from the agent card, shared by the target's sessions.

    Args:
        client: The SDK client.
        endpoint: The agent's address as shown in errors.
        name: The target's name, for timeouts.
        timeout_s: Limit for one reply, in seconds.
        secrets: Scrubbed from errors.
        tool_calls: The spec's `tool_calls_path`, compiled (`None`: no tool calls read).
    """

    def __init__(
        self,
        client: Client,
        *,
        endpoint: str,
        name: str,
        timeout_s: float,
        secrets: Secrets,
        tool_calls: ResponsePath | None,
    ) -> None:
        self.client, self.endpoint, self._name = client, endpoint, name
        self._timeout_s, self._secrets, self._tool_calls = timeout_s, secrets, tool_calls

    async def send(
        self, text: str, *, files: Sequence[Attachment] = (), context_id: str, task_id: str
    ) -> Answer:
        """Send one user message; return the agent's answer, folded from its events.

        Args:
            text: The user's message.
            files: Sent as file parts (bytes) after the text.
            context_id: The conversation's A2A context (`""` before the first reply).
            task_id: The `input-required` task it continues (`""`: a new task).

        Raises:
            TargetError: an HTTP error, a non-JSON answer, a JSON-RPC error, a connection
                error, a task that ended failed / rejected / canceled / auth-required or
                still working, or a `tool_calls_path` that is not in the answer or does not
                lead to tool calls. Messages never contain secrets.
            TargetTimeout: no complete answer within `timeout_s`.
        """
        message = A2AMessage(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[
                Part(text=text),
                *(
                    Part(raw=attachment_bytes(f), filename=f.name, media_type=f.mime_type)
                    for f in files
                ),
            ],
            context_id=context_id,
            task_id=task_id,
        )
        answer = Answer()
        start = time.perf_counter()
        try:
            with anyio.fail_after(self._timeout_s):
                await self._receive(SendMessageRequest(message=message), answer, start)
        except (TimeoutError, A2AClientTimeoutError):
            raise TargetTimeout(
                target=self._name, timeout_seconds=self._timeout_s, hint=TARGET_TIMEOUT_HINT
            ) from None
        except _BadResponse as e:
            raise TargetError(
                f"{e.url} (the agent) {e.detail} Check `headers`, and that the "
                "agent card names this agent's address",
                status=e.status,
            ) from None
        except A2AError as e:
            raise self._sdk_error(e) from None
        answer.latency_ms = round((time.perf_counter() - start) * 1000, 3)
        answer.check(self.endpoint, self._secrets)
        if self._tool_calls is not None:
            answer.tool_calls = self._read_tool_calls(self._tool_calls, answer.raw())
        return answer

    def _read_tool_calls(
        self, path: ResponsePath, raw: dict[str, JsonValue]
    ) -> tuple[ToolCall, ...]:
        # `metadata` is left out of the JSON when empty; it is still the place to look.
        # A misspelt path must not pass for "no tool calls" (see `extract_optional`).
        value = path.extract_optional({"metadata": {}, **raw}, scrub=self._secrets.scrub)
        return tool_calls_from(whole_numbers(value), where=f"tool_calls_path {path.path!r}")

    async def _receive(self, request: SendMessageRequest, answer: Answer, start: float) -> None:
        """Fold the SDK's events for `request` into `answer`.

        Raises:
            TargetError: the SDK could not read an answer as A2A (`_MALFORMED`).
        """
        stream = self.client.send_message(request)
        try:
            while True:
                try:
                    event = await anext(stream)
                except StopAsyncIteration:
                    return
                except _MALFORMED as e:
                    raise self._invalid_reply(e) from None
                answer.add(event, at_ms=round((time.perf_counter() - start) * 1000, 3))
        finally:
            if isinstance(stream, AsyncGenerator):
                await stream.aclose()

    def _invalid_reply(self, error: Exception) -> TargetError:
        detail = self._secrets.excerpt(f"{type(error).__name__}: {error}", _EXCERPT_CHARS)
        return TargetError(
            f"{self.endpoint} sent an answer that is not a valid A2A reply "
            f"({detail}); check that the agent speaks the protocol version its "
            "card says"
        )

    def _sdk_error(self, error: A2AError) -> TargetError:
        cause = error.__cause__
        if isinstance(cause, httpx.HTTPError):
            return _transport_error(cause, self.endpoint, "the agent", self._secrets)
        if str(error).startswith(_NOT_JSON_RPC):
            return self._invalid_reply(error)
        detail = self._secrets.excerpt(str(error) or type(error).__name__, _EXCERPT_CHARS)
        return TargetError(
            f"{self.endpoint} answered with an A2A error "
            f"({type(error).__name__}): {detail}. The agent refused or failed "
            "the request; check its logs and that it speaks the protocol "
            "version its card says"
        )


class A2ASession:
    """One conversation with an `A2ATarget`: one A2A context (see the module docstring)."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self.context_id = ""
        """The A2A context, taken from the first reply (`""` until then)."""
        self.task_id = ""
        """The `input-required` task the next message continues (`""`: none)."""
        self._artifacts: ArtifactParts = {}
        """That task's artifacts as the agent holds them after the last answer."""

    async def send(self, transcript: Transcript, /) -> Message:
        """Send the transcript's last (user) message in this session's context.

        Returns:
            The reply: what the agent produced for this message (artifacts of earlier
            turns of a continued task are left out; see `sparring.targets.a2a_wire`).

        Raises:
            TargetError: see `_Connection.send`.
            TargetTimeout: no complete answer within the target's `timeout_s`.
        """
        text, _ = last_user_message(transcript)
        continued = self.task_id
        answer = await self._connection.send(
            text,
            files=transcript.messages[-1].files,
            context_id=self.context_id,
            task_id=continued,
        )
        earlier = self._artifacts if continued and answer.task_id == continued else {}
        self.context_id = answer.context_id or self.context_id
        self.task_id = answer.pending_task_id
        self._artifacts = {**earlier, **answer.artifacts()} if self.task_id else {}
        return answer.message(earlier=earlier)

    async def preload(self, history: Transcript, /) -> Transcript:
        """Replay `history`'s user messages live, in order, in this session's context.

        Returns:
            The replayed conversation: each user message of `history` followed by the
            agent's real reply to it (the agent replies written in `history` are not sent).

        Raises:
            TargetError: a replayed message failed (see `send`).
        """
        replayed = Transcript()
        for message in history.messages:
            if message.role == "user":
                replayed = replayed.with_message(message)
                replayed = replayed.with_message(await self.send(replayed))
        return replayed

    async def close(self) -> None:
        """Nothing to release: an A2A context needs no closing."""


class _BadResponse(Exception):
    """An answer whose status or content type rules out reading it.

    Args:
        url: The request's address, masked for showing.
        detail: What came back, e.g. `answered HTTP 401 Unauthorized. Body starts: ...`.
        status: The HTTP status.
    """

    def __init__(self, url: str, detail: str, *, status: int) -> None:
        self.url, self.detail, self.status = url, detail, status
        super().__init__(f"{url} {detail}")


class _CheckedTransport(httpx.AsyncBaseTransport):
    """Sends the SDK's requests through the run's shared client, and checks each answer's
    status and content type before anyone reads it (`_BadResponse` otherwise)."""

    def __init__(self, client: httpx.AsyncClient, secrets: Secrets) -> None:
        self._client, self._secrets = client, secrets

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._client.send(request, stream=True, follow_redirects=False)
        try:
            await self._check(response)
        except BaseException:
            await response.aclose()
            raise
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=response.stream,
            extensions=response.extensions,
        )

    async def _check(self, response: httpx.Response) -> None:
        status, url = response.status_code, mask_url(str(response.request.url))
        if 300 <= status < 400:
            location = self._secrets.scrub(response.headers.get("location", "(none given)"))
            raise _BadResponse(
                url,
                f"answered HTTP {status}, a redirect to {location}; redirects are not followed.",
                status=status,
            )
        media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        json_like = media in ("application/json", "text/json") or media.endswith("+json")
        if status < 400 and (json_like or media == "text/event-stream"):
            return
        body = (await response.aread()).decode("utf-8", errors="replace")
        excerpt = self._secrets.excerpt(body, _EXCERPT_CHARS)
        if status >= 400:
            hint = (
                " Check the credentials in `headers` (is the secret set and current?)."
                if status in (401, 403)
                else ""
            )
            raise _BadResponse(
                url,
                f"answered HTTP {status} {response.reason_phrase}. Body starts: {excerpt!r}.{hint}",
                status=status,
            )
        raise _BadResponse(
            url,
            f"answered Content-Type {media or '(none)'}, not JSON. Body starts: {excerpt!r}.",
            status=status,
        )


def _parse_card(response: httpx.Response, url: str, fix: str, secrets: Secrets) -> AgentCard:
    excerpt = secrets.excerpt(response.text, _EXCERPT_CHARS)
    try:
        data: Any = response.json()
    except ValueError as e:
        raise TargetError(
            f"{url} is not an agent card: the body is not JSON ({e}). Body "
            f"starts: {excerpt!r}; {fix}"
        ) from None
    if not is_raw_mapping(data) or not ({"supportedInterfaces", "url"} & data.keys()):
        raise TargetError(
            f"{url} is not an A2A agent card: it has no `supportedInterfaces` "
            f"(A2A 1.0) or `url` (A2A 0.3) saying where to send messages. Body "
            f"starts: {excerpt!r}; {fix}"
        )
    try:
        return parse_agent_card(data)
    except ParseError as e:
        raise TargetError(
            f"{url} is not a valid A2A agent card "
            f"({secrets.excerpt(str(e), _EXCERPT_CHARS)}). Body starts: "
            f"{excerpt!r}; {fix}"
        ) from None


def _is_http_url(url: str) -> bool:
    """`url` is an absolute http(s) URL with a host (what the SDK can send to)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.host)


def _transport_error(error: httpx.HTTPError, url: str, what: str, secrets: Secrets) -> TargetError:
    detail = secrets.scrub(str(error) or type(error).__name__)
    if isinstance(error, httpx.ConnectError):
        return TargetError(
            f"could not connect to {url} ({what}): {detail}. Check that the "
            "agent is running and that `url` (scheme, host, port) is right, "
            "and the address its card gives"
        )
    return TargetError(
        f"the request to {url} ({what}) failed: {type(error).__name__}: "
        f"{detail}. The agent may have crashed or closed the connection; check "
        "its logs"
    )
