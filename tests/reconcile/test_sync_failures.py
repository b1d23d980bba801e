"""Failures, classed as seed 000 classes them, against the fake cloud over HTTP."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from prometheus_client import REGISTRY
from reconcile_support import T0, builder, collector_event, minutes, open_harness

from tally.reconcile import Status
from tally.simulator.fakecloud import FakeCloudState
from tally.store import SizeName, Store

pytestmark = pytest.mark.anyio

SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}


def world_with_everything():  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vt = b.volume_type("ssd")
    b.instance(p, f, created_at=T0 + minutes(1))
    b.volume(p, vt, size_gb=5, created_at=T0 + minutes(2))
    b.floating_ip(p, address="203.0.113.5", created_at=T0 + minutes(3))
    b.image(p, size_bytes=2**30, created_at=T0 + minutes(4))
    return b.build(), p


async def test_a_service_down_costs_only_its_type(store: Store, tmp_path: Path) -> None:
    world, p = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "volume",
                    "vol-gone",
                    "volume.create.end",
                    T0,
                    project_id=p.id,
                    state="available",
                    size={"size_gb": 1, "type": "ssd"},
                )
            ]
        )
        h.state.faults.down.add("block-storage")
        errors_before = REGISTRY.get_sample_value("tally_sync_errors_total", {"cloud": h.cloud}) or 0.0
        outcome = await h.sync(T0 + minutes(60))
        run = await h.run_row(outcome)
        assert outcome.status is Status.FAILED and run["status"] == "failed"
        errors = run["stats"]["errors"]
        assert any(e.startswith("enumerating volume: ") for e in errors)
        assert run["stats"]["error_count"] == len(errors)
        assert outcome.stats["created"] == 3  # the other types' corrections are kept
        rows = await h.rows()
        assert rows[("volume", "vol-gone")].is_live  # no absence delete for an incomplete type
        assert (REGISTRY.get_sample_value("tally_sync_errors_total", {"cloud": h.cloud}) or 0) > errors_before


async def test_a_listing_failing_on_its_third_page_is_incomplete(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    for i in range(2100):
        b.floating_ip(p, address=f"10.{i // 250}.{i % 250}.1", created_at=T0 + timedelta(seconds=i))
    async with open_harness(b.build(), store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(90))
        assert outcome.stats["created"] == 2100  # paginated to the end
        h.state.faults.fail_third_page.add("floating_ip")
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "floating_ip",
                    "fip-gone",
                    "floatingip.create.end",
                    T0,
                    project_id=p.id,
                    size={"ip_version": 4},
                )
            ]
        )
        failed = await h.sync(T0 + minutes(120))
        run = await h.run_row(failed)
        assert any(e.startswith("enumerating floating_ip: ") for e in run["stats"]["errors"])
        assert (await h.rows())[("floating_ip", "fip-gone")].is_live


async def test_probe_refusal_ends_the_run_before_any_listing(store: Store, tmp_path: Path) -> None:
    world, _ = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        h.state.faults.probe_refused = True
        outcome = await h.sync(T0 + minutes(60))
        run = await h.run_row(outcome)
        assert outcome.status is Status.FAILED
        (error,) = run["stats"]["errors"]
        assert error.startswith('the clouds.yaml entry "admin" cannot observe the whole cloud: ')
        assert outcome.stats["created"] == 0 and await h.rows() == {}


async def test_a_member_account_is_refused_by_the_probe(store: Store, tmp_path: Path) -> None:
    world, _ = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "volume",
                    "vol-other",
                    "volume.create.end",
                    T0,
                    project_id="f" * 32,
                    state="available",
                    size={"size_gb": 1, "type": "ssd"},
                )
            ]
        )
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("member"))
        (error,) = (await h.run_row(outcome))["stats"]["errors"]
        assert error.startswith('the clouds.yaml entry "member" cannot observe the whole cloud: ')
        assert "403" in error
        assert (await h.rows())[("volume", "vol-other")].is_live  # nothing narrowed, nothing wiped


async def test_an_image_without_owner_makes_the_image_type_incomplete(store: Store, tmp_path: Path) -> None:
    world, p = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        await h.pipeline.ingest(
            [collector_event(h, "image", "img-x", "image.create", T0, project_id=p.id, size={"size_gb": 1})]
        )
        h.state.faults.images_without_owner = True
        outcome = await h.sync(T0 + minutes(60))
        errors = (await h.run_row(outcome))["stats"]["errors"]
        assert any(e.startswith("enumerating image: ") and "names no owner" in e for e in errors)
        assert (await h.rows())[("image", "img-x")].is_live


async def test_volume_types_failing_keep_the_stored_names_and_fail_the_run(
    store: Store, tmp_path: Path
) -> None:
    world, _ = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        first = await h.sync(T0 + minutes(60))
        assert first.status is Status.COMPLETED
        names = await h.store.size_names(h.cloud)
        assert [(n.member, n.name) for n in names] == [("type", "ssd")]
        assert names[0] == SizeName(h.cloud, "volume", "type", world.volume_types[0].id, "ssd")
        h.state.faults.volume_types_refused = True
        failed = await h.sync(T0 + minutes(120))
        run = await h.run_row(failed)
        assert failed.status is Status.FAILED
        assert run["stats"]["errors"] == [
            e
            for e in run["stats"]["errors"]
            if e.startswith(f"listing the size names of {h.cloud}: listing the volume types: ")
        ]
        assert await h.store.size_names(h.cloud) == names
        assert await h.store.last_completed_sync_started_at(h.cloud) == T0 + minutes(60)


@pytest.mark.parametrize(
    ("os_cloud", "expected"),
    [
        ("tally-expired", 'authenticating against the cloud "tally-expired": '),
        ("tally-deleted", 'authenticating against the cloud "tally-deleted": '),
        (
            "no-secret",
            'authenticating against the cloud "no-secret": You must provide an Application Credential Secret',
        ),
        ("nowhere", 'resolving the clouds.yaml entry "nowhere"'),
    ],
)
async def test_keystone_and_clouds_yaml_refusals_end_the_run(
    store: Store, tmp_path: Path, os_cloud: str, expected: str
) -> None:
    world, _ = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for(os_cloud))
        (error,) = (await h.run_row(outcome))["stats"]["errors"]
        assert error.startswith(expected)
        assert await h.rows() == {}


async def test_no_clouds_yaml_names_the_locations_searched(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, _ = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        missing = tmp_path / "nowhere" / "clouds.yaml"
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(missing))
        outcome = await h.sync(T0 + minutes(60))
        (error,) = (await h.run_row(outcome))["stats"]["errors"]
        assert error == f"no clouds.yaml found; searched {missing}"


async def test_an_unknown_adapter_setting_fails_the_run_naming_it(store: Store, tmp_path: Path) -> None:
    world, _ = world_with_everything()
    async with open_harness(world, store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("admin", include_octavia_lb=True))
        run = await h.run_row(outcome)
        assert run["status"] == "failed"
        assert run["stats"]["errors"] == ['unknown setting "include_octavia_lb"']
        assert outcome.to_json()["stats"] == {"created": 0, "updated": 0, "deleted": 0}


async def test_the_budget_ends_the_run_naming_the_listing(store: Store, tmp_path: Path) -> None:
    world, _ = world_with_everything()

    def slow_compute(state: FakeCloudState) -> None:
        state.faults.slow["compute"] = 3.0

    async with open_harness(world, store, tmp_path, prepare=slow_compute) as h:
        h.budget_s = 0.5
        outcome = await h.sync(T0 + minutes(60))
        run = await h.run_row(outcome)
        assert run["status"] == "failed"
        assert run["stats"]["errors"] == [
            f"listing the resources of {h.cloud}: "
            "the run ended while enumerating server: context deadline exceeded"
        ]


class RecordingStore:
    """The store, noting the ids of the runs it starts (a cancelled run answers no outcome)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.run_ids: list[str] = []

    async def start_sync_run(self, cloud: str, started_at: object = None) -> str:
        run_id = await self.inner.start_sync_run(cloud, started_at)  # type: ignore[arg-type]
        self.run_ids.append(run_id)
        return run_id

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_a_cancelled_run_is_recorded_failed(store: Store, tmp_path: Path) -> None:
    world, _ = world_with_everything()

    def slow_compute(state: FakeCloudState) -> None:
        state.faults.slow["compute"] = 3.0

    async with open_harness(world, store, tmp_path, prepare=slow_compute) as h:
        recording = RecordingStore(store)
        h.store = recording  # type: ignore[assignment]
        with anyio.move_on_after(0.5):  # the client that asked went away
            await h.sync(T0 + minutes(60))
        (run_id,) = recording.run_ids
        row = await store.get_sync_run(run_id)
        assert row is not None and row["status"] == "failed"
        assert row["stats"]["errors"] == [f"the run of {h.cloud} was cancelled while enumerating server"]
        assert await store.last_completed_sync_started_at(h.cloud) is None
