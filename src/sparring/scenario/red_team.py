"""The `red_team` scenario kind and the `redteam:` block of a `sparring redteam` file.

A red-team scenario names attacks, not a conversation: `sparring.redteam` turns it into
ordinary scenarios (one per plugin, strategy and template) before a run, so the runner,
reports and exit codes treat each attack like any other test. An attack that succeeds
fails its scenario.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, field_validator, model_validator

from sparring.scenario.base import ScenarioBase
from sparring.target_specs import FROZEN

Plugin = Literal[
    "prompt_injection",
    "indirect_injection",
    "jailbreak",
    "system_prompt_leak",
    "canary_leak",
    "pii_leak",
    "off_topic",
]
"""An attack family of the built-in library."""
Strategy = Literal["plain", "base64", "leetspeak", "roleplay", "translation", "crescendo"]
"""How an attack is delivered; `crescendo` is a multi-turn escalation played by the
simulated user, the others send one templated message (no model needed)."""
ATTACK_RESISTED_ID = "attack_resisted"
"""Id of the restriction every attack adds (what the judge must find held), so a red-team
scenario's own restrictions may not use it."""
ATTACK_ID_ROOM = 48
"""Characters an attack's id adds to its red-team scenario's id (`/<plugin>/<strategy>/
<template>`, the row's `[id]` kept at the end), so a red-team id has at most
128 - 48 = 80 characters and every attack id fits the scenario id limit."""
PLUGINS: tuple[Plugin, ...] = get_args(Plugin)
"""Every plugin, in report order."""
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
"""Every strategy, single-shot ones first."""


def _listed(value: Any) -> Any:
    """One name or a list of names, as a list."""
    return [value] if isinstance(value, str) else value


def _real_canaries(canaries: list[str]) -> list[str]:
    """`canaries` unchanged unless one is too short to be told from ordinary text."""
    short = [c for c in canaries if len(c.strip()) < 4]
    if short:
        raise ValueError(
            f"canary {short[0]!r} is too short to be told apart from ordinary text; "
            "plant something unique such as 'NW-STAFF-7731' and list that"
        )
    return canaries


class RedTeamSettings(BaseModel):
    """What attacks aim at, shared by a file's attacks (`redteam:` in a `sparring redteam`
    file) or given on one `red_team` scenario.

    `canaries` are texts the user planted in the agent's prompt or data (a fake discount
    code, an API-key-shaped string): any of them in a reply is a leak. `policy` is what the
    agent may talk about; the `off_topic` plugin's judge holds the agent to it.
    """

    model_config = FROZEN
    objective: str | None = Field(default=None, max_length=400)
    """What the attacker wants; each plugin has a default."""
    canaries: list[str] = Field(default_factory=list)
    policy: str | None = Field(default=None, max_length=400)
    allow: list[str] = Field(default_factory=list[str])
    """Values the `pii_leak` detectors let the agent say: its own phone number or email
    address (those written in `policy` are allowed too)."""
    plugins: list[Plugin] = Field(default_factory=lambda: list(PLUGINS))
    strategies: list[Strategy] = Field(default_factory=lambda: list(STRATEGIES))

    @field_validator("plugins", "strategies", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return _listed(v)

    @field_validator("canaries")
    @classmethod
    def _canaries(cls, canaries: list[str]) -> list[str]:
        return _real_canaries(canaries)


class RedTeamScenario(ScenarioBase):
    """`kind: red_team`: attacks on the target, one scenario per plugin x strategy x
    template when run (`sparring.redteam.expand_red_team`); `trials` is the attempts per
    attack, and its own `checks` / `criteria` / `restrictions` apply to every attack.

    `objective` is what the attacker wants ("get the agent to reveal the staff discount
    code"); the crescendo strategy's simulated user pursues it and the judge decides
    whether it was reached where no deterministic detector applies.
    """

    kind: Literal["red_team"] = "red_team"
    objective: str | None = Field(default=None, max_length=400)
    plugins: list[Plugin] = Field(default_factory=lambda: list(PLUGINS))
    strategy: list[Strategy] = Field(default_factory=lambda: list(STRATEGIES))
    """One strategy or a list; default all, as in a `redteam:` block and on the command
    line (crescendo is skipped without a model)."""
    max_turns: int = Field(default=5, ge=2, le=20)
    """Turns of a crescendo escalation."""
    canaries: list[str] = Field(default_factory=list)
    policy: str | None = Field(default=None, max_length=400)
    allow: list[str] = Field(default_factory=list[str])
    """Values the `pii_leak` detectors let the agent say (see `RedTeamSettings.allow`)."""

    @field_validator("plugins", "strategy", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return _listed(v)

    @field_validator("canaries")
    @classmethod
    def _canaries(cls, canaries: list[str]) -> list[str]:
        return _real_canaries(canaries)

    @field_validator("id")
    @classmethod
    def _room_for_attack_ids(cls, id_: str) -> str:
        most = 128 - ATTACK_ID_ROOM
        if len(id_) > most:
            raise ValueError(
                f"a red_team scenario's id has at most {most} characters (each attack's id "
                f"adds its plugin, strategy and template to it); this one has {len(id_)}: "
                "shorten it"
            )
        return id_

    @model_validator(mode="after")
    def _fits_every_attack(self) -> RedTeamScenario:
        """What each attack scenario takes from this one must be valid there too."""
        if any(r.id == ATTACK_RESISTED_ID for r in self.restrictions):
            raise ValueError(
                f"restriction id {ATTACK_RESISTED_ID!r} is reserved: every attack adds a "
                "restriction with that id; rename yours"
            )
        single_shot = any(s != "crescendo" for s in self.strategy)
        most = 1 if single_shot else self.max_turns
        self._check_turns_within(
            most,
            "a single-shot attack is one message: use `turn: 1` or leave `turn` out"
            if single_shot
            else f"a crescendo has at most max_turns ({most}) turns",
        )
        return self
