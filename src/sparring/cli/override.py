"""`sparring override RUN SCENARIO TRIAL ID --value ... --reason ...`: correct a verdict or
an insight of a stored trial ("Verdict wrong?"). Imports only click at start-up."""

from __future__ import annotations

import click

from sparring.cli.history import STORE_HELP


@click.command("override")
@click.argument("run_id", metavar="RUN")
@click.argument("scenario_id", metavar="SCENARIO")
@click.argument("trial", type=click.IntRange(min=1))
@click.argument("target", metavar="ID")
@click.option(
    "--value",
    required=True,
    metavar="met|not_met|VALUE",
    help="A verdict: met or not_met. An insight: its corrected value (true/false, 0-1, an "
    "option, text; met/not_met for a gating boolean).",
)
@click.option("--reason", required=True, metavar="TEXT", help="Why the judge was wrong.")
@click.option("--author", metavar="NAME", help="Who corrects it (default: your user name).")
@click.option(
    "--passes/--fails",
    "passed",
    default=None,
    help="Whether a gating score or category insight's new value passes its rule.",
)
@click.option("--store", metavar="URL", help=STORE_HELP)
def override(
    run_id: str,
    scenario_id: str,
    trial: int,
    target: str,
    value: str,
    reason: str,
    author: str | None,
    passed: bool | None,
    store: str | None,
) -> None:
    """Correct verdict or insight ID (a verdict id such as c1 or t2.should1, or
    evaluation.insight) of trial TRIAL of scenario SCENARIO in stored run RUN (its id or
    the start of it). The trial and scenario status are recomputed and marked overridden in
    every report and export; `sparring calibrate` reads overrides as labels."""
    from sparring.cli.history import open_named
    from sparring.store.overrides import parse_value, record_override
    from sparring.store.provenance import current_user
    from sparring.store.reading import find_run, load_run

    opened = open_named(store)
    try:
        found = find_run(opened, run_id)
        stored = record_override(
            opened,
            run_id=found.id,
            scenario_id=scenario_id,
            trial=trial,
            target=target,
            value=parse_value(value),
            reason=reason,
            author=author or current_user() or "unknown",
            passed=passed,
        )
        scenario = next(
            s for s in load_run(opened, found.id).scenarios if s.scenario_id == scenario_id
        )
    finally:
        opened.close()
    after = next(t for t in scenario.trials if t.trial == trial)
    done = stored.override
    click.echo(
        f"Overrode {target} of {scenario_id} trial {trial} in run {found.id}: "
        f"{_shown(done.original)} -> {_shown(done.value)} (by {done.author}). "
        f"Trial now {after.status}, scenario {scenario.status} (overridden)."
    )


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
