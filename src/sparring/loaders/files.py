"""Finding test files: files as named, directories searched recursively.

In directories, `*.yaml`, `*.yml` and `*.json` files are YAML/JSON test files and (where
Python tests are looked for) `test_*.py` and `*_test.py` files are Python test files;
hidden files and directories and `__pycache__` are skipped. A file named as a path is a
test file whatever its name. A YAML/JSON test file is read only when it is a regular file of
at most `MAX_TEST_FILE_BYTES` (`read_test_file`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from sparring.errors import UserError
from sparring.targets.attachments import file_problem

TEST_FILE_SUFFIXES = (".yaml", ".yml", ".json")
"""YAML/JSON test file names searched for in directories."""
MAX_TEST_FILE_BYTES = 10 * 1024 * 1024
"""Largest YAML/JSON test file, in bytes (10 MiB): parsing takes many times a file's size
in memory, and a test file needs far less."""


def read_test_file(file: Path) -> str:
    """The text of the YAML/JSON test file `file`, checked before it is read: a readable
    regular file (a pipe or a device could block or never end) of at most
    `MAX_TEST_FILE_BYTES`.

    Raises:
        UserError: it is missing, not a regular file, unreadable or over the limit (the
            message names the file, its size and the limit).
        UnicodeDecodeError: it is not UTF-8 text.
    """
    limit = MAX_TEST_FILE_BYTES
    problem = file_problem(file, limit=limit, what="a test file", kinds="a YAML or JSON file")
    data = b""
    if problem is None:
        try:
            with file.open("rb") as opened:
                data = opened.read(limit + 1)
        except OSError as e:
            problem = f"cannot be read ({e.strerror or e}); check its permissions"
    if problem is None and len(data) > limit:
        problem = f"grew over the {limit:,}-byte limit for a test file as it was read"
    if problem is not None:
        raise UserError(f"test file {str(file)!r} {problem}")
    return data.decode("utf-8")


def discover_files(paths: Sequence[str | Path], *, python: bool = False) -> list[Path]:
    """The test files named by `paths`: files as given, directories searched recursively.

    Args:
        paths: Files (taken whatever their name) or directories.
        python: Also find Python test files (`test_*.py`, `*_test.py`) in directories.

    Returns:
        Files in the order of `paths`, each directory's files sorted; no file twice (two
        paths to the same file keep the first).

    Raises:
        UserError: a path does not exist, or no test file was found at all; the message
            names what was looked for.
    """
    looked_for = (
        "*.yaml, *.yml, *.json, test_*.py and *_test.py" if python else "*.yaml, *.yml and *.json"
    )
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UserError(
                f"test path {str(raw)!r} does not exist; give a test file or a "
                f"directory of test files ({looked_for})"
            )
        files += sorted(_walk(path, python=python)) if path.is_dir() else [path]
    if not files:
        searched = ", ".join(repr(str(p)) for p in paths) or "(no paths given)"
        raise UserError(
            f"no test files found under {searched}: looked for {looked_for} "
            "files (hidden directories skipped); `sparring init` writes an example"
        )
    unique: dict[Path, Path] = {}
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def split_paths(paths: Sequence[str | Path]) -> tuple[list[Path], list[Path]]:
    """The test files named by `paths` (see `discover_files`, Python tests included), as
    (YAML/JSON files, Python test files): a named `.py` file is a Python test, any other
    named file is read as YAML.

    Raises:
        UserError: as `discover_files`.
    """
    files = discover_files(paths, python=True)
    return [f for f in files if f.suffix != ".py"], [f for f in files if f.suffix == ".py"]


def _walk(root: Path, *, python: bool) -> Iterator[Path]:
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        for name in filenames:
            if name.startswith("."):
                continue
            if name.endswith(TEST_FILE_SUFFIXES) or (python and _is_python_test(name)):
                yield Path(directory, name)


def _is_python_test(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def shown_source(source: str | None) -> str | None:
    """`source` (`file:line` of a YAML scenario or a Python test) as reports and `--list`
    show it: the file relative to the current directory when it is under it, else as it
    is; `None` for none."""
    if not source:
        return source
    file, _, line = source.rpartition(":")
    if not line.isdigit():
        file, line = source, ""
    try:
        shown = Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return source
    return f"{shown}:{line}" if line else shown
