"""`sparring export RUN --format xlsx|csv|json`: a stored run's sheets in one file."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import openpyxl

from sparring.reports.exports import MAX_CELL_CHARS
from tests.test_cli import sparring

AGENT = """
def agent(history):
    text = history[-1]["content"]
    return "fine " + "x" * 40_000 if text == "long" else "no"
"""
SUITE = """target: {type: callable, ref: 'agent_module:agent'}
scenarios:
  - {id: long, prompt: long, checks: [{contains: fine}]}
  - {id: broken, prompt: bad, trials: 2, checks: [{contains: fine}]}
"""


def _stored_run(tmp_path: Path) -> str:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "agent_module.py").write_text(AGENT)
    (tmp_path / "suite.yaml").write_text(SUITE)
    done = sparring("run", "suite.yaml", "--no-live", "-o", "r.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    return json.loads((tmp_path / "r.json").read_text())["run_id"]


def test_export_writes_the_three_sheets_as_xlsx_csv_zip_and_json(tmp_path: Path) -> None:
    run_id = _stored_run(tmp_path)

    xlsx = sparring("export", run_id[:6], cwd=tmp_path)
    assert xlsx.returncode == 0, xlsx.stderr
    book = openpyxl.load_workbook(tmp_path / f"{run_id}.xlsx", read_only=True)
    assert book.sheetnames == ["Runs", "Insights", "Transcript", "Rates"]
    runs = list(book["Runs"].iter_rows(values_only=True))
    assert len(runs) == 1 + 3  # header, one row per conversation
    texts = [str(row[6]) for row in book["Transcript"].iter_rows(values_only=True)]
    cut = next(t for t in texts if t.startswith("fine "))
    assert len(cut) <= MAX_CELL_CHARS and "[cut: " in cut

    csv_zip = sparring("export", run_id, "--format", "csv", "-o", "out/e.zip", cwd=tmp_path)
    assert csv_zip.returncode == 0, csv_zip.stderr
    with zipfile.ZipFile(tmp_path / "out" / "e.zip") as archive:
        assert archive.namelist() == ["runs.csv", "insights.csv", "transcript.csv", "rates.csv"]

    shown = sparring("export", run_id, "--format", "json", "-o", "-", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["run_id"] == run_id
    assert list(data["sheets"]) == ["Runs", "Insights", "Transcript", "Rates"]
    assert [(r["scenario"], r["trial"], r["pass"]) for r in data["sheets"]["Runs"]] == [
        ("long", 1, True),
        ("broken", 1, False),
        ("broken", 2, False),
    ]
    full = next(r["text"] for r in data["sheets"]["Transcript"] if r["text"].startswith("fine"))
    assert len(full) == len("fine ") + 40_000  # JSON keeps all of it
    written = sparring("export", run_id, "-f", "json", cwd=tmp_path)
    assert json.loads((tmp_path / f"{run_id}.json").read_text()) == data, written.stderr


def test_export_of_an_unknown_run_or_a_binary_format_on_stdout_is_a_usage_error(
    tmp_path: Path,
) -> None:
    run_id = _stored_run(tmp_path)
    unknown = sparring("export", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr
    binary = sparring("export", run_id, "-o", "-", cwd=tmp_path)
    assert binary.returncode == 2 and "cannot go to standard output" in binary.stderr
