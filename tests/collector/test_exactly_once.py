"""Property: any mix of redeliveries, sender retries, lost answers and restarts books each event once."""

from __future__ import annotations

import collections
import tempfile
from pathlib import Path
from typing import Any

import anyio
from collector_support import oslo_inner, v2_body
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.collector import InProcessBus
from tally.collector._consumer import Consumer
from tally.outbox import Sender, open_outbox
from tally.outbox.internals import DeliveryResult, DeliveryStatus

BODIES = [
    v2_body(
        oslo_inner(
            "volume.create.end",
            {"volume_id": f"vol-{n}", "tenant_id": "t", "size": 1, "volume_type": "ssd"},
            message_id=f"m-{n}",
        )
    )
    for n in range(6)
]


class FlakySink:
    """Stores like the Reporting API (dedup on event_id and timestamp) and fails on demand.

    ``fail`` answers RETRY without storing (the API was down); ``lose`` stores and
    then answers RETRY (the answer was lost on the way back), so the sender re-sends
    a batch the store already holds.
    """

    def __init__(self) -> None:
        self.inserted: collections.Counter[tuple[str, str]] = collections.Counter()
        self.fail = 0
        self.lose = 0

    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
        if self.fail:
            self.fail -= 1
            return DeliveryResult(DeliveryStatus.RETRY, reason="http_status")
        duplicates = 0
        for item in items:
            key = (item["event_id"], item["timestamp"])
            if key in self.inserted:
                duplicates += 1
            else:
                self.inserted[key] += 1
        if self.lose:
            self.lose -= 1
            return DeliveryResult(DeliveryStatus.RETRY, reason="network")
        return DeliveryResult(
            DeliveryStatus.ACCEPTED, accepted=len(items) - duplicates, duplicates=duplicates
        )


STEP = st.one_of(
    st.tuples(st.just("publish"), st.integers(0, len(BODIES) - 1)),
    st.tuples(st.just("fail"), st.integers(1, 3)),
    st.tuples(st.just("lose"), st.integers(1, 3)),
    st.tuples(st.just("flush"), st.just(0)),
    st.tuples(st.just("restart"), st.just(0)),
)


async def _scenario(
    steps: list[tuple[str, int]], path: Path
) -> tuple[collections.Counter[tuple[str, str]], set[int]]:
    sink = FlakySink()
    published: set[int] = set()
    bus = InProcessBus()
    index = 0
    while True:
        async with open_outbox(path) as outbox, anyio.create_task_group() as tg:
            sender = Sender(
                outbox, sink, batch_max=3, flush_interval_s=3600, backoff_min_s=0, backoff_max_s=0
            )
            tg.start_soon(Consumer(outbox, cloud="c", buffer_max=1000).consume, bus.receiver(), bus)
            restart = False
            while index < len(steps) and not restart:
                kind, arg = steps[index]
                index += 1
                if kind == "publish":
                    await bus.publish("openstack", "notifications.info", BODIES[arg])
                    published.add(arg)
                elif kind == "fail":
                    sink.fail += arg
                elif kind == "lose":
                    sink.lose += arg
                elif kind == "flush":
                    await bus.wait_consumed()
                    await sender.flush_until_empty()
                else:
                    await bus.wait_consumed()
                    restart = True
            if not restart:
                await bus.wait_consumed()
                await sender.flush_until_empty()
            tg.cancel_scope.cancel()
        if not restart:
            return sink.inserted, published


@settings(max_examples=40, deadline=None)
@given(st.lists(STEP, max_size=25))
def test_each_event_lands_once_whatever_the_interleaving(steps: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        inserted, published = anyio.run(_scenario, steps, Path(tmp) / "outbox.sqlite3")
    assert {event_id for event_id, _ in inserted} == {f"m-{n}" for n in published}
    assert all(count == 1 for count in inserted.values())
