"""Where the results store lives: `.sparring/sparring.db` in the project root by default.

Imports no SQLAlchemy, so the CLI can say where the store is without loading it.
"""

from __future__ import annotations

from pathlib import Path

from sparring.secrets import mask_url

STORE_DIR = ".sparring"
STORE_FILE = "sparring.db"
_ROOT_MARKERS = ("pyproject.toml", "sparring.toml", ".git")


def project_root(start: Path) -> Path:
    """The nearest of `start` and its parents holding pyproject.toml, sparring.toml or
    .git; `start` itself (resolved) when none does."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in _ROOT_MARKERS):
            return directory
    return start


def store_url(setting: str | None, *, cwd: Path) -> str:
    """The SQLAlchemy URL of the store: `setting` (the `store` setting, `SPARRING_STORE`,
    `--store`) when given, else SQLite at `.sparring/sparring.db` under `project_root(cwd)`.

    A bare file path (no `://`) is read as an SQLite database file, relative to `cwd`.
    """
    if setting and "://" in setting:
        return setting
    if setting:
        return f"sqlite:///{(cwd / setting).resolve()}"
    return f"sqlite:///{project_root(cwd) / STORE_DIR / STORE_FILE}"


def shown_url(url: str) -> str:
    """`url` fit for messages, reports and the store: user name and password, query and
    fragment masked as reports show URLs (`postgresql://***@host/db?***`, see `mask_url`)."""
    return mask_url(url)
