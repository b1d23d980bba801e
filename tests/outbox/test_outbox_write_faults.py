"""An outbox that cannot write: the write is rolled back and named, nothing crashes, it heals.

The full disk is real: the outbox file lives on a 4 MiB tmpfs of the test's own (``small_filesystem``)
that a filler file takes whole. The consumer test then shows the rule the collector lives by: a group
the outbox could not commit is never acked, and goes once the disk has room again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from prometheus_client import REGISTRY

from tally.collector._consumer import Consumer
from tally.collector._delivery import Delivery
from tally.outbox import OutboxWriteError, open_outbox

pytestmark = pytest.mark.anyio

BULK = b"x" * 2000


def failing() -> float | None:
    return REGISTRY.get_sample_value("tally_collector_outbox_write_failing")


def errors(reason: str) -> float:
    return REGISTRY.get_sample_value("tally_collector_outbox_write_errors_total", {"reason": reason}) or 0.0


async def test_a_full_disk_is_a_named_rolled_back_write_and_heals(
    small_filesystem: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = small_filesystem.path / "outbox.sqlite3"
    caplog.set_level(logging.INFO, logger="tally.outbox")
    async with open_outbox(path) as outbox:
        await outbox.add([("e0", BULK)])
        small_filesystem.fill()
        before = errors("disk_full")
        for attempt in range(3):
            with pytest.raises(OutboxWriteError) as raised:
                await outbox.add([(f"e{attempt}-{n}", BULK) for n in range(1, 200)])
            assert raised.value.reason == "disk_full"
        assert str(raised.value).startswith(f"the outbox cannot write: disk full on {path} (")
        assert outbox.write_problem is raised.value
        assert outbox.depth == 1 and [r.event_id for r in await outbox.peek(10)] == ["e0"]
        assert failing() == 1 and errors("disk_full") == before + 3
        # Reads still answer while the disk is full.
        assert len(await outbox.peek(10)) == 1

        small_filesystem.free()
        assert await outbox.add([(f"f{n}", BULK) for n in range(199)]) == 199
        assert outbox.write_problem is None and failing() == 0
        assert outbox.depth == 200
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # One warning when the fault began, one when it ended: not one per failed write.
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(f"outbox: the outbox cannot write: disk full on {path}")
    assert warnings[1].startswith(f"outbox: writes commit again on {path} after ")


class Acks:
    def __init__(self) -> None:
        self.acked: list[bytes] = []

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.acked.extend(d.body for d in deliveries)


def notification(n: int) -> bytes:
    return (
        b'{"event_type": "compute.instance.create.end", "message_id": "m%d", '
        b'"timestamp": "2026-03-01 10:00:00.000000", "priority": "INFO", "publisher_id": "compute.c1", '
        b'"payload": {"instance_id": "i-%d", "tenant_id": "p1", "state": "active", "vcpus": 1, '
        b'"memory_mb": 512, "root_gb": 1, "instance_type": "m1.tiny", "note": "%s"}}'
    ) % (n, n, BULK)


async def test_the_consumer_acks_nothing_it_could_not_commit_and_resumes(small_filesystem: Any) -> None:
    path = small_filesystem.path / "outbox.sqlite3"
    source = Acks()
    send, receive = anyio.create_memory_object_stream[Delivery](1000)
    async with open_outbox(path) as outbox, anyio.create_task_group() as tg:
        consumer = Consumer(outbox, cloud="c1", buffer_max=10_000, batch_limit=500, retry_max_s=0.2)
        tg.start_soon(consumer.consume, receive, source)
        small_filesystem.fill()
        for n in range(300):
            await send.send(Delivery(notification(n), "nova", "notifications.info"))
        with anyio.fail_after(10):
            while outbox.write_problem is None:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        await anyio.sleep(1)  # several tries in vain
        assert source.acked == [] and outbox.depth == 0 and consumer.in_hand > 0
        assert consumer.taken == consumer.in_hand  # nothing more taken while the group waits

        small_filesystem.free()
        with anyio.fail_after(10):
            while len(source.acked) < 300:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        assert outbox.depth == 300 and outbox.write_problem is None
        assert sorted(source.acked) == sorted(notification(n) for n in range(300))
        tg.cancel_scope.cancel()


async def test_an_idle_outbox_on_a_full_disk_is_found_by_the_probe(small_filesystem: Any) -> None:
    async with open_outbox(small_filesystem.path / "outbox.sqlite3") as outbox:
        assert await outbox.check_writable() is None
        small_filesystem.fill()
        # The last outcome (the probe's success) is fresh: it stands for fresh_s.
        assert await outbox.check_writable() is None
        problem = await outbox.check_writable(fresh_s=0)
        assert problem is not None and problem.reason == "disk_full"
        assert failing() == 1
        small_filesystem.free()
        assert await outbox.check_writable() is not None  # fresh: the failure stands a while
        assert await outbox.check_writable(fresh_s=0) is None
        assert failing() == 0
