"""Shared pytest setup: anyio on asyncio for `pytest.mark.anyio` tests."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
