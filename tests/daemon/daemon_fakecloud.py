"""A fake OpenStack cloud for daemon tests: a small world served in a thread, and its clouds.yaml.

The fake (keystone and the five listing APIs, plus the simulator's ``GET /clock``) is frozen at one
virtual instant; a daemon reaches it through a clouds.yaml named by OS_CLIENT_CONFIG_FILE, as in
production.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from anyio.from_thread import start_blocking_portal

from tally.simulation import serve_fake_cloud
from tally.simulation.simulate import write_cloud_files
from tally.simulator.clock import VirtualClock
from tally.simulator.fakecloud import create_fake_cloud_app
from tally.simulator.world import World, WorldBuilder

T0 = datetime(2026, 7, 1, tzinfo=UTC)
NOW = T0 + timedelta(hours=6)  # the fake cloud's (frozen) virtual instant


def world() -> World:
    b = WorldBuilder(cloud="os-fake", period_from=T0, period_to=T0 + timedelta(days=31))
    project = b.project("alpha")
    flavor = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    ssd = b.volume_type("ssd")
    b.instance(project, flavor, created_at=T0 + timedelta(minutes=5))
    b.volume(project, ssd, size_gb=10, created_at=T0 + timedelta(minutes=6))
    return b.build()


@contextmanager
def fake_cloud(host: str = "127.0.0.1") -> Iterator[str]:
    """The fake cloud served on an ephemeral port of ``host`` by an event loop in its own thread; its
    base URL."""
    app = create_fake_cloud_app(world(), VirtualClock(NOW, 0.0))
    with start_blocking_portal(backend="asyncio") as portal:
        future, port = portal.start_task(serve_fake_cloud, app, host, 0)
        try:
            yield f"http://{host}:{port}"
        finally:
            future.cancel()


def write_clouds_yaml(directory: Path, base_url: str) -> Path:
    """clouds.yaml with the fake's admin account as cloud ``admin`` (the simulator's own writer)."""
    clouds_yaml, _ = write_cloud_files(directory, base_url, "admin")
    return clouds_yaml
