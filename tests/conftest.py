"""Shared pytest setup: anyio on asyncio for `pytest.mark.anyio` tests; user prices reset."""

from collections.abc import Iterator

import pytest

from sparring.models.pricing import set_prices


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_user_prices() -> Iterator[None]:  # pyright: ignore[reportUnusedFunction]
    """Model prices set by a test (or a CLI run inside one) end with it."""
    yield
    set_prices({})
