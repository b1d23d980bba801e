"""The accuracy matrix: ``tally simulate`` over seeds x periods in lockstep, every fault on, the verdicts.

    .venv/bin/python -m bench.accuracy                      # seeds 1-10 x 2026-02, 2026-07, 2025-12, 2026-11
    .venv/bin/python -m bench.accuracy --scale 100 --sync-interval 1440 --seeds 1 --periods 2026-07
    .venv/bin/python -m bench.accuracy --quick              # two small months (CI, seconds)

``--quick`` runs seeds 1 and 3 of July 2026 at scale 0.3 for 3 days: two months that pass at the
baseline (2026-12-01), so CI goes red when a change puts a resource off there. It also fails (exit 1)
when the months kept less than ``QUICK_BUSY_FLOOR`` of the cores busy (``cores_busy``): a ratio of the
months' own CPU to the cores' time in the same run, so a month that waits instead of computing, or a
runner that leaves a core without a month, turns CI red on any host where the healthy figure clears it.

Each month is one ``tally simulate --factor 0 --json FILE`` process, ``--jobs`` of them at a time (by
default ``JOBS_PER_CORE`` per core: a month in lockstep hands each store statement to aiosqlite's thread
and back, tens of thousands of handoffs a month, and spends much of its wall waiting for the woken thread
to be scheduled, a wait that grows when a core sits idle or the host is busy; a second month per core
computes meanwhile), forked from a server that imported ``tally`` and the month's modules once
(``PRELOAD``): each month still starts from a fresh process's state, but no longer compiles and imports
the same modules again (seconds of CPU a month where bytecode is not cached). ``--exec`` starts each
month as its own ``python -m tally`` instead. The verdicts are the simulate document's,
never computed here: per month resources exact / within tolerance / off, the billed-seconds error (and
every other figure the comparison's document offers at its top level, a quantity-weighted error for
one), the syncs and the month's wall time; then the totals and ``RATIO`` lines. Each month also ends
with its invoice (``--price-list``, ``bench/accuracy-prices.yaml`` by default, the example list from
2025; ``--price-list ''`` for none): the invoice error is the export's total minus the oracle's, over
the month's projects, which only tolerated resources may make non-zero. Exits 1 when any month is off or
failed, 2 when a month could not run at all.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

FAULTS = "missing-create,duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"
PERIODS = "2026-02,2026-07,2025-12,2026-11"
PRICES = Path(__file__).resolve().with_name("accuracy-prices.yaml")
#: Months at a time per core by default (see the module: a month alone leaves its core idle while it waits).
JOBS_PER_CORE = 2
#: ``--quick`` fails below this share of the cores kept busy (``cores_busy``); chosen below every figure
#: measured at loads of 9 to 16 on the project's host (docs/benchmarks.md, accuracy matrix).
QUICK_BUSY_FLOOR = 0.15
#: The quantity lines of the comparison, summed over flavors and volume types into one figure each.
QUANTITIES = (
    ("instance", "vcpu_h", "vCPU-h"),
    ("instance", "ram_gb_h", "RAM GB-h"),
    ("instance", "disk_gb_h", "disk GB-h"),
    ("volume", "gb_h", "volume GB-h"),
    ("image", "gb_h", "image GB-h"),
    ("floating_ip", "hours", "FIP h"),
    ("loadbalancer", "hours", "LB h"),
)
#: What a month imports (``tally simulate``'s command and what it imports while it runs), imported
#: once by the server the months are forked from.
PRELOAD = [
    "tally.cli",
    "tally.cli.simulate",
    "tally.simulation.simulate",
    "tally.simulation.report",
    "tally.simulation.summary",
    "tally.simulation.usage_export",
    "tally.app",
    "httpx",
    "httpcore",
]


def seeds_of(text: str) -> list[int]:
    """``1-10``, ``3``, ``1,4,7`` or a mix: the seeds, in order, each once."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a seed or a range like 1-10") from None
        if last < first:
            raise argparse.ArgumentTypeError(f"the range {part!r} runs backwards")
        out.extend(s for s in range(first, last + 1) if s not in out)
    return out


@dataclass(frozen=True)
class Span:
    """A month's run: when its process began and ended the month (epoch seconds, comparable across
    processes) and the CPU seconds it spent meanwhile."""

    began: float
    ended: float
    cpu_s: float


@dataclass
class Month:
    seed: int
    period: str
    code: int = 0
    span: Span | None = None
    doc: dict[str, Any] | None = None
    error: str = ""

    @property
    def comparison(self) -> dict[str, Any]:
        return self.doc["comparison"] if self.doc else {}

    @property
    def wall_s(self) -> float:
        return self.span.ended - self.span.began if self.span else 0.0


def _cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _forked_month(words: list[str], output: str) -> tuple[int, Span]:
    """A month in a process forked from the preloading server: ``tally`` run on ``words``, its
    standard output and error into ``output``; the exit code and the month's span returned."""
    began, cpu = time.time(), _cpu_s(resource.getrusage(resource.RUSAGE_SELF))
    # Each month's store and outbox in a fresh temporary state directory, never a configured store.
    os.environ.pop("TALLY_REPORTING_DB_URL", None)
    with open(output, "wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
    from tally.cli import main

    try:
        code = main(words)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code, Span(began, time.time(), _cpu_s(resource.getrusage(resource.RUSAGE_SELF)) - cpu)


def month_words(seed: int, period: str, args: argparse.Namespace, summary: Path) -> list[str]:
    """``tally``'s arguments for one month."""
    words = [
        "simulate",
        "--seed",
        str(seed),
        "--period",
        period,
        "--scale",
        f"{args.scale:g}",
        "--factor",
        "0",
        "--faults",
        args.faults,
        "--sync-interval",
        f"{args.sync_interval:g}",
        "--json",
        str(summary),
    ]
    if args.days is not None:
        words += ["--days", str(args.days)]
    if args.price_list:
        words += ["--price-list", args.price_list]
    return words


def run_month(seed: int, period: str, args: argparse.Namespace, workdir: Path) -> Month:
    """One month as its own ``python -m tally simulate`` process."""
    summary = workdir / f"{period}-seed{seed}.json"
    output = workdir / f"{period}-seed{seed}.out"
    # Each month's store and outbox in a fresh temporary state directory, never a configured store.
    env = {k: v for k, v in os.environ.items() if k != "TALLY_REPORTING_DB_URL"}
    command = [sys.executable, "-m", "tally", *month_words(seed, period, args, summary)]
    began = time.time()
    with open(output, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        # wait4, not wait: the process's own CPU, which RUSAGE_CHILDREN would mix with its siblings'.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    span = Span(began, time.time(), _cpu_s(usage))
    return month_of(seed, period, process.returncode, span, summary, output.read_text(errors="replace"))


def forked_months(grid: list[tuple[int, str]], args: argparse.Namespace, workdir: Path) -> Iterator[Month]:
    """The months of ``grid`` forked from the preloading server, ``args.jobs`` at a time, in order."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    pool = ProcessPoolExecutor(max_workers=args.jobs, mp_context=context, max_tasks_per_child=1)
    with pool:
        futures = []
        for seed, period in grid:
            summary = workdir / f"{period}-seed{seed}.json"
            output = workdir / f"{period}-seed{seed}.out"
            words = month_words(seed, period, args, summary)
            futures.append((seed, period, summary, output, pool.submit(_forked_month, words, str(output))))
        for seed, period, summary, output, future in futures:
            span: Span | None
            try:
                code, span = future.result()
            except Exception as exc:  # the month's process died: reported as the month's error
                code, span = -1, None
                output.write_text(f"{type(exc).__name__}: {exc}")
            text = output.read_text(errors="replace") if output.exists() else ""
            yield month_of(seed, period, code, span, summary, text)


def executed_months(grid: list[tuple[int, str]], args: argparse.Namespace, workdir: Path) -> Iterator[Month]:
    """The months of ``grid``, each its own ``python -m tally`` process, ``args.jobs`` at a time."""
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_month, seed, period, args, workdir) for seed, period in grid]
        for future in futures:
            yield future.result()


def month_of(seed: int, period: str, code: int, span: Span | None, summary: Path, text: str) -> Month:
    """The month's outcome: its simulate document, else the last line it printed."""
    month = Month(seed, period, code, span)
    if summary.exists():
        month.doc = orjson.loads(summary.read_bytes())
    else:
        lines = text.strip().splitlines()
        month.error = lines[-1] if lines else f"exit {code}, no output"
    return month


def quantity_error(comparisons: list[dict[str, Any]]) -> dict[str, float]:
    """The absolute quantity-weighted error of the comparisons, per unit (summed over members)."""
    out = {label: 0.0 for _, _, label in QUANTITIES}
    labels = {(rtype, unit): label for rtype, unit, label in QUANTITIES}
    for c in comparisons:
        for line in c.get("quantities", []):
            label = labels.get((line["resource_type"], line["unit"]))
            if label is not None:
                out[label] += float(line["absolute"])
    return out


def _quantities(c: dict[str, Any]) -> str:
    return ", ".join(
        f"{label} {value:,.2f}" for label, value in quantity_error([c]).items() if round(value, 2)
    )


def _fraction(c: dict[str, Any]) -> str:
    oracle = sum(float(t.get("oracle", 0.0)) for t in c.get("billed_seconds", {}).values())
    return f"{float(c['seconds_off']) / oracle:+.4%}" if oracle else "n/a"


def invoice_error(doc: dict[str, Any] | None) -> tuple[Decimal, Decimal] | None:
    """The month's invoice total, export minus oracle, and the oracle's total; None unrated."""
    rated = (doc or {}).get("rated_export")
    if rated is None:
        return None
    oracle = sum((Decimal(v) for v in rated["oracle_totals"].values()), Decimal(0))
    export = sum((Decimal(v) for v in rated["export_totals"].values()), Decimal(0))
    return export - oracle, oracle


def _invoice(doc: dict[str, Any] | None) -> str:
    error = invoice_error(doc)
    if error is None:
        return "-"
    off, oracle = error
    rated = (doc or {})["rated_export"]
    share = f" ({off / oracle:+.4%})" if oracle else ""
    return f"{off:+} of {oracle}{share}" + ("" if rated["passed"] else f", {rated['off']} lines OFF")


def print_table(months: list[Month]) -> None:
    head = ["seed", "period", "exact", "tolerated", "off", "billed-seconds error", "of oracle"]
    head += ["quantity error (absolute)", "invoice error", "syncs (skipped)", "wall s", "verdict"]
    rows: list[list[str]] = []
    for m in months:
        c = m.comparison
        if m.doc is None:
            rows.append(
                [str(m.seed), m.period, *[""] * (len(head) - 4), f"{m.wall_s:.1f}", f"ERROR {m.error}"]
            )
            continue
        syncs = m.doc["syncs"]
        verdict = "passed" if m.doc["passed"] else ("OFF" if c["off"] else "FAILED (syncs)")
        rows.append(
            [
                str(m.seed),
                m.period,
                f"{c['exact']:,}",
                f"{c['tolerated']:,}",
                f"{c['off']:,}",
                f"{float(c['seconds_off']):+,.0f} s",
                _fraction(c),
                _quantities(c) or "0",
                _invoice(m.doc),
                f"{syncs['run']} ({syncs['idle_skipped']})",
                f"{m.wall_s:.1f}",
                verdict,
            ]
        )
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 2 or i == len(head) - 1 else "---:" for i in range(len(head))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def cores_busy(months: list[Month], jobs: int, cores: int) -> float | None:
    """The share of the cores the months kept busy: their CPU seconds over the cores' seconds from the
    first month's start to the last one's end (the cores: as many as there are, or fewer when fewer
    months ran at once). 1.0 is every core busy throughout; a month waiting (a sleep, a poll, a handoff
    between threads) or a core left without a month lowers it. None when no month's span is known."""
    spans = [m.span for m in months if m.span is not None]
    if not spans:
        return None
    window = max(s.ended for s in spans) - min(s.began for s in spans)
    used = min(jobs, cores, len(spans))
    return sum(s.cpu_s for s in spans) / (window * used) if window > 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seeds_of, default=None, help="e.g. 1-10 or 1,3,5 (default 1-10)")
    parser.add_argument("--periods", default=None, help=f"comma-separated YYYY-MM (default {PERIODS})")
    parser.add_argument(
        "--jobs",
        type=int,
        default=JOBS_PER_CORE * (os.cpu_count() or 1),
        help=f"months at a time, each its own process (default {JOBS_PER_CORE} per core)",
    )
    parser.add_argument(
        "--exec", action="store_true", help="start each month as python -m tally (no preloaded imports)"
    )
    parser.add_argument("--scale", type=float, default=None, help="tenant multiplier (default 1)")
    parser.add_argument("--days", type=int, default=None, help="only the first N days of each period")
    parser.add_argument("--sync-interval", type=float, default=60.0, metavar="MINUTES")
    parser.add_argument("--faults", default=FAULTS)
    parser.add_argument(
        "--price-list",
        default=str(PRICES),
        metavar="FILE",
        help="end each month with its invoice rated by this list ('' for none; default accuracy-prices.yaml)",
    )
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep each month's JSON here")
    parser.add_argument(
        "--quick", action="store_true", help="two small months: scale 0.3, 3 days, seeds 1, 3"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs} must be at least 1")
    if args.quick:
        args.seeds = args.seeds or [1, 3]
        args.periods = args.periods or "2026-07"
        args.scale = args.scale or 0.3
        args.days = args.days or 3
    seeds = args.seeds or list(range(1, 11))
    periods = [p.strip() for p in (args.periods or PERIODS).split(",") if p.strip()]
    args.scale = args.scale or 1.0
    grid = [(seed, period) for period in periods for seed in seeds]
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tally-accuracy-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        months = []
        run = executed_months if args.exec else forked_months
        for month in run(grid, args, workdir):
            months.append(month)
            state = "error" if month.doc is None else f"off {month.comparison['off']}"
            cpu = f" ({month.span.cpu_s:.1f} s CPU)" if month.span else ""
            print(
                f"  {month.period} seed {month.seed}: {state}, {month.wall_s:.1f} s{cpu}",
                file=sys.stderr,
                flush=True,
            )
    wall = time.monotonic() - began
    print(
        f"accuracy matrix: seeds {','.join(map(str, seeds))} x {', '.join(periods)}; scale {args.scale:g}"
        f"{f', {args.days} days' if args.days else ''}; sync every {args.sync_interval:g} min; "
        f"faults {args.faults or 'none'}; {args.jobs} at a time"
    )
    print_table(months)
    ran = [m for m in months if m.doc is not None]
    passed = sum(1 for m in ran if m.doc and m.doc["passed"])
    off = sum(int(m.comparison["off"]) for m in ran)
    error_s = sum(float(m.comparison["seconds_off"]) for m in ran)
    print(
        f"totals: {passed} of {len(months)} months passed; {off:,} resources off; "
        f"billed-seconds error {error_s:+,.0f} s; wall {wall:.1f} s "
        f"(months {sum(m.wall_s for m in months):.1f} s summed)"
    )
    totals = quantity_error([m.comparison for m in ran])
    print("quantity error (absolute): " + ", ".join(f"{k} {v:,.2f}" for k, v in totals.items()))
    invoices = [e for e in (invoice_error(m.doc) for m in ran) if e is not None]
    if invoices:
        off_total, oracle_total = sum(e[0] for e in invoices), sum(e[1] for e in invoices)
        share = f" ({off_total / oracle_total:+.4%})" if oracle_total else ""
        print(f"invoice error: {off_total:+} of {oracle_total} over {len(invoices)} months{share}")
        fraction = float(off_total / oracle_total) if oracle_total else 0.0
        print(f"RATIO accuracy_invoice_error_fraction={fraction:.6f}")
    print(f"RATIO accuracy_months_passed={passed}")
    print(f"RATIO accuracy_months={len(months)}")
    print(f"RATIO accuracy_resources_off={off}")
    print(f"RATIO accuracy_wall_s={wall:.1f}")
    busy = cores_busy(months, args.jobs, os.cpu_count() or 1)
    if busy is not None:
        print(f"RATIO accuracy_cores_busy={busy:.3f}")
    if len(ran) < len(months):
        return 2
    if passed < len(months):
        return 1
    if args.quick and (busy is None or busy < QUICK_BUSY_FLOOR):
        print(
            f"FAILED: the months kept {busy or 0:.3f} of the cores busy, below the floor {QUICK_BUSY_FLOOR}"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
