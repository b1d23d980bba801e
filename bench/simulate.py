"""Benchmark ``tally simulate``: a month through the whole pipeline in lockstep, then the comparison.

    .venv/bin/python -m bench.simulate            # seed 1, July 2026, scale 1, the seven faults
    .venv/bin/python -m bench.simulate --scale 100 --sync-interval 1440
    .venv/bin/python -m bench.simulate --quick    # one day of a 0.3-scale month (seconds)

Prints wall time, peak RSS, syncs, resources exact / within tolerance / off and the billed-seconds
error, then ``RATIO`` lines.

The fake cloud counts the requests it answered (``tally_sim_api_requests_total``): keystone's per
sync guard the cost the month lost in 2026-12 (every run authenticated from nothing, twice, with
keystone's version discovery each time: 4 keystone requests a sync) and the requests of a sync
guard the listings themselves (12 a sync in July 2026: the probe, nova's version document, five
listings, the images twice, the volume types twice). Exits 1 when the comparison fails or either
count is above its ceiling, whatever the host's load (counts, not seconds).
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time
from datetime import timedelta

import anyio
from prometheus_client import REGISTRY

from tally.simulator import parse_faults
from tally.simulator.simulate import SimulateOptions, simulate

FAULTS = "missing-create,duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"
#: Ceilings of the fake cloud's requests per sync: keystone's (a token and its discovery are had once a
#: session, not once a run), and every service's (the adapter's twelve, with room for a page more).
MAX_KEYSTONE_PER_SYNC = 0.25
MAX_REQUESTS_PER_SYNC = 14.0


def requests_answered(service: str | None = None) -> float:
    """The fake cloud's requests so far (of ``service`` only, when named), every status."""
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name != "tally_sim_api_requests_total":
                continue
            if service is None or sample.labels.get("service") == service:
                total += sample.value
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.simulate")
    parser.add_argument("--quick", action="store_true", help="one day of a 0.3-scale month")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--sync-interval", type=float, default=60.0, help="virtual minutes")
    parser.add_argument("--faults", default=FAULTS)
    parser.add_argument("--every-sync", action="store_true", help="no skipping of idle sync instants")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    options = SimulateOptions(
        seed=1,
        period="2026-07",
        scale=0.3 if args.quick else args.scale,
        days=1 if args.quick else None,
        faults=parse_faults(args.faults),
        factor=0.0,
        sync_interval=timedelta(minutes=args.sync_interval),
        skip_idle=not args.every_sync,
    )
    began = time.monotonic()
    result = anyio.run(simulate, options)
    wall = time.monotonic() - began
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    c = result.comparison
    collector = result.ingest.get("collector")
    rows = [
        ("scale / days", f"{options.scale:g} / {options.days or 31}"),
        ("faults", args.faults or "none"),
        ("notifications", f"{result.progress.published:,}"),
        ("events accepted", f"{collector.accepted if collector else 0:,}"),
        (
            "syncs",
            f"{result.progress.syncs} every {args.sync_interval:g} min "
            f"({result.progress.idle_skipped} idle instants skipped)",
        ),
        ("resources exact / tolerated / off", f"{c.exact} / {c.tolerated} / {c.off}"),
        ("billed-seconds error", f"{c.seconds_off:+,.0f} s"),
        ("wall time", f"{wall:.1f} s"),
        ("peak RSS", f"{rss_mb:.0f} MiB"),
        ("passed", str(result.passed)),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    oracle_total = sum(c.oracle_seconds.values()) or 1.0
    syncs = max(result.progress.syncs, 1)
    keystone_per_sync = requests_answered("identity") / syncs
    requests_per_sync = requests_answered() / syncs
    print(f"RATIO simulate_wall_s={wall:.1f}")
    print(f"RATIO simulate_peak_rss_mib={rss_mb:.0f}")
    print(f"RATIO simulate_resources_off={c.off}")
    print(f"RATIO simulate_billed_seconds_error_fraction={c.seconds_off / oracle_total:.6f}")
    print(f"RATIO simulate_keystone_requests_per_sync={keystone_per_sync:.3f}")
    print(f"RATIO simulate_requests_per_sync={requests_per_sync:.2f}")
    within = keystone_per_sync <= MAX_KEYSTONE_PER_SYNC and requests_per_sync <= MAX_REQUESTS_PER_SYNC
    if not within:
        print(
            f"bench.simulate: above the ceiling: {keystone_per_sync:.3f} keystone requests a sync "
            f"(at most {MAX_KEYSTONE_PER_SYNC}), {requests_per_sync:.2f} requests a sync "
            f"(at most {MAX_REQUESTS_PER_SYNC})",
            file=sys.stderr,
        )
    return 0 if result.passed and within else 1


if __name__ == "__main__":
    sys.exit(main())
