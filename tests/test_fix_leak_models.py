"""Under pytest a test needs the simulated user's model only when it simulates a user, and
the judge's only when it has judged parts: with only `judge_model` configured (in
`[tool.sparring]` or pytest-agent-eval's `[tool.agent_eval]`), judged tests run and are
judged, as `sparring run` judges them; a simulated one is skipped, saying a model is missing.
A marked Python test's `session.simulate` plays the configured simulated user.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest

from tests.support.echo_server import EchoServer
from tests.test_pytest_replay import CONFTEST, MODELS, echo, model_calls

pytest_plugins = ["pytester"]

SCENARIOS = """
target:
  url: "{url}"
  body_template: {{message: "{{{{input}}}}"}}
  response_path: reply
scenarios:
  - id: booking
    turns:
      - user: "Book me a slot"
        should: confirm the booking
  - id: refund
    opening_message: "I want a refund"
    goal: Get a refund
    max_turns: 2
"""

TRANSCRIPT = """
id: booking
turns:
  - user: "Book me a slot"
    expect:
      judge: {rubric: "Confirms the booking."}
"""

MARKED = """
import pytest


@pytest.mark.sparring
async def test_marked_books(sparring):
    async with sparring.session("{url}") as session:
        response = await session.send("Book me a slot")
        await response.should("confirm the booking")
"""


@pytest.fixture
def agent() -> Iterator[EchoServer]:
    with EchoServer(echo) as server:
        yield server


def setup(pytester: pytest.Pytester, settings: str) -> None:
    """The inner project: `settings` as its pyproject.toml, and the scripted models."""
    pytester.makepyprojecttoml(textwrap.dedent(settings))
    pytester.makepyfile(scripted_models=MODELS)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir()


def test_a_judge_model_alone_judges_judged_tests_and_skips_simulated_ones(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    setup(pytester, '[tool.sparring]\nyaml_dirs = ["evals"]\njudge_model = "scripted:judge"\n')
    url = agent.url("/chat")
    (pytester.path / "evals/shop.yaml").write_text(textwrap.dedent(SCENARIOS).format(url=url))
    pytester.makepyfile(test_marked=MARKED.format(url=url))
    result = pytester.runpytest("--sparring-live", "--sparring-no-store", "-rA")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "PASSED evals/shop.yaml::booking",
            "PASSED test_marked.py::test_marked_books",
            "SKIPPED * no model configured for sparring*",
        ]
    )
    assert "not judged" not in result.stdout.str()
    assert (pytester.path / "model_calls.log").read_text().split() == ["judge", "judge"]


def test_an_agent_eval_judge_model_judges_a_transcript(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    setup(
        pytester,
        f"""
        [tool.agent_eval]
        judge_model = "scripted:judge"
        yaml_dirs = ["evals"]

        [tool.agent_eval.target]
        url = "{agent.url("/chat")}"
        body_template = {{message = "{{{{input}}}}"}}
        response_path = "reply"
        """,
    )
    (pytester.path / "evals/booking.yaml").write_text(textwrap.dedent(TRANSCRIPT))
    note = "ignore:[tool.agent_eval] settings are used"  # a note, not this test's subject
    result = pytester.runpytest("--agent-eval-live", "--sparring-no-store", "-W", note)
    result.assert_outcomes(passed=1)
    assert "not judged" not in result.stdout.str()
    assert model_calls(pytester) == 1


SIMULATED = """
import pytest


@pytest.mark.sparring
async def test_marked_simulates(sparring):
    async with sparring.session("{url}") as session:
        replies = await session.simulate(turns=1, goal="Book a slot")
        assert replies
"""


def test_a_marked_tests_simulate_plays_the_configured_user(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    setup(
        pytester, '[tool.sparring]\nuser_model = "scripted:user"\njudge_model = "scripted:judge"\n'
    )
    pytester.makepyfile(test_marked=SIMULATED.format(url=agent.url("/chat")))
    result = pytester.runpytest("--sparring-live", "--sparring-no-store", "-rA")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "model_calls.log").read_text().split() == ["user"]
