"""Benchmark: ``/readyz`` answer times while the store hangs (every PostgreSQL process SIGSTOPped).

A PostgreSQL node of its own (``tally.testing.pg_node``) and one ``tally run`` on it, ready; then the
node is stopped with SIGSTOP (the connections stay open, nothing answers: a hung server, not a
refusing one) and ``/readyz`` is asked back to back for ``--hang-s`` seconds; then SIGCONT. Each answer's
time, and how long after the onset the first 503 came, are kept. ``--compare SRC`` also runs the
daemon from another source tree (``PYTHONPATH=SRC``, say a checkout of main) in the same run, the
two alternating round by round, so the figures share the machine's load.

Prints p50/p99/max of the answer times and the seconds to the first 503 per tree, then ``RATIO`` lines;
exits non-zero when this tree's slowest answer under the hang took a quarter of the probe's deadline
(a wait for the hung probe takes the whole deadline, 2 s; the target, every answer within 100 ms, is
printed beside it: a loaded host stalls single requests past it) or its first 503 came later than
the bound (the probe's period and deadline, 4 s, and a second of slack).
``--quick`` (CI) runs one round of 4 s.

    python -m bench.readyz_hang [--quick] [--rounds N] [--hang-s S] [--compare SRC]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from tally.testing.pg_node import PgNode

FAST_MS = 100.0
WAIT_MS = 2000.0 / 4  # a quarter of the store probe's deadline
# The store probe's period and deadline (tally.daemon._backbone), and slack for a loaded machine.
BOUND_S = 2.0 + 2.0 + 1.0
HERE = str(Path(__file__).resolve().parents[1] / "src")


@dataclass
class Tree:
    name: str
    src: str
    times_ms: list[float] = field(default_factory=list)
    told_s: list[float] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cluster_pids(node: PgNode) -> list[int]:
    """The postmaster and its children (the node's own processes, nothing else)."""
    postmaster = int((node.data / "postmaster.pid").read_text().split()[0])
    pids = [postmaster]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                pids.append(int(entry.name))
    return pids


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _wait_ready(client: httpx.Client, url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if client.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready within {timeout_s:g} s")


def one_round(tree: Tree, node: PgNode, work: Path, hang_s: float) -> None:
    """One daemon of ``tree`` on its own database: ready, the node hung ``hang_s``, released, stopped."""
    db = f"readyz_{tree.name}_{time.monotonic_ns()}"
    with psycopg.connect(node.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{db}"')
    port = _free_port()
    state = work / db
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "PYTHONPATH": tree.src,
        "TALLY_STATE_DIR": str(state),
        "TALLY_REPORTING_HTTP_PORT": str(port),
        "TALLY_REPORTING_DB_URL": node.url(db),
        "TALLY_LOG_LEVEL": "WARNING",
    }
    url = f"http://127.0.0.1:{port}/readyz"
    log = (work / f"{db}.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "tally", "run"], env=env, stdout=log, stderr=log)
    pids: list[int] = []
    try:
        with httpx.Client(timeout=10) as client:
            _wait_ready(client, url, 240)
            time.sleep(2.5)  # a probe run or two after the start: the onset falls anywhere in a period
            pids = _cluster_pids(node)
            _signal(pids, signal.SIGSTOP)
            onset = time.monotonic()
            told = None
            while time.monotonic() - onset < hang_s:
                began = time.monotonic()
                status = client.get(url).status_code
                tree.times_ms.append((time.monotonic() - began) * 1000)
                if status == 503 and told is None:
                    told = time.monotonic() - onset
            tree.told_s.append(told if told is not None else float("inf"))
            _signal(pids, signal.SIGCONT)
            pids = []
            _wait_ready(client, url, 120)
    finally:
        _signal(pids, signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hang-s", type=float, default=8.0)
    parser.add_argument("--compare", metavar="SRC", help="another source tree, run alternately")
    args = parser.parse_args()
    rounds, hang_s = (1, 4.0) if args.quick else (args.rounds, args.hang_s)
    trees = [Tree("this", HERE)] + ([Tree("other", args.compare)] if args.compare else [])
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="tally-readyz-hang-") as tmp:
        node = PgNode(Path(tmp) / "node")
        node.start()
        try:
            for index in range(rounds):
                for tree in trees if index % 2 == 0 else trees[::-1]:
                    one_round(tree, node, Path(tmp), hang_s)
        finally:
            node.stop("immediate", remove=True)
    print(f"{rounds} round(s) of a {hang_s:g} s hang; load average {load:.1f} at the start")
    for tree in trees:
        times = tree.times_ms
        print(
            f"{tree.name} ({tree.src}): {len(times)} answers p50 {statistics.median(times):.1f} ms "
            f"p99 {_percentile(times, 0.99):.1f} ms max {max(times):.1f} ms; first 503 after "
            + ", ".join(f"{t:.2f}" for t in tree.told_s)
            + " s"
        )
    this = trees[0]
    print(f"RATIO readyz_hang_max_ms={max(this.times_ms):.1f}")
    print(f"RATIO readyz_hang_told_s={max(this.told_s):.2f}")
    if len(trees) > 1:
        other = trees[1]
        print(f"RATIO readyz_hang_max_other_over_this={max(other.times_ms) / max(this.times_ms):.1f}")
    p99, slowest, told = _percentile(this.times_ms, 0.99), max(this.times_ms), max(this.told_s)
    print(f"target: every answer within {FAST_MS:g} ms: {'met' if slowest < FAST_MS else 'missed'}")
    if slowest >= WAIT_MS or told > BOUND_S:
        print(
            f"FAIL: max {slowest:.1f} ms (< {WAIT_MS:g}), p99 {p99:.1f} ms, "
            f"first 503 {told:.2f} s (<= {BOUND_S:g})"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
