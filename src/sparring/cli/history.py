"""`sparring runs`, `sparring show` and `sparring report`: the runs kept in the results
store. Imports only click at start-up; each command opens the store (SQLAlchemy) itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from sparring.results import RunResult, ScenarioResult, TrialResult
    from sparring.store.database import Store
    from sparring.store.reading import RunSummary

STORE_HELP = "The results store (default: the `store` setting, else .sparring/sparring.db)."
BASE_URL_HELP = "Endpoint of openai-compatible: models (openai: and ollama: keep their own)."
_RUN_STATUSES = ("running", "finished", "interrupted")


def open_named(store: str | None) -> Store:
    """The store `--store` names, else the one the settings name (as `sparring run`).

    Raises:
        StoreError: the store cannot be opened (see `sparring.store.database.open_store`).
    """
    from sparring.config import load_settings
    from sparring.store.database import open_store
    from sparring.store.location import store_url

    return open_store(store_url(store or load_settings({}).store, cwd=Path.cwd()))


@click.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--status", type=click.Choice(_RUN_STATUSES), help="Only runs in this state.")
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    help="Only runs holding a scenario with this tag (repeat for any of several).",
)
@click.option("--store", metavar="URL", help=STORE_HELP)
def runs(limit: int, status: str | None, tags: tuple[str, ...], store: str | None) -> None:
    """List the stored runs, newest first: id, start, duration, status, trials by status,
    pass rate, cost, git commit, paths and models."""
    from sparring.store.overrides import run_overrides
    from sparring.store.reading import list_runs

    opened = open_named(store)
    found = list_runs(opened, limit=limit, status=status, tags=tags)
    if not found:
        click.echo(_no_runs_text(status, tags))
    for run in found:
        overridden = {(o.scenario_id, o.trial) for o in run_overrides(opened, run.id)}
        click.echo(run_line(run, overridden=len(overridden)))


def _no_runs_text(status: str | None, tags: tuple[str, ...]) -> str:
    """What `sparring runs` says when no stored run matches its filters (or none is stored)."""
    which = f"{status} run" if status else "run"
    if tags:
        return f"No stored {which} has a scenario tagged {' or '.join(map(repr, tags))}."
    if status:
        return f"No stored run is {status}: `sparring runs` without --status lists them all."
    return "No stored runs yet: `sparring run` keeps every run."


def run_line(run: RunSummary, *, overridden: int = 0) -> str:
    """One line of `sparring runs`: e.g. `3f2a9c1b7d0e  2025-01-31 09:12:04  12.3 s
    finished  6 trials: 4 passed, 2 failed (1 overridden)  pass 67%  $0.0123  a1b2c3d
    (main)  examples/  user openai:gpt-4o-mini t=0.7, judge ...`; `overridden`: trials
    whose verdicts a person overrode (`sparring override`)."""
    from sparring.reports import percent, usd
    from sparring.reports.outcome import model_text

    total = sum(run.trial_counts.values())
    counts = ", ".join(f"{n} {s}" for s, n in sorted(run.trial_counts.items()))
    duration = "-" if run.duration_ms is None else f"{run.duration_ms / 1000:.1f} s"
    commit = run.git_commit[:7] if run.git_commit else "-"
    if run.git_commit and run.git_branch:
        commit += f" ({run.git_branch})"
    parts = [
        run.id,
        run.started_at[:19].replace("T", " "),
        duration,
        run.status + (" (baseline)" if run.baseline else ""),
        f"{total} trial{'s' if total != 1 else ''}"
        + (f": {counts}" if counts else "")
        + (f" ({overridden} overridden)" if overridden else ""),
        f"pass {percent(run.pass_rate)}",
        usd(run.cost_usd),
        commit,
        " ".join(run.paths) or "(default paths)",
        ", ".join(model_text(m) for m in run.models) or "no models",
    ]
    return "  ".join(parts)


@click.command("show")
@click.argument("run_id", metavar="RUN")
@click.option("--scenario", "scenario_id", metavar="ID", help="Show this scenario's trials.")
@click.option("--trial", type=click.IntRange(min=1), help="Show this trial's transcript.")
@click.option("--store", metavar="URL", help=STORE_HELP)
def show(run_id: str, scenario_id: str | None, trial: int | None, store: str | None) -> None:
    """Show a stored run (RUN: its id or the start of it): its summary; with --scenario
    one scenario's trials; with --trial too, that trial's transcript with each verdict
    beside the turns it cites."""
    from sparring.errors import UserError
    from sparring.reports.console import ConsoleView, default_console
    from sparring.store.reading import find_run, load_run

    opened = open_named(store)
    result = load_run(opened, find_run(opened, run_id).id)
    if scenario_id is None:
        if trial is not None:
            raise UserError("--trial needs --scenario ID: the trial of which scenario?")
        click.echo(f"Run {result.run_id}, started {result.started_at}")
        view = ConsoleView(console=default_console(), live=False, summary_at_exit=False)
        view.summary(result)
        _print_red_team(result)
        _print_overridden(result)
        return
    scenario = _scenario(result, scenario_id)
    if trial is None:
        _print_scenario(scenario)
        return
    _print_trial(_trial(scenario, trial))


def _scenario(result: RunResult, scenario_id: str) -> ScenarioResult:
    from sparring.errors import UserError

    for scenario in result.scenarios:
        if scenario.scenario_id == scenario_id:
            return scenario
    ids = ", ".join(s.scenario_id for s in result.scenarios)
    raise UserError(f"run {result.run_id} has no scenario {scenario_id!r}; it has: {ids}")


def _trial(scenario: ScenarioResult, number: int) -> TrialResult:
    from sparring.errors import UserError

    for trial in scenario.trials:
        if trial.trial == number:
            return trial
    have = ", ".join(str(t.trial) for t in scenario.trials) or "none"
    raise UserError(f"scenario {scenario.scenario_id!r} has no trial {number} (it has: {have})")


def _print_red_team(result: RunResult) -> None:
    """After a red-team run's summary, what `sparring redteam` printed: attack success per
    plugin and strategy, and each successful attack's transcript."""
    from sparring.redteam import render_summary, summarize

    attacks = summarize(result)
    if attacks.plugins:
        click.echo(render_summary(attacks))


def _print_overridden(result: RunResult) -> None:
    """After a run's summary, the trials whose verdicts a person overrode, if any."""
    from sparring.store.overrides import trial_overridden

    trials = [
        f"{s.scenario_id} trial {t.trial}"
        for s in result.scenarios
        for t in s.trials
        if trial_overridden(t)
    ]
    if trials:
        click.echo(
            f"Overridden by a person (`sparring override`): {', '.join(trials)}; "
            f"`sparring show {result.run_id} --scenario ID --trial N` shows the verdicts"
        )


def _print_scenario(scenario: ScenarioResult) -> None:
    from sparring.reports import shown_pass_rate, shown_status
    from sparring.reports.console_summary import verdict_text
    from sparring.store.overrides import trial_overridden

    click.echo(
        f"{scenario.scenario_id}: {shown_status(scenario)}, pass rate "
        f"{shown_pass_rate(scenario)} ({scenario.name}; {scenario.source or 'no source'})"
    )
    for trial in scenario.trials:
        why = f": {trial.error}" if trial.error else ""
        overridden = " (overridden)" if trial_overridden(trial) else ""
        click.echo(
            f"  trial {trial.trial}: {trial.status}{overridden} ({trial.end_reason}, "
            f"{trial.duration_ms / 1000:.1f} s){why}"
        )
        for verdict in trial.failures:
            click.echo(f"    {verdict.status}: {verdict_text(verdict)}")


def _print_trial(trial: TrialResult) -> None:
    """The transcript, each agent reply followed by its judge note and the verdicts that
    cite its turn; verdicts citing no turn come last."""
    from sparring.reports.console_summary import verdict_text

    click.echo(f"{trial.scenario_id} trial {trial.trial}: {trial.status} ({trial.end_reason})")
    notes = {n.turn: n for n in trial.reply_notes}
    placed: set[int] = set()
    turn = 0
    for message in trial.transcript.messages:
        turn += message.role == "user"
        latency = f" ({message.latency_ms:.0f} ms)" if message.latency_ms is not None else ""
        click.echo(f"[{turn}] {message.role}{latency}: {message.content}")
        for call in message.tool_calls:
            click.echo(f"      tool {call.name}({json.dumps(call.arguments)})")
        if message.role != "agent":
            continue
        if turn in notes:
            click.echo(f"      judge note: {notes[turn].note} (score {notes[turn].score})")
        for i, verdict in enumerate(trial.verdicts):
            if i not in placed and turn in (*verdict.turns, verdict.turn):
                placed.add(i)
                click.echo(f"      {verdict.status}: {verdict_text(verdict)}")
    rest = [v for i, v in enumerate(trial.verdicts) if i not in placed]
    if rest:
        click.echo("Verdicts on the whole conversation:")
    for verdict in rest:
        click.echo(f"  {verdict.status}: {verdict_text(verdict)}")
    if trial.page_url:  # a browser target's page as the conversation ended
        click.echo(f"Page: {trial.page_url}")
    for artifact in trial.artifacts:
        after = f" after turn {artifact.turn}" if artifact.turn else ""
        click.echo(f"{artifact.kind.capitalize()}{after}: {artifact.path}")
    if trial.error:
        click.echo(f"Error: {trial.error}")


@click.command("report")
@click.argument("run_id", metavar="RUN")
@click.option("--output", "-o", type=click.Path(allow_dash=True), help="JSON report (`-`: stdout).")
@click.option("--junit", type=click.Path(), help="JUnit XML report.")
@click.option("--markdown", type=click.Path(), help="Markdown report.")
@click.option("--html", type=click.Path(), help="HTML report (one offline page).")
@click.option("--xlsx", type=click.Path(), help="xlsx export (Runs, Insights, Transcript).")
@click.option("--csv", "csv_zip", type=click.Path(), help="csv-zip export (one CSV per sheet).")
@click.option("--store", metavar="URL", help=STORE_HELP)
def report(run_id: str, store: str | None, **files: str | None) -> None:
    """Write the reports of a stored run (RUN: its id or the start of it), identical to
    those the run itself wrote; the group gates are those of the run's settings."""
    from sparring.cli.run import gate_outcome, report_paths, write_reports
    from sparring.config import Settings
    from sparring.errors import UserError
    from sparring.store.reading import find_run, load_run, run_settings

    labels = {"output": "JSON", "junit": "JUnit", "markdown": "Markdown", "html": "HTML"}
    labels |= {"xlsx": "xlsx", "csv_zip": "CSV zip"}
    asked = report_paths({labels[k]: v for k, v in files.items() if v})
    if not asked:
        raise UserError("name a report to write: --output, --junit, --markdown, --html, ...")
    opened = open_named(store)
    found = find_run(opened, run_id)
    result = load_run(opened, found.id)
    settings = Settings.model_validate(run_settings(opened, found.id))
    exit_status, gate_lines = gate_outcome(result, settings)
    if not write_reports(result, asked, exit_status=exit_status, gate_lines=gate_lines):
        sys.exit(3)
