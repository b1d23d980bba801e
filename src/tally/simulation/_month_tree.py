"""The simulated month's actor tree: which actors ``tally simulate`` starts, in start order.

One supervisor of ``tally.actors``, as the daemon's (``tally.daemon._tree``), runs:

1. ``fake-cloud``: the fake cloud's app served on an ephemeral loopback port (``serve_fake_cloud``);
   ready once the socket listens, which tells the tree its port.
2. ``clock``: the one mover of the month's virtual clock (``_month_actors.clock_child``).
3. ``publisher``: owns the month's publisher over the sink the run opened (``publisher_child``).
4. ``collector``: the collector over the run's bus, delivering into the ingest gate.

The drive (``_drive``) runs beside the tree and reaches the publisher and the clock only through
:attr:`MonthTree.publisher` and :attr:`MonthTree.clock`; ``POST /release`` asks the publisher too. A
child that crashes or returns is not restarted: the tree stops and the run fails
(``SupervisorGaveUp``), as a crash in the month's task group did, rather than going on without it.
"""

from __future__ import annotations

import functools

from quart import Quart

from tally.actors import Intensity, Mailbox, Supervisor
from tally.collector import Collector
from tally.simulator.clock import PublishProgress, VirtualClock
from tally.simulator.generator import Month

from ._month_actors import (
    MAILBOX_CAPACITY,
    ClockMailbox,
    ClockRef,
    PublisherMailbox,
    PublisherRef,
    clock_child,
    publisher_child,
    serving_child,
)
from ._serve import serve_fake_cloud
from .publisher import Publisher, Sink, add_release_route

#: Seconds the stopping tree waits for its actors: each ends at once (nothing of a month is left to
#: finish once its last sync ran), so this only bounds a stuck one.
SHUTDOWN_GRACE_S = 5.0


class MonthTree:
    """The month's supervisor and the addresses of its publisher and clock; the fake cloud's
    ``base_url`` once the tree has started."""

    def __init__(
        self,
        month: Month,
        app: Quart,
        sink: Sink,
        collector: Collector,
        clock: VirtualClock,
        progress: PublishProgress,
    ) -> None:
        publisher_box: PublisherMailbox = Mailbox("publisher", MAILBOX_CAPACITY)
        clock_box: ClockMailbox = Mailbox("clock", MAILBOX_CAPACITY)
        self.publisher = PublisherRef(publisher_box, progress)
        self.clock = ClockRef(clock_box)
        self._port: int | None = None
        add_release_route(app, self.publisher)

        def make_publisher() -> Publisher:
            return Publisher(month.notifications, month.held_back, sink, clock, progress)

        self.supervisor = Supervisor(
            [
                serving_child(
                    "fake-cloud", functools.partial(serve_fake_cloud, app, "127.0.0.1", 0), self._bound
                ),
                clock_child(clock, clock_box),
                publisher_child(make_publisher, publisher_box),
                serving_child("collector", collector.serve),
            ],
            name="simulate",
            intensity=Intensity(max_restarts=0),
            shutdown_grace_s=SHUTDOWN_GRACE_S,
        )

    def _bound(self, port: int) -> None:
        self._port = port

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("the fake cloud is not serving yet")
        return f"http://127.0.0.1:{self._port}"
