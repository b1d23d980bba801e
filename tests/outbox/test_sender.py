"""The sender against a real HTTP server: batches, deletes only after acceptance, 413, 5xx, refusals."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from outbox_support import SinkServer, outbox_rows, volume_event
from prometheus_client import REGISTRY

from tally.outbox import HttpSink, Sender, SinkConfigError, open_outbox
from tally.outbox.internals import DeliveryResult, DeliveryStatus, Refusal

pytestmark = pytest.mark.anyio


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_batches_are_posted_with_the_token_and_rows_deleted(tmp_path: Path) -> None:
    with SinkServer(token="s3cret") as server:
        sink = HttpSink(server.url, "s3cret", insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([volume_event(n) for n in range(12)]))
            sent_before = _metric("tally_collector_batches_sent_total")
            sender = Sender(outbox, sink, batch_max=5, flush_interval_s=60)
            await sender.flush_until_empty()
            assert outbox.depth == 0
        await sink.aclose()
    assert server.posts == [5, 5, 2]
    assert server.event_ids() == {f"ev-{n}" for n in range(12)}
    assert _metric("tally_collector_batches_sent_total") - sent_before == 3
    assert _metric("tally_collector_last_accepted_batch_timestamp_seconds") > 0


async def test_an_event_with_an_integer_beyond_64_bits_is_posted_as_written(tmp_path: Path) -> None:
    event = volume_event(1)
    event["payload"]["provider"] = {"counter": 2**70}
    with SinkServer() as server:
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([event]))
            await Sender(outbox, sink, batch_max=10, flush_interval_s=60).flush_until_empty()
        await sink.aclose()
    [stored] = server.events.values()
    assert stored["payload"]["provider"]["counter"] == 2**70


async def test_rows_wait_through_500s_and_are_delivered_once_after(tmp_path: Path) -> None:
    with SinkServer() as server:
        server.fail_count = 3
        sink = HttpSink(server.url, None, insecure=True)
        failed_before = _metric("tally_collector_batches_failed_total", reason="http_status")
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([volume_event(n) for n in range(4)]))
            sender = Sender(outbox, sink, batch_max=10, flush_interval_s=60, backoff_min_s=0.01)
            await sender.flush_until_empty()
            assert outbox.depth == 0
        await sink.aclose()
    assert server.posts == [4, 4, 4, 4]
    assert len(server.events) == 4
    assert _metric("tally_collector_batches_failed_total", reason="http_status") - failed_before == 3


async def test_413_halves_the_batch_which_grows_back(tmp_path: Path) -> None:
    with SinkServer() as server:
        server.max_batch = 3
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([volume_event(n) for n in range(10)]))
            sender = Sender(outbox, sink, batch_max=8, flush_interval_s=60)
            await sender.flush_until_empty()
            assert outbox.depth == 0
            assert sender.statistics().batch_size > 2  # grew back after the halving
            server.max_batch = None
            await outbox.add(outbox_rows([volume_event(n) for n in range(10, 40)]))
            await sender.flush_until_empty()
            assert sender.statistics().batch_size == 8
        await sink.aclose()
    assert server.posts[:3] == [8, 4, 2]
    assert server.event_ids() == {f"ev-{n}" for n in range(40)}


async def test_refused_items_are_counted_not_retried(tmp_path: Path) -> None:
    with SinkServer() as server:
        sink = HttpSink(server.url, None, insecure=True)
        refused_before = _metric("tally_collector_events_delivered_total", outcome="refused")
        async with open_outbox(tmp_path / "o.sqlite3") as outbox:
            await outbox.add(outbox_rows([volume_event(1), volume_event(2, resource_id=""), volume_event(3)]))
            sender = Sender(outbox, sink, batch_max=10, flush_interval_s=60)
            await sender.flush_until_empty()
            assert outbox.depth == 0
            assert sender.statistics().refused == 1
        await sink.aclose()
    assert server.posts == [3]
    assert server.refused == [("ev-2", "schema: resource_id must not be empty")]
    assert _metric("tally_collector_events_delivered_total", outcome="refused") - refused_before == 1


class RefusingSink:
    """Takes every batch and refuses every item in it, as the API does a flood without resources."""

    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
        refused = tuple(
            Refusal(i, item["event_id"], "schema: resource_id must not be empty")
            for i, item in enumerate(items)
        )
        return DeliveryResult(DeliveryStatus.ACCEPTED, refused=refused)


async def test_a_flood_of_refusals_writes_ten_lines_and_counts_the_rest_at_the_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tally.outbox._sender")
    suppressed_before = _metric("tally_collector_warnings_suppressed_total", kind="refused")
    async with open_outbox(tmp_path / "o.sqlite3") as outbox:
        await outbox.add(outbox_rows([volume_event(n, resource_id="") for n in range(500)]))
        sender = Sender(outbox, RefusingSink(), batch_max=50, flush_interval_s=0.05)
        async with anyio.create_task_group() as tg:
            tg.start_soon(sender.serve)
            with anyio.fail_after(20):
                while outbox.depth:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    assert sender.statistics().refused == 500
    assert _metric("tally_collector_warnings_suppressed_total", kind="refused") - suppressed_before == 490
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 11, lines
    assert all(line.startswith("sender: event refused event_id=ev-") for line in lines[:10])
    assert lines[10].startswith("sender: 490 more refused events were not logged"), lines[10]


async def test_network_errors_keep_theoutbox_rows(tmp_path: Path) -> None:
    with SinkServer() as server:
        url = server.url
    sink = HttpSink(url, None, insecure=True, timeout_s=2)  # nothing listens there any more
    failed_before = _metric("tally_collector_batches_failed_total", reason="network")
    async with open_outbox(tmp_path / "o.sqlite3") as outbox:
        await outbox.add(outbox_rows([volume_event(1)]))
        sender = Sender(outbox, sink, batch_max=10, flush_interval_s=60, backoff_min_s=0.01)
        with anyio.move_on_after(0.5):
            await sender.flush_until_empty()
        assert outbox.depth == 1
    await sink.aclose()
    assert _metric("tally_collector_batches_failed_total", reason="network") - failed_before >= 1


async def test_the_loop_sends_when_a_full_batch_waits(tmp_path: Path) -> None:
    with SinkServer() as server:
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox, anyio.create_task_group() as tg:
            sender = Sender(outbox, sink, batch_max=5, flush_interval_s=3600)
            await tg.start(sender.serve)
            await outbox.add(outbox_rows([volume_event(n) for n in range(5)]))
            with anyio.fail_after(5):
                while outbox.depth:
                    await outbox.wait_changed()
            tg.cancel_scope.cancel()
        await sink.aclose()
    assert server.posts == [5]


async def test_the_loop_flushes_a_partial_batch_after_the_interval(tmp_path: Path) -> None:
    with SinkServer() as server:
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox, anyio.create_task_group() as tg:
            sender = Sender(outbox, sink, batch_max=500, flush_interval_s=0.2)
            await tg.start(sender.serve)
            await outbox.add(outbox_rows([volume_event(1), volume_event(2)]))
            with anyio.fail_after(5):
                while outbox.depth:
                    await outbox.wait_changed()
            tg.cancel_scope.cancel()
        await sink.aclose()
    assert server.posts == [2]


async def test_the_loop_delivers_rows_as_soon_as_they_are_committed(tmp_path: Path) -> None:
    """The outbox tells the sender of a commit: a partial batch does not wait for the flush interval."""
    with SinkServer() as server:
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(tmp_path / "o.sqlite3") as outbox, anyio.create_task_group() as tg:
            sender = Sender(outbox, sink, batch_max=500, flush_interval_s=3600)
            await tg.start(sender.serve)
            for rows in ([volume_event(1), volume_event(2)], [volume_event(3)]):
                await outbox.add(outbox_rows(rows))
                with anyio.fail_after(5):
                    while outbox.depth:
                        await outbox.wait_changed()
            tg.cancel_scope.cancel()
        await sink.aclose()
    assert server.posts == [2, 1]


async def test_rows_another_process_commits_are_sent_within_a_flush_interval(tmp_path: Path) -> None:
    """No notice comes from another process (``tally collector replay``): the slow look finds them."""
    path = tmp_path / "o.sqlite3"
    with SinkServer() as server:
        sink = HttpSink(server.url, None, insecure=True)
        async with open_outbox(path) as outbox, anyio.create_task_group() as tg:
            sender = Sender(outbox, sink, batch_max=500, flush_interval_s=0.3)
            await tg.start(sender.serve)
            async with open_outbox(path) as other:
                await other.add(outbox_rows([volume_event(7)]))
            with anyio.fail_after(5):
                while not server.posts:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        await sink.aclose()
    assert server.posts == [1]


def test_plain_http_is_refused_without_the_opt_in() -> None:
    with pytest.raises(SinkConfigError, match="TALLY_OSC_REPORTING_INSECURE=true"):
        HttpSink("http://reporting.example:8080", "t")
    HttpSink("https://reporting.example", "t")
    with pytest.raises(SinkConfigError, match="not an http"):
        HttpSink("ftp://reporting.example", "t")
