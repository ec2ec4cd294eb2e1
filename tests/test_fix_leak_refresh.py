"""Refreshing cassettes with fewer tests than were recorded (`-k`, replaying and recording
the same directory) keeps exactly what was used, under pytest as with `sparring run`, and
the replay line says how many recorded answers were dropped; under pytest-xdist a worker
that was killed is named as left out of the replay counts, its recordings merged.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from sparring.cli.main import cli
from sparring.models.registry import PROVIDERS
from tests.support.echo_server import EchoServer
from tests.test_pytest_replay import CONFTEST, MODELS, echo

pytest_plugins = ["pytester"]

SCENARIOS = """
target:
  url: "{url}"
  body_template: {{message: "{{{{input}}}}"}}
  response_path: reply
scenarios:
  - id: s0
    turns:
      - user: "Book me a slot"
        checks: [{{contains: Book}}]
  - id: s1
    turns:
      - user: "Cancel my slot"
        checks: [{{contains: Cancel}}]
  - id: s2
    turns:
      - user: "Move my slot"
        checks: [{{contains: Move}}]
"""

KILLED = """
import os
import signal


def test_zz_killed():
    os.kill(os.getpid(), signal.SIGKILL)
"""

REFRESH = ("--sparring-replay", "tapes", "--sparring-record", "tapes", "--sparring-no-store")


@pytest.fixture
def agent() -> Iterator[EchoServer]:
    with EchoServer(echo) as server:
        yield server


def project(pytester: pytest.Pytester, url: str) -> None:
    pytester.makepyprojecttoml('[tool.sparring]\nyaml_dirs = ["evals"]\n')
    pytester.makepyfile(scripted_models=MODELS)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir(exist_ok=True)
    (pytester.path / "evals/shop.yaml").write_text(textwrap.dedent(SCENARIOS).format(url=url))


def agent_lines(pytester: pytest.Pytester) -> int:
    return len((pytester.path / "tapes/agent.jsonl").read_text().splitlines()) - 1  # header


def test_a_pytest_refresh_of_some_tests_says_how_many_answers_it_dropped(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    project(pytester, agent.url("/chat"))
    pytester.runpytest("--sparring-record", "tapes", "--sparring-no-store").assert_outcomes(
        passed=3
    )
    assert agent_lines(pytester) == 3
    result = pytester.runpytest("-k", "s0", *REFRESH)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "replay: agent: 1 replayed, 0 live; recorded to tapes (2 recorded answers this run "
            "did not use were dropped: it keeps exactly what it used; refresh with every test "
            "selected to keep them)"
        ]
    )
    assert agent_lines(pytester) == 1  # as `sparring run` keeps exactly what was used
    everything = pytester.runpytest(*REFRESH)  # nothing more to drop
    everything.stdout.fnmatch_lines(["replay: agent: 1 replayed, 2 live; recorded to tapes"])


@pytest.fixture
def sparring_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`sparring run` in this process, in the inner project, with its scripted models."""
    monkeypatch.setattr(sys, "path", [str(pytester.path), *sys.path])
    monkeypatch.chdir(pytester.path)
    yield
    PROVIDERS.pop("scripted", None)
    sys.modules.pop("scripted_models", None)


def test_sparring_run_refreshing_some_scenarios_says_the_same(
    pytester: pytest.Pytester, agent: EchoServer, sparring_run: None
) -> None:
    project(pytester, agent.url("/chat"))
    runner, run = CliRunner(), ["run", "evals", "--no-store"]
    assert runner.invoke(cli, [*run, "--record", "tapes"]).exit_code == 0
    done = runner.invoke(cli, [*run, "-k", "s0", "--replay", "tapes", "--record", "tapes"])
    assert done.exit_code == 0, done.output
    assert "recorded to tapes (2 recorded answers this run did not use were dropped" in (
        done.output
    )
    assert agent_lines(pytester) == 1


def test_a_killed_workers_counts_are_said_to_be_missing(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    project(pytester, agent.url("/chat"))
    pytester.makepyfile(test_zz_killed=KILLED)
    args = ("-p", "xdist", "-n", "1", "--sparring-record", "tapes", "--sparring-no-store")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "replay: nothing asked; recorded to tapes",
            "note: the replay counts leave out worker gw0: it ended without sending them "
            "(crashed or killed); what it recorded is merged all the same",
        ]
    )
    assert agent_lines(pytester) == 3
