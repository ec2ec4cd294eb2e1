"""The rows of a scenario template: `cases:` written inline, or `cases_from:` a CSV / JSONL file.

CSV: the first non-blank line names the columns, every later non-blank line is a row with as
many values (all text). JSONL: one JSON object per non-blank line (values keep their types).
Both are read as UTF-8 (a byte-order mark is skipped), from a regular file of at most
`MAX_ROWS_FILE_BYTES`. Every problem names the file, the row and its line.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders.errors import Problem
from sparring.targets.attachments import file_problem

ROW_SUFFIXES = (".csv", ".jsonl")
MAX_ROWS_FILE_BYTES = 5 * 1024 * 1024
"""Largest `cases_from:` file, in bytes (5 MiB: tens of thousands of rows, each a trial)."""


@dataclass(frozen=True)
class Row:
    """One row: its variables, and where it was written.

    Attributes:
        values: Variable name -> value (text from CSV; any JSON/YAML value otherwise).
        name: How errors name the row, e.g. `row 3 of cases.csv`.
        path: The file the row is in; `line` / `column` are 1-based (column when known).
    """

    values: dict[str, Any]
    name: str
    path: str
    line: int | None
    column: int | None = None

    def problem(self, message: str) -> Problem:
        """A problem reported at this row."""
        return Problem(self.path, self.line, self.column, message)


def read_rows(
    template: dict[str, Any], loc: Loc, *, doc: Document, path: str
) -> tuple[list[Row], list[Problem]]:
    """The rows of a template: from `cases:` (a list of mappings) or `cases_from:` (a file
    name relative to the test file `path`).

    Returns:
        At least one row, or the problems: both keys or neither usable, an empty list or
        file, a file that cannot be read or is not CSV / JSONL, a bad line.
    """
    if "cases" in template and "cases_from" in template:
        return [], [
            Problem(
                path,
                *doc.position((*loc, "cases_from")),
                "a scenario takes its rows from `cases:` or from `cases_from:`, not both; "
                "remove one",
            )
        ]
    if "cases" in template:
        return _inline(template["cases"], (*loc, "cases"), doc=doc, path=path)
    return _from_file(template["cases_from"], (*loc, "cases_from"), doc=doc, path=path)


def _inline(value: Any, loc: Loc, *, doc: Document, path: str) -> tuple[list[Row], list[Problem]]:
    where = doc.position(loc)
    if not isinstance(value, list) or not value:
        return [], [
            Problem(
                path,
                *where,
                "`cases:` must be a non-empty list of rows, e.g. "
                "`cases: [{id: late-order, order: '10237'}]`",
            )
        ]
    rows: list[Row] = []
    problems: list[Problem] = []
    items: list[Any] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    for k, item in enumerate(items):
        line, column = doc.position((*loc, k))
        row = Row({}, f"row {k + 1} of `cases`", path, line, column)
        if not is_mapping(item):
            problems.append(row.problem(f"{row.name} is not a mapping of variable: value"))
            continue
        rows.append(Row(dict(item), row.name, path, line, column))
    return rows, problems


def _from_file(
    value: Any, loc: Loc, *, doc: Document, path: str
) -> tuple[list[Row], list[Problem]]:
    here = Problem(path, *doc.position(loc, value=True), "")
    if not isinstance(value, str) or not value.strip():
        return [], [_say(here, "`cases_from:` names a .csv or .jsonl file, e.g. rows.csv")]
    file = Path(path).parent / value
    if file.suffix.lower() not in ROW_SUFFIXES:
        return [], [
            _say(here, f"`cases_from: {value}` is not a .csv or .jsonl file; rename or convert it")
        ]
    problem = file_problem(
        file, limit=MAX_ROWS_FILE_BYTES, what="a rows file", kinds="a .csv or .jsonl file"
    )
    if problem is not None:  # checked first: a pipe or a device could block or never end
        return [], [_say(here, f"rows file {str(file)!r} {problem}")]
    try:
        with file.open("rb") as opened:
            data = opened.read(MAX_ROWS_FILE_BYTES + 1)
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return [], [Problem(str(file), None, None, f"not UTF-8 text ({e.reason}); save as UTF-8")]
    except OSError as e:
        return [], [_say(here, f"cannot read rows file {str(file)!r}: {e.strerror or e}")]
    if len(data) > MAX_ROWS_FILE_BYTES:  # it grew after it was checked
        return [], [
            _say(
                here,
                f"rows file {str(file)!r} grew over the {MAX_ROWS_FILE_BYTES:,}-byte limit "
                "for a rows file as it was read; use a smaller file",
            )
        ]
    read = _csv if file.suffix.lower() == ".csv" else _jsonl
    rows, problems = read(text, str(file))
    if not rows and not problems:
        problems = [Problem(str(file), None, None, "the rows file is empty; add at least one row")]
    return rows, problems


def _say(where: Problem, message: str) -> Problem:
    return Problem(where.path, where.line, where.column, message)


def _csv(text: str, file: str) -> tuple[list[Row], list[Problem]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    rows: list[Row] = []
    try:
        for record in reader:
            if not any(field.strip() for field in record):
                continue
            if header is None:
                header = [name.strip() for name in record]
                problem = _header_problem(header, file, reader.line_num)
                if problem:
                    return [], [problem]
                continue
            row = Row({}, f"row {len(rows) + 1} of {Path(file).name}", file, reader.line_num)
            if len(record) != len(header):
                return [], [
                    row.problem(
                        f"bad CSV: {row.name} has {len(record)} values, but the header has "
                        f"{len(header)} columns ({', '.join(header)}); quote values that "
                        'contain a comma, e.g. "Hello, world"'
                    )
                ]
            rows.append(Row(dict(zip(header, record, strict=True)), row.name, file, row.line))
    except csv.Error as e:
        return [], [Problem(file, reader.line_num, None, f"bad CSV: {e}; check the quoting")]
    if header is not None and not rows:
        return [], [Problem(file, None, None, "the rows file has a header but no rows")]
    return rows, []


def _header_problem(header: list[str], file: str, line: int) -> Problem | None:
    for column, name in enumerate(header, start=1):
        if not name:
            return Problem(file, line, None, f"bad CSV: column {column} of the header has no name")
        if header.index(name) != column - 1:
            return Problem(file, line, None, f"bad CSV: column {name!r} appears twice")
    return None


def _jsonl(text: str, file: str) -> tuple[list[Row], list[Problem]]:
    rows: list[Row] = []
    problems: list[Problem] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = Row(
            {}, f"row {len(rows) + len(problems) + 1} of {Path(file).name}", file, line_number
        )
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(file, line_number, e.colno, f"bad JSONL: {row.name}: {e.msg}"))
            continue
        if not is_mapping(value):
            problems.append(
                row.problem(f'bad JSONL: {row.name} is not a JSON object like {{"id": "a"}}')
            )
            continue
        rows.append(Row(dict(value), row.name, file, line_number))
    return rows, problems
