"""Python test files for `sparring run`: import them, collect their `Suite`s.

`sparring.loaders.files.split_paths` finds them (`test_*.py` and `*_test.py` in
directories; a `.py` file named on the command line whatever its name). A file found in a
directory is imported only when its text mentions `sparring` (ordinary pytest unit tests
are left alone); a file named on the command line always is, and must define a Suite.

Each file is imported as its own module, as pytest imports test files: the current
directory and the file's own directory go on `sys.path` (so it can import the project and
its neighbours), and a neighbour module cached from another test directory under the same
name (`h1/helpers.py` when `h2/helpers.py` imports `helpers`) is forgotten first, so each
file gets its own. Every `sparring.api.Suite` a file defines at module level is collected.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sparring.errors import UserError

if TYPE_CHECKING:
    from sparring.authoring.suite import Suite

MINIMAL_SUITE = """\
    from sparring.authoring.suite import Suite
    suite = Suite(target="http://localhost:8000/chat")
    @suite.scenario
    async def test_greets():
        async with suite.session() as s: await (await s.send("Hi")).should("greet the user")"""
"""The smallest Python test file, shown when a file named to `sparring run` has none."""

_TEST_DIRS: set[Path] = set()
"""Directories of the test files imported so far: the neighbour modules they imported are
forgotten when a test file in another directory has its own module of the same name."""


def load_suites(
    files: Sequence[Path], *, named: Collection[str | Path] | None = None
) -> list[Suite]:
    """Import the Python test files and collect the `Suite` objects they define.

    Args:
        files: Python test files, e.g. from `split_paths`.
        named: The paths named on the command line. A file among them is always imported
            and must define a Suite with tests; any other file (found in a directory) is
            imported only when its text mentions `sparring`, and may define none (a pytest
            test using the `sparring` fixture). `None`: every file counts as named.

    Returns:
        Suites in file order, then in the order the module defines them; a suite bound to
        two names comes once.

    Raises:
        UserError: a file cannot be imported (a syntax error, a failing import, an
            exception at import, `sys.exit()`), or a named file defines no Suite or no
            test; the message names the file and the error.
    """
    from sparring.authoring.suite import Suite

    explicit = None if named is None else {Path(p).resolve() for p in named}
    _put_on_path(Path.cwd().resolve())
    suites: list[Suite] = []
    for file in files:
        required = explicit is None or file.resolve() in explicit
        if not required and not _mentions_sparring(file):
            continue
        module = _import(file)
        found = {id(v): (name, v) for name, v in vars(module).items() if isinstance(v, Suite)}
        if required:
            _check_defines_tests(file, list(found.values()))
        suites += [
            s
            for _, s in found.values()  # an imported Suite: from its own file
            if s.written_in(file) and all(s is not t for t in suites)
        ]
    return suites


def _mentions_sparring(file: Path) -> bool:
    """Whether the file can hold a Suite (cheap text check); unreadable files are imported,
    so the error is reported."""
    try:
        return b"sparring" in file.read_bytes()
    except OSError:
        return True


def _check_defines_tests(file: Path, found: list[tuple[str, Suite]]) -> None:
    if not found:
        raise UserError(
            f"{file}: defines no `sparring.api.Suite` at module level, so it has no tests "
            f"to run; a minimal test file:\n{MINIMAL_SUITE}\n(pytest test files using the "
            "`sparring` fixture run with `pytest`)"
        )
    if not any(suite.tests for _, suite in found):
        names = ", ".join(name for name, _ in found)
        raise UserError(
            f"{file}: its Suite ({names}) has no tests; register one with "
            f"`@{found[0][0]}.scenario` above an `async def test_...():`"
        )


def _put_on_path(directory: Path) -> None:
    """Make `directory` the first entry of `sys.path`."""
    entry = str(directory)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


def _in_file(message: str, file: Path, path: Path) -> str:
    """`message` about `file` (imported from `path`): one that starts at a place in it
    (`PATH:LINE: ...`) shows `file` there, any other gets `file: ` in front."""
    at = f"{path}:"
    return f"{file}:{message[len(at) :]}" if message.startswith(at) else f"{file}: {message}"


def _import(file: Path) -> object:
    path = file.resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"sparring_tests_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{file}: cannot be imported as a Python module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    _forget_other_neighbours(path.parent)
    _put_on_path(path.parent)
    _TEST_DIRS.add(path.parent)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except UserError as e:
        del sys.modules[name]
        raise UserError(_in_file(str(e), file, path)) from None
    except Exception as e:
        del sys.modules[name]
        raise UserError(
            f"{file}: importing it raised {_describe(e, path)}; fix the error in that file"
        ) from None
    except SystemExit as e:
        del sys.modules[name]
        raise UserError(
            f"{file}: importing it called sys.exit({e.code!r}); put script code "
            'under `if __name__ == "__main__":`'
        ) from None
    return module


def _forget_other_neighbours(directory: Path) -> None:
    """Drop cached top-level modules (and their submodules) that were imported from another
    test file's directory when `directory` has its own module of that name."""
    for name, module in list(sys.modules.items()):
        home = _home(module) if "." not in name else None
        if home is None or home == directory or home not in _TEST_DIRS:
            continue
        if (directory / f"{name}.py").is_file() or (directory / name).is_dir():
            for cached in [n for n in sys.modules if n == name or n.startswith(f"{name}.")]:
                del sys.modules[cached]


def _home(module: object) -> Path | None:
    """The `sys.path` directory a top-level module was found in (`None`: no file)."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return None
    path = Path(os.path.abspath(file))
    return path.parent.parent if path.name == "__init__.py" else path.parent


def _describe(error: Exception, path: Path) -> str:
    """`Type: message (line N)`, N the error's line in the test file itself, if any."""
    if isinstance(error, SyntaxError) and error.filename and Path(error.filename) == path:
        return f"{type(error).__name__}: {error.msg} (line {error.lineno})"
    lines = [
        f.lineno for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == path
    ]
    if isinstance(error, SyntaxError):  # in a module the test file imports
        where = f" (imported at line {lines[-1]})" if lines else ""
        return (
            f"{type(error).__name__} in {error.filename}, line {error.lineno}: {error.msg}{where}"
        )
    return f"{type(error).__name__}: {error}" + (f" (line {lines[-1]})" if lines else "")
