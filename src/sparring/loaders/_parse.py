"""YAML/JSON text -> plain Python data plus the line and column of every key and item.

ruamel.yaml's round-trip loader remembers where each key and list item starts; this module
copies the document into plain `dict` / `list` / scalars (what pydantic validates) and keeps
those positions in a map keyed by the path to the value, e.g. `("scenarios", 2, "checks", 0)`.
ruamel is imported inside the functions so `import sparring.loaders` stays cheap.
"""

from __future__ import annotations

import datetime
import re
import sys
from dataclasses import dataclass, field
from typing import Any, TypeGuard, cast

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


MAX_VALUES = 100_000
"""At most this many values (mappings, lists, scalars) in one document once aliases are
expanded: a few hundred bytes of nested aliases can otherwise stand for billions."""
MAX_DEPTH = 100
"""At most this many levels of nested mappings and lists in one document."""


def parse_documents(text: str, *, path: str) -> list[Document]:
    """Parse every YAML document (`---`-separated) in `text`; JSON text is YAML too.

    Raises:
        ConfigError: a YAML syntax error, a duplicate key, a control character, data nested
            more than `MAX_DEPTH` levels, or aliases expanding to more than `MAX_VALUES`
            values; with `path`, line and column where known, and a hint for the usual causes.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    yaml = YAML(typ="rt")
    yaml.Constructor = _constructor()
    try:
        raw_docs: list[Any] = list(yaml.load_all(text))  # pyright: ignore[reportUnknownMemberType]
    except MarkedYAMLError as e:
        raise _syntax_error(e, path=path) from None
    except ReaderError as e:
        raise _reader_error(e, text=text, path=path) from None
    except YAMLError as e:
        raise ConfigError(f"invalid YAML: {e}; check the file's syntax", path=path) from None
    except RecursionError:
        raise ConfigError(_TOO_DEEP, path=path) from None
    except ValueError as e:  # `!!int abc`, an integer of more than 4300 digits
        line, column = _value_error_position(text)
        why = str(e).split("; use sys.")[0]  # Python's own advice is not the author's
        raise ConfigError(
            f"invalid YAML: {why}; check values written with a tag such as "
            "`!!int` or `!!float`, and quote long numbers",
            path=path,
            line=line,
            column=column,
        ) from None
    return [_Copier(path=path).document(raw) for raw in raw_docs]


def _constructor() -> type:
    """The round-trip constructor of ruamel, refusing an alias used inside its own anchor's data
    (`scenarios: &s [{description: *s}]`), which ruamel would silently make `None`."""
    from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor

    class NoRecursion(RoundTripConstructor):
        def construct_object(self, node: Any, deep: bool = False) -> Any:
            building: Any = getattr(self, "recursive_objects")  # noqa: B009 (untyped)
            if node in building:  # being built further up: it would hold itself
                raise ConstructorError(
                    problem="an alias (`*name`) is used inside the data of its own anchor "
                    "(`&name`), which starts here",
                    problem_mark=node.start_mark,
                )
            construct: Any = super().construct_object  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            return construct(node, deep=deep)

    return NoRecursion


def _value_error_position(text: str) -> tuple[int | None, int | None]:
    """Where a value Python cannot convert probably is: the first integer longer than
    Python converts (`sys.get_int_max_str_digits`), else the first `!!int` or `!!float`
    tag; `(None, None)` when neither is found."""
    digits = sys.get_int_max_str_digits()
    longest = rf"\d[\d_]{{{digits},}}" if digits else r"(?!)"
    found = re.search(rf"{longest}|!!(?:int|float)\b", text)
    if found is None:
        return None, None
    start = found.start()
    return text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)


_TOO_DEEP = (
    f"invalid YAML: the data is nested too deeply (more than {MAX_DEPTH} levels of "
    "mappings and lists); a test file needs only a few levels: flatten it"
)
_TOO_MUCH = (
    f"the file expands to too much data: more than {MAX_VALUES:,} values once its "
    "YAML aliases (`*name`) in this entry are replaced by their anchors' data; "
    "use fewer aliases, or write the data out"
)


class _Copier:
    """Copies one ruamel document into plain data with positions, within the limits."""

    def __init__(self, *, path: str) -> None:
        from ruamel.yaml.comments import TaggedScalar
        from ruamel.yaml.scalarbool import ScalarBoolean

        self.path, self.tagged, self.boolean = path, TaggedScalar, ScalarBoolean
        self.keys: dict[Loc, Position] = {}
        self.values: dict[Loc, Position] = {}
        self.count = 0
        self.seen: set[int] = set()
        """`id()` of every mapping and list copied so far: seen again means an alias."""
        self.aliases: list[Loc] = []
        """Where the aliases being expanded are used, outermost first."""

    def document(self, raw: Any) -> Document:
        self.keys[()] = _start(raw)
        data = self.copy(raw, ())
        return Document(data=data, keys=self.keys, values=self.values)

    def copy(self, node: Any, loc: Loc) -> Any:
        """`node` as plain data, recording positions under `loc`."""
        self.count += 1
        if self.count > MAX_VALUES:
            outer = self._outer_alias()
            raise self.error(loc if outer is None else outer, _TOO_MUCH)
        if not isinstance(node, dict | list):
            return _scalar(node, tagged=self.tagged, boolean=self.boolean)
        if len(loc) >= MAX_DEPTH:
            raise self.error(loc, _TOO_DEEP.removeprefix("invalid YAML: "))
        ident = id(cast(object, node))
        alias = ident in self.seen
        self.seen.add(ident)
        if alias:
            self.aliases.append(loc)
        try:
            return self.mapping(node, loc) if isinstance(node, dict) else self.items(node, loc)
        finally:
            if alias:
                self.aliases.pop()

    def mapping(self, node: Any, loc: Loc) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            here = (*loc, str(key))
            self.keys[here], self.values[here] = _entry(node, key, fallback=self.keys[loc])
            out[str(key)] = self.copy(value, here)
        return out

    def items(self, node: Any, loc: Loc) -> list[Any]:
        items: list[Any] = []
        for i, value in enumerate(node):
            here = (*loc, i)
            self.keys[here] = self.values[here] = _item(node, i, fallback=self.keys[loc])
            items.append(self.copy(value, here))
        return items

    def _outer_alias(self) -> Loc | None:
        """The entry holding the outermost alias being expanded (ruamel places an aliased
        list item at its anchor, so an item is reported as the list holding it)."""
        if not self.aliases:
            return None
        loc = self.aliases[0]
        return loc[:-1] if loc and isinstance(loc[-1], int) else loc

    def error(self, loc: Loc, message: str) -> ConfigError:
        line, column = self.keys.get(loc, self.keys[()])
        return ConfigError(message, path=self.path, line=line, column=column)


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
    (
        "mapping values are not allowed",
        "quote a value that contains ': ', e.g. goal: \"Ask: where is my order?\"",
    ),
    ("could not find expected ':'", "check the indentation: keys of one mapping must line up"),
    (
        "expected <block end>",
        "check the indentation: keys of one mapping and the `-` items of one list must line up",
    ),
    ("undefined alias", "define the anchor (`&name`) before using `*name`"),
    ("inside the data of its own anchor", "data cannot contain itself: write the data out"),
    ("found unexpected end of stream", "close the quote or bracket opened here"),
)


def _syntax_error(e: Any, *, path: str) -> ConfigError:
    mark = e.problem_mark or e.context_mark
    problem = e.problem or e.context or "invalid YAML"
    hint = next(
        (h for needle, h in _SYNTAX_HINTS if needle in str(e)),
        "check the indentation and quoting around here",
    )
    context = ""
    if e.context and e.context_mark is not None and e.context_mark is not mark:
        context = f" ({e.context} at line {e.context_mark.line + 1})"
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    return ConfigError(
        f"invalid YAML: {problem}{context}; {hint}", path=path, line=line, column=column
    )


_CONTROL_NAMES = {
    0: "NUL",
    7: "BEL",
    8: "backspace",
    11: "vertical tab",
    12: "form feed",
    27: "ESC",
    127: "DEL",
}


def _reader_error(e: Any, *, text: str, path: str) -> ConfigError:
    """A character YAML does not allow (NUL, BEL, other control characters, a lone surrogate)."""
    position = int(e.position)
    line = text.count("\n", 0, position) + 1
    column = position - text.rfind("\n", 0, position)
    code = e.character if isinstance(e.character, int) else ord(e.character)
    name = _CONTROL_NAMES.get(
        code,
        "a control character"
        if code < 0x20 or 0x7F <= code < 0xA0
        else "a character YAML does not allow",
    )
    escape = f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return ConfigError(
        f"invalid YAML: character U+{code:04X} ({name}) is not allowed in a YAML file; delete "
        "it (it is often invisible: look for it in an editor that shows control characters), "
        f'or inside a double-quoted string write it as the escape "{escape}"',
        path=path,
        line=line,
        column=column,
    )
