"""Warnings about bad messages are limited, and the count of those left out is said.

``LogLimit`` runs on a clock the test moves; the consumer test sends a flood of unreadable bodies
through a real outbox and counts the warning lines.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from tally.collector._consumer import Consumer
from tally.collector._delivery import Delivery
from tally.core import LogLimit
from tally.outbox import open_outbox


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_ten_a_window_then_the_count_of_the_rest() -> None:
    clock = Clock()
    limit = LogLimit(per_window=10, window_s=60, clock=clock)
    allowed = [limit.allow() for _ in range(1000)]
    assert allowed.count(True) == 10 and allowed[:10] == [True] * 10
    assert limit.summary() == 0  # the window is not over
    clock.now = 60.0
    assert limit.summary() == 990
    assert limit.summary() == 0
    assert limit.allow()


@given(st.lists(st.floats(min_value=0, max_value=30), max_size=300))
def test_every_message_is_logged_or_counted_once(gaps: list[float]) -> None:
    clock = Clock()
    limit = LogLimit(per_window=3, window_s=60, clock=clock)
    logged = reported = 0
    for gap in gaps:
        clock.now += gap
        logged += limit.allow()
        reported += limit.summary()
    clock.now += 60
    reported += limit.summary()
    assert logged + reported == len(gaps)


class Acks:
    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        pass


@pytest.mark.anyio
async def test_a_flood_of_unreadable_bodies_writes_ten_lines_and_counts_all(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tally.collector._consumer")
    before = REGISTRY.get_sample_value("tally_collector_unparseable_total", {"reason": "json"}) or 0.0
    left_out_before = _suppressed("unparseable")
    send, receive = anyio.create_memory_object_stream[Delivery](10_000)
    async with open_outbox(tmp_path / "outbox.sqlite3") as outbox, anyio.create_task_group() as tg:
        consumer = Consumer(outbox, cloud="c1", buffer_max=10_000, batch_limit=100)
        tg.start_soon(consumer.consume, receive, Acks())
        for n in range(2000):
            await send.send(Delivery(b"{not json " + str(n).encode() * 1000, "nova", "notifications.info"))
        with anyio.fail_after(30):
            while consumer.acked < 2000:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    after = REGISTRY.get_sample_value("tally_collector_unparseable_total", {"reason": "json"}) or 0.0
    assert after - before == 2000
    assert _suppressed("unparseable") - left_out_before == 1990
    lines = [r.getMessage() for r in caplog.records]
    # Ten lines within the minute, and when the loop stopped the one that counts the rest.
    assert len(lines) == 11, lines[:12]
    assert all(line.startswith("collector: unparseable body reason=json") for line in lines[:10])
    assert lines[10].startswith("collector: 1990 more unparseable bodies were not logged"), lines[10]
    assert max(len(line) for line in lines) < 600


def _suppressed(kind: str) -> float:
    return REGISTRY.get_sample_value("tally_collector_warnings_suppressed_total", {"kind": kind}) or 0.0


def test_drain_hands_the_open_window_too_and_each_left_out_is_told() -> None:
    clock = Clock()
    told: list[None] = []
    limit = LogLimit(per_window=2, window_s=60, clock=clock, on_suppressed=lambda: told.append(None))
    assert [limit.allow() for _ in range(5)] == [True, True, False, False, False]
    assert len(told) == 3
    assert limit.summary() == 0  # the window is still open
    assert limit.drain() == 3
    assert limit.drain() == 0 and limit.summary() == 0
