"""A credential that only reads (seed 001): the eight access rules suffice, seven do not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from reconcile_support import T0, builder, minutes, open_harness

from tally.reconcile import Status
from tally.simulator.fakecloud import READ_ONLY_RULES, FakeCloudState
from tally.store import Store

pytestmark = pytest.mark.anyio


def world():  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vt = b.volume_type("ssd")
    b.volume_type("secret-tier", is_public=False)
    b.instance(p, f, created_at=T0 + minutes(1)).terminate(T0 + minutes(100))
    b.instance(p, f, created_at=T0 + minutes(1))
    b.volume(p, vt, size_gb=5, created_at=T0 + minutes(2))
    b.floating_ip(p, address="203.0.113.5", created_at=T0 + minutes(3))
    b.image(p, size_bytes=2**30, created_at=T0 + minutes(4))
    b.loadbalancer(p, created_at=T0 + minutes(5), listeners=1, pools=1)
    return b.build()


def add_seven_rule_credential(state: FakeCloudState) -> None:
    read_only = state.accounts.credential("read-only")
    seven = tuple(r for r in READ_ONLY_RULES if not r["path"].endswith("/types"))
    cred = replace(
        read_only, id="7" * 32, name="tally-seven-rules", secret="seven-secret", access_rules=seven
    )
    state.accounts.credentials[cred.id] = cred


async def test_read_only_credential_with_the_eight_rules_completes(store: Store, tmp_path: Path) -> None:
    async with open_harness(world(), store, tmp_path) as h:
        entry = h.entry_for("tally-read-only", include_octavia=True)
        first = await h.sync(T0 + minutes(60), entry=entry)
        assert first.status is Status.COMPLETED, (await h.run_row(first))["stats"]
        assert first.stats["created"] == 6
        second = await h.sync(T0 + minutes(120), entry=entry)  # with the deleted-servers listing this time
        assert second.status is Status.COMPLETED, (await h.run_row(second))["stats"]
        assert second.stats["deleted"] == 1
        names = sorted(n.name for n in await h.store.size_names(h.cloud))
        assert names == ["secret-tier", "ssd"]  # private types too


async def test_credential_without_the_types_rule_fails_on_the_volume_type_listing(
    store: Store, tmp_path: Path
) -> None:
    async with open_harness(world(), store, tmp_path, prepare=add_seven_rule_credential) as h:
        clouds = yaml.safe_load(h.clouds_yaml.read_text())
        clouds["clouds"]["seven"] = {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": f"{h.base_url}/v3",
                "application_credential_id": "7" * 32,
                "application_credential_secret": "seven-secret",
            },
        }
        h.clouds_yaml.write_text(yaml.safe_dump(clouds))
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("seven", include_octavia=True))
        run = await h.run_row(outcome)
        assert outcome.status is Status.FAILED
        (error,) = run["stats"]["errors"]
        assert error.startswith(f"listing the size names of {h.cloud}: listing the volume types: ")
        assert "401" in error
        assert outcome.stats["created"] == 6  # no type lost its completeness


async def test_an_api_refusing_the_credential_costs_its_type(store: Store, tmp_path: Path) -> None:
    def cinder_without_service_type(state: FakeCloudState) -> None:
        state.faults.no_service_type.add("block-storage")

    async with open_harness(world(), store, tmp_path, prepare=cinder_without_service_type) as h:
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("tally-read-only"))
        errors = (await h.run_row(outcome))["stats"]["errors"]
        assert any(e.startswith("enumerating volume: ") and "401" in e for e in errors)
        assert outcome.status is Status.FAILED
