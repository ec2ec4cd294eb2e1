"""Events the runner emits while it works, for live views and stores.

The runner never prints: it calls `observer(event)` for each event, synchronously, from the
event loop; observers must be quick and must not raise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict
from sparring.transcript import Message


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run begins: `scenarios` scenarios, `trials` trials in all; `run` is the run as
    planned (its id, models and scenarios, no trials yet; the runner fills it as it goes,
    so copy what you keep)."""

    scenarios: int
    trials: int
    user_model: str | None
    judge_model: str | None
    run: RunResult | None = None


@dataclass(frozen=True, slots=True)
class TrialStarted:
    """A trial (1-based `trial`) of `scenario_id` started; `trials` is how many trials the
    scenario has (`None` when the emitter does not say), for "trial n/N" displays."""

    scenario_id: str
    name: str
    trial: int
    trials: int | None = None


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """A user or agent message joined a trial's transcript."""

    scenario_id: str
    trial: int
    message: Message


@dataclass(frozen=True, slots=True)
class VerdictAdded:
    """A check or judge verdict was decided for a trial."""

    scenario_id: str
    trial: int
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class JudgeStarted:
    """A trial's conversation ended and the judge call scoring it (criteria, `should`s,
    agent evaluations) began; its `TrialFinished` follows once the judge answered."""

    scenario_id: str
    trial: int


@dataclass(frozen=True, slots=True)
class TrialFinished:
    """A trial ended; `result` is final."""

    result: TrialResult


@dataclass(frozen=True, slots=True)
class ScenarioFinished:
    """All trials of a scenario ended."""

    result: ScenarioResult


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended; `result` is final."""

    result: RunResult


Event = (
    RunStarted
    | TrialStarted
    | MessageAdded
    | VerdictAdded
    | JudgeStarted
    | TrialFinished
    | ScenarioFinished
    | RunFinished
)
Observer = Callable[[Event], None]
