"""One message as a source hands it to the consumer, and the seam every source implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Delivery:
    """A body with where it came from; ``handle`` is the source's own ack token (for AMQP the
    connection and the delivery tag). ``oversized`` says why the source refused to read the body
    (it is then empty): the consumer acks and counts it as an oversized body."""

    body: bytes
    exchange: str
    routing_key: str
    handle: Any = None
    oversized: str | None = None


class Source(Protocol):
    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Acknowledge deliveries whose events are committed; never raises for a lost channel."""
        ...
