"""Shared pytest setup: anyio on asyncio for `pytest.mark.anyio` tests; user prices reset;
each test's results store in its own tmp_path."""

from collections.abc import Iterator
from pathlib import Path

# Imported here, before any in-process pytester session: pytester drops the modules an inner
# session imported, and SQLAlchemy imported anew beside its old compiled parts breaks.
import alembic.command  # noqa: F401  # pyright: ignore[reportUnusedImport]
import pytest
import sqlalchemy.dialects.postgresql  # noqa: F401  # pyright: ignore[reportUnusedImport]

import sparring.pytest_plugin.storing  # noqa: F401  # pyright: ignore[reportUnusedImport]
from sparring.models.pricing import set_prices


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_user_prices() -> Iterator[None]:  # pyright: ignore[reportUnusedFunction]
    """Model prices set by a test (or a CLI run inside one) end with it."""
    yield
    set_prices({})


@pytest.fixture(autouse=True)
def _store_in_tmp_path(  # pyright: ignore[reportUnusedFunction]
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs a test makes (`sparring run` in-process, `Suite.run()`, the pytest plugin, and
    the CLI helpers that pass SPARRING_STORE on) are kept in the test's tmp_path, where a
    project in tmp_path keeps them anyway, never in the repository's .sparring/."""
    monkeypatch.setenv("SPARRING_STORE", str(tmp_path / ".sparring" / "sparring.db"))
