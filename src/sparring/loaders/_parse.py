"""YAML/JSON text -> plain Python data plus the line and column of every key and item.

ruamel.yaml's round-trip loader remembers where each key and list item starts; this module
copies the document into plain `dict` / `list` / scalars (what pydantic validates) and keeps
those positions in a map keyed by the path to the value, e.g. `("scenarios", 2, "checks", 0)`.
ruamel is imported inside the functions so `import sparring.loaders` stays cheap.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from sparring.errors import ConfigError

Loc = tuple[str | int, ...]
"""Path to a value: mapping keys (str) and list indexes (int), outermost first."""
Position = tuple[int, int]
"""1-based (line, column)."""


@dataclass(frozen=True)
class Document:
    """One YAML document, as plain data with positions.

    Attributes:
        data: The document as dicts, lists, str, int, float, bool and None (mapping keys
            are always `str`).
        keys: Where each mapping key or list item starts; `()` is the document itself.
        values: Where the value of each mapping entry starts (same keys as `keys`).
    """

    data: Any
    keys: dict[Loc, Position] = field(default_factory=dict[Loc, Position])
    values: dict[Loc, Position] = field(default_factory=dict[Loc, Position])

    def position(self, loc: Loc, *, value: bool = False) -> Position:
        """Position of `loc`, or of its nearest ancestor that has one.

        With `value=True`, a mapping entry's value position is preferred over its key's.
        """
        while loc and loc not in self.keys:
            loc = loc[:-1]
        if value and loc in self.values:
            return self.values[loc]
        return self.keys.get(loc, (1, 1))


def is_mapping(value: object) -> TypeGuard[dict[str, Any]]:
    """`isinstance(value, dict)`, typed for parsed data (whose keys are `str`)."""
    return isinstance(value, dict)


def parse_documents(text: str, *, path: str) -> list[Document]:
    """Parse every YAML document (`---`-separated) in `text`; JSON text is YAML too.

    Raises:
        ConfigError: a YAML syntax error or a duplicate key, with `path`, line, column and
            a hint for the usual causes.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError

    try:
        raw_docs: list[Any] = list(YAML(typ="rt").load_all(text))  # pyright: ignore[reportUnknownMemberType]
    except MarkedYAMLError as e:
        raise _syntax_error(e, path=path) from None
    documents: list[Document] = []
    for raw in raw_docs:
        keys: dict[Loc, Position] = {(): _start(raw)}
        values: dict[Loc, Position] = {}
        data = _plain(raw, (), keys, values)
        documents.append(Document(data=data, keys=keys, values=values))
    return documents


def _plain(node: Any, loc: Loc, keys: dict[Loc, Position], values: dict[Loc, Position]) -> Any:
    """Copy `node` into plain data, recording positions under `loc` into `keys`/`values`."""
    from ruamel.yaml.comments import TaggedScalar
    from ruamel.yaml.scalarbool import ScalarBoolean

    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
            here = (*loc, str(key))  # pyright: ignore[reportUnknownArgumentType]
            keys[here], values[here] = _entry(node, key, fallback=keys[loc])
            out[str(key)] = _plain(value, here, keys, values)  # pyright: ignore[reportUnknownArgumentType]
        return out
    if isinstance(node, list):
        items: list[Any] = []
        for i, value in enumerate(node):  # pyright: ignore[reportUnknownVariableType,reportUnknownArgumentType]
            here = (*loc, i)
            keys[here] = values[here] = _item(node, i, fallback=keys[loc])
            items.append(_plain(value, here, keys, values))
        return items
    return _scalar(node, tagged=TaggedScalar, boolean=ScalarBoolean)


def _scalar(node: Any, *, tagged: type, boolean: type) -> Any:
    if isinstance(node, bool | boolean):
        return bool(node)
    for plain in (str, int, float):  # ruamel's subclasses (ScalarFloat, ...) -> plain types
        if isinstance(node, plain):
            return plain(node)
    if isinstance(node, tagged):
        return node.value  # pyright: ignore[reportAttributeAccessIssue]
    if isinstance(node, datetime.date):
        return node.isoformat()  # an unquoted date: keep the text the author wrote
    return node  # None, bytes (!!binary), ...: validation reports what does not fit


def _start(node: Any) -> Position:
    lc = getattr(node, "lc", None)
    if lc is None or lc.line is None:
        return (1, 1)
    return (lc.line + 1, lc.col + 1)


def _entry(node: Any, key: Any, *, fallback: Position) -> tuple[Position, Position]:
    try:
        key_line, key_col, value_line, value_col = node.lc.data[key]
    except (AttributeError, KeyError, TypeError, ValueError):  # merged (`<<:`) keys
        return fallback, fallback
    return (key_line + 1, key_col + 1), (value_line + 1, value_col + 1)


def _item(node: Any, index: int, *, fallback: Position) -> Position:
    try:
        line, col = node.lc.data[index]
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        return fallback
    return (line + 1, col + 1)


_SYNTAX_HINTS = (
    ("duplicate key", "each key may appear once in a mapping: remove or rename one of them"),
    ("\\t", "indent with spaces, not tabs"),
    ("mapping values are not allowed", "quote a value that contains ': ', "
     "e.g. goal: \"Ask: where is my order?\""),
    ("could not find expected ':'", "check the indentation: keys of one mapping must line up"),
    ("expected <block end>", "check the indentation: keys of one mapping and the `-` items "
     "of one list must line up"),
    ("undefined alias", "define the anchor (`&name`) before using `*name`"),
    ("found unexpected end of stream", "close the quote or bracket opened here"),
)


def _syntax_error(e: Any, *, path: str) -> ConfigError:
    mark = e.problem_mark or e.context_mark
    problem = e.problem or e.context or "invalid YAML"
    hint = next((h for needle, h in _SYNTAX_HINTS if needle in str(e)),
                "check the indentation and quoting around here")
    context = ""
    if e.context and e.context_mark is not None and e.context_mark is not mark:
        context = f" ({e.context} at line {e.context_mark.line + 1})"
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    return ConfigError(f"invalid YAML: {problem}{context}; {hint}", path=path, line=line,
                       column=column)
