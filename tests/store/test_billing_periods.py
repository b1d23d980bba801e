"""Closed billing periods: lines stored in order, a second close refused, corrections appended, a
correction delivered once, and the database itself refusing any change of what was closed."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import psycopg
import pytest

from tally.store import BillingPeriod, Conflict, Store

pytestmark = pytest.mark.anyio

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)
CLOSED = datetime(2026, 4, 4, tzinfo=UTC)
LINE = {"resource_id": "vm-1", "sku": "instance.vcpu_hour", "cost": "1.20"}


async def test_a_closed_period_keeps_its_lines_and_is_closed_once(store: Store) -> None:
    period = BillingPeriod("os-dev", MARCH, APRIL, "public-eu", CLOSED)
    await store.close_period(period, [LINE, {**LINE, "resource_id": "vm-2"}])
    assert await store.get_period("os-dev", MARCH) == period
    assert await store.list_periods() == [period]
    lines = await store.period_lines("os-dev", MARCH)
    assert [(x.seq, x.kind, x.line["resource_id"], x.recorded_at) for x in lines] == [
        (1, "closed", "vm-1", CLOSED),
        (2, "closed", "vm-2", CLOSED),
    ]
    with pytest.raises(
        Conflict, match="the period of cloud os-dev from 2026-03-01T00:00:00Z is already closed"
    ):
        await store.close_period(period, [])
    assert len(await store.period_lines("os-dev", MARCH)) == 2


async def test_corrections_append_and_are_delivered_once(store: Store) -> None:
    await store.close_period(BillingPeriod("os-dev", MARCH, APRIL, "public-eu", CLOSED), [LINE])
    later = datetime(2026, 4, 10, tzinfo=UTC)
    added = await store.add_period_corrections(
        "os-dev", MARCH, [{**LINE, "cost": "-0.40"}], reason="late delete", sync_run="run-1", at=later
    )
    assert added == 1
    [_, fix] = await store.period_lines("os-dev", MARCH)
    assert (fix.seq, fix.kind, fix.reason, fix.sync_run, fix.delivered_at) == (
        2,
        "correction",
        "late delete",
        "run-1",
        None,
    )
    await store.deliver_corrections("os-dev", MARCH, [2], later)
    [_, fix] = await store.period_lines("os-dev", MARCH)
    assert fix.delivered_at == later
    with pytest.raises(Exception, match="frozen: a correction line is delivered once"):
        await store.deliver_corrections("os-dev", MARCH, [2], datetime(2026, 5, 1, tzinfo=UTC))


def _raw(store_url: str, sql: str) -> None:
    """Run ``sql`` straight on the database, past the Store: what the triggers answer."""
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as conn:
            conn.execute(sql)
        return
    with psycopg.connect(store_url) as conn:
        conn.execute(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE period_lines SET line = '{}'",
        "UPDATE period_lines SET delivered_at = recorded_at",
        "DELETE FROM period_lines",
        "UPDATE billing_periods SET price_list = 'other'",
        "DELETE FROM billing_periods",
    ],
)
async def test_the_database_refuses_to_change_a_closed_period(store: Store, store_url: str, sql: str) -> None:
    await store.close_period(BillingPeriod("os-dev", MARCH, APRIL, "public-eu", CLOSED), [LINE])
    before = (await store.list_periods(), await store.period_lines("os-dev", MARCH))
    with pytest.raises((sqlite3.DatabaseError, psycopg.Error), match="frozen"):
        _raw(store_url, sql)
    assert (await store.list_periods(), await store.period_lines("os-dev", MARCH)) == before
