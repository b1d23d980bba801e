"""Fixtures of the fake cloud's tests: the asyncio backend, and a small world served over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fakecloud_support import Fake, serve, small_world


@pytest.fixture
async def fake() -> AsyncIterator[Fake]:
    async with await serve(small_world()) as served:
        yield served
