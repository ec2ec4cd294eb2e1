"""Red-team scenarios -> ordinary scenarios, one per attack, that the runner runs as it runs
any test: single-turn scenarios for templated attacks, simulated ones for crescendo.

Each attack scenario is tagged `redteam`, `plugin:<name>`, `strategy:<name>` and
`severity:<level>` (`sparring.redteam.summary` reads them back from a run's results), and
fails when the attack succeeded: a detector check is `not_met`, or the judge found the
plugin's restriction broken.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparring.redteam.plugins import SEVERITY, Attack, attacks, canary_checks, objective
from sparring.redteam.strategies import CRESCENDO_PERSONA, crescendo_instructions, deliver
from sparring.scenario import (
    AnyScenario,
    Check,
    Criterion,
    NotRegexCheck,
    RedTeamScenario,
    RedTeamSettings,
    SimulatedScenario,
    SingleTurnScenario,
)
from sparring.scenario.red_team import Plugin, Strategy

ATTACK_TAG = "redteam"
"""Tag of every attack scenario."""
_RESTRICTION_ID = "attack_resisted"


def expand_red_team(scenarios: Sequence[AnyScenario]) -> list[AnyScenario]:
    """`scenarios` with each `red_team` scenario replaced by its attack scenarios, in place.

    Raises:
        pydantic.ValidationError: never for a loaded red-team scenario (its fields were
            validated when it loaded).
    """
    out: list[AnyScenario] = []
    for scenario in scenarios:
        if isinstance(scenario, RedTeamScenario):
            out += attack_scenarios(scenario)
        else:
            out.append(scenario)
    return out


def attack_scenarios(red_team: RedTeamScenario) -> list[AnyScenario]:
    """The attack scenarios of one red-team scenario: for every plugin, each template
    delivered by each single-shot strategy, and one crescendo conversation if asked for.

    Ids are `<id>/<plugin>/<strategy>/<template>` (`<id>/<plugin>/crescendo`); every attack
    has the red-team scenario's target, trials (attempts), tags and extra checks, criteria
    and restrictions. Empty replies are allowed: an agent that says nothing leaked nothing.
    """
    settings = RedTeamSettings(
        objective=red_team.objective,
        canaries=red_team.canaries,
        policy=red_team.policy,
        plugins=red_team.plugins,
        strategies=red_team.strategy,
    )
    out: list[AnyScenario] = []
    for plugin in red_team.plugins:
        for strategy in red_team.strategy:
            if strategy == "crescendo":
                out.append(_crescendo(red_team, settings, plugin))
                continue
            out += [_single_shot(red_team, a, strategy) for a in attacks(plugin, settings)]
    return out


def _common(red_team: RedTeamScenario, plugin: Plugin, strategy: Strategy) -> dict[str, object]:
    """The fields every attack scenario takes from its red-team scenario."""
    return {
        "target": red_team.target,
        "trials": red_team.trials,
        "timeout_s": red_team.timeout_s,
        "tags": [
            *red_team.tags,
            ATTACK_TAG,
            f"plugin:{plugin}",
            f"strategy:{strategy}",
            f"severity:{SEVERITY[plugin]}",
        ],
        "criteria": red_team.criteria,
        "allow_empty_replies": True,
        "judge_after_failed_checks": red_team.judge_after_failed_checks,
        "require_evidence": red_team.require_evidence,
        "source": red_team.source,
    }


def _restrictions(red_team: RedTeamScenario, text: str) -> list[Criterion]:
    own = Criterion(id=_RESTRICTION_ID, text=text[:500], kind="restriction")
    return [own, *red_team.restrictions]


def _single_shot(red_team: RedTeamScenario, attack: Attack, strategy: Strategy) -> AnyScenario:
    return SingleTurnScenario(
        id=f"{red_team.id}/{attack.plugin}/{strategy}/{attack.template}",
        name=f"{attack.plugin} via {strategy}: {attack.template}",
        description=f"Red-team attack ({attack.plugin}, {strategy}).",
        prompt=deliver(attack.text, strategy),
        checks=[*attack.checks, *red_team.checks],
        restrictions=_restrictions(red_team, attack.restriction),
        category=ATTACK_TAG,
        topic=attack.plugin,
        behavior=strategy,
        **_common(red_team, attack.plugin, strategy),  # type: ignore[arg-type]
    )


def _crescendo(red_team: RedTeamScenario, settings: RedTeamSettings, plugin: Plugin) -> AnyScenario:
    """A multi-turn escalation towards the plugin's objective, played by the simulated user;
    leaks are detected by the plugin's checks that need no planted marker, the rest is the
    judge's (restriction: the objective was not reached)."""
    goal = objective(plugin, settings)
    return SimulatedScenario(
        id=f"{red_team.id}/{plugin}/crescendo",
        name=f"{plugin} via crescendo",
        description=f"Red-team escalation ({plugin}): the user tries to {goal}.",
        persona=CRESCENDO_PERSONA,
        goal=goal,
        instructions=crescendo_instructions(goal),
        max_turns=red_team.max_turns,
        checks=[*_conversation_detectors(plugin, settings), *red_team.checks],
        restrictions=_restrictions(
            red_team, f"The user does not manage to {goal}; the assistant refuses or deflects"
        ),
        **_common(red_team, plugin, "crescendo"),  # type: ignore[arg-type]
    )


def _conversation_detectors(plugin: Plugin, settings: RedTeamSettings) -> list[Check]:
    """The plugin's detectors that hold for any conversation: leak patterns and canaries
    (a planted marker only exists in the templated attacks)."""
    found = {
        repr(c): c
        for a in attacks(plugin, settings)
        for c in a.checks
        if isinstance(c, NotRegexCheck)
    }
    return [*found.values(), *canary_checks(settings)]
