"""`pytest --sparring-record DIR` without model calls (no `--sparring-live`, or no model
configured) says in the terminal summary that DIR holds the agent's replies only, that a
strict replay of the tests that need a model would fail, and how to record them."""

from __future__ import annotations

import pytest

from tests.support.echo_server import EchoServer
from tests.test_pytest_replay import SCENARIOS, echo, project

pytest_plugins = ["pytester"]

NOTE = "note: sparring: --sparring-record tapes kept the targets' replies only*"


@pytest.mark.parametrize(
    ("model", "options", "how"),
    [
        ("scripted:judge", (), "*pass --sparring-live*to record them too*"),
        (None, ("--sparring-live",), "*configure a model*sparring.toml*to record them too*"),
    ],
    ids=["not-live", "no-model"],
)
def test_recording_without_model_calls_says_the_models_were_not_recorded(
    pytester: pytest.Pytester, model: str | None, options: tuple[str, ...], how: str
) -> None:
    with EchoServer(echo) as agent:
        project(pytester, agent.url("/chat"), model=model, text=SCENARIOS)
        result = pytester.runpytest(*options, "--sparring-no-store", "--sparring-record", "tapes")
    result.stdout.fnmatch_lines([NOTE + how])
    assert "replay of those tests fails" in result.stdout.str()


def test_recording_live_with_a_model_has_no_such_note(pytester: pytest.Pytester) -> None:
    with EchoServer(echo) as agent:
        project(pytester, agent.url("/chat"), model="scripted:judge", text=SCENARIOS)
        result = pytester.runpytest(
            "--sparring-live", "--sparring-no-store", "--sparring-record", "tapes"
        )
    assert "recorded to tapes" in result.stdout.str()
    assert "kept the targets' replies only" not in result.stdout.str()
