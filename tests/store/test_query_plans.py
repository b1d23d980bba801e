"""The ingest's reads by key probe an index, one key at a time, whatever the table's size: a scan of
the whole table per batch would grow with the cloud."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from tally.store import open_store
from tally.store._pg_batch import LOAD_ROWS
from tally.store._sql_text import history_by_key_sql, rows_by_key_sql

pytestmark = pytest.mark.anyio


async def test_sqlite_reads_rows_and_histories_by_key_through_indexes(tmp_path: Path) -> None:
    path = tmp_path / "plans.sqlite3"
    async with open_store(f"sqlite:///{path}") as store:
        await store.migrate_up()
    with sqlite3.connect(path) as conn:
        for sql in (rows_by_key_sql(3), history_by_key_sql(3)):
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ["x"] * 9)]
            table_steps = [step for step in plan if " t" in step or step.endswith(" t")]
            assert table_steps, plan
            assert all(step.startswith("SEARCH t USING") for step in table_steps), plan


@pytest.mark.postgres
async def test_postgresql_reads_rows_by_key_through_the_primary_key(pg_schema_url: str) -> None:
    async with open_store(pg_schema_url) as store:
        await store.migrate_up()
    with psycopg.connect(pg_schema_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO current_resources (cloud, resource_type, resource_id, platform, project_id, "
            "state, size, last_event_type, last_event_at, last_payload, first_event_at, last_received_at, "
            "last_event_id) SELECT 'c', 'instance', 'vm-' || n, 'openstack', 'p', 'active', '{}', 'x', "
            "now(), '{}', now(), now(), 'e' FROM generate_series(1, 5000) AS n"
        )
        conn.execute("ANALYZE current_resources")
        # A batch's worth of keys: with as many, a flattened join would hash the table instead.
        ids = [f"vm-{n}" for n in range(1, 501)]
        keys = ["c"] * len(ids), ["instance"] * len(ids), ids
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {LOAD_ROWS}", keys))
    assert "Index Scan using current_resources_pkey" in plan, plan
    assert "Seq Scan" not in plan, plan
