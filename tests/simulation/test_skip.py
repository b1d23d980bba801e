"""The skip of idle lockstep instants: the rule on its own, and a month run both ways.

``sync_is_idle`` must skip only a sync that provably books nothing; the end-to-end test runs one
small month with every fault, skipping and with ``--every-sync``, and compares the two stores event
for event. A correction's id and its payload name the sync run that booked it, and the two modes
number their runs differently, so a run is named by its instant instead (the instant is what a
poll-dated correction is dated at, so a skip that moved a booking would show).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.cli import main
from tally.core import format_instant
from tally.simulation._idle import sync_is_idle
from tally.store import open_store

T0 = datetime(2026, 7, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
FAULTS = "missing-create,duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"
SMALL = ["--seed", "3", "--period", "2026-07", "--scale", "0.3", "--days", "3", "--factor", "0"]


def test_sync_is_idle() -> None:
    last, at = T0 + HOUR, T0 + 3 * HOUR
    quiet = [T0, T0 + 4 * HOUR]
    assert sync_is_idle(quiet, last, at, events_since=0, settle_s=0)
    # The first sync, or one after a failed sync, always runs.
    assert not sync_is_idle(quiet, None, at, events_since=0, settle_s=0)
    # An event delivered since the last sync.
    assert not sync_is_idle(quiet, last, at, events_since=1, settle_s=0)
    # A recent window would let a later sync book what the last one deferred.
    assert not sync_is_idle(quiet, last, at, events_since=0, settle_s=60)
    # A change inside the span, at its end, and at its start (a deletion dated at the last sync's
    # instant is listed again by a later deleted-servers window opening there).
    for change in (T0 + 2 * HOUR, at, last):
        assert not sync_is_idle(sorted([*quiet, change]), last, at, events_since=0, settle_s=0)


@given(
    changes=st.lists(st.integers(0, 20), max_size=8).map(sorted),
    last=st.integers(0, 20),
    span=st.integers(0, 10),
)
def test_sync_is_idle_exactly_when_no_change_lies_in_the_closed_span(
    changes: list[int], last: int, span: int
) -> None:
    instants = [T0 + c * HOUR for c in changes]
    expected = not any(last <= c <= last + span for c in changes)
    idle = sync_is_idle(instants, T0 + last * HOUR, T0 + (last + span) * HOUR, events_since=0, settle_s=0)
    assert idle == expected


async def _events(url: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    async with open_store(url) as store:
        for row in await store.resources_of_cloud("os-sim"):
            for stored in await store.resource_history(row.key):
                e = stored.event
                payload = orjson.loads(orjson.dumps(e.payload))
                event_id = e.event_id
                provider = payload.get("provider")
                if e.source == "reconciliation":
                    run = await store.get_sync_run(provider["sync_run_id"])
                    assert run is not None
                    provider["sync_run_id"] = format_instant(run["started_at"])
                    event_id = f"booked by the run at {provider['sync_run_id']}"
                out.append(
                    (
                        event_id,
                        format_instant(e.timestamp),
                        e.event_type,
                        e.source,
                        e.resource_type,
                        e.resource_id,
                        e.project_id,
                        orjson.dumps(payload, option=orjson.OPT_SORT_KEYS),
                    )
                )
    return sorted(out, key=lambda t: (t[4], t[5], t[1], t[2], t[0]))


def _run(tmp_path: Path, name: str, *extra: str) -> dict[str, Any]:
    summary = tmp_path / f"{name}.json"
    state = tmp_path / name
    assert main(
        ["simulate", *SMALL, "--faults", FAULTS, "--state-dir", str(state), "--json", str(summary), *extra]
    ) in (0, 1)
    doc: dict[str, Any] = orjson.loads(summary.read_bytes())
    return doc


def test_skipping_idle_instants_leaves_the_store_every_sync_leaves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skipping = _run(tmp_path, "skipping")
    every = _run(tmp_path, "every", "--every-sync")
    capsys.readouterr()
    assert skipping["syncs"]["idle_skipped"] > 0 and every["syncs"]["idle_skipped"] == 0
    assert skipping["syncs"]["run"] < every["syncs"]["run"]
    a = anyio.run(_events, f"sqlite:///{tmp_path / 'skipping' / 'tally.sqlite3'}", backend="asyncio")
    b = anyio.run(_events, f"sqlite:///{tmp_path / 'every' / 'tally.sqlite3'}", backend="asyncio")
    # The month books corrections (the faults lose creates, updates and deletes), so the runs that
    # book them are compared too.
    assert any(e[3] == "reconciliation" for e in a)
    assert a == b
    # The verdicts too, less what names a run: the runs differ in number and id by construction.
    assert _verdicts(skipping["comparison"]) == _verdicts(every["comparison"])


def _verdicts(comparison: dict[str, Any]) -> dict[str, Any]:
    named = ("sync_run_id", "first_run_that_could_book", "correction_event_id")
    doc = {k: v for k, v in comparison.items() if k != "sync_runs"}
    doc["resources"] = [
        {**r, "differences": [{k: v for k, v in d.items() if k not in named} for d in r["differences"]]}
        for r in comparison["resources"]
    ]
    return doc
