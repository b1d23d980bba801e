"""``/api/v1/sync-runs``: a cloud's runs oldest first with their stats, bounded by started_at, admin only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from http_support import ADMIN, READER, Api

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 7, 1, tzinfo=UTC)
STATS = {"created": 1, "deferred_resources": [], "complete_types": ["instance", "volume"]}


async def test_the_runs_of_a_cloud_come_oldest_first_with_their_stats(api: Api) -> None:
    late = await api.store.start_sync_run("os-sim", T0 + timedelta(hours=2))
    await api.store.finish_sync_run(late, "completed", STATS)
    early = await api.store.start_sync_run("os-sim", T0 + timedelta(hours=1))
    await api.store.finish_sync_run(early, "failed", {"errors": ["nova: 500"]})
    await api.store.start_sync_run("other", T0)
    answer = await (await api.get("/api/v1/sync-runs?cloud=os-sim", ADMIN)).get_json()
    assert [r["id"] for r in answer["items"]] == [early, late]
    assert [r["status"] for r in answer["items"]] == ["failed", "completed"]
    assert answer["items"][1]["started_at"] == "2026-07-01T02:00:00Z"
    assert answer["items"][1]["stats"] == STATS
    bounded = await api.get("/api/v1/sync-runs?cloud=os-sim&from=2026-07-01T01:30:00Z", ADMIN)
    assert [r["id"] for r in (await bounded.get_json())["items"]] == [late]


async def test_only_an_admin_reads_them_and_the_cloud_is_required(api: Api) -> None:
    assert (await api.get("/api/v1/sync-runs?cloud=os-sim", READER)).status_code == 403
    assert (await api.get("/api/v1/sync-runs", ADMIN)).status_code == 400
