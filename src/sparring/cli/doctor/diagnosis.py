"""What went wrong when a target was sent one message, and how to fix it (`sparring doctor`).

Pure functions over a `Probe`: the HTTP exchanges the target made (secrets already masked),
the reply it produced or the error it raised. `diagnose` turns that into `Finding`s, each a
plain sentence of what happened and what to change in the test file, for the usual
mistakes: nothing listening, a timeout, a redirect, an HTTP error, a web page instead of an
API, an http target pointed at an A2A agent or a Parlant server (which have target types of
their own), a wrong `response_path` (with the paths of the strings that are in the body), an
empty reply, tool calls the target does not read. Nothing here sends anything, so every rule is
testable with hand-made probes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

import httpx
from pydantic import JsonValue

from sparring.targets.response_paths import ResponsePath, ResponsePathError
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

EXCERPT_CHARS = 300
"""Characters of a body quoted in a finding."""
_REPLY_KEYS = (
    "reply",
    "response",
    "answer",
    "output",
    "text",
    "content",
    "message",
    "completion",
    "generated_text",
    "result",
)
_NOT_REPLIES = frozenset(
    {
        "assistant",
        "user",
        "system",
        "agent",
        "tool",
        "bot",
        "stop",
        "completed",
        "ok",
        "success",
        "true",
        "false",
        "null",
    }
)
_ID_LIKE = re.compile(r"^(?=\S*\d)[\w\-:.+/]+$")
"""One token with a digit in it (an id, a date, a version): not a reply."""


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


def diagnose(probe: Probe) -> list[Finding]:
    """What went wrong in `probe`, most important first; ends with an `ok` finding when
    the target answered with a non-empty reply and nothing is a `problem`.

    An http target that got an answer in another protocol (a JSON-RPC error, an A2A agent
    card, a Parlant sessions API asking for `agent_id`) is the main finding, reply or not.
    Otherwise the first rule that explains a failure decides it: a request that got no
    response, a timeout, a redirect, an HTTP error, a wrong `response_path`, any other
    target error; then the reply is looked at (empty, a web page, the whole JSON body) and
    notes are added (tool calls the http target does not read).
    """
    relevant = probe.exchanges[: probe.answered_after]
    last = relevant[-1] if relevant else None
    findings = [
        _redirect(e, followed=True)
        for e in relevant[:-1]
        if e.status is not None and 300 <= e.status < 400
    ]
    other_protocol = _other_protocol(probe, last)
    if other_protocol is not None:
        findings.append(other_protocol)
    elif probe.failure is not None:
        findings.append(_failure(probe, last))
    elif probe.reply is not None:
        findings += _reply_findings(probe, probe.reply, last)
    findings += _tool_call_notes(probe, last)
    if probe.reply is not None and not any(f.severity == "problem" for f in findings):
        findings.append(Finding("ok", "the target answered with a reply"))
    return findings


def is_healthy(findings: list[Finding]) -> bool:
    """True when `findings` (from `diagnose`) say the target answered and nothing is a
    problem: `sparring doctor` then exits 0."""
    return any(f.severity == "ok" for f in findings)


# --- failures ------------------------------------------------------------------------------


def _failure(probe: Probe, last: Exchange | None) -> Finding:
    if last is not None and last.error is not None:
        return _transport(last, probe)
    if probe.failure == "timeout":
        return _timeout(probe, last)
    if last is not None and last.status is not None and 300 <= last.status < 400:
        return _redirect(last, followed=False)
    if last is not None and last.status is not None and last.status >= 400:
        return _http_error(last, probe.target_type)
    if probe.failure == "response_path" and last is not None:
        return _wrong_path(probe, last)
    if last is not None and _is_web_page(last):
        return _web_page(last)
    where = "the function" if probe.target_type == "callable" else "the target"
    return Finding(
        "problem",
        f"{where} could not reply (the error is shown above)",
        "fix what the error names"
        + ("; the requests and responses above show what was sent and received" if last else ""),
    )


def _transport(exchange: Exchange, probe: Probe) -> Finding:
    url = httpx.URL(exchange.url)
    where = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
    detail = f" ({exchange.error_detail})" if exchange.error_detail else ""
    match exchange.error:
        case "refused":
            return Finding(
                "problem",
                f"nothing is listening at {where}: connection refused",
                "is the agent running? Start it, or fix the host and port in the "
                "target's url (is the agent on another port?)",
            )
        case "dns":
            return Finding(
                "problem",
                f"the host name {url.host!r} cannot be resolved{detail}",
                "check the host name in the target's url for typos; inside a "
                "container, use the service name or host.docker.internal",
            )
        case "connect_timeout":
            return Finding(
                "problem",
                f"could not connect to {where} within {probe.timeout_s:g} s",
                "check the host and port: a firewall or "
                "a wrong address drops the connection instead of refusing it",
            )
        case "timeout":
            return _timeout(probe, exchange)
        case "closed":
            return Finding(
                "problem",
                f"{where} closed the connection without an HTTP answer{detail}",
                "the agent may have crashed on this request "
                "(see its logs), or the url's scheme is wrong: http:// for an "
                "https port or the other way round",
            )
        case "connect" | "other" | None:
            return Finding(
                "problem",
                f"the request to {where} failed{detail}",
                "check the target's url and that the agent is running",
            )


def _timeout(probe: Probe, last: Exchange | None) -> Finding:
    limit = f"{probe.timeout_s:g} s"
    fix = (
        f"is the agent stuck (see its logs), or just slow? Raise `timeout_s` (now {limit}) "
        "on the target if it is slow"
    )
    if last is not None and last.status is not None and not last.body_complete:
        return Finding(
            "problem",
            f"the agent answered HTTP {last.status} but did not finish "
            f"its body within {limit} (a stream that never ends?)",
            fix,
        )
    if probe.target_type == "callable":
        return Finding("problem", f"the function did not return within {limit}", fix)
    return Finding("problem", f"no answer within {limit}", fix)


def _redirect(exchange: Exchange, *, followed: bool) -> Finding:
    location = exchange.header("location")
    target = str(httpx.URL(exchange.url).join(location)) if location else "(no Location)"
    if followed:
        return Finding(
            "warning",
            f"{exchange.url} redirects (HTTP {exchange.status}) to {target}",
            f"use the final URL: {target} (a redirect may turn a POST "
            "into a GET, and costs a round trip per message)",
        )
    return Finding(
        "problem",
        f"the url answered HTTP {exchange.status}, a redirect to {target}",
        f"redirects are not followed: use the final URL, `url: {target}`"
        if location
        else "redirects are not followed: use the address the agent really answers on",
    )


_CREDENTIALS_FIX = (
    "the agent refused the credentials: check the Authorization / key "
    "headers (shown masked above) and that the secret is set and current"
)
_OWN_404_FIXES = {
    "openai_chat": "check base_url (it usually ends in /v1) and the model name",
    "a2a": "follow the error above: `url` is the agent's base address, its card is read from "
    "`url` + `card_path`",
    "parlant": "follow the error above: check `agent_id` (GET /agents on the server lists "
    "the agents) and that `url` is the server's base address",
}
"""404 fixes of target types that know which address they built (their error says more
than "wrong path")."""
_STATUS_FIXES = {
    401: _CREDENTIALS_FIX,
    403: _CREDENTIALS_FIX,
    404: "there is no endpoint at this path: check the path in the url (e.g. /chat vs /api/chat)",
    405: "the endpoint does not take this method: set the target's `method`",
    415: "the agent wants another Content-Type: set it in `headers`",
    429: "the agent is rate limiting: wait, or lower --parallel in runs",
}


def _http_error(exchange: Exchange, target_type: str) -> Finding:
    status = exchange.status or 0
    excerpt = _excerpt(exchange.response_body)
    what = f"the agent answered HTTP {status} {exchange.reason}".rstrip()
    what += f"; body starts: {excerpt!r}" if excerpt else " with an empty body"
    if status == 404 and target_type in _OWN_404_FIXES:
        fix = _OWN_404_FIXES[target_type]
    elif status in _STATUS_FIXES:
        fix = _STATUS_FIXES[status]
    elif status in (400, 409, 422):
        fix = (
            "the agent rejected the request body: compare the body sent (above) with what "
            "the endpoint expects (the answer above often says) and fix `body_template`"
        )
    elif status >= 500:
        fix = "the agent failed while handling the message: see its logs"
    else:
        fix = "check the target's url, method, headers and body"
    return Finding("problem", what, fix)


def _wrong_path(probe: Probe, exchange: Exchange) -> Finding:
    body = _json_body(exchange)
    what = f"`response_path: {probe.response_path}` is not in the reply"
    if isinstance(body, dict):
        what += f"; keys at the top of the body: {', '.join(body) or '(none)'}"
    return Finding("problem", what, _path_fix(body, probe.message))


def _path_fix(body: JsonValue, message: str) -> str:
    candidates = reply_candidates(body, message=message)
    if not candidates:
        return (
            "no text in the body looks like a reply; set `response_path` to the value that "
            "holds it ('$' takes the whole body)"
        )
    best, value = candidates[0]
    others = "; ".join(f"{p} = {_excerpt(v, 60)!r}" for p, v in candidates[1:4])
    return f"set `response_path: {best}` (it holds {_excerpt(value, 80)!r})" + (
        f"; other texts in the body: {others}" if others else ""
    )


# --- other protocols -----------------------------------------------------------------------

_CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


def _other_protocol(probe: Probe, last: Exchange | None) -> Finding | None:
    """An http target whose answer is in a protocol sparring has a target type for: a
    JSON-RPC 2.0 error (an A2A agent's endpoint), an A2A agent card, or a Parlant sessions
    API that asks for `agent_id`. `None` for anything else."""
    if probe.target_type != "http" or last is None or last.status is None:
        return None
    body = _json_body(last)
    if not isinstance(body, dict):
        return None
    url = httpx.URL(last.url).copy_with(query=None, fragment=None)
    error = body.get("error")
    if body.get("jsonrpc") == "2.0" and isinstance(error, dict):
        return _json_rpc_error(last, error, url)
    if "supportedInterfaces" in body or {"name", "url", "skills"} <= body.keys():
        return _agent_card(body, url)
    if (
        url.path.rstrip("/").endswith("/sessions")
        and last.status >= 400
        and "agent_id" in last.response_body
    ):
        base = str(url.copy_with(path=url.path.rstrip("/").removesuffix("/sessions")))
        return Finding(
            "problem",
            "the url is a Parlant server's sessions API (it asks for "
            "an `agent_id`), which does not take a chat message",
            f"use `type: parlant` with `url: {base}` (the server's base address) "
            f"and `agent_id:` (GET {base}/agents lists the agents)",
        )
    return None


def _json_rpc_error(exchange: Exchange, error: dict[str, JsonValue], url: httpx.URL) -> Finding:
    said = f"{error.get('code')}: {_excerpt(str(error.get('message', '')), 160)}"
    a2a = (
        f"`type: a2a` with `url:` the agent's base address, the one whose "
        f"{_CARD_PATHS[0]} serves its card (often this url: `url: {url}`)"
    )
    if '"jsonrpc"' in exchange.request_body:
        return Finding(
            "problem",
            f"the agent answered a JSON-RPC error ({said})",
            "fix what it names in `body_template`; for an A2A agent, use "
            f"{a2a}: sparring then speaks the protocol for you",
        )
    return Finding(
        "problem",
        f"the url answered a JSON-RPC 2.0 error ({said}): it is a "
        "JSON-RPC endpoint (an A2A agent's?), which does not take a plain chat "
        "message",
        f"for an A2A agent, use {a2a}: sparring then reads the card and speaks A2A for you",
    )


def _agent_card(card: dict[str, JsonValue], url: httpx.URL) -> Finding:
    name = card.get("name")
    what = f"the url answered an A2A agent card{f' ({name!r})' if name else ''}, not a reply"
    suffix = next((p for p in _CARD_PATHS if url.path.endswith(p)), None)
    if suffix is None:
        spec = f"`url: {url.copy_with(path='/')}` and `card_path: {url.path}`"
    else:
        spec = f"`url: {url.copy_with(path=url.path.removesuffix(suffix) or '/')}`"
        spec += f" and `card_path: {suffix}`" if suffix != _CARD_PATHS[0] else ""
    return Finding(
        "problem",
        what,
        f"use `type: a2a` with {spec}: sparring reads the card "
        "and sends each message where it says",
    )


# --- replies -------------------------------------------------------------------------------


def _reply_findings(probe: Probe, reply: Message, last: Exchange | None) -> list[Finding]:
    if last is not None and _is_web_page(last):
        return [_web_page(last)]
    body = _json_body(last) if last is not None else None
    if not reply.content.strip():
        if reply.tool_calls:
            return [Finding("note", "the reply has tool calls but no text")]
        return [_empty(probe, last, body)]
    if (
        probe.response_path in ("", "$")
        and isinstance(body, dict | list)
        and reply_candidates(body, message=probe.message)
    ):
        return [
            Finding(
                "warning",
                "`response_path` is '$', so the reply is the whole JSON body, not the agent's text",
                _path_fix(body, probe.message),
            )
        ]
    if (
        last is not None
        and body is None
        and last.response_body.strip()
        and probe.target_type == "http"
    ):
        kind = last.media_type or "no Content-Type"
        return [Finding("note", f"the body is not JSON ({kind}), so all of it is the reply")]
    return []


def _empty(probe: Probe, last: Exchange | None, body: JsonValue) -> Finding:
    if probe.target_type == "callable":
        return Finding(
            "problem",
            "the function returned an empty reply",
            "return the agent's text (a str, `(text, tool_calls)` or a Message)",
        )
    if last is None:
        return Finding("problem", "the target answered with an empty reply")
    if not last.response_body.strip():
        return Finding(
            "problem",
            f"the agent answered HTTP {last.status} with an empty body",
            "check that the agent got the message: compare the body sent (above) "
            "with what the endpoint expects",
        )
    path = probe.response_path
    if path is not None and reply_candidates(body, message=probe.message):
        return Finding(
            "problem",
            f"`response_path: {path}` holds an empty value",
            _path_fix(body, probe.message),
        )
    return Finding(
        "problem",
        "the agent answered, but the reply text is empty",
        "check that the agent got the message (the body sent is shown above)",
    )


def _is_web_page(exchange: Exchange) -> bool:
    start = exchange.response_body.lstrip()[:100].lower()
    return exchange.media_type in ("text/html", "application/xhtml+xml") or start.startswith(
        ("<!doctype html", "<html")
    )


def _web_page(exchange: Exchange) -> Finding:
    title = re.search(r"<title[^>]*>(.*?)</title>", exchange.response_body, re.I | re.S)
    named = f" titled {title.group(1).strip()[:80]!r}" if title else ""
    return Finding(
        "problem",
        f"the url answered a web page ({exchange.media_type or 'HTML'}){named}, not an agent's API",
        "point the url at the agent's API endpoint, not a web page: the browser's "
        "network tab shows the request its chat widget sends",
    )


def _tool_call_notes(probe: Probe, last: Exchange | None) -> list[Finding]:
    """An http target without `tool_calls_path` whose JSON body has a tool-call list."""
    if probe.target_type != "http" or probe.tool_calls_path is not None or last is None:
        return []
    body = _json_body(last)
    if not isinstance(body, dict):
        return []
    keys = [
        k
        for k, v in body.items()
        if isinstance(v, list | dict) and ("tool" in k.lower() or "function_call" in k.lower())
    ]
    if not keys:
        return []
    return [
        Finding(
            "note",
            f"the body has `{keys[0]}`, but the target does not read tool calls",
            f"add `tool_calls_path: {keys[0]}` to the target so tool checks can see them",
        )
    ]


# --- looking into bodies ------------------------------------------------------------------


def reply_candidates(body: JsonValue, *, message: str = "") -> list[tuple[str, str]]:
    """The non-empty strings in `body` that may be the agent's reply, best first, as
    `(response path, value)`; every path extracts its value again (`ResponsePath`).

    Left out: the user's own `message` echoed back, roles and states (`assistant`,
    `completed`, ...) and single tokens with a digit (ids, dates). Ranked by a reply-like key
    (`reply`, `answer`, `content`, ...) at the end of the path, then texts of several words,
    then length.
    """
    found = [
        (p, v)
        for p, v in string_leaves(body)
        if v.strip()
        and v.strip() != message.strip()
        and v.strip().lower() not in _NOT_REPLIES
        and not _ID_LIKE.match(v.strip())
    ]

    def rank(item: tuple[str, str]) -> tuple[int, int, int]:
        last = re.split(r"[.\[]", item[0])[-1].strip("]'\"").lower()
        return (0 if last in _REPLY_KEYS else 1, 0 if " " in item[1].strip() else 1, -len(item[1]))

    ranked = sorted(found, key=rank)
    return [(p, v) for p, v in ranked if _extracts(p, body, v)]


def string_leaves(body: JsonValue, path: str = "") -> list[tuple[str, str]]:
    """Every string in `body` with its response path, in document order (at most 200).

    Keys that are plain words are written `a.b`; others `["odd key"]`; list items `[0]`.
    """
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, JsonValue]] = [(path, body)]
    while stack and len(out) < 200:
        where, value = stack.pop()
        if isinstance(value, str):
            out.append((where or "$", value))
        elif isinstance(value, dict):
            stack += [(_key_path(where, k), v) for k, v in reversed(list(value.items()))]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
    return out


def _key_path(where: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][\w-]*", key):
        return f"{where}.{key}" if where else key
    return f"{where}[{json.dumps(key)}]"


def _extracts(path: str, body: JsonValue, value: str) -> bool:
    try:
        return ResponsePath(path).extract(body) == value
    except ResponsePathError:
        return False


def _json_body(exchange: Exchange | None) -> JsonValue:
    """The response body parsed as JSON; for a server-sent event stream, its first JSON
    event; `None` when there is none."""
    if exchange is None:
        return None
    texts = [exchange.response_body]
    if exchange.media_type == "text/event-stream":
        texts = [
            line[5:].strip()
            for line in exchange.response_body.splitlines()
            if line.startswith("data:")
        ]
    for text in texts:
        try:
            return json.loads(text, parse_constant=str)
        except ValueError:
            continue
    return None


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
