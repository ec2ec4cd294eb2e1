"""`sparring diff [BASE] [RUN]` and `sparring baseline RUN`: what changed between two stored
runs (`sparring.reports.diff`), and the run compared against by default. Imports only click
at start-up."""

from __future__ import annotations

import sys

import click

from sparring.cli.history import STORE_HELP

EXIT_REGRESSED = 1
EXIT_NOTHING_COMPARED = 2


@click.command(
    "diff",
    epilog="Exit codes: 0 compared, 1 regressed (--fail-on-regression), 2 usage, or the runs "
    "share no scenario (--fail-on-regression).",
)
@click.argument("base_id", metavar="[BASE]", required=False)
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when a scenario newly fails or its pass rate dropped significantly.",
)
@click.option("--store", metavar="URL", help=STORE_HELP)
def diff(
    base_id: str | None, run_id: str | None, fail_on_regression: bool, store: str | None
) -> None:
    """Compare stored run RUN (default: the last one) with BASE (default: the run marked
    with `sparring baseline`, else the previous run of RUN's test paths on its git branch):
    per scenario the pass-rate change and whether it is significant (the 95% intervals do
    not overlap), newly failing and newly passing scenarios and criteria, cost and reply
    latency."""
    from sparring.cli.history import open_named
    from sparring.reports.diff import diff_runs, render_diff
    from sparring.store.reading import diff_pair, load_run

    opened = open_named(store)
    try:
        base, run = diff_pair(opened, base_id, run_id)
        compared = diff_runs(load_run(opened, base.id), load_run(opened, run.id))
    finally:
        opened.close()
    for line in render_diff(compared):
        click.echo(line)
    if fail_on_regression and compared.regressions:
        sys.exit(EXIT_REGRESSED)
    if fail_on_regression and not compared.shared:  # nothing compared is not "no regression"
        sys.exit(EXIT_NOTHING_COMPARED)


@click.command("baseline")
@click.argument("run_id", metavar="RUN")
@click.option("--store", metavar="URL", help=STORE_HELP)
def baseline(run_id: str, store: str | None) -> None:
    """Mark stored run RUN (its id or the start of it) as the baseline `sparring diff`
    compares against by default (unmarking the previous one)."""
    from sparring.cli.history import open_named
    from sparring.store.reading import find_run
    from sparring.store.writer import mark_baseline

    opened = open_named(store)
    try:
        found = find_run(opened, run_id)
        mark_baseline(opened, found.id)
    finally:
        opened.close()
    click.echo(f"Run {found.id} is the baseline: `sparring diff` compares against it.")
