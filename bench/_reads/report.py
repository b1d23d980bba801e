"""The ``RATIO`` lines of ``bench.reads`` (medians over the rounds) and its targets, full and quick."""

from __future__ import annotations

import statistics

from bench._reads.servers import Measured

TARGET_RPS = 1000.0
TARGET_P99_MS = 30.0
TARGET_RATIO = 0.5
# --quick: the floor's CPU per page over the api's, the median of five one-second rounds. Between the
# lean lane's noise on this machine kind and what the api cost before it (docs/benchmarks.md, "reads").
QUICK_RATIO = 0.5
KEYSTONE_RATIO = 0.9
DAEMON_RATIO = 0.8  # `tally run` at its default workers, against the floor, at 16 connections
DAEMON_P99_RATIO = 2.0
# --quick: `tally run`'s CPU per page against the floor's. Lower than the api's: its processes' CPU
# counts whole (the main process's actors beside the answers), and it swings more with the load.
DAEMON_QUICK_RATIO = 0.5
# --quick: `tally run`'s rate and p99 against the floor's in the same rounds, with room for one-second
# rounds on a shared host; a daemon serving on one process where it should serve on two, or
# connections piling on one process, falls outside them.
DAEMON_QUICK_RATE = 0.6
DAEMON_QUICK_P99 = 3.0


def report(rows: dict[tuple[str, int, str], list[Measured]], quick: bool) -> bool:
    """Print the RATIO lines of the medians; whether every target was met."""
    ok = True
    for (listing, conns, kind), measured in sorted(rows.items()):
        if kind == "api-ks":
            tally = rows[(listing, conns, "api")]
            versus = statistics.median(k.rps / t.rps for k, t in zip(measured, tally, strict=True))
            cpu_versus = statistics.median(
                t.server_us / k.server_us for k, t in zip(measured, tally, strict=True)
            )
            print(f"RATIO reads_{listing}_c{conns}_keystone_vs_tally={versus:.3f}")
            print(f"RATIO reads_{listing}_c{conns}_keystone_cpu_vs_tally={cpu_versus:.3f}")
            if conns == 16 and not quick and versus < KEYSTONE_RATIO:
                ok = False
                print(f"MISSED {listing} at 16 connections: keystone tokens at {versus:.3f} of Tally's rate")
            continue
        if kind.startswith("run-"):
            ok = _report_daemon(listing, conns, kind, measured, rows[(listing, conns, "floor")], quick) and ok
            continue
        if kind != "api":
            continue
        floor = rows[(listing, conns, "floor")]
        ratio = statistics.median(a.rps / f.rps for a, f in zip(measured, floor, strict=True))
        rps = statistics.median(m.rps for m in measured)
        p99 = statistics.median(m.p99_ms for m in measured)
        print(f"RATIO reads_{listing}_c{conns}_vs_floor={ratio:.3f}")
        print(f"RATIO reads_{listing}_c{conns}_per_s={rps:.0f}")
        print(f"RATIO reads_{listing}_c{conns}_p99_ms={p99:.1f}")
        cpu = statistics.median(m.server_us for m in measured)
        print(f"RATIO reads_{listing}_c{conns}_server_cpu_us={cpu:.0f}")
        # The floor's server CPU per page over the api's: what the rate ratio would be with a core each.
        cpu_ratio = statistics.median(f.server_us / a.server_us for a, f in zip(measured, floor, strict=True))
        print(f"RATIO reads_{listing}_c{conns}_cpu_vs_floor={cpu_ratio:.3f}")
        if conns != 16:
            continue
        misses = []
        if quick and cpu_ratio < QUICK_RATIO:
            misses.append(f"{cpu_ratio:.3f} of the floor's CPU per page")
        if not quick and ratio < TARGET_RATIO:
            misses.append(f"{ratio:.3f} of the floor")
        if not quick and rps < TARGET_RPS:
            misses.append(f"{rps:.0f} requests/s")
        if not quick and p99 > TARGET_P99_MS:
            misses.append(f"p99 {p99:.1f} ms")
        if misses:
            ok = False
            print(f"MISSED {listing} at 16 connections: {', '.join(misses)}")
    return ok


def _report_daemon(
    listing: str, conns: int, kind: str, measured: list[Measured], floor: list[Measured], quick: bool
) -> bool:
    """The RATIO lines of ``tally run`` (kind ``run-w<N>``) against the floor; whether its targets hold
    (the daemon at its default number of workers: >= 0.8 of the floor's rate, p99 <= 2 x the floor's)."""
    name = f"reads_{listing}_c{conns}_{kind.replace('-', '_')}"
    ratio = statistics.median(a.rps / f.rps for a, f in zip(measured, floor, strict=True))
    p99_ratio = statistics.median(a.p99_ms / f.p99_ms for a, f in zip(measured, floor, strict=True))
    cpu_ratio = statistics.median(f.server_us / a.server_us for a, f in zip(measured, floor, strict=True))
    print(f"RATIO {name}_vs_floor={ratio:.3f}")
    print(f"RATIO {name}_per_s={statistics.median(m.rps for m in measured):.0f}")
    print(f"RATIO {name}_p99_ms={statistics.median(m.p99_ms for m in measured):.1f}")
    print(f"RATIO {name}_p99_vs_floor={p99_ratio:.2f}")
    print(f"RATIO {name}_cpu_vs_floor={cpu_ratio:.3f}")
    if conns != 16 or kind != f"run-w{default_http_workers_for_bench()}":
        return True
    misses = []
    if quick and cpu_ratio < DAEMON_QUICK_RATIO:
        misses.append(f"{cpu_ratio:.3f} of the floor's CPU per page")
    if quick and ratio < DAEMON_QUICK_RATE:
        misses.append(f"{ratio:.3f} of the floor")
    if quick and p99_ratio > DAEMON_QUICK_P99:
        misses.append(f"p99 {p99_ratio:.2f} x the floor's")
    if not quick and ratio < DAEMON_RATIO:
        misses.append(f"{ratio:.3f} of the floor")
    if not quick and p99_ratio > DAEMON_P99_RATIO:
        misses.append(f"p99 {p99_ratio:.2f} x the floor's")
    if misses:
        print(f"MISSED {listing} at 16 connections through `tally run` ({kind}): {', '.join(misses)}")
    return not misses


def default_http_workers_for_bench() -> int:
    """What ``tally run`` serves on by default on this host with a PostgreSQL store."""
    from tally.daemon import default_http_workers

    return default_http_workers(postgresql=True)


def daemon_kinds(spec: str) -> dict[str, int | None]:
    """``--daemon-workers`` (``1,default``) as kinds ``run-w<N>`` and the setting each is started with
    (None: unset, the daemon's default)."""
    kinds: dict[str, int | None] = {}
    for word in filter(None, spec.split(",")):
        workers = None if word == "default" else int(word)
        kinds.setdefault(f"run-w{workers or default_http_workers_for_bench()}", workers)
    return kinds
