"""Python tests that mix written and simulated turns: `session.simulate` without a model
stops a test as `skipped`, as a YAML `simulate:` step does, even after checks that passed (a
failure found before it stays a failure); an `expect_failure` test that failed is listed
once in the summary, as expected."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sparring.api import Suite
from sparring.reports.console import print_summary
from sparring.results import RunResult
from sparring.runner.context import ConditionsNotMet
from sparring.transcript import Message


def agent(history: list[dict[str, str]]) -> Message:
    return Message(role="agent", content="What's your order number?")


def test_simulate_without_a_model_skips_a_test_whose_checks_passed_so_far() -> None:
    suite = Suite(target=agent, goal="Learn where order 10234 is")
    reached: list[str] = []

    @suite.scenario
    async def test_mixed() -> None:
        async with suite.session() as session:
            first = await session.send("Where is my order?")
            first.check({"contains": "order number"})
            await session.simulate(turns=2)
            reached.append("after simulate")

    (scenario,) = suite.run(store=False).scenarios
    (trial,) = scenario.trials
    assert (scenario.status, trial.status, trial.end_reason) == ("skipped", "skipped", "skipped")
    assert trial.error is not None and "--model" in trial.error
    assert [v.status for v in trial.verdicts] == ["met", "skipped"]
    assert reached == []


def test_a_failure_found_before_simulate_is_still_a_failure() -> None:
    suite = Suite(target=agent, goal="Learn where order 10234 is")

    @suite.scenario
    async def test_mixed() -> None:
        async with suite.session() as session:
            first = await session.send("Where is my order?")
            with pytest.raises(ConditionsNotMet):
                first.check({"contains": "refund"})
            await session.simulate(turns=2)

    (scenario,) = suite.run(store=False).scenarios
    assert scenario.trials[0].status == "failed"


def summary(result: RunResult) -> str:
    out = io.StringIO()
    print_summary(result, console=Console(file=out, force_terminal=False, width=400))
    return out.getvalue()


def test_a_test_that_failed_as_expected_is_listed_once_as_expected() -> None:
    suite = Suite(target=agent)

    @suite.scenario(expect_failure=True, repetitions=2)
    async def test_must_fail() -> None:
        async with suite.session() as session:
            first = await session.send("Where is my order?")
            first.check({"contains": "refund"})

    @suite.scenario(expect_failure=True)
    async def test_passes_instead() -> None:
        async with suite.session() as session:
            first = await session.send("Where is my order?")
            first.check({"contains": "order number"})

    text = summary(suite.run(store=False))
    must_fail = [line for line in text.splitlines() if "::test_must_fail · trial" in line]
    assert len(must_fail) == 1
    assert must_fail[0].startswith("✔ ")
    assert must_fail[0].endswith(
        '::test_must_fail · trials 1-2 · t1.check1 (turn 1) contains "refund": expected turn 1 '
        'to contain "refund"; turn 1 said: "What\'s your order number?"'
    )
    assert "Failed as expected (1)" in text
    assert "Errors" not in text
    # the one that passed when it had to fail is the only failure
    failures = text[text.index("Failures (1)") :].splitlines()[1]
    assert "::test_passes_instead · trial 1: expected to fail" in failures
