"""The daemon's period closer, on SQLite and PostgreSQL: nothing closes in the grace window; the
month closes once it is over; a late delete that arrives afterwards is recorded as a correction
naming the sync run of the cloud since the close, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rating_support import ev, known_month

from tally.core import parse_instant
from tally.rating import load_price_list, version_document
from tally.store import open_store
from tally.usage.internals import REASON, close_and_correct

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
END = datetime(2026, 4, 1, tzinfo=UTC)
GRACE = timedelta(hours=72)


async def test_the_closer_closes_due_months_and_records_corrections(any_store_url: str) -> None:
    async with open_store(any_store_url) as store:
        await store.migrate_up()
        # Received in March, as a collector would have: the close as of April 4th sees them.
        await store.write_batch(known_month(), received_at=parse_instant("2026-03-31T00:00:00Z"))
        prices = load_price_list(EXAMPLE.read_text())
        versions = [(v.effective_from, version_document(v)) for v in prices.versions]
        await store.put_price_list(prices.name, prices.currency, versions, now=END)

        assert await close_and_correct(
            store, "os-dev", "public-eu", END + timedelta(hours=71), grace=GRACE
        ) == ([], 0)
        assert await store.list_periods("os-dev") == []
        closing = END + GRACE + timedelta(seconds=1)
        assert await close_and_correct(store, "os-dev", "public-eu", closing, grace=GRACE) == (["2026-03"], 0)
        [period] = await store.list_periods("os-dev")
        assert (period.closed_at, period.price_list) == (closing, "public-eu")

        # A sync run after the close brings a late delete of vol-1, dated the 1st at noon.
        run = await store.start_sync_run("os-dev", started_at=closing + timedelta(hours=1))
        late = ev(30, "vol-1", "volume.delete.end", "2026-03-01T12:00:00Z", rtype="volume", project="p-2")
        await store.write_batch([late], received_at=closing + timedelta(hours=1))
        later = closing + timedelta(hours=2)
        assert await close_and_correct(store, "os-dev", "public-eu", later, grace=GRACE) == ([], 1)
        lines = await store.period_lines("os-dev", period.period_start)
        [_, fix] = [x for x in lines if x.line["resource_id"] == "vol-1"]
        assert (fix.kind, fix.reason, fix.sync_run, fix.line["cost"]) == ("correction", REASON, run, "-0.18")
        assert await close_and_correct(store, "os-dev", "public-eu", later, grace=GRACE) == ([], 0)

        # Down through April and May: the next tick closes both, oldest first, and corrects nothing.
        june = datetime(2026, 6, 4, 1, tzinfo=UTC)
        assert await close_and_correct(store, "os-dev", "public-eu", june, grace=GRACE) == (
            ["2026-04", "2026-05"],
            0,
        )
        assert [p.period_start.month for p in await store.list_periods("os-dev")] == [3, 4, 5]
