"""Each fault's effect is visible on the bus (and only there)."""

from __future__ import annotations

from collections import Counter, defaultdict

import orjson
import pytest
from simmonth_cache import july_with

from tally.collector import Mapped, Skipped, map_notification
from tally.collector.internals import Unparseable
from tally.core import Category, category_of
from tally.simulator import FaultError, Month, parse_faults
from tally.simulator.notifications import tally_type


def _billable_ids(month: Month) -> Counter[str]:
    return Counter(n.message_id for n in month.notifications if n.billable)


def test_duplicates_resend_the_same_message_id_about_ten_later(july: Month, july_faulty: Month) -> None:
    positions: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(july_faulty.notifications):
        if n.billable:
            positions[n.message_id].append(i)
    twice = {mid: p for mid, p in positions.items() if len(p) == 2}
    assert 40 <= len(twice) <= 130  # 1 in 20 of ~1,650
    lines = {n.message_id: n.to_line() for n in july_faulty.notifications if n.message_id in twice}
    assert all(july_faulty.notifications[p[1]].to_line() == lines[mid] for mid, p in twice.items())
    assert all(8 <= p[1] - p[0] <= 40 for p in twice.values())
    assert max(_billable_ids(july).values()) == 1


def test_held_back_ones_are_only_in_the_held_back_list(july_faulty: Month) -> None:
    held = {n.message_id for n in july_faulty.held_back}
    assert 40 <= len(held) <= 130
    assert held.isdisjoint(n.message_id for n in july_faulty.notifications)
    assert all(n.billable for n in july_faulty.held_back)


@pytest.mark.parametrize(
    ("fault", "category"), [("missing-delete", Category.DELETE), ("lost-update", Category.UPDATE)]
)
def test_missing_deletes_and_lost_updates_are_never_published(
    july: Month, fault: str, category: Category
) -> None:
    faulty = july_with(fault)

    def of(month: Month) -> set[str]:
        return {
            n.message_id
            for n in (*month.notifications, *month.held_back)
            if n.billable and category_of(tally_type(n.event_type)) is category
        }

    lost = of(july) - of(faulty)
    assert 0.02 < len(lost) / len(of(july)) < 0.1
    assert of(faulty) <= of(july)
    touched = {r.resource_id for r in faulty.oracle.resources if fault in r.faults}
    assert {n.resource_id for n in july.notifications if n.message_id in lost} <= touched


def test_missing_create_drops_the_pre_period_history(july: Month) -> None:
    before = [n for n in july.notifications if n.timestamp < july.period_from]
    assert any(n.event_type == "compute.instance.create.end" for n in before)
    faulty = july_with("missing-create")
    assert all(n.timestamp >= july.period_from for n in faulty.notifications)
    marked = [r for r in faulty.oracle.resources if "missing-create" in r.faults]
    assert {r.resource_type for r in marked} >= {"instance", "volume", "floating_ip"}
    assert all(r.workload == "classic" for r in marked)


def test_pre_existing_history_is_published_first(july: Month) -> None:
    faulty = july_with("pre-existing")
    first = faulty.notifications[0]
    assert first.timestamp < faulty.period_from
    assert any("pre-existing" in r.faults for r in faulty.oracle.resources)


def test_reordering_publishes_a_first_transition_after_the_second(july_faulty: Month) -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    stamps: dict[str, list[object]] = defaultdict(list)
    for n in july_faulty.notifications:
        if n.billable:
            seen[n.resource_id].append(n.message_id)
            stamps[n.resource_id].append(n.timestamp)
    swapped = [rid for rid, ts in stamps.items() if len(ts) >= 2 and ts[0] > ts[1]]
    marked = {r.resource_id for r in july_faulty.oracle.resources if "reordering" in r.faults}
    assert swapped
    assert set(swapped) <= marked


def test_refused_shapes_reach_the_collector_as_refusals(july_faulty: Month) -> None:
    twins = [n for n in july_faulty.notifications if n.shape]
    shapes = Counter(n.shape for n in twins)
    assert shapes["versioned"] > shapes["truncated"] > 0
    assert shapes["oversized"] >= 1
    for n in twins:
        body = n.amqp_body()
        outcome = map_notification(body, cloud="os-sim")
        assert not isinstance(outcome, Mapped)
        if n.shape == "oversized":
            assert len(body) > 1024 * 1024
            assert isinstance(outcome, Unparseable)
        elif n.shape == "truncated":
            assert isinstance(outcome, Unparseable)
        else:
            assert isinstance(outcome, Skipped)
            inner = orjson.loads(orjson.loads(body)["oslo.message"])
            assert not inner["event_type"].startswith("compute.")
            assert "nova_object.data" in inner["payload"]


def test_every_billable_notification_maps_to_an_event(july: Month) -> None:
    outcomes = [map_notification(n.amqp_body(), cloud="os-sim") for n in july.notifications if n.billable]
    assert all(isinstance(o, Mapped) for o in outcomes)


def test_envelopes_use_the_services_exchanges(july: Month) -> None:
    pairs = {(n.event_type.split(".")[0], n.exchange) for n in july.notifications}
    assert ("compute", "nova") in pairs
    assert ("volume", "openstack") in pairs
    assert ("floatingip", "neutron") in pairs
    assert ("image", "glance") in pairs
    assert ("octavia", "octavia") in pairs
    assert {n.routing_key for n in july.notifications} == {"notifications.info"}
    body = orjson.loads(july.notifications[0].to_line())["body"]
    assert body["oslo.version"] == "2.0"
    assert isinstance(body["oslo.message"], str)


def test_a_month_uses_noise_and_mapped_types_in_the_reference_proportions(july: Month) -> None:
    types = {n.event_type for n in july.notifications}
    billable = {n.event_type for n in july.notifications if n.billable}
    assert len(billable) >= 20
    assert len(types - billable) >= 60
    assert 1200 <= july.billable <= 2500
    assert 10_000 <= len(july.notifications) <= 22_000


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("duplicates,bogus", "unknown fault 'bogus'"),
        ("pre-existing,missing-create", "cannot be combined"),
    ],
)
def test_bad_fault_sets_are_refused_in_one_line(spec: str, message: str) -> None:
    with pytest.raises(FaultError, match=message) as info:
        parse_faults(spec)
    assert "\n" not in str(info.value)


def test_fault_names_parse_from_text_and_iterables() -> None:
    assert parse_faults(" duplicates , held-back ") == {"duplicates", "held-back"}
    assert parse_faults(["lost-update"]) == {"lost-update"}
    assert parse_faults("") == frozenset()
