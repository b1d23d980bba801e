"""``tally run`` whose store's files sit on a filesystem that fills: seen, every event kept, healed.

PostgreSQL: a node of the test's own keeps the database's tables in a tablespace on a small tmpfs of
the test's own (``default_tablespace``, set before the migrations made them); its WAL and catalogs stay
on the ordinary disk, as a data volume filling before the system one does. Once a filler file took
every free byte of the tmpfs, the Reporting API answers a batch that needs a new block 503 (nothing of
it committed), ``/readyz`` is 503 naming the full disk (SQLSTATE 53100) and answers fast, the process
stays up. Once the filler is gone the store is ready again by itself, the refused batches are taken
when the client sends them again, and every event is stored once.

SQLite: the same with the store's file (the daemon's state directory) on a 4 MiB tmpfs
(``small_filesystem``); its refusal is SQLITE_FULL.
"""

from __future__ import annotations

import os
import pwd
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from daemon_support import daemon_env, free_port, running_daemon, secret, wait_until_ready
from readyz_support import READY_AGAIN_S, assert_answers_fast, wait_for_store

from tally.testing.pg_node import PgNode

BATCH = 50
PAYLOAD_BYTES = 2000  # a batch is some 100 kB: more than the free room of the last page


@pytest.fixture
def tablespace_fs() -> Iterator[Path]:
    """A 6 MiB tmpfs the ``postgres`` user may reach (a pytest tmp_path is root's alone), unmounted after."""
    mount_point = Path(tempfile.mkdtemp(prefix="tally-pg-space-"))
    mount_point.chmod(0o755)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m,mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        mount_point.rmdir()
        message = f"cannot mount a tmpfs for the full-disk test: {done.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=True)
        mount_point.rmdir()


def fill(path: Path) -> None:
    with (path / "filler").open("ab", buffering=0) as filler:
        for chunk in (1 << 16, 512):
            try:
                while True:
                    filler.write(b"\0" * chunk)
            except OSError:
                pass
    assert os.statvfs(path).f_bavail == 0


def events(batch: int) -> list[dict[str, object]]:
    return [
        {
            "event_id": f"b{batch}-e{n}",
            "timestamp": "2026-03-01T10:00:00Z",
            "event_type": "compute.instance.create.end",
            "platform": "openstack",
            "cloud": "os-dev",
            "resource_type": "instance",
            "resource_id": f"vm-{batch}-{n}",
            "project_id": "p-1",
            "payload": {
                "state": "active",
                "size": {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1"},
                "note": os.urandom(PAYLOAD_BYTES // 2).hex(),
            },
        }
        for n in range(BATCH)
    ]


def fill_while_ingesting(
    env: dict[str, str], fill_disk: Callable[[], None], free_disk: Callable[[], None], cause: str
) -> tuple[int, str]:
    """Batches posted before, while and after the disk is full, the refused ones sent again; the
    number of distinct batches taken and the daemon's log."""
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        ingest = secret(env, "ingest-credential", "create", "--platform", "openstack", "--cloud", "os-dev")
        auth = {"Authorization": f"Bearer {ingest}"}
        with httpx.Client(base_url=daemon.base_url, headers=auth, timeout=10) as client:
            for batch in range(3):
                assert client.post("/api/v1/events", json=events(batch)).json()["accepted"] == BATCH

            fill_disk()
            refused: list[int] = []
            for batch in range(3, 40):
                answer = client.post("/api/v1/events", json=events(batch))
                assert answer.status_code in (200, 503), answer.text
                if answer.status_code == 503:
                    refused.append(batch)
                    if len(refused) == 3:
                        break
            assert len(refused) == 3, "no batch was refused on the full disk"
            accepted = [b for b in range(batch + 1) if b not in refused]

            check, _ = wait_for_store(daemon.base_url, False, 10, saying=cause)
            print(check["detail"])
            assert_answers_fast(daemon.base_url)
            assert client.get("/healthz").status_code == 200

            free_disk()
            _, took = wait_for_store(daemon.base_url, True, READY_AGAIN_S)
            print(f"ready {took:.1f} s after the space returned")
            for batch in refused:  # the client sends again what was refused
                assert client.post("/api/v1/events", json=events(batch)).json() == {
                    "accepted": BATCH,
                    "duplicates": 0,
                    "rejected": [],
                }
            again = client.post("/api/v1/events", json=events(accepted[-1])).json()
            assert again == {"accepted": 0, "duplicates": BATCH, "rejected": []}
        assert daemon.proc.poll() is None
        assert daemon.stop() == 0, daemon.log
    return len(accepted) + len(refused), daemon.log


@pytest.mark.postgres
def test_a_full_disk_under_postgresql_is_named_keeps_every_event_and_heals_without_a_restart(
    pg_node: PgNode, tablespace_fs: Path, tmp_path: Path
) -> None:
    owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    space = tablespace_fs / "ts"
    space.mkdir()
    if owner is not None:
        os.chown(space, owner.pw_uid, owner.pw_gid)
    with psycopg.connect(pg_node.url(), autocommit=True) as admin:
        admin.execute(f"CREATE TABLESPACE small LOCATION '{space}'")
        admin.execute("CREATE DATABASE tally")
        admin.execute("ALTER DATABASE tally SET default_tablespace = small")
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=pg_node.url("tally"))
    sent, log = fill_while_ingesting(
        env, lambda: fill(tablespace_fs), (tablespace_fs / "filler").unlink, "disk full (SQLSTATE 53100)"
    )
    assert "could not extend file" in log
    with psycopg.connect(pg_node.url("tally")) as conn:
        stored = conn.execute("SELECT count(*), count(DISTINCT event_id) FROM events").fetchone()
    assert stored == (sent * BATCH,) * 2
    assert "store: PostgreSQL refuses writes for want of space" in log
    assert "store: PostgreSQL takes writes again after" in log


def test_a_full_disk_under_sqlite_keeps_every_event_and_heals_without_a_restart(
    small_filesystem: Any,
) -> None:
    state = small_filesystem.path / "state"
    env = daemon_env(state, free_port())
    sent, log = fill_while_ingesting(env, small_filesystem.fill, small_filesystem.free, "SQLITE_FULL")
    with sqlite3.connect(state / "tally.sqlite3") as conn:
        stored = conn.execute("SELECT count(*), count(DISTINCT event_id) FROM events").fetchone()
    assert stored == (sent * BATCH,) * 2
    assert "store: SQLite cannot write" in log
