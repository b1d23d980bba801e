"""A PostgreSQL store that turns read-only, then writable again, under the collector's sender.

The database is the test's own (``pg_url``): ``ALTER DATABASE ... SET default_transaction_read_only``
and the ending of its sessions touch nothing else on the server. A session opened while the database
is read-only stays read-only for its life; the store replaces its pooled sessions on the first write
refused as read-only, so once the database takes writes the sender's next try goes through: every row
of the outbox delivered once, no restart, within ``RESUME_S`` of the database being writable (the
sender's backoff is capped at 1 s here; at its default cap it is up to 30 s more).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import psycopg
import pytest
from outbox_support import volume_event
from prometheus_client import REGISTRY

from tally.ingest import IngestPipeline
from tally.outbox import IngestSink, Sender, open_outbox
from tally.store import StoreUnavailable, open_store

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

RESUME_S = 5.0


async def stored(url: str) -> int:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        row = await (await conn.execute("SELECT count(*), count(DISTINCT event_id) FROM events")).fetchone()
        assert row is not None and row[0] == row[1], f"doubled events: {row}"
        return int(row[0])


async def test_a_read_only_database_then_writable_delivers_without_a_restart(
    set_read_only: Callable[[str, bool], None], pg_url: str, tmp_path: Path
) -> None:
    async with (
        open_store(pg_url, max_conns=4) as store,
        open_outbox(tmp_path / "outbox.sqlite3") as outbox,
        anyio.create_task_group() as tg,
    ):
        await store.migrate_up()
        sink = IngestSink(IngestPipeline(store, require_size_schema=False))
        sender = Sender(outbox, sink, batch_max=100, flush_interval_s=0.1, backoff_max_s=1.0)
        await outbox.add([(f"ev-{n}", _body(n)) for n in range(100)])
        await sender.flush_until_empty()
        # Every pooled session in use once, so that the pool holds several (all to be replaced).
        async with anyio.create_task_group() as busy:
            for _ in range(4):
                busy.start_soon(store.write_check)
        refusals = REGISTRY.get_sample_value("tally_db_read_only_refusals_total") or 0.0

        set_read_only(pg_url, True)
        with anyio.fail_after(10):
            while True:
                try:
                    await store.write_check()
                except StoreUnavailable as exc:
                    if "read-only" in str(exc):
                        break
                await anyio.sleep(0.1)
        await outbox.add([(f"ev-{n}", _body(n)) for n in range(100, 400)])
        tg.start_soon(sender.serve)
        await anyio.sleep(2)
        assert outbox.depth == 300 and await stored(pg_url) == 100
        assert (REGISTRY.get_sample_value("tally_db_read_only_refusals_total") or 0.0) > refusals

        set_read_only(pg_url, False)
        writable_at = time.monotonic()
        with anyio.fail_after(RESUME_S):
            while outbox.depth:
                await outbox.wait_changed()
        took = time.monotonic() - writable_at
        assert await stored(pg_url) == 400
        await store.write_check()
        print(f"delivered {took:.1f} s after the database took writes again")
        tg.cancel_scope.cancel()


def _body(n: int) -> bytes:
    import orjson

    return orjson.dumps(volume_event(n))
