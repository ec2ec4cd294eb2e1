"""A run as a download: the exports `sparring export` and `sparring run` write
(`sparring.reports.exports`, `sparring.reports.json`), made in memory."""

from __future__ import annotations

import tempfile
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
    if format == "csv":
        return render_csv_zip(result), "application/zip", f"{stem}.zip"
    with tempfile.TemporaryDirectory(prefix="sparring-export-") as folder:
        path = Path(folder) / f"{stem}.xlsx"
        write_xlsx(result, path)
        return path.read_bytes(), _XLSX_TYPE, path.name
