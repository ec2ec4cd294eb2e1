"""Send one message to a target and record every HTTP exchange it makes (`sparring doctor`).

The target is the real one (`sparring.targets.registry.build_target`), given an HTTP client
whose transport records each request, the response's status and headers, the body bytes as
the target reads them (passed through untouched), and why a request got no response.
Transports that bring their own client (the `openai_chat` SDK) get such a client too.
Secret values and credential headers are masked when the record is read (`exchanges`).
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace

import anyio
import httpx

from sparring.cli.doctor.records import Exchange, Failure, Probe, TransportError
from sparring.errors import TARGET_TIMEOUT_HINT, RunError, TargetTimeout
from sparring.secrets import MASK, Secrets
from sparring.target_specs import HttpTargetSpec, OpenAIChatTargetSpec
from sparring.targets.base import Target
from sparring.targets.registry import AnyTargetSpec, build_target
from sparring.targets.response_paths import ResponsePathError
from sparring.transcript import Message, Transcript

_CREDENTIAL_HEADERS = (
    "authorization",
    "cookie",
    "api-key",
    "apikey",
    "token",
    "secret",
    "password",
)
"""A request or response header whose name contains one of these is shown masked."""
MAX_BODY_BYTES = 1_000_000
"""Bytes of a response body kept in the record; the target still gets all of them."""
_GRACE_S = 1.0
"""Extra time past the target's own `timeout_s` before the probe gives up on a target
that does not enforce it."""


@dataclass(eq=False)
class _Record:
    request: httpx.Request
    started: float
    response: httpx.Response | None = None
    elapsed_ms: float | None = None
    raw: bytearray = field(default_factory=bytearray)
    finished: bool = False
    error: httpx.TransportError | None = None


class Recorder:
    """Makes HTTP clients that record every exchange they make.

    Args:
        secrets: Its values are masked in the urls, headers and bodies of `exchanges`.
    """

    def __init__(self, *, secrets: Secrets) -> None:
        self._secrets = secrets
        self._records: list[_Record] = []
        self.marked: int | None = None

    def client(self, *, follow_redirects: bool) -> httpx.AsyncClient:
        """A new client that records into this recorder; the caller closes it."""
        return httpx.AsyncClient(
            transport=_RecordingTransport(self._records), follow_redirects=follow_redirects
        )

    def mark(self) -> None:
        """Note that the exchanges so far produced the reply or the failure (`marked`); later
        ones end the conversation."""
        self.marked = len(self._records)

    def exchanges(self) -> tuple[Exchange, ...]:
        """The exchanges so far, secrets and credentials masked."""
        return tuple(self._exchange(r) for r in self._records)

    def _exchange(self, record: _Record) -> Exchange:
        scrub, request, response = self._secrets.scrub, record.request, record.response
        try:
            sent = request.content.decode("utf-8", errors="replace")
        except httpx.RequestNotRead:
            sent = "(a streamed body, not recorded)"
        exchange = Exchange(
            method=request.method,
            url=scrub(str(request.url)),
            request_headers=self._headers(request.headers),
            request_body=scrub(sent),
            elapsed_ms=record.elapsed_ms,
        )
        if record.error is not None:
            detail = scrub(str(record.error) or type(record.error).__name__)
            return replace(exchange, error=_transport_error(record.error), error_detail=detail)
        if response is None:
            return exchange
        return replace(
            exchange,
            status=response.status_code,
            reason=response.reason_phrase,
            response_headers=self._headers(response.headers),
            response_body=_shown_body(_decoded(response, bytes(record.raw)), scrub),
            body_complete=record.finished,
        )

    def _headers(self, headers: httpx.Headers) -> tuple[tuple[str, str], ...]:
        """`(name, value)` pairs as sent (names in their own case), credentials masked."""
        pairs = [(k.decode(headers.encoding), v.decode(headers.encoding)) for k, v in headers.raw]
        return tuple(
            (name, self._secrets.scrub(_mask_credential(name, value))) for name, value in pairs
        )


_SPLIT_SECRET = (
    "(the stream is left out: its events hold a secret value split across them, which "
    "cannot be masked event by event)"
)


def _shown_body(body: str, scrub: Callable[[str], str]) -> str:
    """`body` scrubbed; a server-sent-event stream whose `data:` lines hold a secret once
    joined is left out whole (a piece of a secret split across events would show)."""
    data = [line[5:].removeprefix(" ") for line in body.splitlines() if line.startswith("data:")]
    joined = "".join(data)
    return _SPLIT_SECRET if data and scrub(joined) != joined else scrub(body)


def _decoded(response: httpx.Response, raw: bytes) -> str:
    """`raw` body bytes as text, undoing any Content-Encoding (gzip, ...) of `response`."""
    try:
        return httpx.Response(response.status_code, headers=response.headers, content=raw).text
    except httpx.DecodingError:
        return raw.decode("utf-8", errors="replace")


class _RecordingTransport(httpx.AsyncBaseTransport):
    def __init__(self, records: list[_Record]) -> None:
        self._records = records
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        record = _Record(request, time.perf_counter())
        self._records.append(record)
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError as e:
            record.error = e
            raise
        record.elapsed_ms = round((time.perf_counter() - record.started) * 1000, 3)
        record.response = response
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Tee(response.stream, record),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Tee(httpx.AsyncByteStream):
    """Passes a response body through to its reader, keeping a copy in `record`."""

    def __init__(
        self, inner: httpx.SyncByteStream | httpx.AsyncByteStream, record: _Record
    ) -> None:
        assert isinstance(inner, httpx.AsyncByteStream), "an async transport's stream"
        self._inner, self._record = inner, record

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            room = MAX_BODY_BYTES - len(self._record.raw)
            if room > 0:
                self._record.raw += chunk[:room]
            yield chunk
        self._record.finished = True

    async def aclose(self) -> None:
        await self._inner.aclose()


def _mask_credential(name: str, value: str) -> str:
    """`***` for credential headers (`Bearer ***` keeps the scheme), else `value`."""
    lowered = name.lower()
    if not any(word in lowered for word in _CREDENTIAL_HEADERS):
        return value
    scheme, _, rest = value.partition(" ")
    return f"{scheme} {MASK}" if rest and scheme.isalpha() else MASK


def _transport_error(error: httpx.TransportError) -> TransportError:
    if isinstance(error, httpx.ConnectTimeout):
        return "connect_timeout"
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    if isinstance(error, httpx.ConnectError):
        causes = _causes(error)
        if any(isinstance(c, ConnectionRefusedError) for c in causes):
            return "refused"
        if any(isinstance(c, socket.gaierror) for c in causes):
            return "dns"
        return "connect"
    if isinstance(error, httpx.RemoteProtocolError | httpx.ReadError):
        return "closed"
    return "other"


def _causes(error: BaseException) -> list[BaseException]:
    """`error`'s chain of causes (at most 20 deep)."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(found) < 20:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


async def probe(spec: AnyTargetSpec, *, message: str, secrets: Secrets) -> Probe:
    """Send `message` as the first user message of a new conversation with the target of
    `spec`, recording every HTTP exchange.

    Returns:
        The exchanges, the reply or how sending failed (never raises for a target that
        fails: that is what the probe is for).

    Raises:
        UserError: the target cannot be built (a secret not set, a missing extra, ...).
    """
    recorder = Recorder(secrets=secrets)
    reply: Message | None = None
    failure: Failure | None = None
    error = ""
    async with recorder.client(follow_redirects=False) as client:
        target = _build(spec, client=client, recorder=recorder, secrets=secrets)
        try:
            reply = await _send_one(
                target, message, recorder=recorder, timeout_s=spec.timeout_s + _GRACE_S
            )
        except TargetTimeout as e:
            failure, error = "timeout", secrets.scrub(str(e))
        except ResponsePathError as e:
            failure, error = "response_path", secrets.scrub(str(e))
        except RunError as e:
            failure, error = "error", secrets.scrub(str(e))
        finally:
            with anyio.CancelScope(shield=True):
                await target.aclose()
    http = spec if isinstance(spec, HttpTargetSpec) else None
    return Probe(
        target_type=spec.type,
        message=message,
        exchanges=recorder.exchanges(),
        answered_after=recorder.marked,
        reply=reply,
        failure=failure,
        error=error,
        timeout_s=spec.timeout_s,
        response_path=http.response_path if http else None,
        tool_calls_path=http.tool_calls_path if http else None,
    )


def _build(
    spec: AnyTargetSpec, *, client: httpx.AsyncClient, recorder: Recorder, secrets: Secrets
) -> Target:
    """The target as a run builds it; the openai_chat SDK gets a recording client of its own
    (following redirects, as the SDK's default client does)."""
    if isinstance(spec, OpenAIChatTargetSpec):
        from sparring.targets.openai_chat import OpenAIChatTarget

        return OpenAIChatTarget(
            spec, secrets=secrets, http_client=recorder.client(follow_redirects=True)
        )
    return build_target(spec, client=client, secrets=secrets)


async def _send_one(
    target: Target, message: str, *, recorder: Recorder, timeout_s: float
) -> Message:
    """Open a conversation, send `message`, close it; `recorder.mark()` between sending and
    closing. A failed send's error is the one raised, even if closing fails too."""
    transcript = Transcript(messages=(Message(role="user", content=message),))
    try:
        with anyio.fail_after(timeout_s):
            session = await target.open_session()
            try:
                reply = await session.send(transcript)
            except BaseException:
                recorder.mark()
                with anyio.CancelScope(shield=True), suppress(RunError):
                    await session.close()
                raise
            recorder.mark()
            await session.close()
            return reply
    except TimeoutError:
        raise TargetTimeout(
            target=target.name, timeout_seconds=timeout_s, hint=TARGET_TIMEOUT_HINT
        ) from None
