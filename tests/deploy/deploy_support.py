"""What the deploy/ files are checked against: the metrics a real ``tally run`` exposes.

``scrape_daemon`` (conftest.py's ``daemon_scrapes``) runs the daemon twice on one state directory,
the way an operator restarts it: first with the collector (on the machine's RabbitMQ, an exchange
and queue of its own) and a clouds config naming the fake cloud, where one sync is asked for; then
again without the collector. It answers both ``/metrics`` texts, so that a test can check what the
dashboard and the alert rules name, and what a restart keeps.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aio_pika
import anyio
import httpx
import yaml

# The daemon tests' helpers, also when this directory is run alone.
sys.path.insert(0, str(Path(__file__).parent.parent / "daemon"))

from daemon_fakecloud import fake_cloud, write_clouds_yaml
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready

INTERNAL = "internal-secret-for-deploy-tests"
CLOUD = "os-fake"


@dataclass(frozen=True)
class Scrapes:
    first: str  # with the collector, after one completed sync
    after_restart: str  # the same state directory, a fresh process, no sync run yet
    state_dir: Path


async def _exchange(url: str, name: str, *, delete: bool = False) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        if delete:
            await channel.queue_delete(f"{name}-queue")
            await channel.exchange_delete(name)
        else:
            await channel.declare_exchange(name, aio_pika.ExchangeType.TOPIC, durable=False)


def clouds_config(directory: Path, base_url: str) -> Path:
    """clouds.yaml (returned) and tally-clouds.yaml in ``directory``: the one cloud ``CLOUD``, synced
    on request, through the fake's admin account at ``base_url``."""
    clouds_yaml = write_clouds_yaml(directory, base_url)
    config = directory / "tally-clouds.yaml"
    entry = {"cloud": CLOUD, "platform": "openstack", "adapter": "openstack"}
    entry |= {"adapter_config": {"os_cloud": "admin"}, "sync_interval_s": 0}
    config.write_text(yaml.safe_dump({"clouds": [entry]}))
    return clouds_yaml


def scrape_daemon(directory: Path, amqp_url: str) -> Iterator[Scrapes]:
    """Both scrapes (see the module docstring); the exchange and queue are deleted after."""
    state = directory / "state"
    exchange = f"tally-test-deploy-{uuid.uuid4().hex[:10]}"
    anyio.run(_exchange, amqp_url, exchange, backend="asyncio")
    try:
        with fake_cloud() as base_url:
            clouds_yaml = clouds_config(directory, base_url)
            common = {
                "TALLY_REPORTING_INTERNAL_TOKEN": INTERNAL,
                "TALLY_REPORTING_CLOUDS_CONFIG": str(directory / "tally-clouds.yaml"),
                "TALLY_REPORTING_SYNC_SETTLE_S": "0",
                "OS_CLIENT_CONFIG_FILE": str(clouds_yaml),
            }
            env = daemon_env(
                state,
                free_port(),
                TALLY_OSC_AMQP_URL=amqp_url,
                TALLY_OSC_EXCHANGES=exchange,
                TALLY_OSC_QUEUE_NAME=f"{exchange}-queue",
                **common,
            )
            with running_daemon(env) as daemon:
                wait_until_ready(daemon.base_url)
                auth = {"Authorization": f"Bearer {INTERNAL}"}
                synced = httpx.post(f"{daemon.base_url}/internal/sync/{CLOUD}", headers=auth, timeout=60)
                assert synced.status_code == 200, synced.text
                first = httpx.get(f"{daemon.base_url}/metrics").text
                assert daemon.stop() == 0, daemon.log
            with running_daemon(daemon_env(state, free_port(), **common)) as daemon:
                wait_until_ready(daemon.base_url)
                again = httpx.get(f"{daemon.base_url}/metrics").text
                assert daemon.stop() == 0, daemon.log
        yield Scrapes(first, again, state)
    finally:
        anyio.run(lambda: _exchange(amqp_url, exchange, delete=True), backend="asyncio")


def exposed_names(text: str) -> set[str]:
    """Every sample name the exposition ``text`` can carry (a histogram's _bucket, _count, _sum)."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            names.add(name)
            if kind == "histogram":
                names |= {f"{name}_bucket", f"{name}_count", f"{name}_sum"}
    return names
