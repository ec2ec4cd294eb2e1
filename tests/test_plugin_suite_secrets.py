"""`Suite` tests read the `secrets_file` setting like every other sparring test (issue 9,
item 11): under the pytest plugin, and from Python (`suite.run()`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparring.api import Suite
from tests.support.echo_server import Answer, EchoRequest, EchoServer

pytest_plugins = ["pytester"]

KEY = "bot-key-from-the-secrets-file"


def _guarded(request: EchoRequest) -> Answer:
    """An agent that answers only with the right key in its `X-Key` header."""
    if request.headers.get("x-key") != KEY:
        return Answer({"error": "unauthorised"}, status=401)
    return Answer({"reply": "authorised"})


@pytest.fixture(scope="module")
def agent() -> Iterator[EchoServer]:
    with EchoServer(_guarded) as server:
        yield server


def _target(server: EchoServer) -> dict[str, object]:
    return {"url": server.url("/chat"), "headers": {"X-Key": "{{secrets.BOT_KEY}}"}}


SUITE_TEST = """
from sparring.api import Suite

suite = Suite(target={TARGET})


@suite.scenario
async def test_the_key_comes_from_the_secrets_file():
    async with suite.session() as session:
        response = await session.send("hi")
        assert response.message == '{{"reply": "authorised"}}'
"""


def test_suite_tests_under_the_plugin_read_the_secrets_file_setting(
    pytester: pytest.Pytester, agent: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BOT_KEY", raising=False)
    pytester.makepyprojecttoml('[tool.sparring]\nsecrets_file = "config/secrets.env"\n')
    (pytester.path / "config").mkdir()
    (pytester.path / "config" / "secrets.env").write_text(f"BOT_KEY={KEY}\n")
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "test_suite.py").write_text(SUITE_TEST.format(TARGET=repr(_target(agent))))
    elsewhere = pytester.path.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the settings are the project's, wherever pytest starts
    result = pytester.runpytest("-v", str(tests))
    result.assert_outcomes(passed=1)


def test_suite_run_reads_the_configured_secrets_file(
    tmp_path: Path, agent: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BOT_KEY", raising=False)
    (tmp_path / "secrets.env").write_text(f"BOT_KEY={KEY}\n")
    monkeypatch.setenv("SPARRING_SECRETS_FILE", str(tmp_path / "secrets.env"))
    suite = Suite(target=_target(agent))

    @suite.scenario
    async def test_sent_with_the_key() -> None:  # pyright: ignore[reportUnusedFunction]
        async with suite.session() as session:
            response = await session.send("hi")
            assert response.message == '{"reply": "authorised"}'

    assert suite.run().exit_code == 0
    explicit = tmp_path / "other.env"
    explicit.write_text("BOT_KEY=wrong\n")
    assert suite.run(secrets_file=explicit).exit_code == 3  # the agent refused: an error
