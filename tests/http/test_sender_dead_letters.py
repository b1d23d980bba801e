"""The collector's sender against the real Reporting API (Hypercorn, SQLite store) that fails for one item.

A trigger makes the store raise for one resource's insert, so every batch holding that event is a
500 (the store failed, nothing of the batch stored). The sender must narrow to that event,
dead-letter it in its outbox file and deliver every other one; a replay after the fault is gone
delivers it too. Counted in the store's own table: nothing lost, nothing stored twice.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
from http_support import INGEST, event, live_server
from prometheus_client import REGISTRY

from tally.cli import main
from tally.outbox import HttpSink, Sender, open_outbox

POISON = "vm-poison"


def _stored(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT event_id, COUNT(*) FROM events GROUP BY event_id").fetchall())


def _dead_lettered_total() -> float:
    return REGISTRY.get_sample_value("tally_collector_events_dead_lettered_total") or 0.0


async def _deliver(outbox_path: Path, url: str, events: list[dict[str, Any]]) -> list[str]:
    sink = HttpSink(url, INGEST, insecure=True)
    async with open_outbox(outbox_path) as outbox:
        await outbox.add([(e["event_id"], json.dumps(e).encode()) for e in events])
        sender = Sender(outbox, sink, batch_max=8, backoff_min_s=0.01, backoff_max_s=0.05, narrow_after=2)
        with anyio.fail_after(60):
            await sender.flush_until_empty()
        assert outbox.depth == 0
        dead = [row.event_id for row in await outbox.dead_letters()]
    await sink.aclose()
    return dead


def test_the_item_the_api_cannot_take_is_dead_lettered_and_the_rest_delivered(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    store_path, outbox_path = tmp_path / "tally.sqlite3", tmp_path / "outbox.sqlite3"
    events = [event(POISON if n == 11 else f"vm-{n}") for n in range(30)]
    poison_id = events[11]["event_id"]
    with live_server(f"sqlite:///{store_path}") as server:
        with sqlite3.connect(store_path) as conn:
            conn.execute(
                "CREATE TRIGGER poison BEFORE INSERT ON events "
                f"WHEN NEW.resource_id = '{POISON}' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
            )
        before = _dead_lettered_total()
        dead = anyio.run(_deliver, outbox_path, server.base_url, events)
        assert dead == [poison_id]
        assert _dead_lettered_total() - before == 1
        stored = _stored(store_path)
        assert set(stored) == {e["event_id"] for e in events} - {poison_id}
        assert set(stored.values()) == {1}

        monkeypatch.setenv("TALLY_OSC_BUFFER_PATH", str(outbox_path))
        assert main(["collector", "dead-letters"]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert len(listed) == 1 and poison_id in listed[0] and "status=500" in listed[0]

        with sqlite3.connect(store_path) as conn:
            conn.execute("DROP TRIGGER poison")
        assert main(["collector", "replay", poison_id]) == 0
        assert anyio.run(_deliver, outbox_path, server.base_url, []) == []
        stored = _stored(store_path)
        assert set(stored) == {e["event_id"] for e in events}
        assert set(stored.values()) == {1}
