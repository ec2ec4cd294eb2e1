"""`session.simulate` without a model stops a Python test as `skipped`, as a YAML
`simulate:` step does, even after checks that passed; a failure found before it stays a
failure."""

from __future__ import annotations

import pytest

from sparring.api import Suite
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
