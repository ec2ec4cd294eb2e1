"""`sparring export RUN --format xlsx|csv|json`: a stored run's sheets (Runs, Insights,
Transcript; `sparring.reports.exports`) in one file. Imports only click at start-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sparring.cli.history import STORE_HELP

if TYPE_CHECKING:
    from sparring.results import RunResult

FORMATS = {"xlsx": ".xlsx", "csv": ".zip", "json": ".json"}
"""Export format -> the file extension of its default file name."""


@click.command("export")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--format", "-f", "fmt", type=click.Choice(tuple(FORMATS)), default="xlsx", show_default=True
)
@click.option(
    "--output",
    "-o",
    type=click.Path(allow_dash=True),
    help="File to write (default: RUN_ID.xlsx, .zip or .json here; `-`: JSON on stdout).",
)
@click.option("--store", metavar="URL", help=STORE_HELP)
def export(run_id: str, fmt: str, output: str | None, store: str | None) -> None:
    """Export a stored run (RUN: its id or the start of it) as sheets Runs (one row per
    conversation), Insights (one row per verdict), Transcript (one row per message) and
    Rates (pass rates with 95% intervals, per scenario and per criterion): xlsx (needs
    openpyxl), csv (a zip with one CSV per sheet) or json (the four sheets)."""
    from sparring.cli.history import open_named
    from sparring.cli.run import report_paths, write_reports
    from sparring.errors import UserError
    from sparring.store.reading import find_run, load_run

    if output == "-" and fmt != "json":
        raise UserError(f"the {fmt} export cannot go to standard output (`-`); give a file name")
    opened = open_named(store)
    try:
        result = load_run(opened, find_run(opened, run_id).id)
    finally:
        opened.close()
    path = output or f"{result.run_id}{FORMATS[fmt]}"
    if fmt == "json":
        text = render_sheets_json(result)
        if path == "-":
            click.echo(text)
            return
        report_paths({"JSON": path})
        Path(path).write_text(text + "\n", encoding="utf-8")
        click.echo(f"JSON export: {path}", err=True)
        return
    label = "xlsx" if fmt == "xlsx" else "CSV zip"
    if not write_reports(result, report_paths({label: path}), exit_status=None, gate_lines=[]):
        raise SystemExit(3)


def render_sheets_json(result: RunResult) -> str:
    """The sheets of `result` as JSON: `{"run_id": ..., "sheets": {"Runs": [row, ...],
    "Insights": [...], "Transcript": [...], "Rates": [...]}}`, each row an object keyed by
    column name (cells uncut: JSON has no cell limit)."""
    from sparring.reports.exports import export_sheets

    sheets = {sheet.name: sheet.rows for sheet in export_sheets(result)}
    return json.dumps({"run_id": result.run_id, "sheets": sheets}, ensure_ascii=False, indent=2)
