"""Runs as downloads: the exports `sparring export` and `sparring run` write
(`sparring.reports.exports`, `sparring.reports.json`), made in memory, of one run or of a
suite's runs together."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from sparring.reports.exports import render_csv_zip, write_xlsx
from sparring.reports.json import render_json
from sparring.results import RunResult

ExportFormat = Literal["xlsx", "csv", "json"]
_XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def export(result: RunResult, format: ExportFormat) -> tuple[bytes, str, str]:
    """`result` as `format`: `(body, media type, file name)`; file names
    `sparring-<run id>.xlsx`, `.zip` (one CSV per sheet), `.json`.

    Raises:
        UserError: `xlsx` without openpyxl (says how to install it).
    """
    stem = f"sparring-{result.run_id}"
    if format == "json":
        return render_json(result).encode(), "application/json", f"{stem}.json"
    return _sheets(result, format, stem)


def export_suite(
    name: str, results: Sequence[RunResult], format: ExportFormat
) -> tuple[bytes, str, str]:
    """Every conversation of suite `name`'s runs `results` (newest first) as `format`:
    `(body, media type, file name)`. The sheets hold every run's rows (each row names its
    run); the JSON is `{"suite": name, "runs": [each run's JSON report]}`. File names
    `sparring-suite-<name>.xlsx`, `.zip`, `.json` (the name's letters and digits).

    Raises:
        UserError: `xlsx` without openpyxl (says how to install it).
    """
    stem = "sparring-suite-" + "".join(c if c.isalnum() else "-" for c in name)[:80]
    if format == "json":
        runs = [json.loads(render_json(r)) for r in results]
        body = json.dumps({"suite": name, "runs": runs}, ensure_ascii=False, indent=2) + "\n"
        return body.encode(), "application/json", f"{stem}.json"
    return _sheets(results, format, stem)


def _sheets(
    result: RunResult | Sequence[RunResult], format: Literal["xlsx", "csv"], stem: str
) -> tuple[bytes, str, str]:
    if format == "csv":
        return render_csv_zip(result), "application/zip", f"{stem}.zip"
    with tempfile.TemporaryDirectory(prefix="sparring-export-") as folder:
        path = Path(folder) / f"{stem}.xlsx"
        write_xlsx(result, path)
        return path.read_bytes(), _XLSX_TYPE, path.name
