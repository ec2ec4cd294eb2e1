"""What `sparring doctor` records of one message sent to a target, and what it concludes.

`Exchange`: one HTTP request and its response; `Probe`: everything the message caused (the
exchanges, the reply or the failure); `Finding`: one conclusion with its fix. Plain frozen
data, so the rules in `diagnosis.py` can be tested with hand-made probes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparring.transcript import Message

Severity = Literal["ok", "note", "warning", "problem"]
"""`problem`: the target cannot work as configured; `warning`: it works, but probably not
as meant; `note`: worth knowing; `ok`: the target answered."""
Failure = Literal["timeout", "response_path", "error"]
"""How the target's send failed: no reply in time, `response_path` not in the reply, any
other target error."""
TransportError = Literal[
    "refused", "dns", "connect", "connect_timeout", "timeout", "closed", "other"
]
"""Why an HTTP request got no response: connection refused, host name not found, another
connect error, connecting timed out, reading timed out, the server closed the connection
without answering, anything else."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One HTTP request a target sent and what came of it; secret values already masked.

    Attributes:
        method: `GET`, `POST`, ...
        url: As sent.
        request_headers: `(name, value)` pairs as sent; credentials shown as `***`.
        request_body: The body as text (`""` for none).
        status: The response's HTTP status; `None` when no response came.
        reason: The status's reason phrase, e.g. `Not Found`.
        response_headers: `(name, value)` pairs of the response.
        response_body: The body as text, as far as it was read.
        body_complete: False when reading the body was cut off (a timeout mid-body).
        error: Why no response came (see `TransportError`); `None` when one came or the
            request was abandoned by a timeout around it.
        error_detail: The HTTP library's message for `error`.
        elapsed_ms: From sending the request to the response headers, in milliseconds.
    """

    method: str
    url: str
    request_headers: tuple[tuple[str, str], ...] = ()
    request_body: str = ""
    status: int | None = None
    reason: str = ""
    response_headers: tuple[tuple[str, str], ...] = ()
    response_body: str = ""
    body_complete: bool = True
    error: TransportError | None = None
    error_detail: str = ""
    elapsed_ms: float | None = None

    def header(self, name: str) -> str | None:
        """The first response header called `name` (any case), or None."""
        wanted = name.lower()
        return next((v for k, v in self.response_headers if k.lower() == wanted), None)

    @property
    def media_type(self) -> str:
        """The response's Content-Type without parameters, lower case (`""` when absent)."""
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()


@dataclass(frozen=True, slots=True)
class Probe:
    """One message sent to a target: everything `diagnose` looks at.

    Attributes:
        target_type: `http`, `openai_chat`, `callable`, `a2a`, `parlant`.
        message: The user message sent.
        exchanges: The target's HTTP exchanges in order (none for `callable`).
        answered_after: How many of `exchanges` came before the reply or the failure (the
            rest ended the conversation); `None`: all of them.
        reply: The agent's reply, when the target produced one.
        failure: How sending failed; `None` when `reply` is set.
        error: The target's error message (secrets masked); `""` without a failure.
        timeout_s: The target's `timeout_s`, in seconds.
        response_path: The http target's `response_path`; `None` for other types.
        tool_calls_path: The http target's `tool_calls_path`, when set.
    """

    target_type: str
    message: str
    exchanges: tuple[Exchange, ...] = ()
    answered_after: int | None = None
    reply: Message | None = None
    failure: Failure | None = None
    error: str = ""
    timeout_s: float = 60
    response_path: str | None = None
    tool_calls_path: str | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """One conclusion: what happened, and what to change (`""` when nothing)."""

    severity: Severity
    what: str
    fix: str = ""
