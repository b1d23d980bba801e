"""Fixtures of the collector tests: the asyncio backend (aio-pika is asyncio-only), unique names.

``amqp_url`` comes from tests/conftest.py. The sink server of the outbox tests
(a Reporting API stand-in) is shared by putting its directory on the path.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "outbox"))


@pytest.fixture
def unique() -> Iterator[str]:
    """A name prefix no other test (or run) uses, for exchanges and queues."""
    yield f"t-{uuid.uuid4().hex[:10]}"
