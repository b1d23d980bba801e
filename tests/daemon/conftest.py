"""Daemon tests run on asyncio only: Quart, and so the HTTP front end, is built on asyncio."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
