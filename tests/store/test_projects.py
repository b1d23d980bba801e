"""Projects, relations with validity windows, and their rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tally.store import Conflict, RuleViolation, Store

pytestmark = pytest.mark.anyio


async def test_project_crud(store: Store) -> None:
    created = await store.create_project(
        platform="openstack", cloud="os-dev", external_id="abc", name="Alpha"
    )
    assert await store.get_project(created.id) == created
    assert await store.find_project("os-dev", "abc") == created
    updated = await store.update_project(created.id, name="Beta", metadata={"team": "x"})
    assert updated is not None and (updated.name, updated.metadata) == ("Beta", {"team": "x"})
    assert await store.get_project("not-a-uuid") is None
    assert await store.update_project("00000000-0000-0000-0000-000000000000", name="n") is None


async def test_duplicate_project_conflicts(store: Store) -> None:
    await store.create_project(platform="openstack", cloud="os-dev", external_id="abc")
    with pytest.raises(Conflict, match="external_id 'abc'"):
        await store.create_project(platform="openstack", cloud="os-dev", external_id="abc")


async def test_virtual_platform_rule(store: Store) -> None:
    await store.create_project(platform="meta", cloud="meta", external_id="m1")
    with pytest.raises(RuleViolation, match="virtual platform"):
        await store.create_project(platform="openstack", cloud="meta", external_id="m2")


async def test_projects_are_paged_by_id(store: Store) -> None:
    ids = sorted(
        [
            (await store.create_project(platform="openstack", cloud="c", external_id=str(i))).id
            for i in range(5)
        ]
    )
    first = await store.list_projects(limit=3)
    assert [p.id for p in first.items] == ids[:3] and first.next_key == ids[2]
    rest = await store.list_projects(limit=3, after=first.next_key)
    assert [p.id for p in rest.items] == ids[3:] and rest.next_key is None
    assert (await store.list_projects(cloud="other")).items == []


async def test_relations_with_validity(store: Store) -> None:
    a = await store.create_project(platform="openstack", cloud="c", external_id="a")
    b = await store.create_project(platform="openstack", cloud="c", external_id="b")
    jan, feb, mar = (datetime(2026, m, 1, tzinfo=UTC) for m in (1, 2, 3))
    rel = await store.create_relation(source_id=a.id, target_id=b.id, relation_type="owns", valid_from=jan)
    with pytest.raises(Conflict, match="active 'owns' relation"):
        await store.create_relation(source_id=a.id, target_id=b.id, relation_type="owns")
    with pytest.raises(RuleViolation, match="two different projects"):
        await store.create_relation(source_id=a.id, target_id=a.id, relation_type="owns")
    with pytest.raises(RuleViolation, match="target_id"):
        await store.create_relation(
            source_id=a.id, target_id="00000000-0000-0000-0000-000000000000", relation_type="owns"
        )
    ended = await store.end_relation(rel.id, feb)
    assert ended is not None and ended.valid_to == feb
    assert [r.id for r in await store.list_relations(b.id, at=jan)] == [rel.id]
    assert await store.list_relations(b.id, at=mar) == []
    assert await store.relations_at() == []
    again = await store.create_relation(
        source_id=a.id, target_id=b.id, relation_type="owns", metadata={"k": 1}
    )
    assert [r.id for r in await store.relations_at(relation_type="owns")] == [again.id]
    assert len(await store.list_relations(a.id)) == 2
    patched = await store.update_relation(again.id, metadata={"k": 2})
    assert patched is not None and patched.metadata == {"k": 2} and patched.valid_to is None


async def test_relations_between_a_window_include_those_that_ended_or_began_inside(store: Store) -> None:
    p = await store.create_project(platform="openstack", cloud="os-dev", external_id="p")
    a = await store.create_project(platform="meta", cloud="meta", external_id="a")
    b = await store.create_project(platform="meta", cloud="meta", external_id="b")
    moved = datetime(2026, 3, 10, tzinfo=UTC)
    first = await store.create_relation(
        source_id=p.id,
        target_id=a.id,
        relation_type="billing_account",
        valid_from=datetime(2026, 1, 1, tzinfo=UTC),
    )
    await store.end_relation(first.id, moved)
    await store.create_relation(
        source_id=p.id, target_id=b.id, relation_type="billing_account", valid_from=moved
    )
    await store.create_relation(source_id=p.id, target_id=b.id, relation_type="other")
    march = await store.relations_between(
        datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC), relation_type="billing_account"
    )
    assert [(r.target_id, r.valid_to) for r in march] == [(a.id, moved), (b.id, None)]
    april = await store.relations_between(
        datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC), relation_type="billing_account"
    )
    assert [r.target_id for r in april] == [b.id]
