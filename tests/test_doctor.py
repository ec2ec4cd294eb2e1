"""`sparring doctor` against real local servers: the demo agent for what works, a small stdlib
server for each usual mistake; `diagnose` alone on hand-made probes for what no local
server can stage."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sparring.cli.doctor.diagnosis import Exchange, Probe, diagnose, is_healthy, reply_candidates
from sparring.cli.main import cli
from sparring.demo.server import DemoServer
from sparring.errors import ConfigError, UserError
from sparring.transcript import Message
from tests.support.parlant_server import Say, ScriptedParlantServer, tool

SECRET = "sk-live-0123456789abcdef"

Route = Callable[[dict[str, str]], tuple[int, dict[str, str], bytes]]


@dataclass
class Stage:
    """A stdlib server answering each path with a canned response."""

    base: str = ""
    routes: dict[str, Route] = field(default_factory=dict[str, Route])
    release: threading.Event = field(default_factory=threading.Event)

    def route(
        self,
        path: str,
        status: int,
        body: bytes | str,
        *,
        content_type: str = "application/json",
        **headers: str,
    ) -> str:
        data = body.encode() if isinstance(body, str) else body
        all_headers = {"Content-Type": content_type, **headers}
        self.routes[path] = lambda _: (status, all_headers, data)
        return self.base + path


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        stage, path = self.server.stage, self.path.split("?", 1)[0]
        if path == "/slow":
            stage.release.wait(10)
            return
        if path == "/echo":  # answers with what it got, secrets and all
            seen = {"headers": dict(self.headers.items()), "body": body}
            status, headers, payload = (
                200,
                {"Content-Type": "application/json"},
                json.dumps({"reply": "got it", "seen": seen}).encode(),
            )
        elif path in stage.routes:
            status, headers, payload = stage.routes[path](dict(self.headers.items()))
        else:
            status, headers, payload = 404, {"Content-Type": "text/plain"}, b"no route here"
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Keep test output quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stage: Stage


@pytest.fixture
def stage() -> Iterator[Stage]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.stage = Stage(base=f"http://127.0.0.1:{httpd.server_address[1]}")
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield httpd.stage
    finally:
        httpd.stage.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def demo() -> Iterator[DemoServer]:
    with DemoServer(port=0) as server:
        server.start()
        yield server


def a2a_agent(
    stage: Stage, result: Callable[[str], Any], *, interface_url: str | None = None
) -> str:
    """An A2A 1.0 agent on `stage` at `/rpc`: its card, and a JSON-RPC endpoint answering
    `result(X-Key header)` as the `result`; returns the agent's base url."""
    card = {
        "name": "staged",
        "description": "d",
        "version": "1",
        "capabilities": {},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [],
        "supportedInterfaces": [
            {
                "url": interface_url or f"{stage.base}/rpc/",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
        ],
    }
    stage.route("/rpc/.well-known/agent-card.json", 200, json.dumps(card))

    def answer(headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        key = next((v for k, v in headers.items() if k.lower() == "x-key"), "")
        body = {"jsonrpc": "2.0", "id": "1", "result": result(key)}
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    stage.routes["/rpc/"] = answer
    return f"{stage.base}/rpc"


def target_file(tmp_path: Path, target: dict[str, Any], name: str = "target.yaml") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"target": target}), encoding="utf-8")
    return str(path)


def doctor(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["doctor", *args], env=env)


def diagnosis(result: Result) -> str:
    """The Diagnosis section of the output."""
    return result.output.split("Diagnosis", 1)[1]


# --- what works ---------------------------------------------------------------------------


def test_demo_agent_answers_and_doctor_exits_0(tmp_path: Path, demo: DemoServer) -> None:
    file = target_file(
        tmp_path,
        {
            "url": f"{demo.url}/chat",
            "response_path": "reply",
            "tool_calls_path": "tool_calls",
            "body_template": {"message": "{{input}}"},
        },
    )
    result = doctor(file, "--message", "Where is my order 10234?")
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"POST {demo.url}/chat" in out
    assert '"message": "Where is my order 10234?"' in out  # the request body
    assert "HTTP 200 OK" in out
    assert "Reply (response_path 'reply'): 'Hi, thanks for contacting Northwind" in out
    assert 'Tool calls: lookup_order({"order_id": "10234"})' in out
    assert "Latency: " in out
    assert "OK: the target answered with a reply" in diagnosis(result)
    assert "\x1b[" not in out  # no colour codes outside a terminal


def test_openai_chat_exchanges_are_recorded_with_the_key_masked(
    tmp_path: Path, demo: DemoServer
) -> None:
    file = target_file(
        tmp_path,
        {
            "type": "openai_chat",
            "base_url": f"{demo.url}/v1",
            "model": "demo",
            "api_key": "literal-key-0123456789",
        },
    )
    result = doctor(file)
    assert result.exit_code == 0, result.output
    assert f"POST {demo.url}/v1/chat/completions" in result.output
    assert "authorization: Bearer ***" in result.output
    assert "literal-key-0123456789" not in result.output
    assert '"object": "chat.completion"' in result.output
    assert "Tokens: " in result.output


def test_a2a_and_parlant_targets_are_recorded_through_the_shared_client(
    tmp_path: Path, demo: DemoServer, stage: Stage
) -> None:
    a2a = doctor(target_file(tmp_path, {"type": "a2a", "url": f"{demo.url}/a2a"}))
    assert a2a.exit_code == 0, a2a.output
    assert f"GET {demo.url}/a2a/.well-known/agent-card.json" in a2a.output
    assert f"POST {demo.url}/a2a" in a2a.output
    assert "Reply: 'Hi! Welcome to Northwind" in a2a.output

    parlant = doctor(
        target_file(tmp_path, {"type": "parlant", "url": demo.url, "agent_id": "northwind"})
    )
    assert parlant.exit_code == 0, parlant.output
    assert "Request 4 (ends the conversation)" in parlant.output
    assert "DELETE " in parlant.output

    no_card = doctor(target_file(tmp_path, {"type": "a2a", "url": f"{stage.base}/agent"}))
    assert no_card.exit_code == 3
    assert "HTTP 404" in diagnosis(no_card)


def test_compressed_body_is_shown_decoded(tmp_path: Path, stage: Stage) -> None:
    body = gzip.compress(json.dumps({"reply": "Packed and shipped."}).encode())
    url = stage.route("/gzip", 200, body, **{"Content-Encoding": "gzip"})
    result = doctor(target_file(tmp_path, {"url": url, "response_path": "reply"}))
    assert result.exit_code == 0, result.output
    assert '"reply": "Packed and shipped."' in result.output


def agent_with_empty_reply(history: list[dict[str, str]]) -> str:
    return ""


def agent_with_reply(history: list[dict[str, str]]) -> str:
    return f"You said {history[-1]['content']}"


def test_callable_target_runs_in_process(tmp_path: Path) -> None:
    ok = doctor(target_file(tmp_path, {"ref": "tests.test_doctor:agent_with_reply"}))
    assert ok.exit_code == 0, ok.output
    assert "(no HTTP: the target runs in this process)" in ok.output
    assert "Reply: 'You said Hello'" in ok.output

    empty = doctor(target_file(tmp_path, {"ref": "tests.test_doctor:agent_with_empty_reply"}))
    assert empty.exit_code == 3
    assert "PROBLEM: the function returned an empty reply" in diagnosis(empty)


def test_target_of_a_test_file_and_of_a_chosen_scenario(
    tmp_path: Path, stage: Stage, demo: DemoServer
) -> None:
    broken = stage.route("/broken", 500, '{"detail": "boom"}')
    file = tmp_path / "suite.yaml"
    file.write_text(
        f"""\
target: {{url: "{demo.url}/chat", response_path: reply}}
scenarios:
  - id: greeting
    turns: [{{user: Hi, checks: [{{contains: Northwind}}]}}]
  - id: other
    target: {{url: "{broken}"}}
    turns: [{{user: Hi, checks: [{{contains: x}}]}}]
""",
        encoding="utf-8",
    )
    several = doctor(str(file))
    assert isinstance(several.exception, ConfigError)
    assert "2 different targets; choose one with --scenario ID (ids: greeting, other)" in str(
        several.exception
    )
    assert doctor(str(file), "--scenario", "greeting").exit_code == 0
    other = doctor(str(file), "--scenario", "other")
    assert other.exit_code == 3
    assert f"(target: {file}:6)" in other.output  # the line of the scenario's `target:`


# --- the usual mistakes -------------------------------------------------------------------


def test_wrong_response_path_suggests_the_path_of_the_reply(
    tmp_path: Path, demo: DemoServer
) -> None:
    file = target_file(tmp_path, {"url": f"{demo.url}/chat", "response_path": "answer"})
    result = doctor(file)
    assert result.exit_code == 3
    found = diagnosis(result)
    assert (
        "PROBLEM: `response_path: answer` is not in the reply; keys at the top of the "
        "body: reply, tool_calls, handover" in found
    )
    assert "fix: set `response_path: reply` (it holds 'Hi! Welcome to Northwind" in found
    assert "add `tool_calls_path: tool_calls`" in found


def test_whole_body_as_reply_is_a_warning_with_the_path_to_use(
    tmp_path: Path, stage: Stage
) -> None:
    url = stage.route(
        "/nested",
        200,
        json.dumps(
            {
                "id": "msg_123",
                "data": {"messages": [{"role": "assistant", "text": "Your order has shipped."}]},
            }
        ),
    )
    result = doctor(target_file(tmp_path, {"url": url}))
    assert result.exit_code == 0  # it works, just probably not as meant
    assert "WARNING: `response_path` is '$'" in diagnosis(result)
    assert "set `response_path: data.messages[0].text`" in diagnosis(result)


def test_redirect_says_to_use_the_final_url(tmp_path: Path, stage: Stage) -> None:
    url = stage.route("/old", 301, "", content_type="text/plain", Location="/v2/chat")
    result = doctor(target_file(tmp_path, {"url": url}))
    assert result.exit_code == 3
    assert (
        f"redirects are not followed: use the final URL, `url: {stage.base}/v2/chat`"
        in diagnosis(result)
    )


def test_http_500_shows_the_body(tmp_path: Path, stage: Stage) -> None:
    url = stage.route("/chat", 500, '{"detail": "KeyError: message"}')
    result = doctor(target_file(tmp_path, {"url": url}))
    assert result.exit_code == 3
    found = diagnosis(result)
    assert (
        "PROBLEM: the agent answered HTTP 500 Internal Server Error; body starts: "
        '\'{"detail": "KeyError: message"}\'' in found
    )
    assert "see its logs" in found


def test_404_names_the_path(tmp_path: Path, stage: Stage) -> None:
    result = doctor(target_file(tmp_path, {"url": f"{stage.base}/api/chat"}))
    assert result.exit_code == 3
    assert "HTTP 404" in diagnosis(result)
    assert "check the path in the url" in diagnosis(result)


def test_a_404_of_a2a_and_parlant_defers_to_the_targets_own_advice(
    tmp_path: Path, demo: DemoServer
) -> None:
    a2a = doctor(target_file(tmp_path, {"type": "a2a", "url": f"{demo.url}/nope"}))
    parlant = doctor(
        target_file(tmp_path, {"type": "parlant", "url": demo.url, "agent_id": "nobody"})
    )
    assert (a2a.exit_code, parlant.exit_code) == (3, 3)
    assert "set `url` to the agent's base address" in a2a.output  # the target's error
    assert (
        "fix: follow the error above: `url` is the agent's base address, its card is "
        "read from `url` + `card_path`" in diagnosis(a2a)
    )
    assert "GET " + demo.url + "/agents lists the agents" in parlant.output
    assert "fix: follow the error above: check `agent_id`" in diagnosis(parlant)
    for result in (a2a, parlant):
        assert "HTTP 404" in diagnosis(result)
        assert "check the path in the url" not in diagnosis(result)


@pytest.mark.parametrize("response_path", ["reply", "$"])
def test_http_target_on_a_json_rpc_endpoint_is_told_to_use_type_a2a(
    tmp_path: Path, demo: DemoServer, response_path: str
) -> None:
    result = doctor(
        target_file(tmp_path, {"url": f"{demo.url}/a2a", "response_path": response_path})
    )
    assert result.exit_code == 3, result.output
    found = diagnosis(result)
    assert (
        "PROBLEM: the url answered a JSON-RPC 2.0 error (-32600: send a JSON-RPC 2.0 "
        "request" in found
    )
    assert (
        f"use `type: a2a` with `url:` the agent's base address, the one whose "
        f"/.well-known/agent-card.json serves its card (often this url: `url: {demo.url}/a2a`)"
        in found
    )
    assert "OK:" not in found and "check its logs" not in found


def test_http_target_on_an_agent_card_or_parlants_sessions_api(
    tmp_path: Path, demo: DemoServer
) -> None:
    card = doctor(
        target_file(
            tmp_path,
            {"url": f"{demo.url}/a2a/.well-known/agent-card.json?q={{{{input}}}}", "method": "GET"},
        )
    )
    assert card.exit_code == 3, card.output
    assert (
        "PROBLEM: the url answered an A2A agent card ('Northwind Outfitters support "
        "(demo)'), not a reply" in diagnosis(card)
    )
    assert f"fix: use `type: a2a` with `url: {demo.url}/a2a`: sparring reads the card" in diagnosis(
        card
    )
    sessions = doctor(target_file(tmp_path, {"url": f"{demo.url}/sessions"}))
    assert sessions.exit_code == 3, sessions.output
    assert "PROBLEM: the url is a Parlant server's sessions API" in diagnosis(sessions)
    assert (
        f"fix: use `type: parlant` with `url: {demo.url}` (the server's base address) "
        f"and `agent_id:` (GET {demo.url}/agents lists the agents)" in diagnosis(sessions)
    )


def test_web_page_is_a_problem_even_though_it_is_a_reply(tmp_path: Path, stage: Stage) -> None:
    url = stage.route(
        "/",
        200,
        "<!DOCTYPE html><html><head><title>Acme Support</title></head>"
        "<body>Chat with us</body></html>",
        content_type="text/html",
    )
    result = doctor(target_file(tmp_path, {"url": url}))
    assert result.exit_code == 3
    assert (
        "PROBLEM: the url answered a web page (text/html) titled 'Acme Support', not an "
        "agent's API" in diagnosis(result)
    )


def test_plain_text_body_is_the_reply(tmp_path: Path, stage: Stage) -> None:
    url = stage.route("/text", 200, "Hello from the agent", content_type="text/plain")
    result = doctor(target_file(tmp_path, {"url": url}))
    assert result.exit_code == 0
    assert "NOTE: the body is not JSON (text/plain), so all of it is the reply" in diagnosis(result)


def test_empty_reply_value_and_empty_body(tmp_path: Path, stage: Stage) -> None:
    url = stage.route("/empty", 200, json.dumps({"reply": "", "fallback": "Sorry, try again."}))
    empty_value = doctor(target_file(tmp_path, {"url": url, "response_path": "reply"}))
    assert empty_value.exit_code == 3
    assert "PROBLEM: `response_path: reply` holds an empty value" in diagnosis(empty_value)
    assert "set `response_path: fallback`" in diagnosis(empty_value)

    url = stage.route("/nothing", 200, "", content_type="text/plain")
    empty_body = doctor(target_file(tmp_path, {"url": url}))
    assert empty_body.exit_code == 3
    assert "PROBLEM: the agent answered HTTP 200 with an empty body" in diagnosis(empty_body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_asks_whether_the_agent_runs(tmp_path: Path) -> None:
    port = free_port()
    result = doctor(target_file(tmp_path, {"url": f"http://127.0.0.1:{port}/chat"}))
    assert result.exit_code == 3
    found = diagnosis(result)
    assert f"PROBLEM: nothing is listening at 127.0.0.1:{port}: connection refused" in found
    assert "is the agent running?" in found


def test_timeout(tmp_path: Path, stage: Stage) -> None:
    # 1 s: connecting to the stage must not use it up on a busy machine (that is another finding)
    result = doctor(target_file(tmp_path, {"url": f"{stage.base}/slow", "timeout_s": 1}))
    assert result.exit_code == 3
    assert "Response 1: none" in result.output
    found = diagnosis(result)
    assert "PROBLEM: no answer within 1 s" in found
    assert "Raise `timeout_s` (now 1 s)" in found


def test_secrets_are_masked_in_requests_and_responses(tmp_path: Path, stage: Stage) -> None:
    file = target_file(
        tmp_path,
        {
            "url": f"{stage.base}/echo?key={{{{secrets.BOT_KEY}}}}",
            "response_path": "reply",
            "headers": {
                "Authorization": "Bearer {{secrets.BOT_KEY}}",
                "X-Team": "{{secrets.BOT_KEY}}",
            },
            "body_template": {"message": "{{input}}", "key": "{{secrets.BOT_KEY}}"},
        },
    )
    result = doctor(file, env={"BOT_KEY": SECRET})
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    assert "Authorization: Bearer ***" in result.output
    assert "X-Team: ***" in result.output
    assert '"key": "***"' in result.output  # the request body, and its echo in the response
    assert "/echo?key=***" in result.output


def test_secrets_the_agent_echoes_are_masked_in_the_reply_and_tool_calls(
    tmp_path: Path, stage: Stage
) -> None:
    def echo(headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        key = next(v for k, v in headers.items() if k.lower() == "x-key")
        body = {
            "reply": f"your key is {key}",
            "calls": [{"name": "auth", "arguments": {"key": key}}],
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    stage.routes["/leaky"] = echo
    http = doctor(
        target_file(
            tmp_path,
            {
                "url": f"{stage.base}/leaky",
                "response_path": "reply",
                "tool_calls_path": "calls",
                "headers": {"X-Key": "{{secrets.HS}}"},
            },
        ),
        env={"HS": SECRET},
    )
    assert http.exit_code == 0, http.output
    assert "Reply (response_path 'reply'): 'your key is ***'" in http.output
    assert 'Tool calls: auth({"key": "***"})' in http.output

    url = a2a_agent(
        stage,
        lambda key: {
            "message": {
                "messageId": "m1",
                "role": "ROLE_AGENT",
                "parts": [{"text": f"your key is {key}"}],
                "metadata": {"toolCalls": [{"name": "auth", "arguments": {"key": key}}]},
            }
        },
    )
    a2a = doctor(
        target_file(
            tmp_path,
            {
                "type": "a2a",
                "url": url,
                "tool_calls_path": "metadata.toolCalls",
                "headers": {"X-Key": "{{secrets.HS}}"},
            },
        ),
        env={"HS": SECRET},
    )
    assert a2a.exit_code == 0, a2a.output
    assert "Reply: 'your key is ***'" in a2a.output
    assert 'Tool calls: auth({"key": "***"})' in a2a.output

    with ScriptedParlantServer(
        [Say(f"your key is {SECRET}", tools=[tool("auth", {"key": SECRET}, f"ok {SECRET}")])]
    ) as server:
        parlant = doctor(
            target_file(
                tmp_path,
                {
                    "type": "parlant",
                    "url": server.url,
                    "agent_id": "agent-1",
                    "headers": {"X-Key": "{{secrets.HS}}"},
                },
            ),
            env={"HS": SECRET},
        )
    assert parlant.exit_code == 0, parlant.output
    assert "Reply: 'your key is ***'" in parlant.output
    assert 'Tool calls: auth({"key": "***"})' in parlant.output
    for result in (http, a2a, parlant):
        assert SECRET not in result.output


def test_an_a2a_reply_that_is_not_a2a_and_a_card_url_that_is_not_a_url(
    tmp_path: Path, stage: Stage
) -> None:
    null = doctor(target_file(tmp_path, {"type": "a2a", "url": a2a_agent(stage, lambda _: None)}))
    assert null.exit_code == 3, null.output
    assert "sent an answer that is not a valid A2A reply (TypeError: " in null.output
    assert "Traceback" not in null.output

    stage.routes.clear()
    bad = doctor(
        target_file(
            tmp_path,
            {"type": "a2a", "url": a2a_agent(stage, lambda _: {}, interface_url="not a url")},
        )
    )
    assert bad.exit_code == 3, bad.output
    assert (
        "names 'not a url' as its interface URL (where messages go), which is not an "
        "http(s) URL; fix the agent card" in bad.output
    )
    assert "may have crashed" not in bad.output


def test_secrets_file_option_and_unset_secret(tmp_path: Path, stage: Stage) -> None:
    file = target_file(
        tmp_path,
        {
            "url": f"{stage.base}/echo",
            "response_path": "reply",
            "headers": {"X-Api-Key": "{{secrets.BOT_KEY}}"},
        },
    )
    unset = doctor(file, env={"BOT_KEY": None})
    assert isinstance(unset.exception, UserError)
    assert "secret 'BOT_KEY'" in str(unset.exception)
    secrets = tmp_path / "secrets.env"
    secrets.write_text(f"BOT_KEY={SECRET}\n", encoding="utf-8")
    ok = doctor(file, "--secrets-file", str(secrets), env={"BOT_KEY": None})
    assert ok.exit_code == 0, ok.output
    assert "X-Api-Key: ***" in ok.output


# --- configuration errors: exit 2 ---------------------------------------------------------


def test_invalid_target_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "target:\n  url: http://127.0.0.1:9/chat\n  respons_path: reply\n", encoding="utf-8"
    )
    result = doctor(str(path))
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception).startswith(f"{path}:3:3: unknown key 'respons_path'")
    assert "did you mean 'response_path'?" in str(result.exception)


def test_missing_file_and_unknown_scenario(tmp_path: Path) -> None:
    missing = doctor(str(tmp_path / "nope.yaml"))
    assert isinstance(missing.exception, UserError)
    assert "is not a file" in str(missing.exception)
    only_target = doctor(
        target_file(tmp_path, {"url": "http://127.0.0.1:9/chat"}), "--scenario", "x"
    )
    assert isinstance(only_target.exception, UserError)
    assert "holds only a target" in str(only_target.exception)


def test_a_python_suite_file_is_told_to_put_its_target_in_a_yaml_file(tmp_path: Path) -> None:
    suite = tmp_path / "test_x.py"
    suite.write_text(
        'from sparring import Suite\nsuite = Suite(target="http://x/chat")\n', encoding="utf-8"
    )
    result = doctor(str(suite))
    assert isinstance(result.exception, UserError)
    text = str(result.exception)
    assert "is a Python file; `sparring doctor` takes a YAML (or JSON) test file" in text
    assert "To check a Suite's target, write the same target in a YAML file, e.g. target: {" in text
    assert "invalid YAML" not in text


def test_exit_code_2_through_the_real_cli(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("target: {url: chat.example.com}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "doctor", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert f"{path}:1:" in done.stderr
    assert "start the url with http:// or https://" in done.stderr


# --- diagnose alone -----------------------------------------------------------------------


def exchange(**fields: Any) -> Exchange:
    return Exchange(method="POST", url="http://agent.example:8000/chat", **fields)


def test_unresolvable_host_and_closed_connection() -> None:
    dns = diagnose(
        Probe(target_type="http", message="Hi", failure="error", exchanges=(exchange(error="dns"),))
    )
    assert dns[0].what.startswith("the host name 'agent.example' cannot be resolved")
    closed = diagnose(
        Probe(
            target_type="a2a", message="Hi", failure="error", exchanges=(exchange(error="closed"),)
        )
    )
    assert "closed the connection without an HTTP answer" in closed[0].what
    assert "http:// for an https port" in closed[0].fix
    assert not is_healthy(dns) and not is_healthy(closed)


def test_followed_redirect_is_a_warning_and_a_stalled_body_a_timeout() -> None:
    moved = exchange(status=308, response_headers=(("Location", "https://agent.example/v1"),))
    final = exchange(status=200, response_body='{"choices": []}')
    findings = diagnose(
        Probe(
            target_type="openai_chat",
            message="Hi",
            exchanges=(moved, final),
            reply=Message(role="agent", content="Hello"),
        )
    )
    assert [f.severity for f in findings] == ["warning", "ok"]
    assert "use the final URL: https://agent.example/v1" in findings[0].fix

    stalled = exchange(status=200, body_complete=False)
    timeout = diagnose(
        Probe(
            target_type="http", message="Hi", failure="timeout", exchanges=(stalled,), timeout_s=5
        )
    )
    assert "answered HTTP 200 but did not finish its body within 5 s" in timeout[0].what


def test_json_rpc_request_and_a2a_0_2_card_path() -> None:
    rpc = exchange(
        status=200,
        request_body='{"jsonrpc": "2.0", "method": "x"}',
        response_body='{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, '
        '"message": "no such method"}}',
    )
    [finding] = diagnose(
        Probe(
            target_type="http",
            message="Hi",
            exchanges=(rpc,),
            reply=Message(role="agent", content="{...}"),
        )
    )
    assert finding.what == "the agent answered a JSON-RPC error (-32601: no such method)"
    assert finding.fix.startswith("fix what it names in `body_template`; for an A2A agent")

    card = Exchange(
        method="GET",
        url="http://agent.example/x/.well-known/agent.json?q=Hi",
        status=200,
        response_body='{"name": "Old", "url": "http://agent.example/x", "skills": []}',
    )
    [finding] = diagnose(
        Probe(
            target_type="http",
            message="Hi",
            exchanges=(card,),
            reply=Message(role="agent", content="{...}"),
        )
    )
    assert (
        "use `type: a2a` with `url: http://agent.example/x` and `card_path: "
        "/.well-known/agent.json`" in finding.fix
    )
    elsewhere = Exchange(
        method="GET",
        url="http://agent.example/card",
        status=200,
        response_body='{"supportedInterfaces": []}',
    )
    [finding] = diagnose(
        Probe(
            target_type="http",
            message="Hi",
            exchanges=(elsewhere,),
            reply=Message(role="agent", content="{...}"),
        )
    )
    assert finding.what == "the url answered an A2A agent card, not a reply"
    assert "`url: http://agent.example/` and `card_path: /card`" in finding.fix


def test_reply_candidates_skip_echoes_ids_and_roles() -> None:
    body: Any = {
        "id": "req-42",
        "input": "Where is my order?",
        "role": "assistant",
        "output": {"text": "It ships Monday.", "lang": "English"},
        "odd key": "Thanks for waiting, here it is",
    }
    assert reply_candidates(body, message="Where is my order?") == [
        ("output.text", "It ships Monday."),
        ('["odd key"]', "Thanks for waiting, here it is"),
        ("output.lang", "English"),
    ]
