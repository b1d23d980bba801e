"""Outbox delivery latency: the time from a row's commit in the outbox to its delivery by the sender.

A trickle of events (one ``Outbox.add`` every ``--gap-ms``) goes through a real outbox file (SQLite,
WAL) and a ``Sender`` with the collector's defaults (``TALLY_OSC_FLUSH_INTERVAL_S`` 5 s, batches of
500) to a sink that notes when each event reached it. A trickle is the case that shows the wake-up
rule: a full batch never waits, a partial one waits for whatever wakes the sender. ``--gap-ms 0``
adds back to back instead: ``events_per_s`` (from the first commit to the last delivery) then shows
what the wake-up rule costs in throughput, the batches the sender makes being what they are.

Rounds alternate between the source trees given with ``--src`` (each run in a process of its own with
that tree first on ``PYTHONPATH``), so that both see the same drift of a shared machine; the medians
over rounds are printed per tree, with ``RATIO`` lines against the first.

``--quick`` (CI) is one round of 20 events 100 ms apart on this tree, and exits 1 when the median
latency is not below the gap: a sender that waits for its timer instead of the outbox's notice of a
commit delivers a trickle at the flush interval, seconds after each commit.

    .venv/bin/python -m bench.outbox_latency [--src DIR ...] [--events N] [--gap-ms G] [--rounds R] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


async def _one_round(events: int, gap_s: float) -> dict[str, float]:
    import anyio

    from tally.outbox import Sender, open_outbox
    from tally.outbox.internals import DeliveryResult, DeliveryStatus

    committed: dict[str, float] = {}
    delivered: dict[str, float] = {}
    all_delivered = anyio.Event()

    class NotingSink:
        async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
            now = time.perf_counter()
            for item in items:
                delivered.setdefault(item["event_id"], now)
            if len(delivered) == events:
                all_delivered.set()
            return DeliveryResult(DeliveryStatus.ACCEPTED, accepted=len(items))

    with tempfile.TemporaryDirectory() as directory:
        async with open_outbox(Path(directory) / "outbox.sqlite3") as outbox, anyio.create_task_group() as tg:
            sender = Sender(outbox, NotingSink(), batch_max=500, flush_interval_s=5.0)
            await tg.start(sender.serve)
            for n in range(events):
                event_id = f"ev-{n}"
                await outbox.add([(event_id, json.dumps({"event_id": event_id}).encode())])
                committed[event_id] = time.perf_counter()
                await anyio.sleep(gap_s)
            with anyio.fail_after(30):
                await all_delivered.wait()
            tg.cancel_scope.cancel()
    waits = sorted(max(0.0, delivered[e] - committed[e]) for e in committed)
    span = max(delivered.values()) - min(committed.values())
    return {
        "events_per_s": events / span if span > 0 else 0.0,
        "median_ms": 1000 * statistics.median(waits),
        "p95_ms": 1000 * waits[min(len(waits) - 1, int(0.95 * len(waits)))],
        "max_ms": 1000 * waits[-1],
    }


def _run_in(src: str, events: int, gap_ms: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(HERE)])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.outbox_latency",
            "--one-round",
            "--events",
            str(events),
            "--gap-ms",
            str(gap_ms),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=HERE,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", action="append", help="a source tree to measure (default: this one's src)")
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--gap-ms", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="CI: one round of 20 events, guarded")
    parser.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.src, args.events, args.gap_ms, args.rounds = None, 20, 100.0, 1
    if args.one_round:
        import anyio

        print(json.dumps(anyio.run(_one_round, args.events, args.gap_ms / 1000)))
        return 0
    sources = args.src or [str(HERE / "src")]
    results: dict[str, list[dict[str, float]]] = {src: [] for src in sources}
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for round_no in range(1, args.rounds + 1):
        for src in sources:
            figures = _run_in(src, args.events, args.gap_ms)
            results[src].append(figures)
            print(f"round {round_no} {src}: " + " ".join(f"{k}={v:.1f}" for k, v in figures.items()))
    medians = {
        src: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for src, rows in results.items()
    }
    for src, figures in medians.items():
        print(f"MEDIAN {src}: " + " ".join(f"{k}={v:.1f}" for k, v in figures.items()))
    first = sources[0]
    for src in sources[1:]:
        ratio = medians[src]["median_ms"] / max(medians[first]["median_ms"], 1e-9)
        print(f"RATIO median latency {src} / {first}: {ratio:.4f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.quick:
        median_ms = medians[sources[0]]["median_ms"]
        print(f"RATIO outbox_latency_median_over_gap={median_ms / args.gap_ms:.4f}")
        if median_ms >= args.gap_ms:
            print(f"FAILED: median latency {median_ms:.1f} ms is not below the {args.gap_ms:g} ms gap")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
