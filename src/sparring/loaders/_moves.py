"""A document rewritten by a loader step keeps the positions of the text it came from.

The cases step and the dialect readers build new data from a parsed `Document`; `moved`
gives the new data the line and column of the key or item each part was written at, so
validation errors still point at the test author's own lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparring.loaders._parse import Document, Loc, Position

Move = tuple[Loc, Loc]
"""`(old, new)`: what was at `old` (and under it) in the source is at `new` in the result."""


def moved(doc: Document, data: Any, moves: Sequence[Move]) -> Document:
    """A Document of `data` whose positions come from `doc` through `moves`.

    Args:
        doc: The parsed source document.
        data: The rewritten data (plain dicts, lists and scalars).
        moves: Where each part of the source went; later moves win where two give a
            position to the same new location. `((), ())` keeps every location as is.

    Returns:
        `data` with positions: for each move, every key or item at or under `old` in `doc`
        is placed at `new` plus the rest of its location; `()` always has a position.
    """
    keys: dict[Loc, Position] = {(): doc.keys.get((), (1, 1))}
    values: dict[Loc, Position] = {}
    for old, new in moves:
        _copy(doc.keys, keys, old, new)
        _copy(doc.values, values, old, new)
    return Document(data=data, keys=keys, values=values)


def _copy(source: dict[Loc, Position], into: dict[Loc, Position], old: Loc, new: Loc) -> None:
    size = len(old)
    for loc, position in source.items():
        if loc[:size] == old:
            into[(*new, *loc[size:])] = position
