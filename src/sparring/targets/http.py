"""`HttpTarget`: an agent behind a JSON-over-HTTP endpoint (DESIGN.md section 4, `http`).

Each turn fills `url`, `headers` and `body_template` (see `templates`), sends one request,
checks the HTTP status first (>= 400 and redirects are errors; redirects are never
followed), then reads the reply: `text/event-stream` replies are assembled event by event as
they arrive, JSON bodies go through `response_path`, and any other body is the reply text.
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

from sparring.errors import TargetError, TargetTimeout
from sparring.scenario import HttpTargetSpec
from sparring.secrets import Secrets
from sparring.targets.templates import (
    History,
    JsonTemplate,
    ResponsePath,
    ResponsePathError,
    TextTemplate,
    compile_body,
    last_user_message,
    render_reply,
    secret_names,
    tool_calls_from,
)
from sparring.transcript import Message, ToolCall, Transcript

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

    Raises:
        UserError: `response_path` or `tool_calls_path` does not parse, or a
            `{{secrets.NAME}}` used in `url`, `headers` or `body_template` is not set (checked
            here, so a run fails before its first conversation).
    """

    def __init__(self, spec: HttpTargetSpec, *, client: httpx.AsyncClient, secrets: Secrets,
                 name: str | None = None) -> None:
        self.spec = spec
        self.name = name or spec.url.split("?", 1)[0]
        self._client, self._secrets = client, secrets
        self._url = TextTemplate(spec.url, url=True)
        self._headers = {key: TextTemplate(value) for key, value in spec.headers.items()}
        self._body = None if spec.method in _NO_BODY else compile_body(spec.body_template)
        self._content_type = ("application/json" if isinstance(self._body, JsonTemplate)
                              else "text/plain; charset=utf-8")
        self._response_path = ResponsePath(spec.response_path)
        self._tool_calls_path = (ResponsePath(spec.tool_calls_path, option="tool_calls_path")
                                 if spec.tool_calls_path is not None else None)
        self._timeout = httpx.Timeout(spec.timeout_s)
        texts: list[JsonValue] = [spec.url, *spec.headers.values(), spec.body_template]
        for secret in sorted(secret_names(texts)):
            secrets.get(secret)  # fail early; also marks the value for scrubbing

    async def open_session(self) -> HttpSession:
        """Start a conversation (no server-side state: the history is sent each turn)."""
        return HttpSession(self)

    async def aclose(self) -> None:
        """Nothing to release: the shared client belongs to the runner."""

    async def send(self, message: str, history: History) -> Message:
        """Send one user message with the earlier turns; return the agent's reply.

        Args:
            message: The user message for `{{input}}` / `{{message}}`.
            history: Earlier turns for `{{history}}`, `[{"role", "content"}]`.

        Returns:
            An agent `Message` with `content`, `tool_calls`, `raw` (parsed body, body text,
            or the list of stream events) and `latency_ms` (request sent to reply read).

        Raises:
            TargetError: HTTP status >= 400, a redirect, a connection error, a missing
                `response_path` or malformed tool calls; messages never contain secrets.
            TargetTimeout: no complete reply within `timeout_s`.
            UserError: a `{{secrets.NAME}}` that is not set.
        """
        request = self._build(message, history)
        start = time.perf_counter()
        try:
            with anyio.fail_after(self.spec.timeout_s):
                reply = await self._exchange(request)
        except (TimeoutError, httpx.TimeoutException):
            raise TargetTimeout(target=self.name, timeout_seconds=self.spec.timeout_s) from None
        except httpx.HTTPError as e:
            raise self._transport_error(e, request) from None
        latency_ms = (time.perf_counter() - start) * 1000
        return Message(role="agent", content=reply.text, tool_calls=reply.tool_calls,
                       raw=reply.raw, latency_ms=round(latency_ms, 3))

    def _build(self, message: str, history: History) -> httpx.Request:
        secrets = self._secrets
        url = self._url.fill(message=message, history=history, secrets=secrets)
        headers = {key: template.fill(message=message, history=history, secrets=secrets)
                   for key, template in self._headers.items()}
        content: bytes | None = None
        if isinstance(self._body, JsonTemplate):
            body = self._body.fill(message=message, history=history, secrets=secrets)
            content = json.dumps(body, ensure_ascii=False).encode()
        elif self._body is not None:
            content = self._body.fill(message=message, history=history, secrets=secrets).encode()
        if content is not None and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = self._content_type
        try:
            return self._client.build_request(self.spec.method, url, headers=headers,
                                              content=content, timeout=self._timeout)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as e:
            raise TargetError(f"target {self.name!r}: {self._secrets.scrub(url)!r} is not a "
                              f"usable URL ({self._secrets.scrub(str(e))}); check `url`, e.g. "
                              "https://bot.example.com/chat") from None

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
        status, url = response.status_code, self._secrets.scrub(str(response.request.url))
        if 300 <= status < 400:
            location = self._secrets.scrub(response.headers.get("location", "(none given)"))
            raise TargetError(
                f"{url} answered HTTP {status}, a redirect to {location}; redirects are not "
                "followed: set `url` to the final address", status=status)
        if status >= 400:
            excerpt = self._secrets.scrub(await _read_excerpt(response))
            raise TargetError(f"{url} answered HTTP {status} {response.reason_phrase}. Body "
                              f"starts: {excerpt!r}. {_status_hint(status)}", status=status)

    def _read_body(self, response: httpx.Response) -> _Reply:
        text = response.text
        is_json, data = _parse_json(text, response.headers.get("content-type", ""))
        if not is_json:
            return _Reply(text, (), text)
        value = self._response_path.extract(data, scrub=self._secrets.scrub)
        return _Reply(render_reply(value), self._tool_calls(data), data)

    def _tool_calls(self, data: JsonValue) -> tuple[ToolCall, ...]:
        if self._tool_calls_path is None:
            return ()
        try:  # no tool calls is the common case: a missing path means none
            value = self._tool_calls_path.extract(data)
        except ResponsePathError:
            return ()
        return tool_calls_from(value, where=f"tool_calls_path {self._tool_calls_path.path!r}")

    async def _read_stream(self, response: httpx.Response) -> _Reply:
        pieces: list[str] = []
        events: list[JsonValue] = []
        calls = _StreamedCalls()
        missing: ResponsePathError | None = None
        async for data in _sse_data(response):
            try:
                event: JsonValue = json.loads(data)
            except ValueError:
                pieces.append(data)
                events.append(data)
                continue
            events.append(event)
            if self._tool_calls_path is not None:
                calls.add(_extract_or_none(self._tool_calls_path, event))
            try:
                value = self._response_path.extract(event, scrub=self._secrets.scrub)
            except ResponsePathError as e:
                missing = missing or e
                continue
            if value is not None:
                pieces.append(render_reply(value))
        if missing is not None and not pieces and not calls:
            raise missing
        where = f"tool_calls_path {self.spec.tool_calls_path!r}"
        return _Reply("".join(pieces), tool_calls_from(calls.items, where=where), events)

    def _transport_error(self, error: httpx.HTTPError, request: httpx.Request) -> TargetError:
        url = self._secrets.scrub(str(request.url))
        detail = self._secrets.scrub(str(error) or type(error).__name__)
        if isinstance(error, httpx.UnsupportedProtocol):
            return TargetError(f"{url} is not a usable URL ({detail}); check `url`, e.g. "
                               "https://bot.example.com/chat")
        if isinstance(error, httpx.ConnectError):
            return TargetError(f"could not connect to {url}: {detail}. Check that the agent is "
                               "running and that `url` (scheme, host, port) is right")
        return TargetError(f"the request to {url} failed: {type(error).__name__}: {detail}. "
                           "The agent may have crashed or closed the connection; check its logs")


class HttpSession:
    """One conversation with an `HttpTarget` (stateless: nothing kept between turns)."""

    def __init__(self, target: HttpTarget) -> None:
        self._target = target

    async def send(self, transcript: Transcript, /) -> Message:
        """Send the transcript's last (user) message with the earlier ones as history."""
        message, history = last_user_message(transcript)
        return await self._target.send(message, history)

    async def close(self) -> None:
        """Nothing to release."""


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


def _extract_or_none(path: ResponsePath, data: JsonValue) -> JsonValue:
    try:
        return path.extract(data)
    except ResponsePathError:
        return None


async def _sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event, as it arrives; stops at `[DONE]`."""
    lines: list[str] = []
    async for line in response.aiter_lines():
        if line:
            field, _, value = line.partition(":")
            if field == "data":
                lines.append(value[1:] if value.startswith(" ") else value)
            continue
        if lines:
            data, lines = "\n".join(lines), []
            if data.strip() == "[DONE]":
                return
            yield data
    if lines and "\n".join(lines).strip() != "[DONE]":
        yield "\n".join(lines)


def _parse_json(text: str, content_type: str) -> tuple[bool, JsonValue]:
    """`(True, data)` when the body is JSON (by content type or first character)."""
    stripped = text.lstrip()
    if not stripped or ("json" not in content_type.lower() and stripped[0] not in "{["):
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


async def _read_excerpt(response: httpx.Response) -> str:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= _EXCERPT_CHARS * 4:
            break
    return b"".join(chunks).decode("utf-8", errors="replace")[:_EXCERPT_CHARS]


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return "Check the credentials in `headers` or `url` (is the secret set and current?)"
    if status in (404, 405):
        return "Check `url` and `method`"
    if status in (400, 409, 415, 422):
        return "Check that `body_template` matches what the endpoint expects"
    if status == 429:
        return "The agent is rate limiting: lower `--concurrency` or retry later"
    if status >= 500:
        return "The agent failed on its side; see its logs"
    return "Check the target's `url`, `method`, `headers` and `body_template`"
