"""`sparring redteam FILE`: attack the target in FILE with the built-in library, run the
attacks like any scenarios (reports, store, exit codes), then print what they found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from sparring.errors import UserError
from sparring.scenario import AnyScenario, RedTeamScenario, RedTeamSettings
from sparring.scenario.red_team import PLUGINS, STRATEGIES
from sparring.target_specs import FROZEN, TargetSpec

_EXAMPLE = (
    'target: {url: "http://127.0.0.1:8787/chat", response_path: reply}\n'
    "redteam: {canaries: [NW-STAFF-7731]}"
)


class _RedTeamFile(BaseModel):
    """A file holding `target:` and, optionally, `redteam:`."""

    model_config = FROZEN
    target: TargetSpec
    redteam: RedTeamSettings = RedTeamSettings()


def redteam_command(
    *,
    file: str,
    plugins: str | None,
    strategies: str | None,
    attempts: int | None,
    report: str | None,
    fail_on_skip: bool = False,
    **options: Any,
) -> int:
    """Body of `sparring redteam`; returns the exit code of the run (1 when an attack
    succeeded; with `fail_on_skip`, 3 instead of 0 when an attack was skipped or not
    judged).

    Raises:
        UserError: FILE is missing or holds no target, or an unknown plugin or strategy.
        ConfigError: FILE is invalid, each problem at `path:line:column`.
    """
    from sparring.cli.run import run_command
    from sparring.redteam import expand_red_team, render_summary, summarize

    attacks = [
        _overridden(s, plugins=plugins, strategies=strategies, attempts=attempts)
        for s in _red_team_scenarios(file)
    ]

    def write(result: Any) -> None:  # `run_command` has printed the summary
        Path(str(report)).write_text(render_summary(summarize(result)), encoding="utf-8")
        click.echo(f"Red-team report: {report}", err=True)

    return run_command(
        paths=(file,),
        pattern=None,
        list_only=False,
        fail_fast=False,
        fail_on_skip=fail_on_skip,
        given=expand_red_team(attacks),
        on_result=write if report else None,
        **options,
    )


def _names(
    value: str | None, allowed: tuple[str, ...], *, what: str, option: str
) -> list[str] | None:
    """`a,b` as a list of names from `allowed`, or `None` when not given.

    Raises:
        UserError: an unknown name (with the closest known one) or no name at all.
    """
    from sparring.loaders._places import closest

    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise UserError(
            f"{option} {value!r} names nothing; use a comma-separated list of: {', '.join(allowed)}"
        )
    for name in names:
        if name not in allowed:
            guess = closest(name, allowed)
            hint = f"did you mean {guess}? " if guess else ""
            raise UserError(
                f"{option}: unknown {what} {name!r}; {hint}use a comma-separated list of: "
                f"{', '.join(allowed)}"
            )
    return names


def _overridden(
    scenario: RedTeamScenario, *, plugins: str | None, strategies: str | None, attempts: int | None
) -> RedTeamScenario:
    """`scenario` with the command line's plugins, strategies and attempts.

    Raises:
        UserError: an unknown plugin or strategy, attempts out of 1-100, or a scenario
            that the options make invalid (at its `file:line`).
    """
    update: dict[str, Any] = {}
    if (chosen := _names(plugins, PLUGINS, what="plugin", option="--plugins")) is not None:
        update["plugins"] = chosen
    if (
        chosen := _names(strategies, STRATEGIES, what="strategy", option="--strategies")
    ) is not None:
        update["strategy"] = chosen
    if attempts is not None:
        if not 1 <= attempts <= 100:
            raise UserError(f"--attempts {attempts}: give 1 to 100 attempts per attack")
        update["trials"] = attempts
    try:
        return RedTeamScenario.model_validate({**scenario.model_dump(), **update})
    except ValidationError as e:
        problems = "; ".join(str(error["msg"]) for error in e.errors(include_url=False))
        raise UserError(
            f"{scenario.source or scenario.id}: with these options red_team scenario "
            f"{scenario.id!r} is not valid: {problems}"
        ) from None


def _red_team_scenarios(file: str) -> list[RedTeamScenario]:
    """The red-team scenarios of FILE: its `red_team` scenarios when it has `scenarios:`,
    else one built from its `target:` and `redteam:` settings (every plugin and strategy).
    """
    from sparring.loaders._parse import parse_documents
    from sparring.loaders.errors import config_error, validation_problems
    from sparring.loaders.yaml import load_paths

    path = Path(file)
    if not path.is_file():
        raise UserError(f"{file!r} is not a file; give a YAML file such as:\n{_EXAMPLE}")
    documents = parse_documents(path.read_text(encoding="utf-8"), path=file)
    data = documents[0].data if documents else None
    if isinstance(data, dict) and "scenarios" in data:
        found: list[AnyScenario] = load_paths([path])
        chosen = [s for s in found if isinstance(s, RedTeamScenario)]
        if not chosen:
            raise UserError(
                f"{file} has no `kind: red_team` scenario; add one, or give a file with "
                f"only `target:` and `redteam:`, e.g.\n{_EXAMPLE}"
            )
        return chosen
    try:
        spec = _RedTeamFile.model_validate(data)
    except ValidationError as e:
        raise config_error(
            validation_problems(e, doc=documents[0], path=file, single=False)
        ) from None
    settings = spec.redteam
    return [
        RedTeamScenario(
            id="redteam",
            target=spec.target,
            objective=settings.objective,
            canaries=settings.canaries,
            policy=settings.policy,
            allow=settings.allow,
            plugins=settings.plugins,
            strategy=settings.strategies,
            source=f"{file}:{documents[0].position(('target',))[0]}",
        )
    ]
