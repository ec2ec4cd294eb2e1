"""Data-driven scenarios: one scenario template, one scenario per row of data.

A scenario (of any kind) with `cases:` (inline rows) or `cases_from:` (a `.csv` or `.jsonl`
file, relative to the test file) is a template: every `{{vars.NAME}}` in the text the test
author wrote is filled from each row, and the row's `id` (else its 1-based number) becomes
the scenario id's suffix::

    - id: refund
      prompt: "Can I get a refund for order {{vars.order}}?"
      checks: [{contains: "{{vars.answer}}"}]
      cases:
        - {id: late-order, order: "10237", answer: delayed}   # -> scenario refund[late-order]
        - {order: "10236", answer: 30-day}                     # -> scenario refund[2]

A value that is exactly one placeholder takes the row value's own type (a JSONL number stays
a number); inside longer text, a value that is not text is written as JSON. Rows only ever
fill the test file's own text, before anything runs: agent replies are never searched for
placeholders.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sparring.loaders._moves import Move, moved
from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders._places import closest, yaml_path
from sparring.loaders.case_files import Row, read_rows
from sparring.loaders.errors import Problem

__all__ = ["CASE_KEYS", "expand_cases"]

CASE_KEYS = ("cases", "cases_from")
"""Scenario keys that make it a template over rows."""
PLACEHOLDER = re.compile(r"\{\{\s*vars\.([^{}\s]*)\s*\}\}")
"""`{{vars.NAME}}`, spaces allowed inside the braces; group 1 is NAME."""
_ROW_ID = re.compile(r"^[A-Za-z0-9_.:/-]+$")


def expand_cases(doc: Document, *, path: str) -> tuple[Document, list[Problem]]:
    """Replace each scenario template (a scenario with `cases` / `cases_from`) by its rows.

    A file that is one scenario and a template becomes a test set (`scenarios:`) of its
    rows; other documents come back unchanged. Positions follow the template, so a value
    filled from a row is reported at the line where its placeholder is written.

    Args:
        doc: One parsed document of a test file.
        path: The test file (`cases_from` is relative to its directory).

    Returns:
        The document with templates expanded, and the problems found (when any, the
        document is the input unchanged): no rows, both keys, a missing or bad rows file
        (`path:line` of the row), a row id that is not an id or is repeated, a placeholder
        naming a variable no row has (with did-you-mean) or that one row lacks, and a
        placeholder in a scenario without rows.
    """
    data = doc.data
    if not is_mapping(data):
        return doc, []
    single = "scenarios" not in data
    items: list[Any] = [data] if single else _as_list(data["scenarios"])
    here: list[Loc] = [()] if single else [("scenarios", i) for i in range(len(items))]
    if not any(is_mapping(item) and _is_template(item) for item in items):
        return doc, _stray_placeholders(items, here, doc=doc, path=path)
    scenarios: list[Any] = []
    moves: list[Move] = [] if single else [((k,), (k,)) for k in data if k != "scenarios"]
    problems: list[Problem] = []
    for item, loc in zip(items, here, strict=True):
        if not (is_mapping(item) and _is_template(item)):
            problems += _stray_placeholders([item], [loc], doc=doc, path=path)
            moves.append((loc, ("scenarios", len(scenarios))))
            scenarios.append(item)
            continue
        filled, trouble = _expand(item, loc, doc=doc, path=path)
        problems += trouble
        moves += [(loc, ("scenarios", len(scenarios) + k)) for k in range(len(filled))]
        scenarios += filled
    if problems:
        return doc, problems
    out = {"scenarios": scenarios} if single else {**data, "scenarios": scenarios}
    return moved(doc, out, moves), []


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []  # pyright: ignore[reportUnknownArgumentType]


def _is_template(item: dict[str, Any]) -> bool:
    return any(key in item for key in CASE_KEYS)


@dataclass(frozen=True)
class _Use:
    """One `{{vars.NAME}}` in the template, at `loc`."""

    name: str
    loc: Loc


def _expand(
    template: dict[str, Any], loc: Loc, *, doc: Document, path: str
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The scenarios of one template, one per row, or the problems found."""
    rows, problems = read_rows(template, loc, doc=doc, path=path)
    if problems:
        return [], problems
    body = {k: v for k, v in template.items() if k not in CASE_KEYS}
    uses = list(_uses(body, loc))
    problems = _unknown_variables(uses, rows, doc=doc, path=path)
    problems += _row_problems(uses, rows, doc=doc, path=path)
    if problems:
        return [], problems
    scenarios: list[dict[str, Any]] = []
    for number, row in enumerate(rows, start=1):
        scenario = _fill(body, row.values)
        if isinstance(scenario.get("id"), str):
            scenario["id"] = f"{scenario['id']}[{_row_id(row, number)}]"
        scenarios.append(scenario)
    return scenarios, []


def _row_id(row: Row, number: int) -> str:
    given = row.values.get("id")
    return str(number) if given is None or given == "" else str(given)


def _uses(value: Any, loc: Loc) -> list[_Use]:
    """Every placeholder in `value` (keys are never filled), outermost first."""
    if isinstance(value, str):
        return [_Use(m.group(1), loc) for m in PLACEHOLDER.finditer(value)]
    if is_mapping(value):
        return [u for k, v in value.items() for u in _uses(v, (*loc, k))]
    return [u for i, v in enumerate(_as_list(value)) for u in _uses(v, (*loc, i))]


def _unknown_variables(
    uses: list[_Use], rows: list[Row], *, doc: Document, path: str
) -> list[Problem]:
    """Placeholders naming a variable that no row has."""
    names = sorted({name for row in rows for name in row.values})
    problems: list[Problem] = []
    for use in uses:
        if use.name in names:
            continue
        guess = closest(use.name, names)
        hint = f"did you mean {{{{vars.{guess}}}}}?" if guess else "add it to the rows"
        problems.append(
            Problem(
                path,
                *doc.position(use.loc, value=True),
                f"unknown variable {use.name!r} in {{{{vars.{use.name}}}}} at "
                f"{yaml_path(use.loc)}: the rows have {', '.join(names) or 'no columns'}; "
                f"{hint}",
            )
        )
    return problems


def _row_problems(uses: list[_Use], rows: list[Row], *, doc: Document, path: str) -> list[Problem]:
    """Rows without a variable the template uses; row ids that are not ids or repeat."""
    problems: list[Problem] = []
    seen: dict[str, Row] = {}
    for number, row in enumerate(rows, start=1):
        for name in sorted({u.name for u in uses} - row.values.keys()):
            if any(name in other.values for other in rows):
                first = next(u for u in uses if u.name == name)
                line, column = doc.position(first.loc, value=True)
                problems.append(
                    row.problem(
                        f"{row.name} has no value for {name!r}, used by "
                        f"{{{{vars.{name}}}}} at {path}:{line}:{column}; add `{name}` to the row"
                    )
                )
        row_id = _row_id(row, number)
        if not _ROW_ID.fullmatch(row_id):
            problems.append(
                row.problem(
                    f"{row.name} has id {row_id!r}, which is not an id: use letters, digits "
                    "and _ . : / - only, e.g. late-order"
                )
            )
        elif row_id in seen:
            problems.append(
                row.problem(
                    f"{row.name} repeats id {row_id!r} of {seen[row_id].name}; row ids name "
                    "the scenarios, so they must be unique: rename one"
                )
            )
        seen.setdefault(row_id, row)
    return problems


def _fill(value: Any, row: dict[str, Any]) -> Any:
    """`value` with every placeholder replaced by the row's value (see the module doc)."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            return row[whole.group(1)]
        return PLACEHOLDER.sub(lambda m: _as_text(row[m.group(1)]), value)
    if is_mapping(value):
        return {k: _fill(v, row) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, row) for v in _as_list(value)]
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _stray_placeholders(
    items: list[Any], here: list[Loc], *, doc: Document, path: str
) -> list[Problem]:
    """Placeholders in scenarios that have no rows to fill them from."""
    return [
        Problem(
            path,
            *doc.position(use.loc, value=True),
            f"{{{{vars.{use.name}}}}} at {yaml_path(use.loc)} has no rows to fill it: add "
            "`cases:` (a list of rows) or `cases_from: rows.csv` to the scenario",
        )
        for item, loc in zip(items, here, strict=True)
        for use in _uses(item, loc)
    ]


def case_properties() -> dict[str, Any]:
    """JSON Schema properties of a scenario template's `cases` / `cases_from` keys."""
    return {
        "cases": {
            "description": "Rows filling {{vars.NAME}}: one scenario per row, its id suffixed "
            "with the row's `id` (else its number), e.g. refund[late-order].",
            "type": "array",
            "minItems": 1,
            "items": {"type": "object"},
        },
        "cases_from": {
            "description": "A .csv (header = variable names) or .jsonl file of rows, "
            "relative to the test file.",
            "type": "string",
            "pattern": r"\.(csv|jsonl)$",
        },
    }
