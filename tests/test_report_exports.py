"""Exports (`--xlsx`, `--csv`): sheets Runs, Insights and Transcript, from a real run."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from sparring.errors import UserError
from sparring.reports.exports import (
    INSIGHT_COLUMNS,
    MAX_CELL_CHARS,
    MESSAGE_COLUMNS,
    RUN_COLUMNS,
    export_sheets,
    fit_cell,
    render_csv_zip,
    write_csv_zip,
    write_xlsx,
)
from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.transcript import Message, Transcript
from tests.support.report_run import CARD_REQUEST, XSS_REPLY, report_run


@cache
def run() -> RunResult:
    return report_run()


def _rows(name: str) -> list[dict[str, Any]]:
    sheet = next(s for s in export_sheets(run()) if s.name == name)
    return sheet.rows


def test_runs_has_one_row_per_conversation() -> None:
    rows = _rows("Runs")
    assert [tuple(r) for r in rows] == [RUN_COLUMNS] * 4
    assert [(r["scenario"], r["trial"], r["status"], r["pass"]) for r in rows] == [
        ("refund-delay", 1, "passed", True),
        ("refund-delay", 2, "failed", False),
        ("order-status", 1, "passed", True),
        ("capital-question", 1, "error", False),
    ]
    first, _, _, capital = rows
    assert first["end reason"] == "max_turns" and first["turns"] == 2
    assert first["reply score"] == 0.9 and capital["reply score"] is None  # the judge's mean
    assert first["score"] == 1.0 and capital["score"] is None  # criteria met (no evaluation)
    assert first["tags"] == "refunds, smoke" and first["model calls"] == 2
    assert first["run"] == run().run_id
    labels = ("category", "topic", "behavior")
    assert [capital[k] for k in labels] == ["geography", "capitals", "accuracy"]
    assert capital["error"] == "could not connect to http://127.0.0.1:9/chat"


def test_insights_has_one_row_per_verdict_and_check() -> None:
    rows = _rows("Insights")
    assert len(rows) == 9 and all(tuple(r) == INSIGHT_COLUMNS for r in rows)
    r1 = next(r for r in rows if r["trial"] == 2 and r["id"] == "r1")
    assert r1["kind"] == "restriction" and r1["value"] == "not_met"
    assert r1["reasoning"] == "It asks for the full card number."
    assert r1["evidence"] == "I need your full card number" and r1["turns"] == "2"
    check = next(r for r in rows if r["id"] == "t1.check2")
    assert (check["kind"], check["value"], check["description"]) == (
        "check",
        "met",
        "calls lookup_order",
    )


def test_transcript_has_one_row_per_message_with_the_judges_notes_on_replies() -> None:
    rows = _rows("Transcript")
    assert len(rows) == 11 and all(tuple(r) == MESSAGE_COLUMNS for r in rows)
    failed = [r for r in rows if r["scenario"] == "refund-delay" and r["trial"] == 2]
    assert [(r["turn"], r["role"]) for r in failed] == [
        (1, "simulated user"),
        (1, "agent"),
        (2, "simulated user"),
        (2, "agent"),
    ]
    reply = failed[3]
    assert reply["text"] == CARD_REQUEST and reply["latency (ms)"] == 1210
    assert (reply["judge note"], reply["judge score"]) == ("Reply 2 ignores the customer.", 0.2)
    assert failed[2]["judge note"] is None
    tool = next(r for r in rows if r["scenario"] == "order-status" and r["role"] == "agent")
    assert tool["tool calls"] == (
        '[{"name": "lookup_order", "arguments": {"order_id": "10234"}, "result": "shipped"}]'
    )


def test_the_xlsx_opens_with_openpyxl_and_holds_every_sheet(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "run.xlsx"
    write_xlsx(run(), path)
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["Runs", "Insights", "Transcript", "Rates"]
    runs = book["Runs"]
    assert [c.value for c in runs[1]] == list(RUN_COLUMNS)
    assert runs.freeze_panes == "A2" and runs["A1"].font.bold
    assert runs.max_row == 5
    values = [c.value for c in runs[3]]
    assert values[1:8] == [
        "refund-delay",
        "Refund for a late order",
        "simulated",
        2,
        "failed",
        "max_turns",
        False,
    ]
    texts = [c.value for row in book["Transcript"].iter_rows(min_row=2) for c in row]
    assert XSS_REPLY in texts  # stored as it is: a spreadsheet runs no HTML


def _one_reply_run(reply: str) -> RunResult:
    transcript = Transcript(
        messages=(Message(role="user", content="hi"), Message(role="agent", content=reply))
    )
    trial = TrialResult(
        scenario_id="s", trial=1, status="passed", end_reason="max_turns", transcript=transcript
    )
    scenario = ScenarioResult(
        scenario_id="s", name="s", kind="simulated", threshold=1.0, trials=[trial]
    )
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=[scenario],
    )


def _xlsx_reply(tmp_path: Path, reply: str) -> Any:
    write_xlsx(_one_reply_run(reply), tmp_path / "r.xlsx")
    return openpyxl.load_workbook(tmp_path / "r.xlsx")["Transcript"]["G3"]


def test_a_cell_over_excels_limit_is_cut_with_a_marker_and_the_file_opens(tmp_path: Path) -> None:
    cell = _xlsx_reply(tmp_path, "x" * 40_000)
    assert MAX_CELL_CHARS - 2 <= len(cell.value) <= MAX_CELL_CHARS
    kept, marker = cell.value.split("… ")
    assert (
        marker
        == f"[cut: {40_000 - len(kept):,} more characters; the JSON report has the full text]"
    )
    assert kept == "x" * len(kept)


def test_excels_limit_counts_utf16_units_and_never_splits_a_character() -> None:
    cut = fit_cell("😀" * 20_000)  # 40,000 UTF-16 units
    assert len(cut.encode("utf-16-le")) // 2 <= MAX_CELL_CHARS
    assert cut.startswith("😀" * 16_000) and "\ud83d" not in cut
    assert fit_cell("😀" * 16_000) == "😀" * 16_000


def test_control_characters_are_removed_and_formulas_stay_text(tmp_path: Path) -> None:
    cell = _xlsx_reply(tmp_path, '=HYPERLINK("http://x")\x00\x07\x1b[31m\ttab\nline\ufffe')
    assert cell.value == '=HYPERLINK("http://x")[31m\ttab\nline'
    assert cell.data_type == "s"  # text, not a formula


def test_the_csv_zip_holds_one_csv_per_sheet(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "run.zip"
    write_csv_zip(run(), path)
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist() == ["runs.csv", "insights.csv", "transcript.csv", "rates.csv"]
        raw = archive.read("transcript.csv")
        runs = archive.read("runs.csv").decode("utf-8-sig")
    assert raw.startswith(b"\xef\xbb\xbf")  # a BOM, so spreadsheet programs read UTF-8
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert len(rows) == 11 and list(rows[0]) == list(MESSAGE_COLUMNS)
    assert any(r["text"] == XSS_REPLY for r in rows)
    passes = [r["pass"] for r in csv.DictReader(io.StringIO(runs))]
    assert passes == ["true", "false", "true", "false"]
    assert render_csv_zip(run()) == path.read_bytes()  # the same run, the same bytes


def test_a_csv_cell_that_starts_like_a_formula_is_kept_as_text() -> None:
    raw = zipfile.ZipFile(io.BytesIO(render_csv_zip(_one_reply_run("=1+1\x00"))))
    rows = list(csv.DictReader(io.StringIO(raw.read("transcript.csv").decode("utf-8-sig"))))
    assert rows[1]["text"] == "'=1+1"
    assert rows[0]["text"] == "hi"


def test_a_missing_openpyxl_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # what an absent package gives
    with pytest.raises(UserError) as caught:
        write_xlsx(run(), tmp_path / "r.xlsx")
    assert str(caught.value) == 'the xlsx export needs openpyxl: pip install "sparring[xlsx]"'
    assert not (tmp_path / "r.xlsx").exists()


def test_sparring_run_without_openpyxl_stops_before_the_run(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden" / "openpyxl"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('openpyxl is not installed')\n")
    (tmp_path / "suite.yaml").write_text(
        "target: {type: callable, ref: 'sparring.demo.agent:chat'}\n"
        "scenarios:\n  - id: a\n    turns: [{user: hi, checks: [{contains: order}]}]\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    env["PYTHONPATH"] = str(tmp_path / "hidden")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparring.cli",
            "run",
            "suite.yaml",
            "--xlsx",
            "r.xlsx",
            "-o",
            "r.json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert 'pip install "sparring[xlsx]"' in done.stderr
    assert not (tmp_path / "r.json").exists()  # nothing ran
