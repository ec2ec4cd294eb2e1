"""Spreadsheet exports of a run: xlsx (openpyxl, the `xlsx` extra) and csv-zip (stdlib).

Four sheets, the same in both formats (`export_sheets`):

- **Runs**: one row per conversation (trial): scenario, trial, status, end reason, pass,
  the trial's score (evaluations, else the share of criteria met), whether its
  evaluations passed, the judge's mean reply score, duration, turns, model calls, tokens,
  cost, tags and the scenario's labels (category, topic, behavior, source, description),
  the trial's error and the `explain_failures` explanation; then one column per insight
  (`evaluation.insight`, the featured first) holding its value.
- **Insights**: one row per verdict (criterion, restriction, `should`, check) and per
  insight of an evaluation: id, kind, what it is about, value (`met`, `not_met`, `error`,
  `skipped`; an insight's typed value), reasoning, evidence (one quote a line), the turns
  it cites, and for insights whether a gating one passed, its score, weight, group and
  whether it is featured; a person's override of either.
- **Transcript**: one row per message, sub-tests' conversations included: scenario,
  trial, conversation, turn, role, text, tool calls (JSON), latency, and on an agent
  reply the judge's note and score.
- **Rates**: one row per scenario (kind `scenario`: its trials passed of those counted) and
  per criterion, `should`, check and gating insight of it (met in how many of the trials
  that decided it): met, out of, pass rate and the 95% Wilson interval's low and high ends.

Cells are made safe for spreadsheets: control characters that XML (and so xlsx) cannot
hold are removed; an xlsx cell longer than Excel's 32,767 characters is cut with a marker
saying how much is left out (the JSON report has all of it); text is never a formula (xlsx
stores it as text; in CSV a cell that starts like a formula, `=`, `+`, `-`, `@`, gets a
leading `'`, as spreadsheet programs expect).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from sparring.errors import UserError
from sparring.reports.evidence import message_turns
from sparring.reports.insights import (
    evaluations_passed_text,
    ordered,
    override_text,
    value_text,
)
from sparring.reports.outcome import verdict_what
from sparring.reports.rates import criterion_rates, interval
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.transcript import ToolCall

CellValue = str | int | float | bool | None
XLSX_INSTALL = 'pip install "sparring[xlsx]"'
MAX_CELL_CHARS = 32_767
"""Excel's limit on the characters in one cell (counted in UTF-16 units)."""
_CUT = "… [cut: {n:,} more characters; the JSON report has the full text]"
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_WIDE = {
    *("description", "reasoning", "evidence", "text", "tool calls", "error", "judge note"),
    *("explanation", "override"),
}
"""Columns shown wide in xlsx; the others are narrow."""


Row = dict[str, CellValue]
"""One row: column name -> value."""


@dataclass(frozen=True)
class Sheet:
    """One sheet: `name` (`Runs`, `Insights`, `Transcript`, `Rates`), column names, rows of
    cell values (text, numbers, booleans, `None` for empty) keyed by column name."""

    name: str
    columns: tuple[str, ...]
    rows: list[Row]

    def values(self) -> Iterator[list[CellValue]]:
        """Each row's values in column order."""
        return ([row[c] for c in self.columns] for row in self.rows)


RUN_COLUMNS = (
    *("run", "scenario", "name", "kind", "trial", "status", "end reason", "pass", "score"),
    *("evaluations passed", "reply score", "duration (s)", "turns", "model calls"),
    *("input tokens", "output tokens", "cost (USD)", "tags", "category", "topic"),
    *("behavior", "source", "description", "error", "explanation"),
)
"""The Runs sheet's fixed columns; one column per insight follows (`export_sheets`)."""
INSIGHT_COLUMNS = (
    *("run", "scenario", "trial", "id", "kind", "description", "value", "reasoning"),
    *("evidence", "turns", "passed", "score", "weight", "group", "featured", "override"),
)
MESSAGE_COLUMNS = (
    *("run", "scenario", "trial", "conversation", "turn", "role", "text", "tool calls"),
    *("latency (ms)", "judge note", "judge score"),
)
RATE_COLUMNS = (
    *("run", "scenario", "id", "kind", "description", "met", "out of", "pass rate"),
    *("interval low", "interval high"),
)


def export_sheets(result: RunResult) -> list[Sheet]:
    """The Runs, Insights, Transcript and Rates sheets of `result` (see the module docstring),
    scenarios and trials in run order."""
    trials = [(s, t) for s in result.scenarios for t in s.trials]
    ids = dict.fromkeys(i.id for _, t in trials for i in ordered(t.insights))
    return [
        Sheet(
            "Runs", (*RUN_COLUMNS, *ids), [_run_row(result.run_id, s, t, ids) for s, t in trials]
        ),
        Sheet(
            "Insights", INSIGHT_COLUMNS, [r for _, t in trials for r in _insights(result.run_id, t)]
        ),
        Sheet(
            "Transcript",
            MESSAGE_COLUMNS,
            [r for s, t in trials for r in _messages(result.run_id, s, t)],
        ),
        Sheet("Rates", RATE_COLUMNS, [r for s in result.scenarios for r in _rates(result, s)]),
    ]


def suite_sheets(results: Sequence[RunResult]) -> list[Sheet]:
    """The `export_sheets` of several runs (a suite's, in the order given) as one export:
    each sheet holds every run's rows, its columns those of every run (a cell a run has
    no column for is empty)."""
    merged: list[Sheet] = []
    for parts in zip(*(export_sheets(r) for r in results), strict=True):
        columns = tuple(dict.fromkeys(c for sheet in parts for c in sheet.columns))
        rows = [{c: row.get(c) for c in columns} for sheet in parts for row in sheet.rows]
        merged.append(Sheet(parts[0].name, columns, rows))
    return merged


def _sheets(result: RunResult | Sequence[RunResult]) -> list[Sheet]:
    return export_sheets(result) if isinstance(result, RunResult) else suite_sheets(result)


def _rates(result: RunResult, s: ScenarioResult) -> Iterator[Row]:
    """The scenario's pass rate (kind `scenario`), then each criterion, `should`, check and
    gating insight met across its trials (`sparring.reports.rates.criterion_rates`), each
    with its 95% Wilson interval."""
    own = ("scenario", s.name, s.passed_trials, len(s.counted))
    rows = [(s.scenario_id, *own)] + [
        (c.id, c.kind, c.description, c.met, c.decided) for c in criterion_rates(s)
    ]
    for id_, kind, description, met, out_of in rows:
        low, high = interval(met, out_of) or (None, None)
        yield {
            "run": result.run_id,
            "scenario": s.scenario_id,
            "id": id_,
            "kind": kind,
            "description": description,
            "met": met,
            "out of": out_of,
            "pass rate": round(met / out_of, 4) if out_of else None,
            "interval low": low,
            "interval high": high,
        }


def _run_row(run_id: str, s: ScenarioResult, t: TrialResult, insight_ids: Iterable[str]) -> Row:
    scores = [n.score for n in t.reply_notes if n.score is not None]
    values = {i.id: value_text(i) for i in t.insights}
    usage = t.usage_totals()
    return {
        "run": run_id,
        "scenario": s.scenario_id,
        "name": s.name,
        "kind": s.kind,
        "trial": t.trial,
        "status": t.status,
        "end reason": t.end_reason,
        "pass": t.status == "passed",
        "score": None if t.score is None else round(t.score, 3),
        "evaluations passed": evaluations_passed_text(t),
        "reply score": round(sum(scores) / len(scores), 3) if scores else None,
        "duration (s)": round(t.duration_ms / 1000, 3),
        "turns": t.transcript.user_turns,
        "model calls": usage.model_calls,
        "input tokens": usage.input_tokens,
        "output tokens": usage.output_tokens,
        "cost (USD)": round(usage.cost_usd, 6),
        "tags": ", ".join(s.tags),
        "category": s.category,
        "topic": s.topic,
        "behavior": s.behavior,
        "source": s.source,
        "description": s.description,
        "error": t.error,
        "explanation": t.explanation,
    } | {i: values.get(i) for i in insight_ids}


def _insights(run_id: str, t: TrialResult) -> Iterator[Row]:
    for v in t.verdicts:
        turns = v.turns or (() if v.turn is None else (v.turn,))
        yield {
            "run": run_id,
            "scenario": t.scenario_id,
            "trial": t.trial,
            "id": v.id,
            "kind": v.kind,
            "description": verdict_what(v),
            "value": v.status,
            "reasoning": v.reason,
            "evidence": "\n".join(v.evidence),
            "turns": ", ".join(map(str, turns)),
            "passed": None,
            "score": None,
            "weight": None,
            "group": None,
            "featured": None,
            "override": override_text(v.override) or None,
        }
    for i in ordered(t.insights):
        yield {
            "run": run_id,
            "scenario": t.scenario_id,
            "trial": t.trial,
            "id": i.id,
            "kind": f"insight ({i.type})",
            "description": f"evaluation {i.evaluation}" + (f", {i.group}" if i.group else ""),
            "value": value_text(i),
            "reasoning": i.reasoning or i.error,
            "evidence": "\n".join(i.evidence),
            "turns": ", ".join(map(str, i.turns)),
            "passed": i.passed,
            "score": i.score,
            "weight": i.weight,
            "group": i.group,
            "featured": i.featured,
            "override": override_text(i.override) or None,
        }


def _messages(run_id: str, s: ScenarioResult, t: TrialResult) -> Iterator[Row]:
    """The main conversation's messages (the judge's notes on its replies beside the first
    agent message of each turn), then each sub-test's."""
    main = ("main", t.transcript, "simulated user" if s.kind == "simulated" else "user")
    for name, transcript, user in [main, *((u.id, u.transcript, "user") for u in t.subtests)]:
        notes = {n.turn: n for n in t.reply_notes} if name == "main" else {}
        messages = transcript.messages
        for message, turn in zip(messages, message_turns(messages), strict=True):
            note = notes.pop(turn, None) if message.role == "agent" else None
            yield {
                "run": run_id,
                "scenario": t.scenario_id,
                "trial": t.trial,
                "conversation": name,
                "turn": turn,
                "role": user if message.role == "user" else message.role,
                "text": message.content,
                "tool calls": _tool_calls(message.tool_calls),
                "latency (ms)": message.latency_ms,
                "judge note": note.note if note else None,
                "judge score": note.score if note else None,
            }


def _tool_calls(calls: tuple[ToolCall, ...]) -> str | None:
    """The calls as a JSON array of `{name, arguments, result}` (`None` without calls)."""
    if not calls:
        return None
    shown = [
        {"name": c.name, "arguments": c.arguments_raw if c.arguments is None else c.arguments}
        | ({} if c.result is None else {"result": c.result})
        for c in calls
    ]
    return json.dumps(shown, ensure_ascii=False)


def clean_cell(text: str) -> str:
    """`text` without the control characters XML cannot hold (tab and newlines stay)."""
    return _ILLEGAL.sub("", text)


def fit_cell(text: str, limit: int = MAX_CELL_CHARS) -> str:
    """`text` cut to `limit` UTF-16 units (Excel's count) with a marker saying how many
    characters were left out; `text` itself when it fits."""
    if len(text) <= limit // 2 or len(text.encode("utf-16-le")) // 2 <= limit:
        return text
    room = limit - len(_CUT.format(n=len(text)))  # the real count has no more digits
    kept = text.encode("utf-16-le")[: room * 2].decode("utf-16-le", "ignore")
    return kept + _CUT.format(n=len(text) - len(kept))


def render_csv_zip(result: RunResult | Sequence[RunResult]) -> bytes:
    """The csv-zip export of a run, or of several (`suite_sheets`): `runs.csv`,
    `insights.csv`, `transcript.csv`, `rates.csv` (UTF-8 with a byte order mark, so
    spreadsheet programs read the text right), entries dated at the (first) run's start,
    so the same runs give the same bytes."""
    first = result if isinstance(result, RunResult) else result[0]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for sheet in _sheets(result):
            entry = zipfile.ZipInfo(f"{sheet.name.lower()}.csv", _zip_time(first.started_at))
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16  # rw-r--r-- when unzipped
            archive.writestr(entry, _csv_text(sheet).encode("utf-8-sig"))
    return out.getvalue()


def _csv_text(sheet: Sheet) -> str:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(sheet.columns)
    writer.writerows([_csv_cell(v) for v in row] for row in sheet.values())
    return text.getvalue()


def _csv_cell(value: CellValue) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        value = clean_cell(value)
        return "'" + value if value.startswith(_FORMULA_START) else value
    return value


def _zip_time(started_at: str) -> tuple[int, int, int, int, int, int]:
    try:
        when = datetime.fromisoformat(started_at)
    except ValueError:
        return (1980, 1, 1, 0, 0, 0)
    moment = (when.year, when.month, when.day, when.hour, when.minute, when.second)
    return max(moment, (1980, 1, 1, 0, 0, 0))  # zip dates start in 1980


def write_csv_zip(result: RunResult, path: Path) -> None:
    """Write `render_csv_zip(result)` to `path`, creating parent folders.

    Raises:
        OSError: the file cannot be written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render_csv_zip(result))


def require_openpyxl() -> ModuleType:
    """The `openpyxl` module, which the xlsx export needs.

    Raises:
        UserError: openpyxl is not installed; says how to install it.
    """
    try:
        return import_module("openpyxl")
    except ImportError:
        raise UserError(f"the xlsx export needs openpyxl: {XLSX_INSTALL}") from None


def write_xlsx(result: RunResult | Sequence[RunResult], path: Path) -> None:
    """Write the xlsx export of `result` (a run, or several: `suite_sheets`) to `path`
    (the `export_sheets`, each with a bold, frozen header row and filters), creating
    parent folders.

    Raises:
        UserError: openpyxl is not installed (`pip install "sparring[xlsx]"`).
        OSError: the file cannot be written.
    """
    openpyxl = require_openpyxl()
    workbook: Any = openpyxl.Workbook(write_only=True)
    for sheet in _sheets(result):
        _write_sheet(workbook.create_sheet(sheet.name), sheet, openpyxl)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    workbook.save(path)


def _write_sheet(worksheet: Any, sheet: Sheet, openpyxl: ModuleType) -> None:
    cell_type: Any = openpyxl.cell.WriteOnlyCell
    bold: Any = openpyxl.styles.Font(bold=True)
    letter: Any = openpyxl.utils.get_column_letter
    for index, name in enumerate(sheet.columns, start=1):
        worksheet.column_dimensions[letter(index)].width = 60 if name in _WIDE else 14
    worksheet.freeze_panes = "A2"
    worksheet.auto_filter.ref = f"A1:{letter(len(sheet.columns))}{len(sheet.rows) + 1}"
    header = [cell_type(worksheet, value=name) for name in sheet.columns]
    for cell in header:
        cell.font = bold
    worksheet.append(header)
    for row in sheet.values():
        worksheet.append([_xlsx_cell(worksheet, value, cell_type) for value in row])


def _xlsx_cell(worksheet: Any, value: CellValue, cell_type: Any) -> Any:
    if not isinstance(value, str):
        return value
    cell = cell_type(worksheet, value=fit_cell(clean_cell(value)))
    cell.data_type = "s"  # text, even when it starts with `=`: never a formula
    return cell
