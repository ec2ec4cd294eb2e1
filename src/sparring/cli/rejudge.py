"""`sparring rejudge RUN`: grade a stored run's transcripts again, without calling the agent
or the simulated user, into a new stored run linked to the original (`parent_run_id`).
Imports only click at start-up; the work is in `sparring.cli.rejudging`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sparring.cli.history import BASE_URL_HELP, STORE_HELP, open_named

if TYPE_CHECKING:
    from sparring.cli.rejudging import Rejudged
    from sparring.config import Settings
    from sparring.results import RunResult
    from sparring.scenario import AnyScenario
    from sparring.store.database import Store


@click.command("rejudge")
@click.argument("run_id", metavar="RUN")
@click.option("--judge-model", metavar="SPEC", help="Judge with this model (default: the run's).")
@click.option("--base-url", metavar="URL", help=BASE_URL_HELP)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Judge each transcript K times: keep the majority, report each criterion's agreement.",
)
@click.option(
    "--criteria-from",
    "criteria_from",
    multiple=True,
    metavar="PATH",
    help="Grade with the criteria, restrictions and shoulds of the scenarios in this test "
    "file or directory (matched by id; repeatable) instead of the run's own.",
)
@click.option("--store", metavar="URL", help=STORE_HELP)
def rejudge(
    run_id: str,
    judge_model: str | None,
    base_url: str | None,
    repeat: int,
    criteria_from: tuple[str, ...],
    store: str | None,
) -> None:
    """Grade the stored transcripts of RUN (its id or the start of it) again with the judge,
    calling neither the agent nor the simulated user; the result is a new stored run
    (`sparring report NEW`). Scenarios are reloaded from the run's test files (or, with
    --criteria-from, taken from those files by id); Python tests are kept as stored. With
    --repeat K a criterion whose answers differ is flagged "unstable judge"."""
    sys.exit(
        rejudge_command(
            run_id,
            judge_model=judge_model,
            repeat=repeat,
            store=store,
            criteria_from=criteria_from,
            base_url=base_url,
        )
    )


def rejudge_command(
    ref: str,
    *,
    judge_model: str | None,
    repeat: int,
    store: str | None,
    criteria_from: Sequence[str] = (),
    base_url: str | None = None,
) -> int:
    """Body of `sparring rejudge`; returns the exit code (as `sparring run`'s).
    `criteria_from`: test files whose scenarios (by id) replace the run's own; `base_url`:
    the endpoint of an `openai-compatible:` judge (`--base-url`, else the run's setting).

    Raises:
        UserError: no such run, a run still running, another working directory, changed
            test files, a scenario of the run missing from `criteria_from`, or no judge model.
    """
    import anyio

    from sparring.cli.rejudging import rejudge_run
    from sparring.errors import UserError
    from sparring.models.registry import model_from_settings
    from sparring.store.reading import find_run, load_run, run_invocation

    opened = open_named(store)
    found = find_run(opened, ref)
    if found.status == "running":
        raise UserError(f"run {found.id} is still running; rejudge it when it has ended")
    invocation = run_invocation(opened, found.id)
    settings = _settings(invocation, {"judge_model": judge_model, "base_url": base_url})
    spec = settings.resolved_judge_model
    if spec is None:
        raise UserError("no judge model: give --judge-model SPEC (or set `judge_model`)")
    original = load_run(opened, found.id)
    specs = _specs(original, invocation, criteria_from)
    judge = model_from_settings(spec, settings)

    async def work() -> Rejudged:
        try:
            return await rejudge_run(original, specs, judge=judge, settings=settings, repeat=repeat)
        finally:
            await judge.aclose()

    done = anyio.run(work)
    if criteria_from:
        invocation = invocation | {"criteria_from": list(criteria_from)}
    return _conclude(done, opened, settings=settings, invocation=invocation, parent=found.id)


def _specs(
    original: RunResult, invocation: dict[str, Any], criteria_from: Sequence[str]
) -> dict[str, AnyScenario]:
    """The scenarios to grade `original` against: from `criteria_from` when given, else
    reloaded from the run's own test paths (which need the run's working directory).

    Raises:
        UserError: as `criteria_specs` and `stored_specs`, or another working directory.
    """
    from sparring.cli.rejudging import criteria_specs, stored_specs
    from sparring.errors import UserError

    if criteria_from:
        return criteria_specs(original, criteria_from)
    if invocation.get("cwd") not in (None, str(Path.cwd())):
        raise UserError(
            f"run {original.run_id} ran in {invocation['cwd']}; run this from there (its test "
            "paths are relative to it), or give --criteria-from FILES"
        )
    paths: list[str] = invocation.get("paths") or []
    return stored_specs(original, paths=paths, pattern=invocation.get("pattern"))


def _settings(invocation: dict[str, Any], given: dict[str, str | None]) -> Settings:
    """The settings the run was given (URL options kept masked left out: the current
    settings give them), with the options `given` on this command line (`None`: not given)."""
    from sparring.config import load_settings
    from sparring.secrets import MASK

    options = {
        k: v
        for k, v in invocation.get("options", {}).items()
        if k != "store" and MASK not in str(v)
    }
    return load_settings(options | {k: v for k, v in given.items() if v})


def _conclude(
    done: Rejudged,
    store: Store,
    *,
    settings: Settings,
    invocation: dict[str, Any],
    parent: str,
) -> int:
    """Store the new run, print the notes, the agreement and the summary; the exit code."""
    from sparring.cli.run import gate_outcome
    from sparring.reports.console import ConsoleView, default_console
    from sparring.store.recorder import run_record
    from sparring.store.writer import RunWriter

    result = done.result
    exit_status, gate_lines = gate_outcome(result, settings)
    code = exit_status[0] if exit_status else result.exit_code
    record = run_record(invocation | {"rejudged": parent}, settings, cwd=Path.cwd(), parent=parent)
    writer = RunWriter(store)
    planned = result.model_copy(
        update={"scenarios": [s.model_copy(update={"trials": []}) for s in result.scenarios]}
    )
    writer.start(planned, record=record)
    for scenario in result.scenarios:
        for trial in scenario.trials:
            writer.add(trial)
    writer.finish(result, exit_code=code)
    for scenario_id in done.skipped:
        click.secho(
            f"note: {scenario_id} is a Python test: its verdicts come from its code, not a "
            "YAML spec, so it is kept as stored, not judged again",
            fg="yellow",
            err=True,
        )
    _print_agreement(done)
    view = ConsoleView(console=default_console(), live=False, summary_at_exit=False)
    view.summary(result, gate_lines=gate_lines, exit_status=exit_status)
    if writer.errors:
        click.secho(f"warning: the store could not keep the run: {writer.errors[0]}", fg="yellow")
        return max(code, 3)
    click.echo(f"Rejudged run {parent} as run {result.run_id} (`sparring report {result.run_id}`)")
    return code


def _print_agreement(done: Rejudged) -> None:
    """One line per scenario and item judged several times: agreement rate, and the
    `UNSTABLE_JUDGE` flag when its answers differed."""
    from sparring.reports import percent
    from sparring.reports.markdown import UNSTABLE_JUDGE

    if done.repeat < 2 or not done.agreements:
        return
    click.echo(
        f"Judge agreement over {done.repeat} answers per transcript (share equal to "
        "their majority):"
    )
    for a in done.agreements:
        flag = f"  {UNSTABLE_JUDGE}" if a.flipped else ""
        click.echo(f"  {a.scenario_id} {a.item_id}: {percent(a.rate)}{flag}")
