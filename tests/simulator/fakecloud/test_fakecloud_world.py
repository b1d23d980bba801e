"""The world model: timelines evaluated at an instant, validation, and the JSON document."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fakecloud_support import T0, T1, small_world
from hypothesis import given
from hypothesis import strategies as st

from tally.simulator import World, WorldBuilder, WorldError

H = timedelta(hours=1)


def test_a_timeline_answers_segment_and_updated_at_by_instant() -> None:
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    p = b.project("p")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vm = b.instance(p, f, created_at=T0 + H, building=timedelta(seconds=40))
    vm.change(T0 + 5 * H, state="shutoff")
    vm.transition(T0 + 6 * H, T0 + 6 * H + timedelta(seconds=5), "deleting")
    vm.terminate(T0 + 6 * H + timedelta(seconds=5))
    r = b.build().of_type("instance")[0]
    assert r.segment_at(T0) is None
    first = r.segment_at(T0 + H)
    assert first is not None and first.transition == "building"
    assert r.updated_at(T0 + H + timedelta(seconds=1)) is None  # never updated yet
    rest = r.segment_at(T0 + 2 * H)
    assert rest is not None and rest.state == "active" and rest.transition is None
    assert r.updated_at(T0 + 2 * H) == T0 + H + timedelta(seconds=40)
    off = r.segment_at(T0 + 6 * H + timedelta(seconds=1))
    assert off is not None and off.state == "shutoff" and off.transition == "deleting"
    assert r.segment_at(T0 + 7 * H) is None
    assert r.updated_at(T0 + 7 * H) == r.terminated_at == T0 + 6 * H + timedelta(seconds=5)
    assert r.launched_at == T0 + H + timedelta(seconds=40)


def test_json_round_trip_is_byte_identical() -> None:
    world = small_world()
    text = world.to_json()
    again = World.from_json(text)
    assert again.to_json() == text
    assert len(again.resources) == len(world.resources)


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        (b"nope", "not a world document"),
        (b'{"format": 9}', "format 9"),
    ],
)
def test_from_json_refuses_what_it_cannot_read(doc: bytes, reason: str) -> None:
    with pytest.raises(WorldError, match=reason):
        World.from_json(doc)


def test_validation_names_the_resource_and_the_rule() -> None:
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    p = b.project("p")
    b.add("instance", p, created_at=T0, state="running", flavor_id="1")
    b.flavor("m1", vcpus=1, ram_mb=1, disk_gb=1)
    with pytest.raises(WorldError, match=r"instance .*: state 'running' is not one of"):
        b.build()
    b2 = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    b2.add("volume", "0" * 32, created_at=T0, state="available", size_gb=1, volume_type_id="x")
    with pytest.raises(WorldError, match="is not a project of the world"):
        b2.build()
    b4 = WorldBuilder(cloud="c", period_from=T0, period_to=T1)
    b4.project("x", project_id="nothex")
    with pytest.raises(WorldError, match="not 32 lower-case hex"):
        b4.build()
    with pytest.raises(WorldError, match=r"change at .* before"):
        b3 = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
        b3.floating_ip(b3.project("p"), address="1.2.3.4", created_at=T0 + H).change(T0, address="5.6.7.8")


def test_position_after_bisects_to_the_marker() -> None:
    world = small_world()
    ids = [r.resource_id for r in world.of_type("volume")]
    assert ids == sorted(ids)
    assert world.position_after("volume", ids[0]) == 1
    assert world.position_after("volume", ids[-1]) == len(ids)
    assert world.position_after("volume", "ffffffff-unknown") is None


@given(
    changes=st.lists(st.integers(min_value=1, max_value=10_000), min_size=0, max_size=12, unique=True),
    probe=st.integers(min_value=-10, max_value=20_000),
)
def test_segment_at_agrees_with_a_linear_scan(changes: list[int], probe: int) -> None:
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    p = b.project("p")
    ips = b.floating_ip(p, address="a0", created_at=T0)
    for n, minute in enumerate(sorted(changes)):
        ips.change(T0 + timedelta(minutes=minute), address=f"a{n + 1}")
    r = b.build().of_type("floating_ip")[0]
    at = T0 + timedelta(minutes=probe)
    expected = next((s for s in reversed(r.timeline) if s.contains(at)), None)
    assert r.segment_at(at) == expected
