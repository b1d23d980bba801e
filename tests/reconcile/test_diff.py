"""The diff: by key in sorted order, at most one correction of each kind per key, deterministic whatever
the input order."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from test_rules import POLL, observed, row, s

from tally.reconcile import DeletedResource, Observation
from tally.reconcile.rules import Deferral, Kind, Reason, diff
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


def test_diff_books_a_whole_life_the_bus_missed_from_launch_to_termination() -> None:
    size = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "ci"}
    life = DeletedResource("instance", "ci-1", "p1", s(-1200), created_at=s(-2400), state="active", size=size)
    plan = diff(obs(deleted=(life,)), [], poll_at=POLL, settle_s=60)
    start, end = plan.corrections
    assert (start.kind, start.reason, start.timestamp) == (Kind.CREATE, Reason.MISSED_CREATE, s(-2400))
    assert (start.project_id, start.state, start.size) == ("p1", "active", size)
    assert (end.kind, end.reason, end.timestamp) == (Kind.DELETE, Reason.REPORTED_DELETE, s(-1200))
    never_launched = DeletedResource("instance", "ci-2", "p1", s(-1200))
    assert diff(obs(deleted=(never_launched,)), [], poll_at=POLL, settle_s=60).corrections == ()


def test_diff_defers_a_whole_life_deleted_inside_the_window_as_two_corrections() -> None:
    life = DeletedResource("instance", "ci-1", "p1", s(-20), created_at=s(-900), state="active")
    plan = diff(obs(deleted=(life,)), [], poll_at=POLL, settle_s=60)
    assert plan.corrections == ()
    assert [(d.kind, d.reason) for d in plan.deferred_corrections] == [
        (Kind.CREATE, Deferral.RECENT),
        (Kind.DELETE, Deferral.RECENT),
    ]
    assert plan.deferred[Deferral.RECENT] == 2


def test_diff_gives_a_history_without_a_create_its_create_and_its_drift() -> None:
    updated_first = row(s(-3600), state="shutoff", size={}, created_at=None, first_event_at=s(-3600))
    listed = observed(state="shutoff", size={"vcpus": 1}, created=s(-90000))
    missing, drifted = diff(obs(listed), [updated_first], poll_at=POLL, settle_s=60).corrections
    # behind the oldest event on purpose: the fold orders it first and the history keeps its say
    assert (missing.kind, missing.reason, missing.timestamp) == (Kind.CREATE, Reason.MISSED_CREATE, s(-90000))
    assert (missing.state, missing.size) == ("shutoff", {"vcpus": 1})
    assert (drifted.kind, drifted.timestamp) == (Kind.UPDATE, POLL)
    # where the platform defines the facts it creates a resource with, the create carries those
    launched = observed(state="shutoff", size={"vcpus": 1}, created=s(-90000))
    launched = replace(launched, created_state="active", created_size={"vcpus": 0})
    (created, _) = diff(obs(launched), [updated_first], poll_at=POLL, settle_s=60).corrections
    assert (created.state, created.size) == ("active", {"vcpus": 0})
    recent = row(s(-10), created_at=None, first_event_at=s(-3600))
    plan = diff(obs(observed(created=s(-90000))), [recent], poll_at=POLL, settle_s=60)
    assert plan.corrections == ()
    assert [(d.kind, d.reason) for d in plan.deferred_corrections] == [(Kind.CREATE, Deferral.RECENT)]


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
            created=draw(st.sampled_from([s(-9000), s(-7200), None])),
        )
        for i in sorted(live_ids)
    ]
    rows = [
        row(
            s(draw(st.integers(-300, 300))),
            resource_id=i,
            deleted=draw(st.booleans()),
            created_at=draw(st.sampled_from([s(-7200), None])),
        )
        for i in sorted(row_ids)
    ]
    gone = []
    for i in sorted(gone_ids):
        end = draw(st.integers(-300, 300))
        launched = draw(st.one_of(st.none(), st.integers(-900, end)))
        start = None if launched is None else s(launched)
        gone.append(DeletedResource("instance", i, "p1", s(end), created_at=start, state=start and "active"))
    return obs(*live, deleted=tuple(gone)), rows


@settings(max_examples=200, deadline=None)
@given(scenario(), st.randoms(), st.integers(0, 120))
def test_diff_property_order_free_and_one_decision_of_each_kind_per_key(
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
    assert ids == sorted(ids)  # in key order
    decided = [(c.resource_id, c.kind) for c in plan.corrections]
    decided += [(d.resource_id, d.kind) for d in plan.deferred_corrections]
    assert len(decided) == len(set(decided))  # at most one correction of each kind per key
    assert sum(plan.deferred.values()) == len(plan.deferred_corrections)
    by_id = {r.key.resource_id: r for r in rows}
    gone = {d.resource_id: d for d in observation.deleted}
    for c in plan.corrections:
        current = by_id.get(c.resource_id)
        if current is None and c.resource_id not in {o.resource_id for o in observation.resources}:
            # a whole life: launched, from its launch to the deletion nova reports
            life = gone[c.resource_id]
            assert life.created_at is not None
            assert c.timestamp == (life.created_at if c.kind is Kind.CREATE else life.deleted_at)
            continue
        if c.kind is Kind.DELETE:
            assert current is not None and current.is_live  # the first delete stands
        missing_create = current is not None and current.is_live and c.kind is Kind.CREATE
        if missing_create:
            assert current is not None and current.created_at is None
            assert c.timestamp < current.first_event_at  # ordered first, on purpose
            continue
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
            r.created_at,
            r.first_event_at,
        )
        for r in rows
    ]
    assert diff(observation, slim, poll_at=POLL, settle_s=settle) == diff(
        observation, rows, poll_at=POLL, settle_s=settle
    )
