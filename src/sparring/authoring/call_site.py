"""Where in a test file a decorator such as `@suite.scenario(...)` was written, so that an
error in its arguments names the file, the line and the function it decorates."""

from __future__ import annotations

import ast
import linecache
from collections.abc import Generator
from contextlib import contextmanager
from types import FrameType

from sparring.errors import UserError


@contextmanager
def errors_at_decorator(frame: FrameType | None) -> Generator[None]:
    """Say a `UserError` raised inside at the decorator call running in `frame` (the
    decorator method's own frame): `FILE:LINE: FUNCTION: message` (`decorator_place`).

    Raises:
        UserError: the one raised inside, with the place in front.
    """
    try:
        yield
    except UserError as e:
        place = decorator_place(frame)
        raise UserError(f"{place}: {e}" if place else str(e)) from None


def decorator_place(frame: FrameType | None) -> str | None:
    """`FILE:LINE: NAME` for the decorator call running in `frame` (`frame`'s caller: the
    decorator's first line and the function it decorates), `FILE:LINE` when the call
    decorates no function there (called on its own); `None` without a caller frame.

    FILE is the caller's code file as Python knows it (the absolute path for a test file
    sparring imported); its source is parsed only here, on the way to an error message.
    """
    caller = frame.f_back if frame is not None else None
    if caller is None:
        return None
    file, line = caller.f_code.co_filename, caller.f_lineno
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return f"{file}:{line}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if decorator.lineno <= line <= (decorator.end_lineno or decorator.lineno):
                return f"{file}:{decorator.lineno}: {node.name}"
    return f"{file}:{line}"
