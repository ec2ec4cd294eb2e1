"""What the dashboard refuses to do for whoever reaches it: call the server's Python code
(callable, voice and adapter targets, from API test files, agent assets or stored suites),
read its environment or disk (`{{secrets.NAME}}` only from its secrets file, no
`cases_from:`), or answer another host's name or another site's writes (DNS rebinding)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from sparring.dashboard.origins import allowed_hosts, refusal
from sparring.dashboard.runs import SuiteRunner, server_secrets
from sparring.dashboard.state import Dashboard
from sparring.store.assets import create_asset, publish_revision
from sparring.store.database import Store, open_store
from tests.support.dashboard_platform import (
    EVALUATION,
    USER,
    PlatformModels,
    dashboard_client,
    free_port,
    platform_dashboard,
)
from tests.support.echo_server import Answer, EchoRequest, EchoServer

CALLED: list[str] = []
"""Every call of `agent` (a function of the server no dashboard user may run)."""
HERE = "tests.test_dashboard_safety"
SERVER_CODE_TARGETS: list[dict[str, Any]] = [
    {"type": "callable", "ref": f"{HERE}:agent"},
    {"type": "voice", "callable": f"{HERE}:agent"},
    {"type": "voice", "livekit": f"{HERE}:agent"},
]


def agent(*args: Any) -> str:
    CALLED.append(repr(args))
    return "called"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/dashboard.db")
    yield opened
    opened.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    CALLED.clear()
    with dashboard_client(platform_dashboard(store)) as opened:
        yield opened


def scripted_file(target: dict[str, Any]) -> dict[str, Any]:
    turn = {"user": "hi", "checks": [{"contains": "ok"}]}
    return {"target": target, "scenarios": [{"id": "a", "turns": [turn]}]}


def finished_run(client: TestClient, suite_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120  # a guard for a busy machine, not a measurement
    while time.monotonic() < deadline:
        suite = client.get(f"/api/suites/{suite_id}").json()
        if suite["status"] != "in_progress" and suite["runs"]:
            return client.get(f"/api/runs/{suite['runs'][0]['id']}").json()
        time.sleep(0.05)
    raise AssertionError(f"suite {suite_id} still in progress")


# --- 1. the server's Python code -------------------------------------------------------------


@pytest.mark.parametrize("target", SERVER_CODE_TARGETS, ids=["callable", "voice", "livekit"])
def test_an_api_test_file_with_a_target_running_server_code_is_refused(
    client: TestClient, target: dict[str, Any]
) -> None:
    refused = client.post("/api/tests", json={"name": "x", "file": scripted_file(target)})
    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"]
    assert f"has a `{target['type']}` target, which the dashboard does not run" in detail
    assert "http, openai_chat, a2a, parlant, browser" in detail and "`sparring run`" in detail
    assert CALLED == [] and client.get("/api/suites").json() == []


@pytest.mark.parametrize("target", SERVER_CODE_TARGETS, ids=["callable", "voice", "livekit"])
def test_an_agent_running_server_code_cannot_be_created_or_saved(
    client: TestClient, target: dict[str, Any]
) -> None:
    made = client.post("/api/assets/agent", json={"name": "Mine", "content": target})
    assert made.status_code == 422 and "does not run" in made.json()["detail"]
    assert client.get("/api/assets/agent").json() == []
    http = {"type": "http", "url": "http://127.0.0.1:9/chat"}
    agent_id = client.post("/api/assets/agent", json={"name": "Mine", "content": http}).json()["id"]
    draft = client.post(
        f"/api/assets/agent/{agent_id}/drafts", json={"name": "Mine", "content": target}
    )
    assert draft.status_code == 422 and "does not run" in draft.json()["detail"]
    token = client.get("/api/session").json()["csrf_token"]
    lines = "\n".join(f"{k}: {v}" for k, v in target.items())
    for page in ("/agents/new", f"/agents/{agent_id}"):
        form = client.post(page, data={"csrf_token": token, "name": "Mine", "target": lines})
        assert form.status_code == 422 and "which the dashboard does not run" in form.text
    revisions = client.get(f"/api/assets/agent/{agent_id}").json()["revisions"]
    assert [r["content"]["type"] for r in revisions] == ["http"]


def test_a_stored_suite_whose_agent_runs_server_code_does_not_start(
    store: Store, client: TestClient
) -> None:
    """An agent stored before the dashboard refused it (or by another program) is refused
    when its suite starts, and nothing is claimed."""
    stored = create_asset(store, "agent", "Old", {"type": "callable", "ref": f"{HERE}:agent"})
    publish_revision(store, stored.id, 1)
    for kind, name, content in (
        ("evaluation", "Delivery info", EVALUATION),
        ("simulated_user", "Late parcel", {**USER, "evaluations": ["Delivery info"]}),
    ):
        made = client.post(f"/api/assets/{kind}", json={"name": name, "content": content})
        client.post(f"/api/assets/{kind}/{made.json()['id']}/revisions/1/publish", json={})
    (user,) = client.get("/api/assets/simulated_user").json()
    case = {"agent_id": stored.id, "user_id": user["id"], "max_turns": 2}
    body = {"name": "Old suite", "cases": [case], "run": True}
    refused = client.post("/api/suites", json=body)
    assert refused.status_code == 422, refused.text
    assert "scenario 'case-1' has a `callable` target" in refused.json()["detail"]
    (suite,) = client.get("/api/suites").json()
    again = client.post(f"/api/suites/{suite['id']}/runs", json={})
    assert again.status_code == 422 and "does not run" in again.json()["detail"]
    assert client.get(f"/api/suites/{suite['id']}").json()["status"] == "not_run"
    assert CALLED == []


# --- 2. the server's environment and disk -----------------------------------------------------


def echoing(seen: list[EchoRequest]) -> EchoServer:
    def answer(request: EchoRequest) -> Answer:
        seen.append(request)
        return Answer({"reply": "ok"})

    return EchoServer(answer)


def test_secrets_come_from_the_servers_secrets_file_never_its_environment(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOO_TOKEN", "env-value-never-sent")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-value-never-sent")
    secrets_file = tmp_path / "secrets.env"
    secrets_file.write_text("FILE_TOKEN=file-value-sent\n", encoding="utf-8")
    runner = SuiteRunner(
        store=store, models=PlatformModels(), secrets=server_secrets(str(secrets_file))
    )
    seen: list[EchoRequest] = []
    with echoing(seen) as agent_server, dashboard_client(Dashboard(store, runner=runner)) as client:
        for name in ("FILE_TOKEN", "FOO_TOKEN", "OPENAI_API_KEY"):
            target = {
                "type": "http",
                "url": agent_server.url("/chat"),
                "headers": {"X-Token": f"{{{{secrets.{name}}}}}"},
                "response_path": "reply",
            }
            started = client.post("/api/tests", json={"name": name, "file": scripted_file(target)})
            if name == "FILE_TOKEN":
                assert started.status_code == 202, started.text
                run = finished_run(client, started.json()["suite_id"])
                assert run["scenarios"][0]["trials"][0]["error"] is None
            else:
                assert started.status_code == 422, started.text
                detail = started.json()["detail"]
                assert f"secret {name!r} (used as {{{{secrets.{name}}}}}) is not in" in detail
                assert "--secrets-file" in detail and str(secrets_file) not in detail
    assert [r.headers["x-token"] for r in seen] == ["file-value-sent"]


def test_an_api_test_file_may_not_read_rows_from_the_servers_disk(
    client: TestClient, tmp_path: Path
) -> None:
    rows = tmp_path / "private.csv"
    rows.write_text("order\nPRIVATE-ROW-10234\n", encoding="utf-8")
    for written in (str(rows), f"../../../../../../..{rows}"):
        file = (
            "target: {type: http, url: 'http://127.0.0.1:9/chat'}\nscenarios:\n"
            f"  - id: a\n    cases_from: {written}\n    turns: [{{user: 'order {{{{order}}}}'}}]\n"
        )
        refused = client.post("/api/tests", json={"name": "rows", "file": file})
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert detail.startswith("api:rows:4:5: a test file sent to the dashboard cannot use")
        assert "PRIVATE-ROW" not in detail
    assert client.get("/api/suites").json() == []


# --- 3. other hosts and other sites ----------------------------------------------------------

REBOUND = "rebind.attacker.example:8790"


def test_a_request_naming_another_host_is_refused_against_dns_rebinding(
    client: TestClient,
) -> None:
    file = scripted_file({"type": "http", "url": "http://127.0.0.1:9/chat"})
    headers = {"Host": REBOUND, "Origin": f"http://{REBOUND}"}
    rebound = client.post("/api/tests", json={"name": "x", "file": file}, headers=headers)
    assert rebound.status_code == 400
    assert "does not answer for the host 'rebind.attacker.example:8790'" in rebound.text
    assert client.get("/suites", headers={"Host": REBOUND}).status_code == 400
    assert "set-cookie" not in client.get("/api/suites", headers={"Host": REBOUND}).headers
    for host in ("localhost:8790", "127.0.0.1:8790", "[::1]:8790"):
        assert client.get("/api/suites", headers={"Host": host}).status_code == 200
    assert client.get("/api/suites", headers={"Host": "127.0.0.1:8791"}).status_code == 400
    assert client.get("/api/suites").status_code == 200  # the test client's 127.0.0.1:8790


def test_a_write_from_another_site_is_refused(client: TestClient) -> None:
    body = {"name": "Mine", "content": {"type": "http", "url": "http://127.0.0.1:9/chat"}}
    for foreign in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/page"},
        {"Origin": "http://localhost:8790"},  # another origin than the Host named
    ):
        refused = client.post("/api/assets/agent", json=body, headers=foreign)
        assert refused.status_code == 403 and "another site" in refused.json()["detail"]
    token = client.get("/api/session").json()["csrf_token"]
    evil = {"Origin": "http://evil.example"}
    page = client.post("/suites/new", data={"csrf_token": token}, headers=evil)
    assert page.status_code == 403 and "another site" in page.text
    assert client.get("/api/assets/agent").json() == []
    own = {"Origin": "http://127.0.0.1:8790"}
    assert client.post("/api/assets/agent", json=body, headers=own).status_code == 201
    referred = {"Referer": "http://127.0.0.1:8790/agents/new"}
    assert client.post("/api/assets/agent", json=body | {"name": "B"}, headers=referred).is_success
    assert client.post("/api/assets/agent", json=body | {"name": "C"}).is_success  # a script


def test_the_hosts_a_server_answers_follow_its_address() -> None:
    assert allowed_hosts("127.0.0.1", 8790) == {
        "127.0.0.1:8790",
        "localhost:8790",
        "[::1]:8790",
    }
    assert "[::1]:9000" in allowed_hosts("::1", 9000)  # type: ignore[operator]
    assert "localhost" in allowed_hosts("localhost", 80)  # type: ignore[operator]
    assert "10.0.0.5:8790" in allowed_hosts("10.0.0.5", 8790)  # type: ignore[operator]
    assert allowed_hosts("0.0.0.0", 8790) is None  # every address (needs accounts)
    open_hosts = refusal("POST", {"host": "dash.example:8790"}, None)
    assert open_hosts is None
    cross = refusal("POST", {"host": "dash.example:8790", "origin": "http://x.example"}, None)
    assert cross is not None and cross[0] == 403


def test_sparring_serve_answers_its_own_host_only_and_reads_its_secrets_file(
    tmp_path: Path,
) -> None:
    """The command end to end: the Host check is on, and `--secrets-file` is where
    `{{secrets.NAME}}` come from (the environment's FOO_TOKEN is not)."""
    secrets_file = tmp_path / "serve.env"
    secrets_file.write_text("FILE_TOKEN=from-the-file\n", encoding="utf-8")
    env = {**os.environ, "FOO_TOKEN": "from-the-environment"}
    command = [sys.executable, "-m", "sparring.cli", "serve"]
    command += ["--store", str(tmp_path / "s.db"), "--secrets-file", str(secrets_file)]
    seen: list[EchoRequest] = []
    with echoing(seen) as agent_server, served_command(command, env) as base:
        rebound = httpx.get(f"{base}/api/suites", headers={"Host": REBOUND})
        assert rebound.status_code == 400
        for name in ("FILE_TOKEN", "FOO_TOKEN"):
            headers = {"X-Token": f"{{{{secrets.{name}}}}}"}
            target = {"type": "http", "url": agent_server.url("/chat"), "headers": headers}
            file = scripted_file(target | {"response_path": "reply"})
            started = httpx.post(f"{base}/api/tests", json={"name": name, "file": file})
            if name == "FOO_TOKEN":
                assert started.status_code == 422 and "is not in" in started.text
            else:
                assert started.status_code == 202, started.text
                wait_for_run(base, started.json()["suite_id"])
    assert [r.headers["x-token"] for r in seen] == ["from-the-file"]


@contextmanager
def served_command(command: list[str], env: dict[str, str]) -> Generator[str]:
    """`command` (a `sparring serve`) with `--port` a free port, running while inside; its
    base URL. A port found free can be taken before the server binds it (as the local port
    of a connection another process opens): the server then exits saying so, and is started
    again on another port."""
    for _ in range(3):
        port = free_port()
        process = subprocess.Popen(
            [*command, "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
        )
        try:
            if listening(process, port):
                yield f"http://127.0.0.1:{port}"
                return
        finally:
            process.terminate()
            process.wait(timeout=30)
            if process.stderr is not None:
                process.stderr.close()
    raise AssertionError("sparring serve found every port it was given taken")


def listening(process: subprocess.Popen[str], port: int) -> bool:
    """Whether `process` listens on `port` (within a minute); False if it exited because
    the port was taken; any other exit fails the test with what it said."""
    deadline = time.monotonic() + 60
    while not port_open(port):
        if process.poll() is not None:
            said = process.stderr.read() if process.stderr else ""
            assert f"cannot listen on 127.0.0.1:{port}" in said, said
            return False
        assert time.monotonic() < deadline, "sparring serve did not start"
        time.sleep(0.1)
    return True


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_for_run(base: str, suite_id: str) -> None:
    deadline = time.monotonic() + 120  # a guard for a busy machine, not a measurement
    while time.monotonic() < deadline:
        suite = httpx.get(f"{base}/api/suites/{suite_id}").json()
        if suite["status"] != "in_progress" and suite["runs"]:
            return
        time.sleep(0.05)
    raise AssertionError(f"suite {suite_id} still in progress")
