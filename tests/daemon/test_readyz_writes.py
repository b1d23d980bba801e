"""``/readyz`` tells whether the store can write, not only whether it answers, and answers fast.

A PostgreSQL database of the test's own turned read-only (its sessions ended, as a failover ends
them) makes the ``store`` check 503 naming it; turned writable again, the check passes within a few
seconds without a restart (the store replaces its read-only sessions). A SQLite store on a full
filesystem (a tmpfs of the test's own) is 503 naming the full disk, and ready again once there is room.
A PostgreSQL node of the test's own, stopped, is 503 naming the database that does not answer, and
ready again once it is back.

Under each fault ``/readyz`` answers within 100 ms (``readyz_support.FAST_MS``): it answers from the
background probes' outcomes and waits on nothing (it waited 1.5 s for a connection while the database
was away).
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
from readyz_support import READY_AGAIN_S, assert_answers_fast, readyz_times_ms, wait_for_store

from tally.testing.pg_node import PgNode


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
            assert_answers_fast(daemon.base_url)
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
        assert_answers_fast(daemon.base_url)
        small_filesystem.free()
        wait_for_store(daemon.base_url, True, READY_AGAIN_S)
        assert daemon.stop() == 0, daemon.log


def test_a_sqlite_store_deleted_under_the_daemon_is_not_ready_naming_it(tmp_path: Path) -> None:
    """A lost file handle: the store's file deleted under the running daemon. SQLite would commit into
    the unlinked file, lost at exit: every write is refused instead (the API answers 503, the
    collector's rows wait), and the store check names the path. A restart is the only mend."""
    state = tmp_path / "state"
    env = daemon_env(state, free_port())
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        path = (state / "tally.sqlite3").resolve()
        for suffix in ("", "-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        check, took = wait_for_store(daemon.base_url, False, 10)
        assert check["detail"] == (
            f"StoreUnavailable: the store cannot write on {path}: the file was deleted or replaced under "
            "the running process; copy it back from /proc/<pid>/fd while the process runs, then restart"
        ), check
        print(f"not ready {took:.1f} s after the delete")
        assert_answers_fast(daemon.base_url)
        time.sleep(2)  # probes go on failing: still one warning
        assert daemon.proc.poll() is None
        assert httpx.get(f"{daemon.base_url}/healthz", timeout=5).status_code == 200
        assert daemon.stop() == 0, daemon.log
    assert daemon.log.count("the file was deleted or replaced under the running process") == 1, daemon.log


@pytest.mark.postgres
def test_a_stopped_postgresql_is_not_ready_at_once_and_ready_again_once_it_is_back(
    pg_node: PgNode, tmp_path: Path
) -> None:
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=pg_node.url())
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        pg_node.stop("fast")
        check, _ = wait_for_store(daemon.base_url, False, 10, saying="the database does not answer")
        print(check["detail"])
        assert_answers_fast(daemon.base_url)
        assert httpx.get(f"{daemon.base_url}/healthz", timeout=5).status_code == 200
        pg_node.start()
        _, took = wait_for_store(daemon.base_url, True, READY_AGAIN_S)
        print(f"ready {took:.1f} s after the database was back")
        assert daemon.proc.poll() is None
        assert daemon.stop() == 0, daemon.log
