"""Migrations: up, down, status, and the size-schema seeds with their rollback rule (seed 000)."""

from __future__ import annotations

from typing import Any

import pytest

from tally.store import SchemaStatus, Store, open_store
from tally.store.internals import MigrationError

pytestmark = pytest.mark.anyio

LB_SEED: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["listeners", "pools"],
    "properties": {
        "listeners": {"type": "integer", "minimum": 0},
        "pools": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": True,
    "x-tally-seed": 6,
}


async def test_fresh_store_is_behind_until_migrated(store_url: str) -> None:
    async with open_store(store_url) as store:
        before = await store.schema_status()
        assert before.current == 0 and before.behind
        applied = await store.migrate_up()
        assert applied == list(range(1, before.latest + 1))
        assert await store.schema_status() == SchemaStatus(before.latest, before.latest)
        assert await store.migrate_up() == []


async def test_seeds_register_five_openstack_types(store: Store) -> None:
    types = {(t.platform, t.resource_type): t for t in await store.list_resource_types()}
    assert set(types) == {
        ("openstack", name) for name in ("instance", "volume", "floating_ip", "image", "loadbalancer")
    }
    assert types["openstack", "loadbalancer"].size_schema == LB_SEED
    assert types["openstack", "instance"].size_schema["properties"]["vcpus"] == {
        "type": "integer",
        "minimum": 1,
    }


async def test_down_to_zero_and_up_again(store: Store) -> None:
    latest = (await store.schema_status()).latest
    assert await store.migrate_down(0) == list(range(latest, 0, -1))
    assert (await store.schema_status()).current == 0
    assert await store.migrate_up() == list(range(1, latest + 1))
    assert len(await store.list_resource_types()) == 5


async def test_down_to_unknown_version_is_refused(store: Store) -> None:
    with pytest.raises(MigrationError, match="no migration version 99"):
        await store.migrate_down(99)


async def test_rollback_below_6_deletes_the_untouched_loadbalancer_seed(store: Store) -> None:
    await store.migrate_down(5)
    assert await store.get_resource_type("openstack", "loadbalancer") is None
    assert await store.get_resource_type("openstack", "instance") is not None
    assert (await store.schema_status()).current == 5


async def test_rollback_below_6_keeps_an_edited_loadbalancer_schema(store: Store) -> None:
    edited = {**LB_SEED, "properties": {**LB_SEED["properties"], "members": {"type": "integer"}}}
    await store.put_resource_type("openstack", "loadbalancer", edited)
    await store.migrate_down(5)
    kept = await store.get_resource_type("openstack", "loadbalancer")
    assert kept is not None and kept.size_schema == edited


async def test_rollback_below_6_keeps_the_seed_without_its_marker(store: Store) -> None:
    unmarked = {k: v for k, v in LB_SEED.items() if k != "x-tally-seed"}
    await store.put_resource_type("openstack", "loadbalancer", unmarked)
    await store.migrate_down(5)
    kept = await store.get_resource_type("openstack", "loadbalancer")
    assert kept is not None and kept.size_schema == unmarked


async def test_rollback_deletes_a_reput_seed_with_other_key_order(store: Store) -> None:
    reordered = dict(reversed(list(LB_SEED.items())))
    await store.put_resource_type("openstack", "loadbalancer", reordered)
    await store.migrate_down(5)
    assert await store.get_resource_type("openstack", "loadbalancer") is None


async def test_seed_leaves_an_operators_row_alone_and_succeeds(store: Store) -> None:
    await store.migrate_down(5)
    operator = {"type": "object", "required": ["listeners"]}
    await store.put_resource_type("openstack", "loadbalancer", operator)
    latest = (await store.schema_status()).latest
    assert await store.migrate_up() == list(range(6, latest + 1))
    kept = await store.get_resource_type("openstack", "loadbalancer")
    assert kept is not None and kept.size_schema == operator


async def test_seed_0002_rollback_keeps_edited_rows(store: Store) -> None:
    await store.put_resource_type("openstack", "volume", {"type": "object"})
    await store.migrate_down(1)
    remaining = {t.resource_type for t in await store.list_resource_types()}
    assert remaining == {"volume"}
