"""HttpTarget against a real HTTP server on 127.0.0.1 (stdlib, one thread per request)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from sparring.errors import TargetError, TargetTimeout, UserError
from sparring.secrets import Secrets
from sparring.target_specs import HttpTargetSpec
from sparring.targets.base import Target, TargetSession
from sparring.targets.http import HttpTarget
from sparring.targets.response_paths import ResponsePathError
from sparring.transcript import Message, Transcript

pytestmark = pytest.mark.anyio

SECRET = "sk-live-0123456789"


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Payload = bytes | Iterable[bytes]
Route = Callable[[Seen], tuple[int, dict[str, str], Payload]]


@dataclass
class Server:
    """Routes by path; `release` unblocks handlers that wait (set at teardown)."""

    base: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return self.base + path

    def json_route(self, path: str, body: Any, *, status: int = 200) -> str:
        data = json.dumps(body).encode()
        self.routes[path] = lambda _: (status, {"Content-Type": "application/json"}, data)
        return self.url(path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        parts = urlsplit(self.path)
        seen = Seen(
            self.command,
            parts.path,
            parse_qs(parts.query),
            {k.lower(): v for k, v in self.headers.items()},
            self.rfile.read(length) if length else b"",
        )
        state = self.server.state
        state.seen.append(seen)
        route = state.routes.get(parts.path)
        status, headers, payload = (
            route(seen) if route else (404, {"Content-Type": "text/plain"}, b"no route here")
        )
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if isinstance(payload, bytes):
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in payload:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_HEAD = _handle  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Keep test output quiet."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    state: Server


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
    httpd.state = Server(base=f"http://127.0.0.1:{httpd.server_address[1]}")
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield httpd.state
    finally:
        httpd.state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as c:
        yield c


@pytest.fixture
def secrets() -> Secrets:
    return Secrets({"BOT_KEY": SECRET})


def make(client: httpx.AsyncClient, secrets: Secrets, **spec: Any) -> HttpTarget:
    return HttpTarget(HttpTargetSpec(**spec), client=client, secrets=secrets)


def echo(seen: Seen) -> tuple[int, dict[str, str], Payload]:
    return 200, {"Content-Type": "application/json"}, json.dumps({"reply": "ok"}).encode()


def conversation(*texts: str) -> Transcript:
    roles = ("user", "agent")
    return Transcript(
        messages=tuple(Message(role=roles[i % 2], content=t) for i, t in enumerate(texts))
    )


async def test_body_filled_on_parsed_json_with_history(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/chat"] = echo
    target = make(
        client,
        secrets,
        url=server.url("/chat"),
        response_path="reply",
        body_template={"message": "{{input}}", "history": "{{history}}"},
    )
    assert isinstance(target, Target)
    session = await target.open_session()
    assert isinstance(session, TargetSession)
    tricky = 'He said "refund"\nthen {left}\\ and é'
    reply = await session.send(conversation(tricky))
    assert reply.role == "agent" and reply.content == "ok" and reply.raw == {"reply": "ok"}
    assert reply.latency_ms is not None and reply.latency_ms >= 0
    await session.send(conversation(tricky, "Sure, I can help.", "second"))
    await session.close()
    first, second = server.seen
    assert first.method == "POST" and first.headers["content-type"] == "application/json"
    assert first.json() == {"message": tricky, "history": []}
    assert second.json() == {
        "message": "second",
        "history": [
            {"role": "user", "content": tricky},
            {"role": "assistant", "content": "Sure, I can help."},
        ],
    }


async def test_string_templates_json_and_raw_text(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/chat"] = echo
    as_json = make(
        client,
        secrets,
        url=server.url("/chat"),
        response_path="reply",
        body_template='{"q": "{{input}}"}',
    )
    raw = make(
        client,
        secrets,
        url=server.url("/chat"),
        response_path="reply",
        body_template="Question: {{input}}",
        headers={"X-Mode": "raw"},
    )
    await (await as_json.open_session()).send(conversation('a "b"'))
    await (await raw.open_session()).send(conversation('a "b"'))
    assert server.seen[0].json() == {"q": 'a "b"'}
    assert server.seen[1].body.decode() == 'Question: a "b"'
    assert server.seen[1].headers["content-type"].startswith("text/plain")
    assert server.seen[1].headers["x-mode"] == "raw"


async def test_secrets_in_url_headers_and_body(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/chat"] = echo
    target = make(
        client,
        secrets,
        url=server.url("/chat?key={{secrets.BOT_KEY}}&q={{input}}"),
        headers={"Authorization": "Bearer {{secrets.BOT_KEY}}"},
        body_template={"auth": "{{secrets.BOT_KEY}}", "m": "{{input}}"},
        response_path="reply",
    )
    assert SECRET not in target.name
    await (await target.open_session()).send(conversation("a&b=c"))
    seen = server.seen[0]
    assert seen.query == {"key": [SECRET], "q": ["a&b=c"]}
    assert seen.headers["authorization"] == f"Bearer {SECRET}"
    assert seen.json() == {"auth": SECRET, "m": "a&b=c"}


async def test_secrets_are_masked_in_errors(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    def leaky(seen: Seen) -> tuple[int, dict[str, str], Payload]:
        return 500, {"Content-Type": "application/json"}, seen.body  # echoes the secret

    server.routes["/leak"] = leaky
    server.json_route("/ok", {"echo": SECRET})
    for path, response_path in (("/leak", "$"), ("/ok", "reply")):
        target = make(
            client,
            secrets,
            url=server.url(path + "?key={{secrets.BOT_KEY}}"),
            body_template={"token": "{{secrets.BOT_KEY}}", "m": "{{input}}"},
            response_path=response_path,
        )
        with pytest.raises(TargetError) as info:
            await (await target.open_session()).send(conversation("hi"))
        assert SECRET not in str(info.value)
        assert "***" in str(info.value)


def _straddling(prefix: int) -> str:
    """Text that puts SECRET across the 300-character excerpt cut."""
    return "a" * (290 - prefix) + SECRET + "b" * 50


@pytest.mark.parametrize("kind", ["status", "invalid_json", "agent_error", "path", "stream"])
async def test_a_secret_across_the_excerpt_cut_never_leaks(
    server: Server, client: httpx.AsyncClient, secrets: Secrets, kind: str
) -> None:
    json_type = {"Content-Type": "application/json"}
    routes: dict[str, Route] = {
        "status": lambda _: (500, {"Content-Type": "text/plain"}, _straddling(0).encode()),
        "invalid_json": lambda _: (200, json_type, _straddling(0).encode()),
        "agent_error": lambda _: (200, json_type, json.dumps({"error": _straddling(0)}).encode()),
        "path": lambda _: (200, json_type, json.dumps({"echo": _straddling(10)}).encode()),
        "stream": _sse(f"event: error\ndata: {_straddling(0)}\n\n"),
    }
    server.routes["/x"] = routes[kind]
    target = make(
        client, secrets, url=server.url("/x?k={{secrets.BOT_KEY}}"), response_path="reply"
    )
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    message = str(info.value)
    assert "a" * 280 + "***" in message
    assert "sk-" not in message and SECRET[:-1] not in message


async def test_an_error_body_read_in_part_masks_a_secret_cut_off_at_its_end(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    # 298 four-byte characters and the secret's start fill the bytes read for an excerpt;
    # the rest of the secret never arrives before the target stops reading.
    first = ("\N{GRINNING FACE}" * 298 + SECRET[:10]).encode()

    def partial(_: Seen) -> tuple[int, dict[str, str], Payload]:
        def chunks() -> Iterator[bytes]:
            yield first
            server.release.wait(10)
            yield SECRET[10:].encode()

        return 502, {"Content-Type": "text/plain"}, chunks()

    server.routes["/partial"] = partial
    target = make(client, secrets, url=server.url("/partial?k={{secrets.BOT_KEY}}"))
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    assert "\N{GRINNING FACE}" * 298 + "**" in str(info.value)
    assert "sk" not in str(info.value)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "$",
            '{"choices": [{"message": {"content": "from choices"}}], "count": 0, '
            '"data": {"messages": [{"text": "first"}, {"text": "last"}]}, "ok": false, '
            '"reply": "hi", "sources": [{"text": "s1"}, {"url": "u"}, {"text": "s2"}]}',
        ),
        ("", None),
        ("reply", "hi"),
        ("choices.0.message.content", "from choices"),
        ("data.messages[-1].text", "last"),
        ("sources[*].text", "s1\ns2"),
        ("ok", "false"),
        ("count", "0"),
        ("data.messages", '[{"text": "first"}, {"text": "last"}]'),
    ],
)
async def test_response_path_forms(
    server: Server, client: httpx.AsyncClient, secrets: Secrets, path: str, expected: str | None
) -> None:
    body = {
        "reply": "hi",
        "ok": False,
        "count": 0,
        "choices": [{"message": {"content": "from choices"}}],
        "data": {"messages": [{"text": "first"}, {"text": "last"}]},
        "sources": [{"text": "s1"}, {"url": "u"}, {"text": "s2"}],
    }
    url = server.json_route("/chat", body)
    reply = await (await make(client, secrets, url=url, response_path=path).open_session()).send(
        conversation("hi")
    )
    if expected is None:  # empty path: the whole body, like "$"
        assert json.loads(reply.content) == body
    else:
        assert reply.content == expected
    assert reply.raw == body


async def test_missing_path_error_names_path_and_excerpt(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    url = server.json_route("/chat", {"output": {"text": "hi"}})
    target = make(client, secrets, url=url, response_path="output.message")
    with pytest.raises(ResponsePathError) as info:
        await (await target.open_session()).send(conversation("hi"))
    message = str(info.value)
    assert "'output.message'" in message and "no key 'message' (keys there: text)" in message
    assert '{"output": {"text": "hi"}}' in message and info.value.key == "message"


async def test_non_json_body_is_the_reply_text(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/text"] = lambda _: (200, {"Content-Type": "text/plain"}, b"Hello {there")
    server.routes["/html"] = lambda _: (200, {"Content-Type": "text/html"}, b"<p>Hi</p>")
    server.routes["/ndjson"] = lambda _: (
        200,
        {"Content-Type": "application/x-ndjson"},
        b'{"a": 1}\n{"a": 2}',
    )
    for path, text in (
        ("/text", "Hello {there"),
        ("/html", "<p>Hi</p>"),
        ("/ndjson", '{"a": 1}\n{"a": 2}'),
    ):
        target = make(client, secrets, url=server.url(path), response_path="reply")
        reply = await (await target.open_session()).send(conversation("hi"))
        assert reply.content == text and reply.raw == text


async def test_json_without_json_content_type_is_parsed(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/chat"] = lambda _: (200, {"Content-Type": "text/plain"}, b'{"reply": "x"}')
    target = make(client, secrets, url=server.url("/chat"), response_path="reply")
    assert (await (await target.open_session()).send(conversation("hi"))).content == "x"


def _sse(*events: str, hold: threading.Event | None = None) -> Callable[[Seen], Any]:
    def route(_: Seen) -> tuple[int, dict[str, str], Payload]:
        def chunks() -> Iterator[bytes]:
            for event in events:
                yield event.encode()
            if hold is not None:  # keep the connection open after [DONE]
                hold.wait(10)

        return 200, {"Content-Type": "text/event-stream; charset=utf-8"}, chunks()

    return route


def _delta(**delta: Any) -> str:
    return f"data: {json.dumps({'choices': [{'index': 0, 'delta': delta}]})}\n\n"


async def test_sse_is_assembled_and_done_ends_it(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/stream"] = _sse(
        ": keep-alive comment\n\n",
        _delta(role="assistant"),
        _delta(content="Hel"),
        "event: message\r\nid: 3\r\n" + _delta(content="lo, ").replace("\n\n", "\r\n\r\n"),
        _delta(content=None),
        _delta(content="world"),
        "data: plain text\n\n",
        _delta(),
        "data: [DONE]\n\n",
        hold=server.release,
    )
    target = make(
        client,
        secrets,
        url=server.url("/stream"),
        timeout_s=5,
        response_path="choices.0.delta.content",
    )
    reply = await (await target.open_session()).send(conversation("hi"))
    assert reply.content == "Hello, worldplain text"
    assert isinstance(reply.raw, list) and len(reply.raw) == 7 and reply.raw[5] == "plain text"


async def test_sse_multiline_data_and_missing_path(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/lines"] = _sse('data: {"t":\ndata: "a"}\n\n', 'data: {"t": "b"}')
    server.routes["/none"] = _sse('data: {"x": 1}\n\n', 'data: {"x": 2}\n\n')
    reply = await (
        await make(client, secrets, url=server.url("/lines"), response_path="t").open_session()
    ).send(conversation("hi"))
    assert reply.content == "ab"
    with pytest.raises(ResponsePathError, match="no key 't'"):
        await (
            await make(client, secrets, url=server.url("/none"), response_path="t").open_session()
        ).send(conversation("hi"))


async def test_sse_tool_call_deltas_are_merged(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    def call(index: int, **fn: Any) -> dict[str, Any]:
        return {"index": index, "function": fn} | ({"id": f"c{index}"} if "name" in fn else {})

    server.routes["/stream"] = _sse(
        _delta(role="assistant", tool_calls=[call(0, name="lookup", arguments="")]),
        _delta(tool_calls=[call(0, arguments='{"order"')]),
        _delta(tool_calls=[call(0, arguments=": 7}"), call(1, name="refund", arguments="{}")]),
        "data: [DONE]\n\n",
    )
    target = make(
        client,
        secrets,
        url=server.url("/stream"),
        response_path="choices.0.delta.content",
        tool_calls_path="choices.0.delta.tool_calls",
    )
    reply = await (await target.open_session()).send(conversation("hi"))
    assert reply.content == ""
    assert [(c.name, c.arguments, c.id) for c in reply.tool_calls] == [
        ("lookup", {"order": 7}, "c0"),
        ("refund", {}, "c1"),
    ]


async def test_tool_calls_path(server: Server, client: httpx.AsyncClient, secrets: Secrets) -> None:
    server.json_route(
        "/openai",
        {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "refund", "arguments": '{"order": "A1"}'},
                            }
                        ],
                    }
                }
            ]
        },
    )
    server.json_route(
        "/plain",
        {
            "reply": "done",
            "calls": [
                {"name": "lookup", "arguments": {"id": 3}},
                {"name": "notify", "arguments": "{}"},
            ],
        },
    )
    server.json_route("/nocalls", {"choices": [{"message": {"content": "no tools"}}]})
    openai = make(
        client,
        secrets,
        url=server.url("/openai"),
        response_path="choices.0.message.content",
        tool_calls_path="choices.0.message.tool_calls",
    )
    reply = await (await openai.open_session()).send(conversation("hi"))
    assert reply.content == ""  # null content is an empty reply
    assert [(c.name, c.arguments, c.id) for c in reply.tool_calls] == [
        ("refund", {"order": "A1"}, "call_1")
    ]
    plain = make(
        client, secrets, url=server.url("/plain"), response_path="reply", tool_calls_path="calls"
    )
    reply = await (await plain.open_session()).send(conversation("hi"))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("lookup", {"id": 3}),
        ("notify", {}),
    ]
    none = make(
        client,
        secrets,
        url=server.url("/nocalls"),
        response_path="choices.0.message.content",
        tool_calls_path="choices.0.message.tool_calls",
    )
    reply = await (await none.open_session()).send(conversation("hi"))
    assert reply.content == "no tools" and reply.tool_calls == ()


async def test_malformed_tool_calls_are_an_error(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    url = server.json_route("/chat", {"reply": "x", "calls": [{"tool": "lookup"}]})
    target = make(client, secrets, url=url, response_path="reply", tool_calls_path="calls")
    with pytest.raises(TargetError, match="tool_calls_path 'calls': tool call 1"):
        await (await target.open_session()).send(conversation("hi"))


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (500, "failed on its side"),
        (404, "Check `url` and `method`"),
        (401, "credentials"),
        (422, "body_template"),
    ],
)
async def test_http_error_status(
    server: Server, client: httpx.AsyncClient, secrets: Secrets, status: int, hint: str
) -> None:
    url = server.json_route("/chat", {"error": "boom " * 200}, status=status)
    target = make(client, secrets, url=url, response_path="reply")
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    message = str(info.value)
    assert info.value.status == status and f"HTTP {status}" in message
    assert url in message and '{"error": "boom boom' in message and hint in message
    assert len(message) < 700


async def test_unknown_route_404(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    target = make(client, secrets, url=server.url("/missing"))
    with pytest.raises(TargetError, match="HTTP 404.*no route here") as info:
        await (await target.open_session()).send(conversation("hi"))
    assert info.value.status == 404


async def test_redirect_is_not_followed(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.json_route("/final", {"reply": "should not be reached"})
    server.routes["/old"] = lambda _: (
        302,
        {"Location": server.url("/final"), "Content-Length": "0"},
        b"",
    )
    target = make(client, secrets, url=server.url("/old"), response_path="reply")
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    assert info.value.status == 302
    assert "not followed" in str(info.value) and server.url("/final") in str(info.value)
    assert [s.path for s in server.seen] == ["/old"]


async def test_get_and_head_send_no_body(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.json_route("/ask", {"reply": "got it"})
    get = make(
        client, secrets, url=server.url("/ask?q={{input}}"), method="GET", response_path="reply"
    )
    head = make(
        client, secrets, url=server.url("/ask?q={{input}}"), method="HEAD", response_path="reply"
    )
    assert (await (await get.open_session()).send(conversation("what's new?"))).content == "got it"
    assert (await (await head.open_session()).send(conversation("x"))).content == ""
    assert [(s.method, s.body, s.query) for s in server.seen] == [
        ("GET", b"", {"q": ["what's new?"]}),
        ("HEAD", b"", {"q": ["x"]}),
    ]
    assert "content-type" not in server.seen[0].headers


async def test_connection_refused(client: httpx.AsyncClient, secrets: Secrets) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = make(client, secrets, url=f"http://127.0.0.1:{port}/chat?k={{{{secrets.BOT_KEY}}}}")
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    message = str(info.value)
    assert "could not connect to" in message and "is running" in message
    assert f"127.0.0.1:{port}" in message and SECRET not in message


async def test_bad_url_is_a_target_error(client: httpx.AsyncClient, secrets: Secrets) -> None:
    # a url must start with http(s):// or a placeholder; this one expands to no scheme
    target = make(client, secrets, url="{{secrets.BOT_KEY}}.example/chat")
    with pytest.raises(TargetError, match="check `url`") as info:
        await (await target.open_session()).send(conversation("hi"))
    assert SECRET not in str(info.value)


async def test_timeout(server: Server, client: httpx.AsyncClient, secrets: Secrets) -> None:
    def slow(_: Seen) -> tuple[int, dict[str, str], Payload]:
        server.release.wait(10)
        return 200, {"Content-Type": "application/json"}, b'{"reply": "late"}'

    server.routes["/slow"] = slow
    target = make(client, secrets, url=server.url("/slow"), timeout_s=0.2)
    with pytest.raises(TargetTimeout) as info:
        await (await target.open_session()).send(conversation("hi"))
    assert info.value.timeout_seconds == 0.2 and "raise `timeout_s` on the target" in str(
        info.value
    )
    assert "--reply-timeout" not in str(info.value)


def test_target_timeout_names_the_setting_to_raise() -> None:
    custom = TargetTimeout(target="bot", timeout_seconds=2.5, hint="raise --reply-timeout")
    assert str(custom) == "target 'bot' did not reply within 2.5 s; raise --reply-timeout"
    assert custom.hint == "raise --reply-timeout" and custom.timeout_seconds == 2.5


async def test_stream_that_stalls_times_out(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/stall"] = _sse('data: {"t": "a"}\n\n', hold=server.release)
    target = make(client, secrets, url=server.url("/stall"), response_path="t", timeout_s=0.3)
    with pytest.raises(TargetTimeout):
        await (await target.open_session()).send(conversation("hi"))


async def test_concurrent_sessions_share_one_client(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    import anyio

    def answer(seen: Seen) -> tuple[int, dict[str, str], Payload]:
        return (
            200,
            {"Content-Type": "application/json"},
            json.dumps({"reply": seen.json()["message"].upper()}).encode(),
        )

    server.routes["/chat"] = answer
    target = make(client, secrets, url=server.url("/chat"), response_path="reply")
    replies: dict[int, str] = {}

    async def one(i: int) -> None:
        session = await target.open_session()
        replies[i] = (await session.send(conversation(f"msg {i}"))).content

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(one, i)
    assert replies == {i: f"MSG {i}" for i in range(8)}


async def test_missing_secret_fails_when_the_target_is_built(
    server: Server, client: httpx.AsyncClient
) -> None:
    with pytest.raises(UserError, match="'BOT_KEY'.*export BOT_KEY="):
        make(
            client,
            Secrets({}),
            url=server.url("/chat"),
            headers={"Authorization": "Bearer {{secrets.BOT_KEY}}"},
        )


async def test_redirect_not_followed_even_if_the_client_would(
    server: Server, secrets: Secrets
) -> None:
    server.json_route("/final", {"reply": "no"})
    server.routes["/old"] = lambda _: (307, {"Location": "/final", "Content-Length": "0"}, b"")
    async with httpx.AsyncClient(follow_redirects=True, trust_env=False) as following:
        target = make(following, secrets, url=server.url("/old"), response_path="reply")
        with pytest.raises(TargetError, match="HTTP 307, a redirect to /final"):
            await (await target.open_session()).send(conversation("hi"))
    assert [s.path for s in server.seen] == ["/old"]


# --- broken peers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body", "fragment"),
    [
        ("application/json", b'{"reply": "x"', "Expecting ',' delimiter"),
        ("application/json; charset=utf-8", b"", "the body is empty"),
        ("application/problem+json", b"oops", "Expecting value"),
    ],
)
async def test_json_content_type_with_invalid_body_is_an_error(
    server: Server,
    client: httpx.AsyncClient,
    secrets: Secrets,
    content_type: str,
    body: bytes,
    fragment: str,
) -> None:
    server.routes["/chat"] = lambda _: (200, {"Content-Type": content_type}, body)
    target = make(client, secrets, url=server.url("/chat"), response_path="reply")
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    media = content_type.split(";")[0]
    message = str(info.value)
    assert message.startswith(
        f"{server.url('/chat')} answered Content-Type {media} but the body is not valid JSON ("
    )
    assert fragment in message and repr(body.decode()) in message and "logs" in message


async def test_invalid_json_excerpt_is_scrubbed(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/chat"] = lambda _: (
        200,
        {"Content-Type": "application/json"},
        f'{{"key": "{SECRET}", '.encode(),
    )
    target = make(
        client,
        secrets,
        url=server.url("/chat"),
        body_template={"m": "{{input}}", "k": "{{secrets.BOT_KEY}}"},
    )
    with pytest.raises(TargetError, match="not valid JSON") as info:
        await (await target.open_session()).send(conversation("hi"))
    assert SECRET not in str(info.value) and "***" in str(info.value)


async def test_sse_error_event_fails_the_turn(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/event"] = _sse(
        'data: {"t": "Your refund is "}\n\n',
        'event: error\ndata: {"message": "upstream model overloaded"}\n\n',
        'data: {"t": "approved"}\n\n',
    )
    server.routes["/bare"] = _sse('data: {"t": "a"}\n\n', "event: error\n\n")
    server.routes["/object"] = _sse(
        'data: {"t": "Your refund is "}\n\n',
        'data: {"error": {"code": 429, "message": "rate limited"}}\n\n',
        "data: [DONE]\n\n",
    )
    cases = (
        ("/event", '{"message": "upstream model overloaded"}'),
        ("/bare", "(no data)"),
        ("/object", '{"code": 429, "message": "rate limited"}'),
    )
    for path, quoted in cases:
        target = make(client, secrets, url=server.url(path), response_path="t")
        with pytest.raises(TargetError) as info:
            await (await target.open_session()).send(conversation("hi"))
        assert str(info.value).startswith(
            f"{server.url(path)} streamed an error event instead of a reply: {quoted!r}"
        )
        assert not isinstance(info.value, ResponsePathError)


async def test_error_key_with_a_reply_is_still_a_reply(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/stream"] = _sse(
        'data: {"t": "ok", "error": null}\n\n', 'data: {"t": "!", "error": "ignored"}\n\n'
    )
    server.json_route("/plain", {"error": False, "reply": "fine"})
    stream = make(client, secrets, url=server.url("/stream"), response_path="t")
    plain = make(client, secrets, url=server.url("/plain"), response_path="reply")
    assert (await (await stream.open_session()).send(conversation("hi"))).content == "ok!"
    assert (await (await plain.open_session()).send(conversation("hi"))).content == "fine"


async def test_json_error_body_instead_of_a_reply(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    url = server.json_route("/chat", {"error": "agent misconfigured"})
    target = make(client, secrets, url=url, response_path="reply")
    with pytest.raises(
        TargetError, match="answered an error instead of a reply: 'agent misconfigured'"
    ):
        await (await target.open_session()).send(conversation("hi"))


async def test_a_json_rpc_error_says_the_url_looks_like_an_a2a_endpoint(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    rpc = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    server.json_route("/rpc", rpc)
    server.routes["/rpc-stream"] = _sse(f"data: {json.dumps(rpc)}\n\n")
    server.json_route("/plain", {"error": "agent misconfigured"})
    hint = (
        "It is a JSON-RPC 2.0 error: the url looks like a JSON-RPC (A2A) endpoint, which "
        "does not take a plain chat message; for an A2A agent use `type: a2a` with `url:` "
        "the agent's base address"
    )
    for path in ("/rpc", "/rpc-stream", "/plain"):
        target = make(client, secrets, url=server.url(path), response_path="reply")
        with pytest.raises(TargetError) as info:
            await (await target.open_session()).send(conversation("hi"))
        text = str(info.value)
        assert ('\'{"code": -32600, "message": "Invalid Request"}\'' in text) == (path != "/plain")
        assert (hint in text) == (path != "/plain")
        assert ("The agent failed while answering; check its logs" in text) == (path == "/plain")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (
            {"method": "GET", "body_template": {"q": "{{input}}"}},
            "(method GET sends no body, so `body_template` is not used)",
        ),
        ({"method": "HEAD"}, "(method HEAD sends no body"),
        ({"body_template": {"q": "hello", "history": "{{history}}"}}, "message: put {{input}}"),
        ({"body_template": "{{ query }}"}, "message: put {{input}}"),
    ],
)
async def test_target_that_never_sends_the_message_is_a_user_error(
    server: Server, client: httpx.AsyncClient, secrets: Secrets, spec: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(UserError) as info:
        make(client, secrets, url=server.url("/chat"), **spec)
    assert "never sends the user's message" in str(info.value)
    assert fragment in str(info.value) and "in the url for GET" in str(info.value)


async def test_message_in_a_header_or_url_counts_as_sent(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    server.routes["/chat"] = echo
    in_header = make(
        client,
        secrets,
        url=server.url("/chat"),
        method="GET",
        headers={"X-Question": "{{ message }}"},
        response_path="reply",
    )
    in_url = make(client, secrets, url=server.url("/chat?q={{input}}"), method="HEAD")
    await (await in_header.open_session()).send(conversation("where is it?"))
    await (await in_url.open_session()).send(conversation("x"))
    assert server.seen[0].headers["x-question"] == "where is it?"


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        (
            {"X-Name": "José"},
            "header 'X-Name': the value has a non-ASCII character ('é') at position 3",
        ),
        ({"X-Two": "a\nb"}, "header 'X-Two': the value has a line break at position 1"),
        ({"X-Nul": "a\x00"}, "a control character ('\\x00')"),
        ({"X Api Key": "k"}, "header name 'X Api Key' is not a valid HTTP header name"),
        ({"X-Key:": "k"}, "header name 'X-Key:' is not a valid"),
        ({"": "k"}, "header name '' is not a valid"),
    ],
)
async def test_bad_header_templates_fail_when_the_target_is_built(
    server: Server,
    client: httpx.AsyncClient,
    secrets: Secrets,
    headers: dict[str, str],
    fragment: str,
) -> None:
    with pytest.raises(UserError) as info:
        make(client, secrets, url=server.url("/chat"), headers=headers)
    assert fragment in str(info.value)


async def test_secret_unfit_for_a_header_fails_without_showing_it(
    server: Server, client: httpx.AsyncClient
) -> None:
    secrets = Secrets({"TOKEN": "tok-secret-value\n"})
    with pytest.raises(UserError) as info:
        make(
            client,
            secrets,
            url=server.url("/chat"),
            headers={"Authorization": "Bearer {{secrets.TOKEN}}"},
        )
    message = str(info.value)
    assert "header 'Authorization': secret 'TOKEN' holds a line break" in message
    assert "tok-secret-value" not in message and "trailing newline" in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("café?", "a non-ASCII character ('é')"),
        ("line one\nline two", "a line break"),
    ],
)
async def test_message_unfit_for_a_header_is_a_target_error(
    server: Server, client: httpx.AsyncClient, secrets: Secrets, text: str, problem: str
) -> None:
    server.routes["/chat"] = echo
    target = make(
        client,
        secrets,
        url=server.url("/chat"),
        response_path="reply",
        headers={"X-Question": "Q: {{input}}", "X-Key": "{{secrets.BOT_KEY}}"},
    )
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation(text))
    assert str(info.value).startswith(
        f"header 'X-Question' cannot be sent: after filling {{{{input}}}}, its value has {problem}"
    )
    assert "body_template" in str(info.value)
    assert server.seen == []  # nothing was sent


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("value", ["Hunter2@prod!", "p4ss#word99", "ab c", "a/b?c"])
async def test_url_errors_show_the_url_template_not_the_secret(
    server: Server, client: httpx.AsyncClient, value: str
) -> None:
    def deny(_: Seen) -> tuple[int, dict[str, str], Payload]:
        return 401, {"Content-Type": "text/plain"}, b"bad credentials"

    server.routes["/chat"] = deny
    secrets = Secrets({"T": value})
    port = server.base.rsplit(":", 1)[1]
    for template in (
        f"http://bot:{{{{secrets.T}}}}@127.0.0.1:{port}/chat",
        f"http://bot:{{{{secrets.T}}}}@127.0.0.1:{_closed_port()}/chat",
        f"http://127.0.0.1:{port}/{{{{secrets.T}}}}/chat",
    ):
        target = make(client, secrets, url=template)
        with pytest.raises(TargetError) as info:
            await (await target.open_session()).send(conversation("hi"))
        message = str(info.value)
        assert template in message, message
        for fragment in (value, value[:4], "%40", "%20"):
            assert fragment not in message, message


async def test_bad_url_without_secrets_keeps_the_detail(
    client: httpx.AsyncClient, secrets: Secrets
) -> None:
    target = make(client, secrets, url="http://127.0.0.1:99999/chat?q={{input}}")
    with pytest.raises(TargetError) as info:
        await (await target.open_session()).send(conversation("hi"))
    assert "'http://127.0.0.1:99999/chat?q={{input}}' is not a usable URL (" in str(info.value)
    assert "port" in str(info.value).lower()


async def test_non_finite_numbers_stay_strict_json(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    body = b'{"reply": {"score": NaN, "max": Infinity, "min": -Infinity}}'
    server.routes["/chat"] = lambda _: (200, {"Content-Type": "application/json"}, body)
    server.routes["/plain"] = lambda _: (200, {"Content-Type": "text/plain"}, body)
    server.routes["/stream"] = _sse('data: {"t": "a", "p": NaN}\n\n')
    for path, response_path in (("/chat", "reply"), ("/plain", "reply"), ("/stream", "t")):
        target = make(client, secrets, url=server.url(path), response_path=response_path)
        reply = await (await target.open_session()).send(conversation("hi"))
        json.dumps(reply.raw, allow_nan=False)  # raises on nan / inf
        assert "NaN" in json.dumps(reply.raw)
        if path != "/stream":
            assert json.loads(reply.content) == {
                "score": "NaN",
                "max": "Infinity",
                "min": "-Infinity",
            }


async def test_tool_calls_path_typo_is_an_error_but_an_omitted_key_means_none(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    url = server.json_route("/typo", {"reply": "ok", "tool_calls": [{"name": "lookup"}]})
    typo = make(client, secrets, url=url, response_path="reply", tool_calls_path="tool_call")
    with pytest.raises(ResponsePathError, match="did you mean 'tool_calls'"):
        await (await typo.open_session()).send(conversation("hi"))
    url = server.json_route("/omitted", {"reply": "ok"})
    omitted = make(client, secrets, url=url, response_path="reply", tool_calls_path="tool_calls")
    reply = await (await omitted.open_session()).send(conversation("hi"))
    assert reply.tool_calls == ()
    url = server.json_route("/deep", {"reply": "ok"})
    deep = make(
        client, secrets, url=url, response_path="reply", tool_calls_path="message.tool_calls"
    )
    with pytest.raises(ResponsePathError, match="message"):
        await (await deep.open_session()).send(conversation("hi"))


async def test_a_misspelt_placeholder_stops_the_target_from_being_built(
    client: httpx.AsyncClient, secrets: Secrets
) -> None:
    with pytest.raises(UserError, match=r"did you mean \{\{secrets.BOT_KEY\}\}"):
        make(
            client,
            secrets,
            url="http://127.0.0.1:9/chat",
            headers={"Authorization": "Bearer {{secret.BOT_KEY}}"},
        )


async def test_stream_events_holding_a_split_secret_are_left_out_of_raw(
    server: Server, client: httpx.AsyncClient, secrets: Secrets
) -> None:
    half = len(SECRET) // 2
    server.routes["/stream"] = _sse(
        f"data: {json.dumps({'delta': 'key ' + SECRET[:half]})}\n\n",
        f"data: {json.dumps({'delta': SECRET[half:]})}\n\n",
        "data: [DONE]\n\n",
    )
    target = make(
        client,
        secrets,
        url=server.url("/stream"),
        response_path="delta",
        body_template={"message": "{{input}}", "k": "{{secrets.BOT_KEY}}"},
    )
    reply = await (await target.open_session()).send(conversation("hi"))
    assert reply.content == f"key {SECRET}"  # the runner masks it in what it keeps
    assert isinstance(reply.raw, list) and len(reply.raw) == 1
    assert SECRET[:half] not in json.dumps(reply.raw)
