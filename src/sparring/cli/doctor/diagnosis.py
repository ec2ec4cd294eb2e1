"""What went wrong when a target was sent one message, and how to fix it (`sparring doctor`).

Pure functions over a `Probe`: the HTTP exchanges the target made (secrets already masked),
the reply it produced or the error it raised. `diagnose` turns that into `Finding`s, each a
plain sentence of what happened and what to change in the test file, for the usual
mistakes: nothing listening, a timeout, a redirect, an HTTP error, a web page instead of an
API, an http target pointed at an A2A agent or a Parlant server (which have target types of
their own), a wrong `response_path` (with the paths of the strings that are in the body), an
empty reply, a Parlant reply that is only the agent's preamble, tool calls the target does not
read (with the `tool_calls_path` that reads them). The data is in `records.py`, the looking
into bodies in `bodies.py`. Nothing here sends anything, so every rule is testable with
hand-made probes.
"""

from __future__ import annotations

import re

import httpx
from pydantic import JsonValue

from sparring.cli.doctor.bodies import (
    excerpt,
    json_body,
    json_documents,
    reply_candidates,
    tool_call_paths,
)
from sparring.cli.doctor.records import Exchange, Finding, Probe
from sparring.targets.parlant_events import PREAMBLE_TAG
from sparring.transcript import Message, content_text

__all__ = ["Exchange", "Finding", "Probe", "diagnose", "is_healthy", "reply_candidates"]


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
    start = excerpt(exchange.response_body)
    what = f"the agent answered HTTP {status} {exchange.reason}".rstrip()
    what += f"; body starts: {start!r}" if start else " with an empty body"
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
    body = json_body(exchange)
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
    others = "; ".join(f"{p} = {excerpt(v, 60)!r}" for p, v in candidates[1:4])
    return f"set `response_path: {best}` (it holds {excerpt(value, 80)!r})" + (
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
    body = json_body(last)
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
    said = f"{error.get('code')}: {excerpt(str(error.get('message', '')), 160)}"
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
    if probe.target_type == "parlant" and (preamble := _preamble(reply)) is not None:
        return [preamble]
    body = json_body(last) if last is not None else None
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
    """An http target without `tool_calls_path` whose JSON body (or one of its events)
    holds a list of tool calls: the path to read them at; else a key named like tool calls
    (`tool_calls`, `function_call`, ...), which may be empty this time."""
    if probe.target_type != "http" or probe.tool_calls_path is not None:
        return []
    documents = json_documents(last)
    path = next((p for d in documents for p in tool_call_paths(d)), None)
    if path is not None:
        return [
            Finding(
                "note",
                f"tool calls found at `{path}`, but the target does not read tool calls",
                f"add `tool_calls_path: {path}` to the target so tool checks can see them",
            )
        ]
    keys = [
        k
        for d in documents
        if isinstance(d, dict)
        for k, v in d.items()
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


# --- Parlant ------------------------------------------------------------------------------


def _preamble(reply: Message) -> Finding | None:
    """A Parlant reply that is, or starts with, the agent's preamble (a message tagged
    `__preamble__`, which Parlant sends while the agent works): what the reply holds."""
    said = _agent_messages(reply.raw)
    preambles = [text for text, is_preamble in said if is_preamble]
    if not preambles:
        return None
    if len(preambles) == len(said):
        return Finding(
            "problem",
            f"the agent sent only its preamble ({preambles[0]!r}), no answer: Parlant's last "
            "`ready` came without a reply",
            "see the Parlant server's logs: the agent found nothing to say, or a tool or the "
            "model failed after the preamble",
        )
    return Finding(
        "note",
        f"the reply starts with the agent's preamble ({preambles[0]!r}), which Parlant sends "
        "while the agent works; the answer follows it, and checks see both",
    )


def _agent_messages(events: JsonValue) -> list[tuple[str, bool]]:
    """The agent's messages among Parlant `events`, as `(text, is a preamble)`."""
    said: list[tuple[str, bool]] = []
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or (event.get("kind"), event.get("source")) != (
            "message",
            "ai_agent",
        ):
            continue
        data = event.get("data")
        body = data if isinstance(data, dict) else {}
        tags = body.get("tags")
        preamble = isinstance(tags, list) and PREAMBLE_TAG in tags
        said.append((content_text(body.get("message")), preamble))
    return said
