"""The events upkeep as an operator meets it: ``tally migrate up`` makes the partitions ahead, ``tally run``
keeps them and shows them in /metrics, and a retention policy the database refuses stops the start."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
import pytest
from daemon_support import daemon_env, free_port, running_daemon, tally, wait_until_ready

from tally.core import parse_event
from tally.store import open_store


async def _a_live_resource_synced_long_ago(url: str) -> None:
    async with open_store(url) as store:
        event = {
            "event_id": "e1",
            "timestamp": "2026-01-05T00:00:00Z",
            "event_type": "compute.instance.create.end",
            "platform": "openstack",
            "cloud": "os-a",
            "resource_type": "instance",
            "resource_id": "vm-1",
            "project_id": "p1",
            "payload": {"state": "active", "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 1, "flavor": "m"}},
        }
        await store.write_batch([parse_event(event)])
        run = await store.start_sync_run("os-a", started_at=datetime(2026, 1, 6, tzinfo=UTC))
        await store.finish_sync_run(run, "completed", {})


@pytest.mark.postgres
def test_migrate_makes_partitions_and_a_refused_retention_stops_the_start(
    tmp_path: Path, pg_url: str
) -> None:
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=pg_url)
    migrated = tally(env, "migrate", "up")
    assert migrated.returncode == 0, migrated.stderr
    assert "events partitions: 3 months attached" in migrated.stdout
    anyio.run(_a_live_resource_synced_long_ago, pg_url)

    refused = tally({**env, "TALLY_EVENTS_RETENTION_MONTHS": "1"}, "run")
    assert refused.returncode == 2
    # The daemon's log lines go to stderr as well; the refusal is the one line it ends with.
    lines = [line for line in refused.stderr.splitlines() if line.startswith("tally: ")]
    assert len(lines) == 1 and lines[0].startswith(
        "tally: TALLY_EVENTS_RETENTION_MONTHS=1 is shorter than what the live resources of cloud 'os-a' need"
    )
    assert tally({**env, "TALLY_EVENTS_RETENTION_MONTHS": "0"}, "run").stderr == (
        "tally: TALLY_EVENTS_RETENTION_MONTHS=0 is outside the allowed range 1..1200\n"
    )


@pytest.mark.postgres
def test_the_daemon_keeps_the_partitions_and_shows_them(tmp_path: Path, pg_url: str) -> None:
    env = daemon_env(
        tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=pg_url, TALLY_EVENTS_PARTITIONS_AHEAD="4"
    )
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        deadline = time.monotonic() + 20
        text = ""
        # The first round runs at start: the current month and four ahead.
        while 'tally_events_partitions{state="attached"} 5.0' not in text:
            assert time.monotonic() < deadline, text
            time.sleep(0.2)
            text = httpx.get(f"{daemon.base_url}/metrics").text
        assert "tally_events_default_partition_rows 0.0" in text
        assert "tally_events_retention_refused 0.0" in text
        assert daemon.stop() == 0, daemon.log
    assert "events partition created name=events_p" in daemon.log


def test_retention_on_sqlite_refuses_the_start(tmp_path: Path) -> None:
    env = daemon_env(tmp_path / "state", free_port(), TALLY_EVENTS_RETENTION_MONTHS="3")
    done = tally(env, "run")
    assert done.returncode == 2
    assert [line for line in done.stderr.splitlines() if line.startswith("tally: ")] == [
        "tally: TALLY_EVENTS_RETENTION_MONTHS=3 is set, but the store is SQLite, which keeps events in one "
        "table: retention needs PostgreSQL (TALLY_REPORTING_DB_URL)"
    ]
