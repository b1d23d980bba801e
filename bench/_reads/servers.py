"""The server processes of ``bench.reads`` (started, their pids, stopped) and one measured run against
one of them: its rate, latencies and the CPU it and the PostgreSQL backends spent per request.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench._reads import WARMUP_S
from bench._reads.load import load
from bench.procstat import cpu_seconds

DAEMON_START_S = 180  # 60 s was too short for the daemon and its worker at load 10 on two cores


# -- the orchestration --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    rps: float
    p50_ms: float
    p99_ms: float
    server_us: float  # server process CPU per request
    pg_us: float  # PostgreSQL backends' CPU per request
    split: str = ""  # a daemon's connections per process once all are open (main process first)


def _cpu_seconds(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0


def _backend_cpu(admin: psycopg.Connection[Any], database: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend of ``database`` (the pools' connections)."""
    rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database]).fetchall()
    return {int(r[0]): _cpu_seconds(int(r[0])) for r in rows}


class Servers:
    """The api, floor and canned servers as child processes, stopped (stdin closed) at the end."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}

    def start(self, kind: str, arg: str, env: dict[str, str] | None = None) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.reads", "--serve", kind, arg],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.procs[kind] = proc
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench.reads: the {kind} server did not start")
        self.ports[kind] = int(line)

    def start_daemon(self, kind: str, url: str, workers: int | None, state_dir: Path) -> None:
        """``tally run`` on ``url`` with its defaults (log level, pool, middleware), on a free port,
        with ``workers`` HTTP processes (None: the daemon's default for the host); back once ready."""
        import httpx

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TALLY_")}
        env.update(
            TALLY_REPORTING_DB_URL=url,
            TALLY_REPORTING_HTTP_PORT=str(port),
            TALLY_STATE_DIR=str(state_dir / kind),
        )
        if workers is not None:
            env["TALLY_REPORTING_HTTP_WORKERS"] = str(workers)
        state_dir.mkdir(exist_ok=True)
        # Its log is kept for the reason it did not start; a pipe nobody reads would fill and stall it.
        log = state_dir / f"{kind}.log"
        with log.open("wb") as written:
            self.procs[kind] = subprocess.Popen(
                [sys.executable, "-m", "tally", "run"], stdin=subprocess.DEVNULL, stderr=written, env=env
            )
        self.ports[kind] = port
        deadline = time.monotonic() + DAEMON_START_S
        while time.monotonic() < deadline:
            if self.procs[kind].poll() is not None:
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise SystemExit(
            f"bench.reads: `tally run` ({kind}) was not ready within {DAEMON_START_S} s:\n{tail}"
        )

    def pids(self, kind: str) -> list[int]:
        """The server's process and its descendants (a daemon's HTTP workers)."""
        found = [self.procs[kind].pid]
        for pid in found:
            with contextlib.suppress(OSError):
                found += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        return found

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.stdin is not None:
                proc.stdin.close()
            else:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def measure(
    servers: Servers, kind: str, admin: psycopg.Connection[Any], database: str, run: dict[str, Any]
) -> Measured:
    server_pids = servers.pids("api" if kind == "api-ks" else kind)
    pg_before = _backend_cpu(admin, database)
    cpu_before = sum(_cpu_seconds(pid) for pid in server_pids)
    port = servers.ports["api" if kind == "api-ks" else kind]
    given = {k: v for k, v in run.items() if k != "keystone"}
    split: list[str] = []
    done = threading.Event()
    watcher = threading.Thread(target=_split, args=(server_pids, port, run["connections"], done, split))
    if len(server_pids) > 1:
        watcher.start()
    result = load(port, **{**given, "token": run["keystone"] if kind == "api-ks" else run["token"]})
    done.set()
    if watcher.is_alive():
        watcher.join()
    cpu = sum(_cpu_seconds(pid) for pid in server_pids) - cpu_before
    # A backend opened during the run counts whole; one closed during it is missed (pools seldom close).
    pg_after = _backend_cpu(admin, database) if kind != "canned" else {}
    pg_cpu = sum(seconds - pg_before.get(pid, 0.0) for pid, seconds in pg_after.items())
    lat = result["latencies"]
    # CPU is counted over the warm-up too, so it is divided by every request of the run, not only the
    # measured ones: the rate over the measured window, times the whole run's length.
    total = result["count"] / result["seconds"] * (result["seconds"] + WARMUP_S)
    return Measured(
        rps=result["count"] / result["seconds"],
        p50_ms=lat[len(lat) // 2] * 1000,
        p99_ms=lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
        server_us=cpu / total * 1e6,
        pg_us=pg_cpu / total * 1e6,
        split="".join(split),
    )


def _split(pids: list[int], port: int, connections: int, done: threading.Event, into: list[str]) -> None:
    """How many of the connections to ``port`` each of ``pids`` holds, as ``9/7`` (``ss``'s view),
    once all ``connections`` are open (the load process takes a while to start on a loaded host);
    nothing if the run ends first. A keep-alive connection stays where it was accepted."""
    while not done.wait(0.1):
        listed = subprocess.run(
            ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True
        ).stdout
        held = [int(m) for m in re.findall(r"pid=(\d+)", listed)]
        counts = [held.count(pid) for pid in pids]
        if sum(counts) >= connections:
            into.append("/".join(map(str, counts)))
            return
