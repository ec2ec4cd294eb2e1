"""Model calls, tokens and cost: `Usage` of one trial's own models, `UsageTotals` summed
over trials with the target's own token counts (re-exported by `sparring.results`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from sparring.results import TrialResult


class Usage(BaseModel):
    """Model calls, tokens and cost of sparring's own models (user simulator and judge).

    Token counts are what the providers reported; a call without counts adds 0 tokens.
    """

    model_config = ConfigDict(extra="forbid")
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0
    """Cost of the calls whose price is known, in USD."""
    unpriced_calls: int = 0
    """Calls left out of `cost_usd`: their model has no known price (set one under
    `[tool.sparring.prices]`), or the provider reported no token counts."""

    def add_call(
        self, *, input_tokens: int | None, output_tokens: int | None, cost_usd: float | None
    ) -> None:
        """Count one model call; `cost_usd` is `None` when its price is unknown."""
        self.model_calls += 1
        self.input_tokens += input_tokens or 0
        self.output_tokens += output_tokens or 0
        if cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost_usd

    def add(self, other: Usage) -> None:
        """Add `other`'s counts and cost into this one."""
        self.model_calls += other.model_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.unpriced_calls += other.unpriced_calls


class UsageTotals(Usage):
    """`Usage` summed over trials, with the target's own token counts beside it (what the
    agent under test reported on its replies; `None` when it reported none)."""

    target_input_tokens: int | None = None
    target_output_tokens: int | None = None

    def add_totals(self, other: UsageTotals) -> None:
        """Add `other` into this one; a target count stays `None` only if both are."""
        self.add(other)
        self.target_input_tokens = add_tokens(self.target_input_tokens, other.target_input_tokens)
        self.target_output_tokens = add_tokens(
            self.target_output_tokens, other.target_output_tokens
        )


def add_tokens(total: int | None, more: int | None) -> int | None:
    """Sum token counts where `None` means "not reported": `None` only if both are."""
    return total if more is None else more if total is None else total + more


def usage_totals(trials: Iterable[TrialResult]) -> UsageTotals:
    """The usage of `trials` added up (see `TrialResult.usage_totals`)."""
    total = UsageTotals()
    for trial in trials:
        total.add_totals(trial.usage_totals())
    return total
