"""How often the cyclic garbage collector runs in a Tally process.

CPython's defaults (a young collection every 700 net allocations, an older one
every ten of those) suit short scripts. Tally's services allocate in bursts:
one batch of 500 events, or a prefetch window of notifications, makes tens of
thousands of short-lived objects that reference counting frees as soon as the
batch is answered. Under the defaults such a batch set off dozens of young
collections, and the objects they found still alive (the batch in flight) were
promoted, so every few batches a full collection walked every object of the
process. That was a large share of the ingest route's time (``bench/ingest.py``; the figures are in
docs/benchmarks.md, section "ingest").

With a young generation of 10,000 a batch's garbage is mostly gone by
reference count before a collection looks at it. Cycles are still collected, a
little later. Freezing the startup objects (``gc.freeze``) was measured too and
left out: it empties the oldest generation, and CPython's rule of a full
collection once that generation grows by a quarter then fires far more often.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
OLDER_THRESHOLD = 10


def tune_garbage_collector() -> None:
    """Raise the young generation's threshold (see the module)."""
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
