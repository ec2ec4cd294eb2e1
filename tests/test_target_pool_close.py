"""The target pool closes every target and its HTTP client even when one close fails, and
a failed close is a warning: the run's results are final by then and must be kept."""

from __future__ import annotations

import anyio
import httpx
import pytest

from sparring.runner.run import TargetPool
from sparring.scenario import SingleTurnScenario
from sparring.secrets import Secrets
from sparring.target_specs import CallableTargetSpec
from sparring.targets.callable import CallableTarget


def test_a_failing_close_is_a_warning_and_the_rest_still_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(self: CallableTarget) -> None:
        raise RuntimeError("Event loop is closed")

    monkeypatch.setattr(CallableTarget, "aclose", broken)
    scenario = SingleTurnScenario(
        id="q",
        prompt="Hello?",
        criteria=["Greets"],
        target=CallableTargetSpec(ref="sparring.demo.agent:chat"),
    )
    clients: list[httpx.AsyncClient] = []

    async def main() -> None:
        async with TargetPool(secrets=Secrets.load(file=None)) as pool:
            pool.for_scenario(scenario)
            clients.append(pool.client)

    with pytest.warns(RuntimeWarning, match=r"closing a target after the run failed .*kept"):
        anyio.run(main)
    assert clients[0].is_closed  # the client closed after the target's failed close
