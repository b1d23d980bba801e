"""The runtime's tests run on both anyio backends: asyncio (production) and trio (stricter checks)."""

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
