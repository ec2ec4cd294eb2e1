"""Run settings and what the runner runs (`AnyRunnable`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparring.config import Settings

from sparring.errors import UserError
from sparring.prompts import Limits
from sparring.runner.code import CodeScenario
from sparring.scenario import (
    AnyScenario,
)

REPLY_TIMEOUT_HINT = "raise --reply-timeout (or drop it) if the agent is just slow"

AnyRunnable = AnyScenario | CodeScenario
"""What the runner runs: scenarios from test files, and tests written in Python."""


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """How to run a suite.

    Attributes:
        parallel: Trials in flight at once, >= 1.
        trials: Overrides every scenario's `trials` when set.
        reply_timeout_s: Limit for one target reply, in seconds; `None` leaves it to the
            target's own `timeout_s`.
        conversation_timeout_s: Overrides every scenario's `timeout_s` when set.
        fail_fast: Start no new trial once some scenario can no longer reach its threshold
            (a single failed trial of a scenario that tolerates one does not stop the run).
        fail_on_skip: Make the exit code 3 when steps were skipped (e.g. no model), so CI
            cannot pass without them; see `RunResult.exit_code`.
        limits: What the judge and simulated user see of long transcripts.
        user_temperature: Sampling temperature of the simulated user (DESIGN.md: 0.7).
        judge_temperature: Sampling temperature of the judge (DESIGN.md: 0).
        judge_after_failed_checks: Judge criteria and `should`s even in a trial a check
            already failed (by default no judge call is made there).
        adaptive: Give every scenario without `trials` of its own adaptive trials (3 to
            30; `sparring.runner.adaptive`); a count it sets stays fixed.
        explain_failures: One more judge-model call per failed trial writes
            `TrialResult.explanation` (a scenario's own `explain_failures` wins).
        no_model_reason: When set, the run uses no model at all (even one it was given) and
            every step that needs one is `skipped` with this reason; the pytest plugin sets
            it when the session is not live.
    """

    parallel: int = 8
    trials: int | None = None
    reply_timeout_s: float | None = None
    conversation_timeout_s: float | None = None
    fail_fast: bool = False
    fail_on_skip: bool = False
    limits: Limits = field(default_factory=Limits)
    user_temperature: float = 0.7
    judge_temperature: float = 0.0
    judge_after_failed_checks: bool = False
    no_model_reason: str | None = None
    adaptive: bool = False
    explain_failures: bool = False

    def __post_init__(self) -> None:
        """Check the settings go together.

        Raises:
            UserError: both a `trials` override and `adaptive`.
        """
        if self.adaptive and self.trials:
            raise UserError(
                "--trials and --adaptive cannot go together: --trials fixes the count, "
                "--adaptive picks it (3 to 30, or a scenario's `trials: {min, max}`); drop one"
            )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        fail_fast: bool = False,
        fail_on_skip: bool = False,
        adaptive: bool = False,
    ) -> RunSettings:
        """The run settings `settings` give (parallel, trials, timeouts, temperatures,
        limits: DESIGN.md section 3 defaults where a limit is not set)."""
        limits = Limits(
            **{
                f.name: getattr(settings, f.name)
                for f in fields(Limits)
                if getattr(settings, f.name) is not None
            }
        )
        return cls(
            parallel=settings.parallel,
            trials=settings.trials,
            reply_timeout_s=settings.reply_timeout_s,
            conversation_timeout_s=settings.conversation_timeout_s,
            fail_fast=fail_fast,
            fail_on_skip=fail_on_skip,
            adaptive=adaptive,
            user_temperature=settings.user_temperature,
            judge_temperature=settings.judge_temperature,
            judge_after_failed_checks=settings.judge_after_failed_checks,
            explain_failures=settings.explain_failures,
            limits=limits,
        )
