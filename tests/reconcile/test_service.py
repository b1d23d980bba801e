"""The service: clouds config (strict), the startup check, POST /internal/sync through it, the scheduler."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr
from reconcile_support import T0, Harness, builder, minutes, open_harness, scheduler_of

from tally.actors import ActorContext
from tally.config import CloudEntry, CloudsConfigError, Settings, load_clouds_config
from tally.config.internals import parse_clouds_config
from tally.http import ReportingServices, create_reporting_app
from tally.ingest import IngestPipeline
from tally.reconcile import Status, SyncAlreadyRunning, UnknownCloud
from tally.reconcile._pacing import next_delay
from tally.reconcile._run import RunSettings
from tally.reconcile._scheduler import run_cloud_scheduler
from tally.reconcile._service import SyncService
from tally.store import Store

pytestmark = pytest.mark.anyio

INTERNAL = "internal-secret"


def on_request(h: Harness) -> CloudEntry:
    """The harness's cloud, synced only on request: its scheduler runs nothing by itself."""
    return CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=0)


def entry_doc(**over: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "cloud": "os-a",
        "platform": "openstack",
        "adapter": "openstack",
        "adapter_config": {"os_cloud": "admin"},
    }
    doc.update(over)
    return doc


def test_clouds_config_parses_strictly() -> None:
    (entry,) = parse_clouds_config({"clouds": [entry_doc()]})
    assert entry == CloudEntry("os-a", "openstack", "openstack", {"os_cloud": "admin"}, 600)
    with pytest.raises(CloudsConfigError, match="unknown key 'sync_intervall_s'"):
        parse_clouds_config({"clouds": [entry_doc(sync_intervall_s=5)]})
    with pytest.raises(CloudsConfigError, match="unknown key 'cloudz'"):
        parse_clouds_config({"cloudz": []})
    with pytest.raises(CloudsConfigError, match="unknown adapter 'gophercloud'"):
        parse_clouds_config({"clouds": [entry_doc(adapter="gophercloud")]})
    with pytest.raises(CloudsConfigError, match="named twice"):
        parse_clouds_config({"clouds": [entry_doc(), entry_doc()]})
    with pytest.raises(CloudsConfigError, match="sync_interval_s"):
        parse_clouds_config({"clouds": [entry_doc(sync_interval_s=-1)]})
    with pytest.raises(CloudsConfigError, match="platform"):
        parse_clouds_config({"clouds": [entry_doc(platform="meta")]})
    assert parse_clouds_config({"clouds": [entry_doc(sync_interval_s=0)]})[0].sync_interval_s == 0


def test_clouds_config_names_the_keystone_checking_a_clouds_tokens() -> None:
    (plain,) = parse_clouds_config({"clouds": [entry_doc()]})
    assert plain.keystone_os_cloud is None
    (entry,) = parse_clouds_config({"clouds": [entry_doc(keystone={"os_cloud": "tally-service"})]})
    assert entry.keystone_os_cloud == "tally-service"
    for bad, named in (
        ({"os_clud": "x"}, "unknown key 'os_clud'"),
        ("x", "mapping"),
        ({"os_cloud": ""}, "os_cloud"),
    ):
        with pytest.raises(CloudsConfigError, match=named):
            parse_clouds_config({"clouds": [entry_doc(keystone=bad)]})


def test_load_clouds_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "clouds-config.yaml"
    path.write_text("clouds:\n  - cloud: x\n    platform: openstack\n    adapter: openstack\n    extra: 1\n")
    with pytest.raises(CloudsConfigError, match=f"{path}: clouds\\[0\\]: unknown key 'extra'"):
        load_clouds_config(path)
    with pytest.raises(CloudsConfigError, match="cannot read"):
        load_clouds_config(tmp_path / "missing.yaml")


async def test_invalid_adapter_config_is_reported_at_startup_and_fails_each_run(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        good = h.entry
        bad = CloudEntry(
            h.cloud + "-bad", "openstack", "openstack", {"os_cloud": "admin", "include_octavia_lb": True}
        )
        service = SyncService(
            [good, bad], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0, budget_s=30)
        )
        assert service.config_problems() == {bad.cloud: 'unknown setting "include_octavia_lb"'}
        assert any(
            bad.cloud in r.getMessage() and "include_octavia_lb" in r.getMessage() for r in caplog.records
        )
        assert REGISTRY.get_sample_value("tally_sync_cloud_config_invalid", {"cloud": bad.cloud}) == 1
        assert REGISTRY.get_sample_value("tally_sync_cloud_config_invalid", {"cloud": good.cloud}) == 0
        check = await service.readiness_check()
        assert check.ready and 'unknown setting "include_octavia_lb"' in check.detail
        h.at(T0 + minutes(60))
        failed = await service.run_cloud(bad.cloud, T0 + minutes(60))
        assert failed.status is Status.FAILED
        row = await store.get_sync_run(failed.sync_run_id or "")
        assert row is not None and row["stats"]["errors"] == ['unknown setting "include_octavia_lb"']
        assert (await service.run_cloud(good.cloud, T0 + minutes(60))).status is Status.COMPLETED


async def test_service_run_raises_what_the_route_answers(store: Store, tmp_path: Path) -> None:
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        service = SyncService(
            [on_request(h)], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0)
        )
        async with scheduler_of(service, h.cloud) as (runner, _):
            with pytest.raises(UnknownCloud):
                await runner.run("os-nowhere", None)
            async with store.sync_lock(h.cloud):
                with pytest.raises(SyncAlreadyRunning):
                    await runner.run(h.cloud, T0 + minutes(60))


async def test_post_internal_sync_answers_200_404_409_500(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    b.volume(p, vt, size_gb=1, created_at=T0 + minutes(1))
    async with open_harness(b.build(), store, tmp_path) as h:
        service = SyncService(
            [on_request(h)], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0)
        )
        settings = Settings(
            reporting_internal_token=SecretStr(INTERNAL),
            reporting_sync_allow_at=True,
            reporting_sync_settle_s=0,
        )
        async with scheduler_of(service, h.cloud) as (runner, _):
            app = create_reporting_app(ReportingServices(store, h.pipeline, settings, runner))
            await _answers_200_404_409_500(h, store, app.test_client())


async def _answers_200_404_409_500(h: Harness, store: Store, client: Any) -> None:
    """What the route answers a sync loop, the runs going through the scheduler."""
    auth = {"Authorization": f"Bearer {INTERNAL}"}
    h.at(T0 + minutes(60))
    ok = await client.post(f"/internal/sync/{h.cloud}", headers=auth, json={"at": "2026-07-01T01:00:00Z"})
    assert ok.status_code == 200
    body = await ok.get_json()
    assert body["stats"] == {"created": 1, "updated": 0, "deleted": 0}
    row = await store.get_sync_run(body["sync_run_id"])
    assert row is not None and row["started_at"] == T0 + minutes(60)
    assert (await client.post("/internal/sync/os-nowhere", headers=auth)).status_code == 404
    async with store.sync_lock(h.cloud):
        assert (await client.post(f"/internal/sync/{h.cloud}", headers=auth)).status_code == 409
    h.state.faults.down.add("image")
    failed = await client.post(f"/internal/sync/{h.cloud}", headers=auth, json={"at": "2026-07-01T02:00:00Z"})
    assert failed.status_code == 500
    assert "enumerating" not in (await failed.get_data(as_text=True))  # reasons only in the row


async def eventually(condition: Callable[[], Awaitable[bool]], attempts: int = 400) -> None:
    """Return once ``condition`` holds; fail after ``attempts`` checks 50 ms apart."""
    for _ in range(attempts):
        if await condition():
            return
        await anyio.sleep(0.05)
    raise AssertionError("the condition never held")


async def _completed_is_not(store: Store, cloud: str, value: object) -> bool:
    return await store.last_completed_sync_started_at(cloud) != value


async def _skipped_above(cloud: str, before: float) -> bool:
    return (
        REGISTRY.get_sample_value("tally_sync_runs_total", {"cloud": cloud, "status": "skipped"}) or 0
    ) > before


def test_next_delay_jitters_within_ten_percent() -> None:
    rng = random.Random(7)
    delays = [next_delay(600, rng) for _ in range(200)]
    assert min(delays) >= 540 and max(delays) <= 660 and len(set(delays)) > 100


async def test_scheduler_runs_at_start_then_each_interval_told_by_the_clock(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        h.at(T0 + minutes(42))
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=1)
        service = SyncService([entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        stopping = anyio.Event()
        ctx = ActorContext("sync-scheduler", stopping, lambda: None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_cloud_scheduler(service, h.cloud, ctx, clock_url=f"{h.base_url}/clock"))
            await eventually(lambda: _completed_is_not(store, h.cloud, None))
            first = await store.last_completed_sync_started_at(h.cloud)
            assert first == T0 + minutes(42)  # min(virtual_now, period_to)
            h.at(T0 + minutes(50))
            await eventually(lambda: _completed_is_not(store, h.cloud, first))
            stopping.set()
        assert await store.last_completed_sync_started_at(h.cloud) == T0 + minutes(50)


async def test_scheduler_with_interval_zero_runs_only_on_request(store: Store, tmp_path: Path) -> None:
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=0)
        service = SyncService([entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        stopping = anyio.Event()
        ctx = ActorContext("sync-scheduler", stopping, lambda: None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_cloud_scheduler(service, h.cloud, ctx))
            await anyio.sleep(0.5)
            stopping.set()
        assert await store.last_completed_sync_started_at(h.cloud) is None


async def test_scheduled_run_skips_when_the_lock_is_held(store: Store, tmp_path: Path) -> None:
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=600)
        pipeline = IngestPipeline(store, require_size_schema=False)
        service = SyncService([entry], store=store, pipeline=pipeline, settings=RunSettings(settle_s=0))
        skipped = (
            REGISTRY.get_sample_value("tally_sync_runs_total", {"cloud": h.cloud, "status": "skipped"}) or 0
        )
        stopping = anyio.Event()
        ctx = ActorContext("sync-scheduler", stopping, lambda: None)
        async with store.sync_lock(h.cloud), anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_cloud_scheduler(service, h.cloud, ctx))
            await eventually(lambda: _skipped_above(h.cloud, skipped))
            stopping.set()
        assert await store.last_completed_sync_started_at(h.cloud) is None


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_run_metrics_count_outcomes_actions_and_age(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    b.volume(p, vt, size_gb=1, created_at=T0 + minutes(1)).terminate(T0 + minutes(90))
    b.volume(p, vt, size_gb=1, created_at=T0 + minutes(2))
    async with open_harness(b.build(), store, tmp_path) as h:
        service = SyncService([h.entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        assert sample("tally_sync_runs_total", cloud=h.cloud, status="completed") == 0  # present at zero
        age_before = sample("tally_sync_last_completed_age_seconds", cloud=h.cloud)
        h.at(T0 + minutes(60))
        await service.run_cloud(h.cloud, T0 + minutes(60))
        h.at(T0 + minutes(120))
        await service.run_cloud(h.cloud, T0 + minutes(120))
        h.state.faults.down.add("image")
        await service.run_cloud(h.cloud, T0 + minutes(130))
        assert sample("tally_sync_runs_total", cloud=h.cloud, status="completed") == 2
        assert sample("tally_sync_runs_total", cloud=h.cloud, status="failed") == 1
        assert sample("tally_sync_resources_reconciled_total", cloud=h.cloud, action="created") == 2
        assert sample("tally_sync_resources_reconciled_total", cloud=h.cloud, action="deleted") == 1
        assert sample("tally_sync_errors_total", cloud=h.cloud) == 1
        assert sample("tally_sync_last_completed_age_seconds", cloud=h.cloud) < max(age_before, 5)
        assert sample("tally_sync_last_completed_timestamp_seconds", cloud=h.cloud) > 0


async def test_from_settings_reads_the_file_and_warns_when_clouds_yaml_is_unpinned(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "clouds-config.yaml"
    config.write_text(
        "clouds:\n  - {cloud: os-a, platform: openstack, adapter: openstack, adapter_config: {os_cloud: a}}\n"
    )
    monkeypatch.delenv("OS_CLIENT_CONFIG_FILE", raising=False)
    settings = Settings(reporting_clouds_config=config, reporting_sync_settle_s=5, reporting_sync_budget_s=7)
    pipeline = IngestPipeline(store, require_size_schema=False)
    service = SyncService.from_settings(settings, store=store, pipeline=pipeline)
    assert list(service.entries) == ["os-a"]
    assert "OS_CLIENT_CONFIG_FILE is unset" in caplog.text
    config.write_text("clouds:\n  - {cloud: os-a, platform: openstack, adapter: openstack, typo: 1}\n")
    with pytest.raises(CloudsConfigError, match="unknown key 'typo'"):
        SyncService.from_settings(settings, store=store, pipeline=pipeline)
    assert SyncService.from_settings(Settings(), store=store, pipeline=pipeline).entries == {}
