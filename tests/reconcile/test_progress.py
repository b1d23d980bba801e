"""The progress record a budget error is written from: every listing in flight, once, in start order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tally.reconcile import Progress

LISTINGS = ("server", "flavor", "volume", "floating_ip", "image", "loadbalancer")
steps = st.lists(st.tuples(st.booleans(), st.sampled_from(LISTINGS)), max_size=30)


@given(steps)
def test_running_names_each_listing_in_flight_once_in_start_order(ops: list[tuple[bool, str]]) -> None:
    progress = Progress(phase="listing the size names")
    in_flight: list[str] = []  # one entry per begin not yet ended, as concurrent listings of one name are
    for begin, listing in ops:
        if begin:
            progress.begin(listing)
            in_flight.append(listing)
        else:
            progress.end(listing)
            if listing in in_flight:
                in_flight.remove(listing)
    expected = [f"enumerating {name}" for name in dict.fromkeys(in_flight)] or ["listing the size names"]
    assert progress.running() == expected
    assert progress.current() == expected[0]


def test_two_server_listings_in_flight_are_named_once() -> None:
    progress = Progress()
    progress.begin("server")
    progress.begin("server")  # live and deleted servers
    progress.begin("image")
    progress.end("server")
    assert progress.running() == ["enumerating server", "enumerating image"]
