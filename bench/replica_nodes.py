"""What a campaign of ``tally run`` replicas runs on: a RabbitMQ vhost of its own, the simulator's fake
cloud in a thread (its compute calls slowed, so that a sync lasts long enough to be caught), one
``tally run`` process on a state directory of its own (``Replica``) with the settings every replica of
the campaign shares (``replica_env``), and the clouds config that points two clouds at the fake.

``bench.replicas`` runs the campaign on them; ``bench.flood`` and the daemon's restart tests use the
same pieces.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import aio_pika
import anyio
import httpx
import yaml
from anyio.from_thread import start_blocking_portal

from tally.simulation import serve_fake_cloud
from tally.simulation.simulate import write_cloud_files
from tally.simulator.clock import VirtualClock
from tally.simulator.fakecloud import ApiFaults, create_fake_cloud_app
from tally.simulator.world import World, WorldBuilder

ROOT = Path(__file__).resolve().parent.parent
PUBLISHER = ROOT / "tests" / "collector" / "oslo_publisher.py"
AMQP = "amqp://guest:guest@127.0.0.1:5672/"
CLOUDS = ("os-r1", "os-r2")
NOTIFY_CLOUD = "os-notify"
T0 = datetime(2026, 7, 1, tzinfo=UTC)
GRACE_S = 5.0

# -- the services: a database, a vhost, the fake cloud ----------------------------------------------------


@contextmanager
def own_vhost(broker_url: str) -> Iterator[str]:
    name = f"tally-bench-replicas-{uuid.uuid4().hex[:10]}"
    user = unquote(urlsplit(broker_url).username or "guest")
    subprocess.run(["rabbitmqctl", "add_vhost", name], check=True, capture_output=True, timeout=120)
    try:
        subprocess.run(
            ["rabbitmqctl", "set_permissions", "-p", name, user, ".*", ".*", ".*"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield urlsplit(broker_url)._replace(path="/" + quote(name, safe="")).geturl()
    finally:
        subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, timeout=120)


def delete_queue(amqp_url: str, queue: str, exchange: str) -> None:
    """Remove what the run declared on a vhost it does not own."""

    async def delete() -> None:
        connection = await aio_pika.connect(amqp_url)
        async with connection:
            channel = await connection.channel()
            await channel.queue_delete(queue)
            await channel.exchange_delete(exchange)

    anyio.run(delete)


def small_world() -> World:
    b = WorldBuilder(cloud="os-fake", period_from=T0, period_to=T0 + timedelta(days=31))
    project = b.project("alpha")
    b.instance(project, b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20), created_at=T0)
    b.volume(project, b.volume_type("ssd"), size_gb=10, created_at=T0)
    return b.build()


@contextmanager
def fake_cloud(compute_delay_s: float) -> Iterator[str]:
    """The fake cloud, frozen six hours into July, in a thread of its own; its base URL."""
    faults = ApiFaults(slow={"compute": compute_delay_s})
    app = create_fake_cloud_app(small_world(), VirtualClock(T0 + timedelta(hours=6), 0.0), faults)
    with start_blocking_portal(backend="asyncio") as portal:
        future, port = portal.start_task(serve_fake_cloud, app, "127.0.0.1", 0)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            future.cancel()


# -- the replicas ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kill_if_running(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``process`` unless it has ended, and reap it (a run's cleanup)."""
    if process.poll() is None:
        process.kill()
        process.wait()


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], timeout_s: float, who: str) -> None:
    """Until ``tally run``'s ``/readyz`` answers 200; ``RuntimeError`` naming ``who`` if the process
    exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{who} exited with {proc.returncode}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{who} not ready within {timeout_s:g} s")
        time.sleep(0.1)


class Replica:
    """One ``tally run`` on a state directory of its own; every incarnation logs to the same file."""

    def __init__(self, index: int, env: dict[str, str], log: Path) -> None:
        self.index = index
        self.env = env
        self.log = log
        self.port = int(env["TALLY_REPORTING_HTTP_PORT"])
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tally", "run"],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=out,
            )

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Until ``/readyz`` answers 200: the store migrated, the collector consuming."""
        assert self.proc is not None
        wait_ready(self.url, self.proc, timeout_s, f"replica {self.index} (log: {self.log})")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def kill_if_running(self) -> None:
        """SIGKILL, if this replica's process still runs (a campaign's cleanup)."""
        if self.proc is not None:
            kill_if_running(self.proc)

    def stop(self) -> int:
        """SIGTERM and the drain; the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=GRACE_S + 30)

    def metric(self, name: str, labels: str) -> float:
        """The sum of the samples of ``name`` whose label text contains ``labels``."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") and labels in line:
                total += float(line.rsplit(" ", 1)[1])
        return total


def replica_env(
    index: int,
    work: Path,
    db_url: str,
    amqp_url: str,
    exchange: str,
    queue: str,
    cloud_files: tuple[Path, Path],
) -> dict[str, str]:
    clouds_yaml, clouds_config = cloud_files
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        "TALLY_STATE_DIR": str(work / f"replica-{index}"),
        "TALLY_REPORTING_HTTP_PORT": str(free_port()),
        "TALLY_REPORTING_DB_URL": db_url,
        "TALLY_REPORTING_DB_MAX_CONNS": "4",
        "TALLY_REPORTING_CLOUDS_CONFIG": str(clouds_config),
        "TALLY_REPORTING_SYNC_SETTLE_S": "0",
        "TALLY_REPORTING_SYNC_BUDGET_S": "30",
        "TALLY_REPORTING_INTERNAL_TOKEN": "bench-replicas-internal",
        "OS_CLIENT_CONFIG_FILE": str(clouds_yaml),
        "TALLY_OSC_AMQP_URL": amqp_url,
        "TALLY_OSC_EXCHANGES": exchange,
        "TALLY_OSC_QUEUE_NAME": queue,
        "TALLY_OSC_QUEUE_TYPE": "quorum",
        "TALLY_OSC_CLOUD": NOTIFY_CLOUD,
        "TALLY_OSC_FLUSH_INTERVAL_S": "0.2",
        "TALLY_SHUTDOWN_GRACE_S": str(GRACE_S),
    }


def write_clouds(work: Path, base_url: str, interval_s: float) -> tuple[Path, Path]:
    clouds_yaml, _ = write_cloud_files(work, base_url, "admin")
    config = work / "tally-clouds.yaml"
    entry = {"platform": "openstack", "adapter": "openstack", "adapter_config": {"os_cloud": "admin"}}
    config.write_text(
        yaml.safe_dump({"clouds": [{"cloud": c, **entry, "sync_interval_s": interval_s} for c in CLOUDS]})
    )
    return clouds_yaml, config


def wait_until(predicate: Callable[[], bool], timeout_s: float, step_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(step_s)
    return True
