"""No secret in the cassettes the pytest plugin records (`--sparring-record`): the agent's
replies and raw bodies are masked with the secrets the targets looked up, for scenarios of
test files, marked Python tests and `@suite.scenario` tests, with and without pytest-xdist;
a strict replay of such cassettes then finds every answer, and its miss messages show no
secret either. `sparring run --record` of a Python test's session masks them too.

The agent (`EchoServer`) echoes its `Authorization` header, as typed and base64-encoded.
"""

from __future__ import annotations

import base64
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparring.cli.main import cli
from sparring.models.registry import PROVIDERS
from tests.support.echo_server import Answer, EchoRequest, EchoServer
from tests.test_pytest_replay import CONFTEST, MODELS

pytest_plugins = ["pytester"]

SECRET = "S3cr3tT0ken-XYZ987"
LIVE = ("--sparring-live", "--sparring-no-store", "--sparring-record", "tapes")
STRICT = ("--sparring-replay", "tapes", "--sparring-replay-strict", "--sparring-no-store")

SCENARIOS = """
target:
  url: "{url}"
  headers: {{Authorization: "Bearer {{{{secrets.BOT_KEY}}}}"}}
  body_template: {{message: "{{{{input}}}}"}}
  response_path: reply
scenarios:
  - id: shop
    turns:
      - user: "What is my key?"
        should: tell the key
  - id: chat
    opening_message: "Hello"
    goal: Learn the key
    max_turns: 2
"""

PYTHON_TESTS = """
import pytest

from sparring import Suite

TARGET = {{"url": "{url}", "headers": {{"Authorization": "Bearer {{{{secrets.BOT_KEY}}}}"}}}}
suite = Suite(target=TARGET)


@suite.scenario
async def test_suite_key():
    async with suite.session() as session:
        response = await session.send("What is my key?")
        await response.should("tell the key")


@pytest.mark.sparring
async def test_marked_key(sparring):
    async with sparring.session(TARGET) as session:
        response = await session.send("What is my key, please?")
        await response.should("tell the key")
"""


def echo_key(request: EchoRequest) -> Answer:
    key = request.headers.get("authorization", "")
    encoded = base64.b64encode(key.encode()).decode()
    return Answer({"reply": f"Your header is {key}, or {encoded}"})


@pytest.fixture
def agent() -> Iterator[EchoServer]:
    with EchoServer(echo_key) as server:
        yield server


def project(pytester: pytest.Pytester, url: str, *, python: bool = False) -> None:
    """The inner project: `scripted:judge` for every role, the key-echoing scenario, and
    with `python` the Python tests that open sessions on the same target."""
    pytester.makepyprojecttoml('[tool.sparring]\nyaml_dirs = ["evals"]\nmodel = "scripted:judge"')
    pytester.makepyfile(scripted_models=MODELS)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir(exist_ok=True)
    (pytester.path / "evals/shop.yaml").write_text(textwrap.dedent(SCENARIOS).format(url=url))
    if python:
        pytester.makepyfile(test_python=PYTHON_TESTS.format(url=url))


ENCODED = base64.b64encode(f"Bearer {SECRET}".encode()).decode()  # as the agent sends it


def shows_secret(text: str) -> bool:
    """Whether `text` holds the secret as typed, or the start or end of its base64."""
    return any(part in text for part in (SECRET, ENCODED[:16], ENCODED[-12:]))


def leaks(path: Path) -> list[str]:
    """The lines of every file under `path` that show the secret (`shows_secret`)."""
    return [
        line
        for file in sorted(path.rglob("*"))
        if file.is_file()
        for line in file.read_text().splitlines()
        if shows_secret(line)
    ]


@pytest.mark.parametrize("workers", [(), ("-p", "xdist", "-n", "2")], ids=["one", "xdist"])
def test_recorded_cassettes_hold_no_secret_and_replay_strictly(
    pytester: pytest.Pytester,
    agent: EchoServer,
    monkeypatch: pytest.MonkeyPatch,
    workers: tuple[str, ...],
) -> None:
    monkeypatch.setenv("BOT_KEY", SECRET)
    project(pytester, agent.url("/chat"), python=True)
    recorded = pytester.runpytest_subprocess(*workers, *LIVE)
    recorded.assert_outcomes(passed=4)
    agent_lines = (pytester.path / "tapes/agent.jsonl").read_text()
    masked = [line for line in agent_lines.splitlines() if "Your header is Bearer ***" in line]
    assert len(masked) == 4  # every test's reply
    assert leaks(pytester.path / "tapes") == []
    replayed = pytester.runpytest_subprocess(*STRICT)
    replayed.assert_outcomes(passed=4)
    replayed.stdout.fnmatch_lines(
        ["replay: agent: 4 replayed, 0 live; user: 1 replayed, 0 live; judge: 4 replayed, 0 live"]
    )
    assert not shows_secret(replayed.stdout.str() + recorded.stdout.str())


def test_a_strict_miss_quotes_the_prompt_masked(
    pytester: pytest.Pytester, agent: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOT_KEY", SECRET)
    project(pytester, agent.url("/chat"))
    pytester.runpytest_subprocess(*LIVE).assert_outcomes(passed=2)
    user = pytester.path / "tapes/user.jsonl"
    user.write_text(user.read_text().splitlines()[0] + "\n")  # the user's answers lost:
    monkeypatch.delenv("BOT_KEY")  # CI without the key: only the cassette can mask it
    result = pytester.runpytest_subprocess(*STRICT, "-k", "chat")  # its prompt is a miss
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no recorded simulated user answer for the prompt ending*"])
    assert "***, or *** <<<END" in result.stdout.str()  # the agent's reply, masked
    assert leaks(pytester.path / "tapes") == []
    assert not shows_secret(result.stdout.str())


@pytest.fixture
def sparring_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`sparring run` in this process, in the inner project, with its scripted models."""
    monkeypatch.setattr(sys, "path", [str(pytester.path), *sys.path])
    monkeypatch.chdir(pytester.path)
    yield
    PROVIDERS.pop("scripted", None)
    sys.modules.pop("scripted_models", None)


def test_sparring_run_records_a_python_tests_session_masked(
    pytester: pytest.Pytester,
    agent: EchoServer,
    monkeypatch: pytest.MonkeyPatch,
    sparring_run: None,
) -> None:
    monkeypatch.setenv("BOT_KEY", SECRET)
    project(pytester, agent.url("/chat"), python=True)
    import scripted_models  # pyright: ignore[reportMissingImports]

    scripted_models.register()  # pyright: ignore[reportUnknownMemberType]
    args = ["run", "evals", "test_python.py", "--live", "--no-store", "--record", "tapes"]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    agent_lines = (pytester.path / "tapes/agent.jsonl").read_text().splitlines()
    assert len([line for line in agent_lines if "Your header is Bearer ***" in line]) == 3
    assert leaks(pytester.path / "tapes") == []
