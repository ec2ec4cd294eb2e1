"""What the dialect readers share: unknown keys with did-you-mean, lists read loosely, and
notes about what sparring reads differently."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders._places import closest, yaml_path
from sparring.loaders.errors import Problem


def unknown_keys(
    mapping: Any, loc: Loc, known: Iterable[str], *, doc: Document, path: str, dialect: str
) -> list[Problem]:
    """A problem for each key of `mapping` (at `loc`) that `dialect` files do not have.

    Returns:
        `path:line:column: unknown key 'x' in turns[0] of a <dialect> file; did you mean
        'y'?` for each unknown key (none when `mapping` is not a mapping).
    """
    if not is_mapping(mapping):
        return []
    choices = sorted(known)
    problems: list[Problem] = []
    for key in mapping:
        if key in choices:
            continue
        guess = closest(key, choices)
        hint = f"did you mean {guess!r}?" if guess else f"known keys: {', '.join(choices)}"
        where = f"in {yaml_path(loc)}" if loc else "at the top level"
        problems.append(
            Problem(
                path,
                *doc.position((*loc, key)),
                f"unknown key {key!r} {where} of {dialect}; {hint}",
            )
        )
    return problems


def as_list(value: Any) -> list[Any]:
    """`value` as a list: a list as is, one value as a list of it, nothing as `[]`."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownArgumentType]


class DialectNote(UserWarning):
    """Something in another tool's test file that sparring reads differently from that tool
    (a setting it takes from elsewhere, a key it does not use), said at the file's line."""


def note(message: str, *, path: str, line: int | None) -> None:
    """Warn (`DialectNote`) with `message` at `path:line` (line 1 when unknown)."""
    warnings.warn_explicit(message, DialectNote, path, line or 1)
