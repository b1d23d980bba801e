"""What the fake cloud serves from: the world, the month's clock, the API faults, keystone's accounts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ..clock import PublishProgress, VirtualClock
from ..world import World
from ._faults import ApiFaults
from ._keystone import Accounts


@dataclass
class FakeCloudState:
    """Everything the app serves from; tests reach into it to move the clock or switch faults."""

    world: World
    clock: VirtualClock
    faults: ApiFaults
    accounts: Accounts
    progress: PublishProgress
    page_counters: dict[str, int] = field(default_factory=dict)
    pinned: datetime | None = None

    def answer_instant(self) -> datetime:
        """Where the services read the world: the pinned instant, else the clock's, within the period."""
        return self.world.answer_instant(self.pinned if self.pinned is not None else self.clock.now())

    @contextlib.contextmanager
    def answering_at(self, instant: datetime) -> Iterator[None]:
        """Answer every listing at ``instant`` until the block ends, while the clock runs on.

        A real cloud changes little in the seconds a sync's listings take; at factor 744 those seconds
        are minutes of the month, so a told sync pins the world at its instant for the whole run.
        """
        self.pinned = instant
        try:
            yield
        finally:
            self.pinned = None
