"""An image's life as glance notifies it, mapped and folded: when it starts, and at which size.

The decision (docs/reconciliation.md, "When an image starts"): glance's create starts the image at
size 0, the upload changes its size, the delete ends it; a missed create leaves the upload to start it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.collector import Mapped, map_notification
from tally.core import Interval, StoredEvent, lifecycle, parse_event

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
IMAGE = "1bea47ed-0000-4000-8000-000000000004"
GIB = 2**30


def _glance(event_type: str, at: datetime, status: str, size: int | None, n: int) -> bytes:
    inner: dict[str, Any] = {
        "message_id": f"7f0c0000-0000-4000-8000-{n:012d}",
        "publisher_id": "image.localhost",
        "event_type": event_type,
        "priority": "INFO",
        "payload": {"id": IMAGE, "owner": "5ef7aa", "status": status, "size": size},
        "timestamp": at.strftime("%Y-%m-%d %H:%M:%S.%f"),
        "_context_project_id": "5ef7aa",
    }
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


CREATE = _glance("image.create", T0, "queued", None, 1)
UPLOAD = _glance("image.upload", T0 + timedelta(seconds=90), "active", 2 * GIB, 2)
DELETE = _glance("image.delete", T0 + timedelta(hours=5), "deleted", 2 * GIB, 3)


def _fold(bodies: list[bytes]) -> tuple[Interval, ...]:
    stored = []
    for n, body in enumerate(bodies):
        outcome = map_notification(body, cloud="os-dev")
        assert isinstance(outcome, Mapped), outcome
        stored.append(StoredEvent(parse_event(outcome.event), T0 + timedelta(days=1, seconds=n)))
    return lifecycle(stored).intervals


def _spans(intervals: tuple[Interval, ...]) -> list[tuple[datetime, datetime | None, Any]]:
    return [(i.start, i.end, dict(i.size)) for i in intervals]


def test_queued_then_active_then_deleted_bills_0_until_the_upload() -> None:
    assert _spans(_fold([CREATE, UPLOAD, DELETE])) == [
        (T0, T0 + timedelta(seconds=90), {"size_gb": 0}),
        (T0 + timedelta(seconds=90), T0 + timedelta(hours=5), {"size_gb": 2}),
    ]


def test_queued_then_deleted_is_an_image_at_size_0() -> None:
    assert _spans(_fold([CREATE, DELETE])) == [(T0, T0 + timedelta(hours=5), {"size_gb": 0})]


def test_a_missed_create_leaves_the_upload_to_start_the_image() -> None:
    assert _spans(_fold([UPLOAD, DELETE])) == [
        (T0 + timedelta(seconds=90), T0 + timedelta(hours=5), {"size_gb": 2})
    ]


def test_a_missed_upload_keeps_the_image_at_size_0() -> None:
    intervals = _fold([CREATE])
    assert _spans(intervals) == [(T0, None, {"size_gb": 0})] and intervals[0].state == "active"


@settings(max_examples=60, deadline=None)
@given(
    st.permutations([CREATE, UPLOAD, DELETE]).flatmap(
        lambda order: st.lists(st.sampled_from(order), max_size=4).map(lambda extra: [*order, *extra])
    )
)
def test_any_arrival_order_and_duplication_folds_to_the_same_life(arrivals: list[bytes]) -> None:
    assert _fold(arrivals) == _fold([CREATE, UPLOAD, DELETE])
