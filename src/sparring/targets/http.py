"""`HttpTarget`: an agent behind a JSON-over-HTTP endpoint (DESIGN.md section 4, `http`).

Each turn fills `url`, `headers` and `body_template` (see `templates`), sends one request,
checks the HTTP status first (>= 400 and redirects are errors; redirects are never
followed), then reads the reply: `text/event-stream` replies are assembled event by event as
they arrive (an `error` event fails the turn), JSON bodies go through `response_path` (a body
sent as JSON that does not parse is an error), and any other body is the reply text.
`NaN` / `Infinity` in JSON are kept as strings, so `raw` is always strict JSON; JSON nested
deeper than `MAX_JSON_DEPTH` is an error (no report could hold it).
The target is stateless: every turn sends the message plus the history before it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import httpx
from pydantic import JsonValue

from sparring.errors import TARGET_TIMEOUT_HINT, TargetError, TargetTimeout, UserError
from sparring.secrets import Secrets
from sparring.target_specs import HttpTargetSpec
from sparring.targets.attachments import FileEntry, file_entries
from sparring.targets.base import StatelessSession
from sparring.targets.headers import HeaderTemplate
from sparring.targets.response_paths import ResponsePath, ResponsePathError
from sparring.targets.templates import (
    History,
    JsonTemplate,
    TextTemplate,
    compile_body,
    last_user_message,
    misspelt_placeholders,
    placeholder_names,
    render_reply,
    secret_names,
    tool_calls_from,
)
from sparring.transcript import (
    MAX_JSON_DEPTH,
    JsonTooDeep,
    Message,
    ToolCall,
    Transcript,
    content_text,
    parse_json,
)

_EXCERPT_CHARS = 300
_NO_BODY = frozenset({"GET", "HEAD"})


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    tool_calls: tuple[ToolCall, ...]
    raw: JsonValue


class HttpTarget:
    """Sends each user message to an HTTP endpoint and reads the agent's reply.

    Args:
        spec: The endpoint, templates and response paths.
        client: Shared by every target and conversation of a run; must be created with
            `follow_redirects=False`. The target never closes it.
        secrets: Fills `{{secrets.NAME}}` and scrubs secret values from error messages.
        name: Shown in reports; default is `url` up to its query string (placeholders kept,
            values never shown).

    Errors never show the filled url: they show `url` as written (placeholders unfilled),
    so a secret in it cannot leak through the HTTP library's partial percent-encoding;
    known secret values are also scrubbed from every message.

    Raises:
        UserError: `response_path` or `tool_calls_path` does not parse; a
            `{{secrets.NAME}}` used in `url`, `headers` or `body_template` is not set; the
            user's message is sent nowhere (no `{{input}}` / `{{message}}` in `url`,
            `headers` or a body the method sends); a header name or value that HTTP
            cannot carry (all checked here, so a run fails before its first conversation).
    """

    def __init__(
        self,
        spec: HttpTargetSpec,
        *,
        client: httpx.AsyncClient,
        secrets: Secrets,
        name: str | None = None,
    ) -> None:
        self.spec = spec
        self.name = name or spec.url.split("?", 1)[0]
        self._client, self._secrets = client, secrets
        self._url = TextTemplate(spec.url, url=True)
        self._body = None if spec.method in _NO_BODY else compile_body(spec.body_template)
        self._content_type = (
            "application/json"
            if isinstance(self._body, JsonTemplate)
            else "text/plain; charset=utf-8"
        )
        self._response_path = ResponsePath(spec.response_path)
        self._tool_calls_path = (
            ResponsePath(spec.tool_calls_path, option="tool_calls_path")
            if spec.tool_calls_path is not None
            else None
        )
        self._timeout = httpx.Timeout(spec.timeout_s)
        texts: list[JsonValue] = [spec.url, *spec.headers.values(), spec.body_template]
        if typos := misspelt_placeholders(texts):
            raise UserError(
                f"target {self.name!r}: unknown placeholder {', '.join(typos)}; "
                f"the placeholders are {{{{input}}}}, {{{{message}}}}, "
                "{{history}}, {{files}} and {{secrets.NAME}}"
            )
        for secret in sorted(secret_names(texts)):
            secrets.get(secret)  # fail early; also marks the value for scrubbing
        self._shown_url = secrets.scrub(spec.url)  # as written: placeholders, not values
        self._headers = [
            HeaderTemplate(key, value, secrets=secrets) for key, value in spec.headers.items()
        ]
        self._check_message_is_sent()
        self._takes_files = self._body is not None and "files" in placeholder_names(
            spec.body_template
        )

    def _check_message_is_sent(self) -> None:
        spec = self.spec
        sent: list[JsonValue] = [spec.url, *spec.headers.values()]
        if self._body is not None:
            sent.append(spec.body_template)
        if placeholder_names(sent) & {"input", "message"}:
            return
        why = ""
        if self._body is None and placeholder_names(spec.body_template) & {"input", "message"}:
            why = f" (method {spec.method} sends no body, so `body_template` is not used)"
        raise UserError(
            f"target {self.name!r} never sends the user's message{why}: put "
            "{{input}} in body_template, or in the url for GET (e.g. "
            "`?q={{input}}`)"
        )

    async def open_session(self) -> HttpSession:
        """Start a conversation (no server-side state: the history is sent each turn)."""
        return HttpSession(self)

    async def aclose(self) -> None:
        """Nothing to release: the shared client belongs to the runner."""

    async def send(
        self, message: str, history: History, *, files: list[FileEntry] | None = None
    ) -> Message:
        """Send one user message with the earlier turns; return the agent's reply.

        Args:
            message: The user message for `{{input}}` / `{{message}}`.
            history: Earlier turns for `{{history}}`, `[{"role", "content"}]`.
            files: The message's files for `{{files}}` (`file_entries`); files given to a
                target whose body has no `{{files}}` are an error, never dropped.

        Returns:
            An agent `Message` with `content`, `tool_calls`, `raw` (parsed body, body text,
            or the list of stream events) and `latency_ms` (request sent to reply read).

        Raises:
            TargetError: HTTP status >= 400, a redirect, a connection error, a missing
                `response_path`, malformed tool calls, a JSON Content-Type with a body that
                does not parse, an error object or SSE `error` event instead of a reply, or
                a message that a header cannot carry; messages show `url` as written and
                never contain secrets.
            TargetTimeout: no complete reply within `timeout_s`.
            UserError: a `{{secrets.NAME}}` that is not set.
        """
        request = self._build(message, history, files or [])
        start = time.perf_counter()
        try:
            with anyio.fail_after(self.spec.timeout_s):
                reply = await self._exchange(request)
        except (TimeoutError, httpx.TimeoutException):
            raise TargetTimeout(
                target=self.name, timeout_seconds=self.spec.timeout_s, hint=TARGET_TIMEOUT_HINT
            ) from None
        except httpx.HTTPError as e:
            raise self._transport_error(e) from None
        latency_ms = (time.perf_counter() - start) * 1000
        return Message(
            role="agent",
            content=reply.text,
            tool_calls=reply.tool_calls,
            raw=reply.raw,
            latency_ms=round(latency_ms, 3),
        )

    def _build(self, message: str, history: History, files: list[FileEntry]) -> httpx.Request:
        secrets = self._secrets
        if files and not self._takes_files:
            raise TargetError(
                f"target {self.name!r} (http) was given files, but its body_template has no "
                '{{files}}, so they would be dropped; add e.g. `files: "{{files}}"` to '
                "body_template (a list of {name, mime_type, data} with base64 data)"
            )
        url = self._url.fill(message=message, history=history, secrets=secrets)
        headers = {
            h.name: h.fill(message=message, history=history, secrets=secrets) for h in self._headers
        }
        content: bytes | None = None
        if isinstance(self._body, JsonTemplate):
            body = self._body.fill(message=message, history=history, secrets=secrets, files=files)
            content = json.dumps(body, ensure_ascii=False).encode()
        elif self._body is not None:
            filled = self._body.fill(message=message, history=history, secrets=secrets, files=files)
            content = filled.encode()
        if content is not None and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = self._content_type
        try:
            request = self._client.build_request(
                self.spec.method, url, headers=headers, content=content, timeout=self._timeout
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as e:
            raise self._bad_url(e) from None
        port = request.url.port
        if port is not None and not 0 < port < 65536:  # httpx leaves this to the socket
            raise self._bad_url(httpx.InvalidURL(f"port {port} is not in 1-65535"))
        return request

    def _bad_url(self, error: httpx.HTTPError | httpx.InvalidURL) -> TargetError:
        """The filled url does not parse. httpx's detail may quote part of a secret (say the
        text before a `#` in it), which scrubbing cannot catch, so it is left out then."""
        if secret_names(self.spec.url):
            detail = (
                "once its {{secrets.NAME}} values are filled in; a secret placed before "
                "`?` must be percent-encoded where it holds @ : / # ? % or spaces"
            )
        else:
            detail = f"({self._secrets.scrub(str(error) or type(error).__name__)})"
        return TargetError(
            f"target {self.name!r}: {self._shown_url!r} is not a usable URL "
            f"{detail}; check `url`, e.g. https://bot.example.com/chat"
        )

    async def _exchange(self, request: httpx.Request) -> _Reply:
        response = await self._client.send(request, stream=True, follow_redirects=False)
        try:
            await self._check_status(response)
            if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
                return await self._read_stream(response)
            await response.aread()
            return self._read_body(response)
        finally:
            await response.aclose()

    async def _check_status(self, response: httpx.Response) -> None:
        status, url = response.status_code, self._shown_url
        if 300 <= status < 400:
            location = self._secrets.scrub(response.headers.get("location", "(none given)"))
            raise TargetError(
                f"{url} answered HTTP {status}, a redirect to {location}; redirects are not "
                "followed: set `url` to the final address",
                status=status,
            )
        if status >= 400:
            text, truncated = await _read_start(response)
            excerpt = self._secrets.excerpt(text, _EXCERPT_CHARS, truncated=truncated)
            raise TargetError(
                f"{url} answered HTTP {status} {response.reason_phrase}. Body "
                f"starts: {excerpt!r}. {_status_hint(status)}",
                status=status,
            )

    def _read_body(self, response: httpx.Response) -> _Reply:
        text = response.text
        media_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if _is_json_type(media_type):
            if not text.strip() and (
                response.request.method == "HEAD" or response.status_code == 204
            ):
                return _Reply("", (), "")  # no body by definition
            try:
                data = self._loads(text)
            except ValueError as e:
                raise self._invalid_json(media_type, text, e) from None
        else:
            stripped = text.lstrip()
            if not stripped or stripped[0] not in "{[":
                return _Reply(text, (), text)  # a non-JSON body is the reply text
            try:
                data = self._loads(text)
            except ValueError:
                return _Reply(text, (), text)
        value = self._extract(data)
        return _Reply(render_reply(value), self._tool_calls(data), data)

    def _loads(self, text: str) -> JsonValue:
        """`parse_json(text)`.

        Raises:
            TargetError: nested deeper than `MAX_JSON_DEPTH`.
            ValueError: not JSON.
        """
        try:
            return parse_json(text)
        except JsonTooDeep:
            raise TargetError(
                f"{self._shown_url} answered JSON nested more than {MAX_JSON_DEPTH} levels "
                "deep, which sparring does not read; check that the agent's reply is what "
                "it means to send"
            ) from None

    def _invalid_json(self, media_type: str, text: str, error: ValueError) -> TargetError:
        reason = "the body is empty" if not text.strip() else str(error)
        excerpt = self._secrets.excerpt(text, _EXCERPT_CHARS)
        return TargetError(
            f"{self._shown_url} answered Content-Type {media_type} but the body is not valid "
            f"JSON ({reason}): {excerpt!r}. The agent may have failed mid-reply or sent the "
            "wrong Content-Type; check its logs"
        )

    def _extract(self, data: JsonValue) -> JsonValue:
        """The value at `response_path`; an `error` object in place of it is reported as
        the agent's error rather than as a wrong path."""
        try:
            return self._response_path.extract(data, scrub=self._secrets.scrub)
        except ResponsePathError:
            error = _error_of(data)
            if error is not None:
                raise self._agent_error(
                    error, streamed=False, json_rpc=_is_json_rpc(data)
                ) from None
            raise

    def _agent_error(
        self, error: JsonValue, *, streamed: bool, json_rpc: bool = False
    ) -> TargetError:
        """The agent's `error` in place of a reply; `json_rpc`: it came in a JSON-RPC 2.0
        response, so the url is most likely an A2A agent's endpoint."""
        text = error if isinstance(error, str) else content_text(error)
        excerpt = self._secrets.excerpt(text, _EXCERPT_CHARS)
        how = "streamed an error event" if streamed else "answered an error"
        hint = (
            "It is a JSON-RPC 2.0 error: the url looks like a JSON-RPC (A2A) endpoint, "
            "which does not take a plain chat message; for an A2A agent use `type: a2a` "
            "with `url:` the agent's base address"
            if json_rpc
            else "The agent failed while answering; check its logs"
        )
        return TargetError(f"{self._shown_url} {how} instead of a reply: {excerpt!r}. {hint}")

    def _tool_calls(self, data: JsonValue) -> tuple[ToolCall, ...]:
        if self._tool_calls_path is None:
            return ()
        # A misspelt path must not pass for "no tool calls": `tool_called: {exclude: [...]}`
        # would then pass without looking at anything (see `extract_optional`).
        value = self._tool_calls_path.extract_optional(data, scrub=self._secrets.scrub)
        return tool_calls_from(value, where=f"tool_calls_path {self._tool_calls_path.path!r}")

    async def _read_stream(self, response: httpx.Response) -> _Reply:
        pieces: list[str] = []
        events: list[JsonValue] = []
        calls = _StreamedCalls()
        missing: ResponsePathError | None = None
        async for kind, data in _sse_events(response):
            if kind == "error":
                raise self._agent_error(data or "(no data)", streamed=True)
            try:
                event = self._loads(data)
            except ValueError:
                pieces.append(data)
                events.append(data)
                continue
            events.append(event)
            if self._tool_calls_path is not None:
                calls.add(self._tool_calls_path.extract_optional(event, scrub=self._secrets.scrub))
            try:
                value = self._response_path.extract(event, scrub=self._secrets.scrub)
            except ResponsePathError as e:
                error = _error_of(event)
                if error is not None:
                    raise self._agent_error(
                        error, streamed=True, json_rpc=_is_json_rpc(event)
                    ) from None
                missing = missing or e
                continue
            if value is not None:
                pieces.append(render_reply(value))
        if missing is not None and not pieces and not calls:
            raise missing
        where = f"tool_calls_path {self.spec.tool_calls_path!r}"
        text, tool_calls = "".join(pieces), tool_calls_from(calls.items, where=where)
        joined = text + "".join(c.arguments_raw for c in tool_calls)
        if self._secrets.scrub(joined) != joined:  # a secret split across events: the
            events = [_EVENTS_WITHHELD]  # events cannot be masked one by one
        return _Reply(text, tool_calls, events)

    def _transport_error(self, error: httpx.HTTPError) -> TargetError:
        url = self._shown_url
        if isinstance(error, httpx.UnsupportedProtocol):
            return self._bad_url(error)
        detail = self._secrets.scrub(str(error) or type(error).__name__)
        if isinstance(error, httpx.ConnectError):
            return TargetError(
                f"could not connect to {url}: {detail}. Check that the agent is "
                "running and that `url` (scheme, host, port) is right"
            )
        return TargetError(
            f"the request to {url} failed: {type(error).__name__}: {detail}. "
            "The agent may have crashed or closed the connection; check its logs"
        )


class HttpSession(StatelessSession):
    """One conversation with an `HttpTarget` (stateless: nothing kept between turns)."""

    def __init__(self, target: HttpTarget) -> None:
        self._target = target

    async def send(self, transcript: Transcript, /) -> Message:
        """Send the transcript's last (user) message with the earlier ones as history."""
        message, history = last_user_message(transcript)
        files = file_entries(transcript.messages[-1].files)
        return await self._target.send(message, history, files=files)

    async def close(self) -> None:
        """Nothing to release."""


_EVENTS_WITHHELD = (
    "(stream events left out of the record: the streamed reply held a secret "
    "value, which could be split across events)"
)


class _StreamedCalls:
    """Tool calls from stream events; OpenAI-style deltas (`index`) are merged."""

    def __init__(self) -> None:
        self.items: list[dict[str, JsonValue]] = []
        self._by_index: dict[int, dict[str, JsonValue]] = {}

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, value: JsonValue) -> None:
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                continue
            index = item.get("index")
            if not isinstance(index, int):
                self.items.append(item)
                continue
            slot = self._by_index.get(index)
            if slot is None:
                slot = self._by_index[index] = {"name": "", "arguments": ""}
                self.items.append(slot)
            _merge_delta(slot, item)


def _merge_delta(slot: dict[str, JsonValue], item: dict[str, JsonValue]) -> None:
    fn = item.get("function")
    source = fn if isinstance(fn, dict) else item
    if isinstance(source.get("name"), str) and source["name"]:
        slot["name"] = source["name"]
    args = source.get("arguments")
    previous = slot.get("arguments")
    if isinstance(args, str) and isinstance(previous, str):
        slot["arguments"] = previous + args
    elif args is not None:
        slot["arguments"] = args
    if isinstance(item.get("id"), str):
        slot["id"] = item["id"]


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """`(event type, data)` of each server-sent event, as it arrives; the type is `message`
    unless an `event:` line names it. Stops at `[DONE]`; an `error` event is passed on even
    without data."""
    lines: list[str] = []
    kind = "message"
    async for line in response.aiter_lines():
        if line:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                lines.append(value)
            elif field == "event":
                kind = value.strip() or "message"
            continue
        if lines or kind == "error":
            data, lines, event_kind, kind = "\n".join(lines), [], kind, "message"
            if data.strip() == "[DONE]":
                return
            yield event_kind, data
        kind = "message"
    if (lines or kind == "error") and "\n".join(lines).strip() != "[DONE]":
        yield kind, "\n".join(lines)


def _error_of(data: JsonValue) -> JsonValue:
    """The top-level `error` of an object (`None` when absent, null or false)."""
    if isinstance(data, dict):
        error = data.get("error")
        return error if error is not None and error is not False else None
    return None


def _is_json_rpc(data: JsonValue) -> bool:
    """`data` is a JSON-RPC 2.0 response (`"jsonrpc": "2.0"`), as A2A agents answer."""
    return isinstance(data, dict) and data.get("jsonrpc") == "2.0"


def _is_json_type(media_type: str) -> bool:
    """`application/json`, `text/json` or any `+json` type, e.g. `application/problem+json`."""
    return media_type in ("application/json", "text/json") or media_type.endswith("+json")


async def _read_start(response: httpx.Response) -> tuple[str, bool]:
    """The start of an error body, enough for an excerpt, and whether more was left unread
    (then a secret may be cut off at its end: see `Secrets.excerpt`). Not cut to the
    excerpt length here: scrubbing comes first."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= _EXCERPT_CHARS * 4:
            return b"".join(chunks).decode("utf-8", errors="replace"), True
    return b"".join(chunks).decode("utf-8", errors="replace"), False


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return "Check the credentials in `headers` or `url` (is the secret set and current?)"
    if status in (404, 405):
        return "Check `url` and `method`"
    if status in (400, 409, 415, 422):
        return "Check that `body_template` matches what the endpoint expects"
    if status == 429:
        return "The agent is rate limiting: lower `--parallel` or retry later"
    if status >= 500:
        return "The agent failed on its side; see its logs"
    return "Check the target's `url`, `method`, `headers` and `body_template`"
