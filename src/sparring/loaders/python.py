"""Python test files for `sparring run`: import them, collect their `Suite`s.

`sparring.loaders.files.split_paths` finds them (`test_*.py` and `*_test.py` in
directories; a `.py` file named on the command line whatever its name). Each is imported
as its own module with its directory on `sys.path` (so it can import its neighbours), and
every `sparring.api.Suite` it defines at module level is collected.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sparring.errors import UserError

if TYPE_CHECKING:
    from sparring.api import Suite


def load_suites(files: Sequence[Path]) -> list[Suite]:
    """Import each file and collect the `Suite` objects it defines at module level.

    Returns:
        Suites in file order, then in the order the module defines them; a suite bound to
        two names comes once.

    Raises:
        UserError: a file cannot be imported (a syntax error, a failing import, an
            exception at import, `sys.exit()`); the message names the file and the error.
    """
    from sparring.api import Suite

    suites: list[Suite] = []
    for file in files:
        module = _import(file)
        for value in vars(module).values():
            if isinstance(value, Suite) and all(value is not s for s in suites):
                suites.append(value)
    return suites


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
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except UserError as e:
        del sys.modules[name]
        raise UserError(f"{file}: {e}") from None
    except Exception as e:
        del sys.modules[name]
        raise UserError(f"{file}: importing it raised {type(e).__name__}: {e}"
                        f"{_where(e, path)}; fix the error in that file") from None
    except SystemExit as e:
        del sys.modules[name]
        raise UserError(f"{file}: importing it called sys.exit({e.code!r}); put script code "
                        "under `if __name__ == \"__main__\":`") from None
    return module


def _where(error: Exception, path: Path) -> str:
    """` (line N)` of the deepest frame in the test file itself, if any."""
    if isinstance(error, SyntaxError) and error.lineno is not None:
        return f" (line {error.lineno})"
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__)
             if Path(f.filename) == path]
    return f" (line {lines[-1]})" if lines else ""
