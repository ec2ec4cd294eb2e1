"""A sync Python test runs in a worker thread; the run's target and models belong to the
run's event loop. `with suite.session() as session:` there opens a session whose calls run
on that loop and block (`send`, `should`, `check`, `unfold`...). A session opened through
`asyncio.run` (another loop) makes that test `error`, naming it and saying what to write;
the run goes on, writes its reports and ends its stored run. Before, the session's
connections were left on the closed loop and closing the run's HTTP client killed the
whole run."""

from __future__ import annotations

import json
import os
import sqlite3
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from sparring.api import AgentMessage, CustomerMessage, Suite
from sparring.errors import UserError
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult
from tests.support.echo_server import Answer, EchoRequest, EchoServer
from tests.test_cli import sparring


def _hello(request: EchoRequest) -> Answer:
    return Answer({"reply": "Hello there"})


def _statuses(result: RunResult) -> dict[str, tuple[str, str | None]]:
    return {s.name: (s.trials[0].status, s.trials[0].error) for s in result.scenarios}


def test_a_session_in_asyncio_run_in_a_sync_test_is_that_tests_error_naming_what_to_write() -> None:
    with EchoServer(_hello) as server:
        suite = Suite(target={"url": server.url("/chat"), "response_path": "reply"})

        async def go() -> None:
            async with suite.session() as session:
                assert (await session.send("hi")).message == "Hello there"

        @suite.scenario
        def test_sync() -> None:  # pyright: ignore[reportUnusedFunction]
            import asyncio

            asyncio.run(go())

        @suite.scenario
        async def test_async() -> None:  # pyright: ignore[reportUnusedFunction]
            await go()

        result = suite.run(store=False)
    statuses = _statuses(result)
    assert statuses["test_async"] == ("passed", None)
    status, error = statuses["test_sync"]
    assert status == "error"
    assert error is not None
    assert "test_sync()" in error and "asyncio.run" in error
    assert "with suite.session() as session:" in error and "async def test_sync(" in error
    assert result.exit_code == 3


def _fine(history: object) -> str:
    return "fine"


def test_the_run_client_in_a_sync_hook_is_a_hook_error_not_a_crash() -> None:
    suite = Suite(target=_fine)

    @suite.before_each
    def warm_up(name: str) -> None:  # pyright: ignore[reportUnusedFunction]
        suite.client.headers.get("x")  # noqa: B018 - any use of it

    @suite.scenario
    async def test_fine() -> None:  # pyright: ignore[reportUnusedFunction]
        async with suite.session() as session:
            await session.send("hi")

    result = suite.run(store=False)
    status, error = _statuses(result)["test_fine"]
    assert status == "error"
    assert error is not None and "suite.client cannot be used" in error
    assert "warm_up()" in error


def test_sparring_run_with_such_a_test_writes_its_report_and_ends_its_stored_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EchoServer(_hello) as server:
        test_file = tmp_path / "test_sync_session.py"
        test_file.write_text(
            textwrap.dedent(f"""
                import asyncio
                from sparring.api import Suite

                suite = Suite(target={{"url": "{server.url("/chat")}", "response_path": "reply"}})

                async def go():
                    async with suite.session() as session:
                        await session.send("hi")

                @suite.scenario
                def test_x():
                    asyncio.run(go())
            """),
            encoding="utf-8",
        )
        (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
        done = sparring("run", str(test_file), "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    [trial] = report["scenarios"][0]["trials"]
    assert trial["status"] == "error"
    assert "async def test_x(" in trial["error"]

    with sqlite3.connect(os.environ["SPARRING_STORE"]) as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("finished",)]


def _met(quote: str) -> dict[str, object]:
    return {"verdict": "met", "reason": "it does", "evidence": [quote], "turns": [1]}


def test_a_sync_test_uses_a_session_with_a_plain_with_and_blocking_calls() -> None:
    def answer(messages: Sequence[ChatMessage], schema: object) -> dict[str, object]:
        goodbye = any("say goodbye" in m["content"] for m in messages)  # tests run at once
        return {**_met("Hello there"), "verdict": "not_met" if goodbye else "met"}

    judge = ScriptedModel(handler=answer)
    with EchoServer(_hello) as server:
        suite = Suite(target={"url": server.url("/chat"), "response_path": "reply"}, model=judge)

        @suite.scenario
        def test_greets() -> None:  # pyright: ignore[reportUnusedFunction]
            with suite.session() as session:
                response = session.send("hi")
                assert response.message == "Hello there" and response.turn == 1
                response.check({"contains": "Hello"})
                response.should("greet the customer")
                [sub] = session.unfold(
                    [
                        CustomerMessage("hi"),
                        AgentMessage("Hello there", checks=[{"contains": "Hello"}]),
                    ]
                )
                assert sub.status == "passed"
                assert len(session.transcript.messages) == 2

        @suite.scenario
        def test_unmet_should_fails() -> None:  # pyright: ignore[reportUnusedFunction]
            with suite.session() as session:
                session.send("hi").should("say goodbye")

        result = suite.run(store=False)
    statuses = _statuses(result)
    assert statuses["test_greets"] == ("passed", None)
    assert statuses["test_unmet_should_fails"][0] == "failed"
    assert len(judge.calls) == 2


def test_a_plain_with_outside_a_sync_test_says_to_write_async_with() -> None:
    suite = Suite(target=_fine)
    with pytest.raises(UserError, match="async with"), suite.session():
        pass
