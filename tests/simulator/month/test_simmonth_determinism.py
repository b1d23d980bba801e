"""Same arguments, same bytes; another seed, another month; faults change the bus only."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from simmonth_cache import july_with

from tally.simulator import FAULTS, Month, generate_month, generate_world, write_month

SMALL = {"scale": 0.2, "days": 6}


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    faults = "duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"
    first = write_month(generate_month(5, "2026-03", faults=faults, **SMALL), tmp_path / "a")
    write_month(generate_month(5, "2026-03", faults=faults, **SMALL), tmp_path / "b")
    assert set(first) == {"notifications.jsonl", "events.jsonl", "oracle.json", "held-back.jsonl"}
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b
    assert all(len(content) > 0 for content in a.values())


def test_another_seed_or_month_gives_another_month(tmp_path: Path) -> None:
    base = generate_month(5, "2026-03", **SMALL)
    other_seed = generate_month(6, "2026-03", **SMALL)
    other_period = generate_month(5, "2026-04", **SMALL)
    for other in (other_seed, other_period):
        assert other.world.to_json() != base.world.to_json()
        assert other.oracle.to_json() != base.oracle.to_json()
        assert [n.message_id for n in other.notifications] != [n.message_id for n in base.notifications]


def test_the_cloud_salts_identifiers_but_not_the_shape() -> None:
    a = generate_month(5, "2026-03", cloud="os-sim", **SMALL)
    b = generate_month(5, "2026-03", cloud="os-other", **SMALL)
    assert {r.resource_id for r in a.world.resources}.isdisjoint({r.resource_id for r in b.world.resources})
    assert [n.event_type for n in a.notifications] == [n.event_type for n in b.notifications]
    assert [n.timestamp for n in a.notifications] == [n.timestamp for n in b.notifications]


def test_generate_world_is_the_month_world() -> None:
    assert (
        generate_world(5, "2026-03", scale=0.2, days=6).to_json()
        == generate_month(5, "2026-03", **SMALL).world.to_json()
    )


def _oracle_without_fault_marks(month: Month) -> dict[str, object]:
    doc = orjson.loads(month.oracle.to_json())
    doc.pop("faults")
    for r in doc["resources"]:
        r.pop("faults")
    return doc


@pytest.mark.parametrize("fault", [f for f in FAULTS])
def test_a_fault_changes_the_bus_only(july: Month, fault: str) -> None:
    faulty = july_with(fault)
    assert faulty.world.to_json() == july.world.to_json()
    assert _oracle_without_fault_marks(faulty) == _oracle_without_fault_marks(july)
    assert faulty.oracle.faults == (fault,)
    if fault != "pre-existing":
        assert [n.to_line() for n in faulty.notifications] != [n.to_line() for n in july.notifications]
    # Whatever a fault drops, moves or adds, every notification it publishes is one of the month's
    # own notifications (same line) or a twin/duplicate of one.
    own = {n.message_id: n.to_line() for n in july.notifications}
    for n in faulty.notifications:
        if n.shape:
            continue
        assert own[n.message_id] == n.to_line()


def test_faults_do_not_change_each_others_picks(july_faulty: Month) -> None:
    alone = july_with("held-back")
    held_alone = [n.message_id for n in alone.held_back]
    held_with_others = [n.message_id for n in july_faulty.held_back]
    # The same picks; those another fault already dropped are simply not there to hold.
    assert set(held_with_others) <= set(held_alone)
    published = {n.message_id for n in july_faulty.notifications}
    assert published.isdisjoint(set(held_alone) - set(held_with_others))
    assert len(held_alone) - len(held_with_others) <= 10


def test_small_months_have_every_workload() -> None:
    month = generate_month(2, "2026-02", scale=0.2)
    assert {t.workload for t in month.tenants} == {"classic", "gardener", "ci"}
    assert {t.gardener_project for t in month.tenants} == {None, "alpha", "beta"}
    assert {r.workload for r in month.oracle.resources} == {"classic", "gardener", "ci"}
