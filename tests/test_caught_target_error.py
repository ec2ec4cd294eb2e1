"""A Python test that catches its target's failure is still `error`, never a pass: the
failed send (or session, or history) is kept on the trial whether or not the body catches
it, with the target's error as the trial's error."""

from __future__ import annotations

import socket

import pytest

from sparring.api import Suite
from sparring.errors import TargetError
from sparring.results import RunResult
from sparring.targets.base import TargetSession
from sparring.transcript import Message, Transcript


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _only_trial(result: RunResult) -> tuple[str, str | None]:
    [scenario] = result.scenarios
    [trial] = scenario.trials
    return trial.status, trial.error


def test_a_caught_send_to_an_unreachable_target_is_an_error_not_a_pass() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/chat"
    suite = Suite(target={"type": "http", "url": url})

    @suite.scenario
    async def test_swallows_the_failure() -> None:
        async with suite.session() as session:
            try:
                await session.send("hi")
            except BaseException:
                pass

    result = suite.run()
    status, error = _only_trial(result)
    assert status == "error" and result.exit_code != 0
    assert error is not None
    assert "127.0.0.1" in error  # the target's own error text


class _Refusing:
    """A target whose sessions refuse every message and every history."""

    name = "refusing"

    async def open_session(self) -> TargetSession:
        return _RefusingSession()

    async def aclose(self) -> None:
        pass


class _RefusingSession:
    async def send(self, transcript: Transcript, /) -> Message:
        raise TargetError("the agent refused (HTTP 503)")

    async def preload(self, history: Transcript, /) -> Transcript:
        raise TargetError("the agent refused the history (HTTP 503)")

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("call", ["send", "add_events"])
def test_the_first_caught_target_failure_is_the_trials_error(call: str) -> None:
    suite = Suite(target=_Refusing())

    @suite.scenario
    async def test_catches_and_goes_on() -> None:
        async with suite.session() as session:
            try:
                if call == "send":
                    await session.send("hi")
                else:
                    await session.add_events([])
            except TargetError:
                pass
        assert True  # the body ends as if all went well

    status, error = _only_trial(suite.run())
    refused = "the agent refused (HTTP 503)" if call == "send" else "the agent refused the history"
    assert status == "error" and error is not None and refused in error
