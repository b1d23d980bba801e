"""The diff: by key in sorted order, one decision per key, deterministic whatever the input order."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from test_rules import POLL, observed, row, s

from tally.reconcile import Deferral, DeletedResource, Kind, Observation, Reason, diff
from tally.store import SyncRow

TYPES = frozenset({"instance", "volume"})


def obs(
    *resources: object, deleted: tuple[DeletedResource, ...] = (), incomplete: frozenset[str] = frozenset()
):
    return Observation(tuple(resources), deleted, TYPES, incomplete)  # type: ignore[arg-type]


def test_diff_by_key_in_sorted_order() -> None:
    plan = diff(obs(observed(resource_id="b"), observed(resource_id="a")), [], poll_at=POLL, settle_s=0)
    assert [c.resource_id for c in plan.corrections] == ["a", "b"]
    assert all(c.kind is Kind.CREATE and c.reason is Reason.MISSED_CREATE for c in plan.corrections)


def test_diff_absence_only_for_complete_types() -> None:
    rows = [row(resource_id="gone")]
    assert [c.reason for c in diff(obs(), rows, poll_at=POLL, settle_s=0).corrections] == [Reason.ABSENT]
    incomplete = diff(obs(incomplete=frozenset({"instance"})), rows, poll_at=POLL, settle_s=0)
    assert incomplete.corrections == ()
    other = [row(resource_id="lb", resource_type="loadbalancer")]  # a type this run did not enumerate
    assert diff(obs(), other, poll_at=POLL, settle_s=0).corrections == ()


def test_diff_reported_delete_is_not_an_absence() -> None:
    gone = DeletedResource("instance", "r1", "p1", s(-30))
    plan = diff(obs(deleted=(gone,)), [row()], poll_at=POLL, settle_s=60)
    assert plan.corrections == () and plan.deferred[Deferral.RECENT] == 1


def test_diff_deletion_after_the_run_is_left_to_the_absence_pass() -> None:
    later = DeletedResource("instance", "r1", "p1", s(90))
    plan = diff(obs(deleted=(later,)), [row()], poll_at=POLL, settle_s=0)
    (only,) = plan.corrections
    assert only.reason is Reason.ABSENT and only.timestamp == POLL


def test_diff_counts_a_correction_once() -> None:
    plan = diff(obs(observed(transitional=True, changed=s(-1))), [], poll_at=POLL, settle_s=60)
    assert plan.deferred == {Deferral.TRANSITIONAL: 1, Deferral.RECENT: 0}
    unchanged = diff(obs(observed(transitional=True)), [row()], poll_at=POLL, settle_s=60)
    assert unchanged.deferred == {Deferral.TRANSITIONAL: 0, Deferral.RECENT: 0}  # no correction, no count


def test_diff_names_each_deferred_correction_by_resource() -> None:
    rows = [row(s(-10), resource_id="stale"), row(resource_id="moving")]
    plan = diff(
        obs(
            observed(resource_id="new", transitional=True),
            observed(resource_id="moving", state="SHUTOFF", changed=s(-5)),
        ),
        rows,
        poll_at=POLL,
        settle_s=60,
    )
    assert [(d.resource_id, d.kind, d.reason) for d in plan.deferred_corrections] == [
        ("moving", Kind.UPDATE, Deferral.RECENT),
        ("new", Kind.CREATE, Deferral.TRANSITIONAL),
        ("stale", Kind.DELETE, Deferral.RECENT),
    ]
    assert sum(plan.deferred.values()) == len(plan.deferred_corrections)


keys = st.sampled_from([f"r{i}" for i in range(6)])


@st.composite
def scenario(draw: st.DrawFn) -> tuple[Observation, list]:
    live_ids = draw(st.sets(keys))
    row_ids = draw(st.sets(keys))
    gone_ids = draw(st.sets(keys))
    live = [
        observed(
            resource_id=i,
            state=draw(st.sampled_from(["active", "shutoff"])),
            transitional=draw(st.booleans()),
            changed=s(draw(st.integers(-300, 300))),
        )
        for i in sorted(live_ids)
    ]
    rows = [
        row(s(draw(st.integers(-300, 300))), resource_id=i, deleted=draw(st.booleans()))
        for i in sorted(row_ids)
    ]
    gone = tuple(
        DeletedResource("instance", i, "p1", s(draw(st.integers(-300, 300)))) for i in sorted(gone_ids)
    )
    return obs(*live, deleted=gone), rows


@settings(max_examples=200, deadline=None)
@given(scenario(), st.randoms(), st.integers(0, 120))
def test_diff_property_order_free_and_one_decision_per_key(
    data: tuple[Observation, list], rnd, settle: int
) -> None:
    observation, rows = data
    plan = diff(observation, rows, poll_at=POLL, settle_s=settle)
    shuffled_rows = list(rows)
    rnd.shuffle(shuffled_rows)
    resources = list(observation.resources)
    rnd.shuffle(resources)
    again = diff(obs(*resources, deleted=observation.deleted), shuffled_rows, poll_at=POLL, settle_s=settle)
    assert again == plan
    ids = [c.resource_id for c in plan.corrections]
    assert ids == sorted(set(ids))  # sorted, at most one correction per key
    keys_seen = {r.key.resource_id for r in rows} | {o.resource_id for o in observation.resources}
    keys_seen |= {d.resource_id for d in observation.deleted}
    assert len(ids) + sum(plan.deferred.values()) <= len(keys_seen)
    by_id = {r.key.resource_id: r for r in rows}
    for c in plan.corrections:
        current = by_id.get(c.resource_id)
        if c.kind is Kind.DELETE:
            assert current is not None and current.is_live  # the first delete stands
        if current is not None:
            assert c.timestamp >= current.last_event_at  # never behind the row's newest event
        if c.kind in (Kind.UPDATE,) or c.reason is Reason.ABSENT:
            assert c.timestamp in (POLL, current.last_event_at + timedelta(microseconds=1))  # type: ignore[union-attr]
        if settle == 0:
            continue
        assert not (current is not None and POLL - timedelta(seconds=settle) <= current.last_event_at)


@settings(max_examples=200, deadline=None)
@given(scenario(), st.integers(0, 120))
def test_diff_of_the_slim_rows_a_run_reads_equals_the_diff_of_full_rows(
    data: tuple[Observation, list], settle: int
) -> None:
    # A run reads the store's SyncRow slice (no payload, no size for a deleted row); it must decide
    # exactly what the full rows decide.
    observation, rows = data
    slim = [
        SyncRow(
            r.key.resource_type,
            r.key.resource_id,
            r.project_id,
            r.state,
            r.size if r.is_live else None,
            r.last_event_at,
            r.is_live,
        )
        for r in rows
    ]
    assert diff(observation, slim, poll_at=POLL, settle_s=settle) == diff(
        observation, rows, poll_at=POLL, settle_s=settle
    )
