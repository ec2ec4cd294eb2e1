"""Python test files for `sparring run`: find them, import them, collect their `Suite`s.

In directories, `test_*.py` and `*_test.py` files are Python test files (hidden directories
and `__pycache__` skipped); a `.py` file named on the command line is one whatever its name.
Each is imported as its own module with its directory on `sys.path` (so it can import its
neighbours), and every `sparring.api.Suite` it defines at module level is collected.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sparring.errors import UserError
from sparring.loaders.yaml import TEST_FILE_SUFFIXES

if TYPE_CHECKING:
    from sparring.api import Suite


def split_paths(paths: Sequence[str | Path]) -> tuple[list[Path], list[Path]]:
    """The test files named by `paths`: (YAML/JSON files, Python test files).

    Files are taken as given (`.py` ones are Python tests, any other is read as YAML);
    directories are searched recursively, each one's files sorted. No file comes twice.

    Raises:
        UserError: a path does not exist, or no test file was found at all.
    """
    yaml_files: list[Path] = []
    py_files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UserError(f"test path {str(raw)!r} does not exist; give a test file or a "
                            "directory of test files (*.yaml, *.yml, *.json, test_*.py)")
        if path.is_dir():
            found = sorted(_walk(path))
            yaml_files += [f for f in found if f.suffix != ".py"]
            py_files += [f for f in found if f.suffix == ".py"]
        else:
            (py_files if path.suffix == ".py" else yaml_files).append(path)
    if not yaml_files and not py_files:
        searched = ", ".join(repr(str(p)) for p in paths) or "(no paths given)"
        raise UserError(f"no test files found under {searched}: looked for *.yaml, *.yml, "
                        "*.json, test_*.py and *_test.py files (hidden directories skipped); "
                        "`sparring init` writes an example")
    return _unique(yaml_files), _unique(py_files)


def _unique(files: list[Path]) -> list[Path]:
    seen: dict[Path, Path] = {}
    for file in files:
        seen.setdefault(file.resolve(), file)
    return list(seen.values())


def _walk(root: Path) -> Iterator[Path]:
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        for name in filenames:
            if name.startswith("."):
                continue
            if name.endswith(TEST_FILE_SUFFIXES) or is_python_test_name(name):
                yield Path(directory, name)


def is_python_test_name(name: str) -> bool:
    """Whether a file name is found as a Python test file in directories."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


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
