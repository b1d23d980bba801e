"""``tally run`` whose outbox sits on a filesystem that fills, or is lost: the daemon stays up and says why.

The outbox is on a 4 MiB tmpfs of the test's own (``small_filesystem``), the store on the test's
ordinary disk. Notifications flow at a steady rate all along (``SteadyPublisher``), the daemon under
load. Once a filler file took every free byte, notifications keep coming on RabbitMQ: the
collector cannot commit them, so it acks none, stops taking more (the broker keeps them), and
``/readyz`` answers 503 naming the full disk and the path. Once the filler is gone it resumes by
itself: every notification is in the store once, the process was never restarted.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aio_pika
import anyio
import httpx
import pytest
from daemon_exchange import clean_up, declare
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready
from steady_publisher import SteadyPublisher

BEFORE = 20
RATE = 100  # notifications a second, all along
# From the disk freed to every notification published until then stored, the process never restarted.
RECOVERY_S = 30.0


def notification(n: int) -> bytes:
    inner = {
        "message_id": str(uuid.uuid4()),
        "publisher_id": "compute.cmp-01",
        "event_type": "compute.instance.create.end",
        "priority": "INFO",
        "payload": {
            "instance_id": f"178b0921-0000-4000-8000-{n:012d}",
            "tenant_id": "6f70aa",
            "instance_type": "m1.large",
            "memory_mb": 8192,
            "vcpus": 4,
            "root_gb": 80,
            "disk_gb": 80,
            "state": "active",
            "created_at": "2026-03-01 09:59:40+00:00",
            "launched_at": "2026-03-01T10:00:00.000000",
            # Some bulk, as real payloads have: the outbox must need new blocks for what it commits.
            "metadata": {"note": "x" * 1500},
        },
        "timestamp": "2026-03-01 10:00:00.123456",
        "_context_project_id": "ctxproj",
        "_unique_id": uuid.uuid4().hex,
    }
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


async def publish(url: str, exchange: str, numbers: range) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        target = await channel.get_exchange(exchange, ensure=False)
        for n in numbers:
            message = aio_pika.Message(notification(n), content_type="application/json")
            await target.publish(message, routing_key="notifications.info")


def collector_env(state: Path, amqp_url: str, exchange: str, queue: str, outbox: Path) -> dict[str, str]:
    """The daemon's environment: its collector on the test's exchange, the outbox on ``outbox``."""
    return daemon_env(
        state,
        free_port(),
        TALLY_OSC_AMQP_URL=amqp_url,
        TALLY_OSC_EXCHANGES=exchange,
        TALLY_OSC_QUEUE_NAME=queue,
        TALLY_OSC_CLOUD="os-dev",
        TALLY_OSC_FLUSH_INTERVAL_S="0.2",
        TALLY_OSC_BUFFER_PATH=str(outbox),
    )


def stored(state: Path) -> tuple[int, int]:
    """(events, distinct event ids) in the daemon's SQLite store."""
    with sqlite3.connect(state / "tally.sqlite3") as db:
        total, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT event_id) FROM events").fetchone()
    return int(total), int(distinct)


def wait_for(what: str, condition: Callable[[], bool], timeout_s: float) -> float:
    """Poll ``condition()`` until true; the seconds it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, f"{what}: not within {timeout_s:g} s"
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.mark.rabbitmq
def test_a_full_disk_under_the_outbox_stops_consuming_and_resumes_without_a_restart(
    tmp_path: Path, amqp_url: str, small_filesystem: Any
) -> None:
    """Under load: notifications flow at a steady RATE a second from before the disk fills until after
    it was freed and the backlog is in."""
    unique = uuid.uuid4().hex[:10]
    exchange, queue = f"tally-test-nova-{unique}", f"tally-test-full-{unique}"
    anyio.run(declare, amqp_url, exchange, backend="asyncio")
    state = tmp_path / "state"
    outbox = small_filesystem.path / "outbox.sqlite3"
    env = collector_env(state, amqp_url, exchange, queue, outbox)
    try:
        with (
            running_daemon(env) as daemon,
            SteadyPublisher(amqp_url, exchange, notification, RATE) as traffic,
        ):
            wait_until_ready(daemon.base_url)
            wait_for("the first events stored", lambda: stored(state)[1] >= BEFORE, 20)

            small_filesystem.fill()

            def not_ready_for_the_disk() -> bool:
                if daemon.proc.poll() is not None:
                    raise AssertionError(f"the daemon exited {daemon.stop()}: {daemon.log[-1500:]}")
                try:
                    answer = httpx.get(f"{daemon.base_url}/readyz", timeout=5)
                except httpx.HTTPError:
                    return False
                return answer.status_code == 503 and "disk full on" in str(
                    answer.json()["checks"].get("outbox")
                )

            wait_for("/readyz naming the full disk", not_ready_for_the_disk, 20)
            answer = httpx.get(f"{daemon.base_url}/readyz", timeout=5)
            detail = str(answer.json()["checks"]["outbox"]["detail"])
            assert detail.startswith(f"the outbox cannot write: disk full on {outbox}"), detail
            metrics = httpx.get(f"{daemon.base_url}/metrics", timeout=5).text
            assert "tally_collector_outbox_write_failing 1.0" in metrics
            # It stays so while the disk is full: held, not crashed and restarted, and nothing more
            # reaches the store while the notifications keep coming. What the outbox held before the
            # fill has gone by now: its sender's first retries after a delete the disk refused (0.5 s,
            # then 1 s) sent it again.
            time.sleep(2)
            held, published_then = stored(state)[1], traffic.published
            time.sleep(3)
            assert daemon.proc.poll() is None
            assert httpx.get(f"{daemon.base_url}/healthz", timeout=5).status_code == 200
            assert stored(state)[1] == held < traffic.published
            assert traffic.published >= published_then + RATE  # the load went on meanwhile

            small_filesystem.free()
            freed = traffic.published
            took = wait_for("the backlog stored", lambda: stored(state)[1] >= freed, RECOVERY_S)
            checks = wait_until_ready(daemon.base_url)
            assert checks["outbox"] == {"ok": True, "detail": "writes commit"}, checks
            total = traffic.stop()
            wait_for("every event stored", lambda: stored(state)[1] == total, 20)
            assert stored(state) == (total, total)  # 0 lost, 0 doubled
            metrics = httpx.get(f"{daemon.base_url}/metrics", timeout=5).text
            assert "tally_collector_outbox_write_failing 0.0" in metrics
            assert daemon.stop() == 0, daemon.log
        log = daemon.log
        print(f"{total} notifications at {RATE}/s; the backlog in {took:.1f} s after the disk was freed")
        assert "actor crashed" not in log and "actor restarting" not in log, log
        # One warning when the fault began, one when writes committed again.
        assert log.count("the outbox cannot write: disk full on") == 1, log
        assert log.count("outbox: writes commit again on") == 1, log
    finally:
        anyio.run(clean_up, amqp_url, exchange, queue, backend="asyncio")


async def make_outbox(path: Path) -> None:
    from tally.outbox import open_outbox

    async with open_outbox(path) as outbox:
        await outbox.add([("earlier", b"{}")])
        await outbox.remove([row.seq for row in await outbox.peek(1)])


@pytest.mark.rabbitmq
def test_a_start_on_a_full_disk_waits_for_the_outbox_instead_of_crashing(
    tmp_path: Path, amqp_url: str, small_filesystem: Any
) -> None:
    """The daemon restarted (by systemd, say) while the outbox's disk is full: SQLite cannot make the
    WAL's files, so the outbox does not open. The collector tries again instead of crashing, and
    starts by itself once there is room."""
    unique = uuid.uuid4().hex[:10]
    exchange, queue = f"tally-test-nova-{unique}", f"tally-test-start-{unique}"
    anyio.run(declare, amqp_url, exchange, backend="asyncio")
    state = tmp_path / "state"
    outbox = small_filesystem.path / "outbox.sqlite3"
    anyio.run(make_outbox, outbox)
    small_filesystem.fill()
    env = collector_env(state, amqp_url, exchange, queue, outbox)
    try:
        with running_daemon(env) as daemon:
            # Longer than the supervisor's five restarts took to give up (about 3 s).
            time.sleep(6)
            assert daemon.proc.poll() is None, daemon.stop()
            answer = httpx.get(f"{daemon.base_url}/readyz", timeout=5)
            assert answer.status_code == 503
            detail = str(answer.json()["checks"]["outbox"]["detail"])
            assert detail.startswith("the outbox cannot write: ") and f" on {outbox} (" in detail, detail

            small_filesystem.free()
            wait_until_ready(daemon.base_url, timeout_s=20)
            anyio.run(publish, amqp_url, exchange, range(3), backend="asyncio")
            wait_for("the events stored", lambda: stored(state)[1] == 3, 20)
            assert daemon.stop() == 0, daemon.log
        assert "actor crashed" not in daemon.log and "supervisor giving up" not in daemon.log, daemon.log
        assert daemon.log.count("the collector starts once it opens") == 1, daemon.log
        assert "collector: the outbox opens again" in daemon.log
    finally:
        anyio.run(clean_up, amqp_url, exchange, queue, backend="asyncio")


@pytest.mark.rabbitmq
def test_the_outbox_lost_under_a_running_daemon_is_said_and_mended_without_a_restart(
    tmp_path: Path, amqp_url: str
) -> None:
    """A lost file handle, under load: the outbox's directory removed (``rm -rf``) under the running
    daemon. SQLite would go on committing into the unlinked file, which dies with the process: the
    collector refuses those commits instead, so it acks nothing more, and ``/readyz`` names the path.
    The sender meanwhile delivers what the open file held. Once the directory is back, the open file
    is written back there and consuming resumes by itself. Then the file alone is deleted: written
    back at the next write. Every notification stored once, the process never restarted."""
    unique = uuid.uuid4().hex[:10]
    exchange, queue = f"tally-test-nova-{unique}", f"tally-test-lost-{unique}"
    anyio.run(declare, amqp_url, exchange, backend="asyncio")
    state = tmp_path / "state"
    outbox = tmp_path / "outbox" / "outbox.sqlite3"
    env = collector_env(state, amqp_url, exchange, queue, outbox)
    try:
        with (
            running_daemon(env) as daemon,
            SteadyPublisher(amqp_url, exchange, notification, RATE) as traffic,
        ):
            wait_until_ready(daemon.base_url)
            wait_for("the first events stored", lambda: stored(state)[1] >= BEFORE, 20)
            shutil.rmtree(outbox.parent)

            def outbox_check() -> dict[str, Any]:
                assert daemon.proc.poll() is None, daemon.log[-1500:]
                answer = httpx.get(f"{daemon.base_url}/readyz", timeout=5)
                return dict(answer.json()["checks"]["outbox"])

            wait_for("/readyz naming the lost file", lambda: not outbox_check()["ok"], 20)
            assert outbox_check()["detail"] == (
                "the outbox cannot write: the file and its directory were removed under the running "
                f"process (No such file or directory) on {outbox}; recreate the directory: the open "
                "file is written back"
            )
            time.sleep(2)
            held = stored(state)[1]
            time.sleep(3)
            assert stored(state)[1] == held < traffic.published  # nothing more acked meanwhile
            assert httpx.get(f"{daemon.base_url}/healthz", timeout=5).status_code == 200

            outbox.parent.mkdir()
            wait_for("/readyz ready again", lambda: outbox_check()["ok"], 20)
            wait_for("the backlog stored", lambda: stored(state)[1] >= traffic.published - RATE, RECOVERY_S)
            for suffix in ("", "-wal", "-shm"):
                outbox.with_name(outbox.name + suffix).unlink(missing_ok=True)
            wait_for("the file written back", outbox.exists, 10)
            total = traffic.stop()
            wait_for("every event stored", lambda: stored(state)[1] == total, 30)
            assert stored(state) == (total, total)  # 0 lost, 0 doubled
            assert daemon.stop() == 0, daemon.log
        log = daemon.log
        assert "actor crashed" not in log and "actor restarting" not in log, log
        # One warning per change: the loss, each writing back, writes committing again.
        assert log.count("the file and its directory were removed under the running process") == 1, log
        assert log.count("was deleted under the running process; written back") == 2, log
        assert log.count("outbox: writes commit again on") == 1, log
    finally:
        anyio.run(clean_up, amqp_url, exchange, queue, backend="asyncio")
