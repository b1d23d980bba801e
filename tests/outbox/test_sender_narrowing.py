"""The sender's narrowing on repeated server errors: poison found wherever it sits, an outage sets
nothing aside for good, replay.

Against the stand-in HTTP server of outbox_support (the real-API case, one poisoned item, is
tests/http/test_sender_dead_letters.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outbox_support import SinkServer, outbox_rows, volume_event

from tally.outbox import HttpSink, Sender, open_outbox

pytestmark = pytest.mark.anyio


async def test_an_outage_narrows_but_dead_letters_nothing(tmp_path: Path) -> None:
    with SinkServer() as server:
        server.fail_status = 503
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([volume_event(n) for n in range(40)]))
            sender = Sender(
                outbox,
                sink,
                batch_max=16,
                backoff_min_s=0.01,
                backoff_max_s=0.02,
                narrow_after=2,
                suspects_max=4,
            )

            async def recover() -> None:
                await anyio.sleep(0.5)  # dozens of failed posts at these backoffs
                server.fail_status = None

            async with anyio.create_task_group() as tg:
                tg.start_soon(recover)
                with anyio.fail_after(30):
                    await sender.flush_until_empty()
            assert outbox.depth == 0
            assert await outbox.dead_letters() == []
            assert sender.statistics().dead_lettered == 0
            assert sender.statistics().suspects == 0
        await sink.aclose()
    assert 1 in server.posts  # it narrowed down to single events during the outage
    assert server.event_ids() == {f"ev-{n}" for n in range(40)}


async def test_after_a_short_outage_the_batch_grows_back(tmp_path: Path) -> None:
    with SinkServer() as server:
        server.fail_count = 4  # two whole-batch failures, then two of the narrowing
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([volume_event(n) for n in range(200)]))
            sender = Sender(outbox, sink, batch_max=16, backoff_min_s=0.01, narrow_after=2)
            await sender.flush_until_empty()
            assert sender.statistics().batch_size == 16
        await sink.aclose()
    assert server.posts[:5] == [16, 16, 8, 4, 2]
    assert server.event_ids() == {f"ev-{n}" for n in range(200)}


async def test_a_replay_from_another_process_is_seen_by_the_running_outbox(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite3"
    async with open_outbox(path) as running:
        await running.add(outbox_rows([volume_event(1), volume_event(2)]))
        [first, _] = await running.peek(2)
        await running.dead_letter(first, "http_status: status=500")
        assert running.depth == 1
        async with open_outbox(path) as command:
            assert [d.event_id for d in await command.dead_letters()] == ["ev-1"]
            assert await command.replay(["ev-1", "ev-unknown"]) == ["ev-1"]
            assert await command.dead_letters() == []
        assert running.depth == 1  # not yet counted
        await running.refresh()
        assert running.depth == 2
        assert [row.event_id for row in await running.peek(10)] == ["ev-2", "ev-1"]


async def _deliver_all(server: SinkServer, path: Path, count: int, batch_max: int) -> tuple[list[str], int]:
    sink = HttpSink(server.url, None, insecure=True)
    try:
        async with open_outbox(path) as outbox:
            await outbox.add(outbox_rows([volume_event(n) for n in range(count)]))
            sender = Sender(
                outbox, sink, batch_max=batch_max, backoff_min_s=0.001, backoff_max_s=0.002, narrow_after=2
            )
            with anyio.fail_after(60):
                await sender.flush_until_empty()
            return [row.event_id for row in await outbox.dead_letters()], outbox.depth
    finally:
        await sink.aclose()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    count=st.integers(1, 40),
    batch_max=st.integers(1, 12),
    poisoned=st.sets(st.integers(0, 39), max_size=3),
    outage=st.integers(0, 8),
)
def test_poison_is_dead_lettered_and_everything_else_delivered_once(
    count: int, batch_max: int, poisoned: set[int], outage: int
) -> None:
    """Wherever the poisoned events sit, however large the batches, after an outage of any length."""
    poison = {f"ev-{n}" for n in poisoned if n < count}
    with SinkServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.poison = poison
        server.fail_count = outage
        dead, depth = anyio.run(_deliver_all, server, Path(tmp) / "o.sqlite3", count, batch_max)
    assert depth == 0
    assert sorted(dead) == sorted(poison)
    assert server.event_ids() == {f"ev-{n}" for n in range(count)} - poison
    assert len(server.events) == count - len(poison)  # each stored once
