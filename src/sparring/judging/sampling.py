"""How sparring's models sample, and the record of it in the report.

Judge calls send a fixed seed where the provider takes one (`judge_seed`), so a rerun of
the same conversation is judged alike as far as the provider allows; `model_settings` is
what the JSON report keeps of each model (`RunResult.models`, from `models_used`).
"""

from __future__ import annotations

from typing import Literal

from sparring.models.base import Model, sends_seed
from sparring.results import ModelSettings

JUDGE_SEED = 1234
"""The sampling seed of every judge call, where the provider takes one (`judge_seed`)."""


def judge_seed(model: Model) -> int | None:
    """The seed judge calls to `model` send: `JUDGE_SEED`, or `None` where the provider
    takes none (`sparring.models.base.sends_seed`)."""
    return JUDGE_SEED if sends_seed(model) else None


def model_settings(
    role: Literal["user", "judge"], model: Model, *, temperature: float
) -> ModelSettings:
    """What the report records of `model` playing `role` at `temperature`: its spec split
    into provider and model name, the seed it is sent (the judge's, `judge_seed`; the
    simulated user gets none, so trials vary) and its `max_tokens` where it sets one."""
    provider, _, name = model.name.partition(":")
    max_tokens = getattr(model, "max_tokens", None)
    return ModelSettings(
        role=role,
        spec=model.name,
        provider=provider if name else "custom",
        model=name or model.name,
        temperature=temperature,
        seed=judge_seed(model) if role == "judge" else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
    )


def models_used(
    user_model: Model | None,
    judge_model: Model | None,
    *,
    user_temperature: float,
    judge_temperature: float,
) -> list[ModelSettings]:
    """`model_settings` of the simulated user and the judge, leaving out a missing one."""
    used: list[ModelSettings] = []
    if user_model is not None:
        used.append(model_settings("user", user_model, temperature=user_temperature))
    if judge_model is not None:
        used.append(model_settings("judge", judge_model, temperature=judge_temperature))
    return used
