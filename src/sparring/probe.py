"""Send one message to a target and record every HTTP exchange it makes (`sparring doctor`).

The target is the real one (`sparring.targets.registry.build_target`), given an HTTP client
whose transport records each request (and why it got no response) and whose response hook
records the status, headers and body. Transports that bring their own client (the
`openai_chat` SDK) get such a client too. Secret values and credential headers are masked
as they are recorded, so nothing recorded can leak them.
"""

from __future__ import annotations

import socket
import time
from dataclasses import replace

import anyio
import httpx

from sparring.diagnosis import Exchange, Failure, Probe, TransportError
from sparring.errors import TARGET_TIMEOUT_HINT, RunError, TargetTimeout
from sparring.response_paths import ResponsePathError
from sparring.secrets import MASK, Secrets
from sparring.target_specs import HttpTargetSpec, OpenAIChatTargetSpec
from sparring.targets.base import Target
from sparring.targets.registry import AnyTargetSpec, build_target
from sparring.transcript import Message, Transcript

_CREDENTIAL_HEADERS = ("authorization", "cookie", "api-key", "apikey", "token", "secret",
                       "password", "x-api-key", "x-goog-api-key")
_GRACE_S = 1.0
"""Extra time past the target's own `timeout_s` before the probe gives up on a target
that does not enforce it."""


class Recorder:
    """Makes HTTP clients that record every exchange into `exchanges`, secrets masked.

    Args:
        secrets: Its values are masked in urls, headers and bodies.
    """

    def __init__(self, *, secrets: Secrets) -> None:
        self.exchanges: list[Exchange] = []
        self._secrets = secrets
        self._requests: list[httpx.Request] = []
        self._started: list[float] = []

    def client(self, *, follow_redirects: bool) -> httpx.AsyncClient:
        """A new client that records into this recorder; the caller closes it."""
        return httpx.AsyncClient(transport=_RecordingTransport(self),
                                 follow_redirects=follow_redirects,
                                 event_hooks={"response": [self._on_response]})

    def record_request(self, request: httpx.Request) -> int:
        """Record `request` as it is sent; its index in `exchanges`."""
        scrub = self._secrets.scrub
        try:
            body = request.content.decode("utf-8", errors="replace")
        except httpx.RequestNotRead:
            body = "(a streamed body, not recorded)"
        self.exchanges.append(Exchange(
            method=request.method, url=scrub(str(request.url)),
            request_headers=self._headers(request.headers), request_body=scrub(body)))
        self._requests.append(request)
        self._started.append(time.perf_counter())
        return len(self.exchanges) - 1

    def record_failure(self, index: int, error: httpx.TransportError) -> None:
        """Record why request `index` got no response."""
        detail = self._secrets.scrub(str(error) or type(error).__name__)
        self.exchanges[index] = replace(self.exchanges[index], error=_transport_error(error),
                                        error_detail=detail)

    async def _on_response(self, response: httpx.Response) -> None:
        index = next(i for i, r in enumerate(self._requests) if r is response.request)
        elapsed_ms = round((time.perf_counter() - self._started[index]) * 1000, 3)
        self.exchanges[index] = replace(
            self.exchanges[index], status=response.status_code, reason=response.reason_phrase,
            response_headers=self._headers(response.headers), body_complete=False,
            elapsed_ms=elapsed_ms)
        await response.aread()  # the target then reads the body from memory
        self.exchanges[index] = replace(self.exchanges[index], body_complete=True,
                                        response_body=self._secrets.scrub(response.text))

    def _headers(self, headers: httpx.Headers) -> tuple[tuple[str, str], ...]:
        """`(name, value)` pairs as sent (names in their own case), credentials masked."""
        pairs = [(k.decode(headers.encoding), v.decode(headers.encoding)) for k, v in headers.raw]
        return tuple((name, self._secrets.scrub(_mask_credential(name, value)))
                     for name, value in pairs)


class _RecordingTransport(httpx.AsyncBaseTransport):
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = self._recorder.record_request(request)
        try:
            return await self._inner.handle_async_request(request)
        except httpx.TransportError as e:
            self._recorder.record_failure(index, e)
            raise

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
            reply = await _send_one(target, message, timeout_s=spec.timeout_s + _GRACE_S)
        except TargetTimeout as e:
            failure, error = "timeout", str(e)
        except ResponsePathError as e:
            failure, error = "response_path", str(e)
        except RunError as e:
            failure, error = "error", secrets.scrub(str(e))
        finally:
            with anyio.CancelScope(shield=True):
                await target.aclose()
    http = spec if isinstance(spec, HttpTargetSpec) else None
    return Probe(target_type=spec.type, message=message, exchanges=tuple(recorder.exchanges),
                 reply=reply, failure=failure, error=error, timeout_s=spec.timeout_s,
                 response_path=http.response_path if http else None,
                 tool_calls_path=http.tool_calls_path if http else None)


def _build(spec: AnyTargetSpec, *, client: httpx.AsyncClient, recorder: Recorder,
           secrets: Secrets) -> Target:
    """The target as a run builds it; the openai_chat SDK gets a recording client of its own
    (following redirects, as the SDK's default client does)."""
    if isinstance(spec, OpenAIChatTargetSpec):
        from sparring.targets.openai_chat import OpenAIChatTarget

        return OpenAIChatTarget(spec, secrets=secrets,
                                http_client=recorder.client(follow_redirects=True))
    return build_target(spec, client=client, secrets=secrets)


async def _send_one(target: Target, message: str, *, timeout_s: float) -> Message:
    transcript = Transcript(messages=(Message(role="user", content=message),))
    try:
        with anyio.fail_after(timeout_s):
            session = await target.open_session()
            try:
                return await session.send(transcript)
            finally:
                await session.close()
    except TimeoutError:
        raise TargetTimeout(target=target.name, timeout_seconds=timeout_s,
                            hint=TARGET_TIMEOUT_HINT) from None

