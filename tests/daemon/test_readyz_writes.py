"""``/readyz`` tells whether the store can write, not only whether it answers, and answers fast.

A PostgreSQL database of the test's own turned read-only (its sessions ended, as a failover ends
them) makes the ``store`` check 503 naming it; turned writable again, the check passes within a few
seconds without a restart (the store replaces its read-only sessions). A SQLite store on a full
filesystem (a tmpfs of the test's own) is 503 naming the full disk, and ready again once there is room.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready

READY_AGAIN_S = 10.0


def store_check(base_url: str) -> tuple[int, dict[str, Any]]:
    answer = httpx.get(f"{base_url}/readyz", timeout=5)
    return answer.status_code, answer.json()["checks"]["store"]


def wait_for_store(
    base_url: str, ok: bool, timeout_s: float, saying: str = ""
) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    while True:
        status, check = store_check(base_url)
        if check["ok"] is ok and (status == 200) is ok and saying in check["detail"]:
            return check, time.monotonic() - started
        assert time.monotonic() - started < timeout_s, f"store check still {status} {check}"
        time.sleep(0.1)


def readyz_times_ms(base_url: str, count: int = 50) -> list[float]:
    times = []
    with httpx.Client(timeout=5) as client:
        for _ in range(count):
            began = time.perf_counter()
            client.get(f"{base_url}/readyz")
            times.append((time.perf_counter() - began) * 1000)
    return sorted(times)


@pytest.mark.postgres
def test_a_read_only_postgresql_is_not_ready_and_ready_again_without_a_restart(
    set_read_only: Callable[[str, bool], None], tmp_path: Path, pg_url: str
) -> None:
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=pg_url)
    try:
        with running_daemon(env) as daemon:
            wait_until_ready(daemon.base_url)
            times = readyz_times_ms(daemon.base_url)
            p99 = times[int(len(times) * 0.99) - 1]
            print(f"/readyz median {statistics.median(times):.1f} ms p99 {p99:.1f} ms max {times[-1]:.1f} ms")
            assert p99 < 100, times

            set_read_only(pg_url, True)
            # First the ended sessions ("the database connection was lost"), then the read-only ones.
            check, _ = wait_for_store(daemon.base_url, False, 10, saying="read-only")
            assert (
                "StoreReadOnly: the database refuses writes (read-only): cannot execute UPDATE"
                in (check["detail"])
            ), check
            set_read_only(pg_url, False)
            check, took = wait_for_store(daemon.base_url, True, READY_AGAIN_S)
            print(f"ready {took:.1f} s after the database took writes again")
            assert check["detail"] == "postgresql answers and takes writes"
            assert daemon.proc.poll() is None
            assert daemon.stop() == 0, daemon.log
        assert "store: PostgreSQL refuses writes (read-only)" in daemon.log
    finally:
        set_read_only(pg_url, False)


def test_a_sqlite_store_on_a_full_disk_is_not_ready_saying_so(tmp_path: Path, small_filesystem: Any) -> None:
    state = small_filesystem.path / "state"
    env = daemon_env(state, free_port())
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        small_filesystem.fill()
        check, _ = wait_for_store(daemon.base_url, False, 10)
        assert check["detail"].startswith(
            f"StoreUnavailable: the store cannot write on {(state / 'tally.sqlite3').resolve()}: "
            "database or disk is full (SQLITE_FULL)"
        ), check
        assert httpx.get(f"{daemon.base_url}/healthz", timeout=5).status_code == 200
        small_filesystem.free()
        wait_for_store(daemon.base_url, True, READY_AGAIN_S)
        assert daemon.stop() == 0, daemon.log
