"""A real Prometheus (Debian's ``prometheus``) scraping a real ``tally run`` through a simulated month.

``month_in_prometheus`` starts, in a temporary directory of its own: a RabbitMQ vhost of its own; the
daemon (collector on that vhost, a clouds config with the simulated cloud synced every few seconds
at the simulator's clock, and a second cloud whose clouds.yaml entry does not exist, so that its
syncs fail as a misconfigured cloud's do); Prometheus on 127.0.0.1 on a free port, scraping the
daemon every second as ``job="tally"`` and evaluating deploy/prometheus/tally-alerts.yaml every
second; then ``tally simulator run`` publishes July 2026 (a 0.3-scale world, duplicates and refused
shapes among its notifications) paced to about 20 s, serving the fake cloud meanwhile. Before it a
sync of the misconfigured cloud is asked (a 500, a failed run) and one request is made without a
token (a 401): what a month of operation also holds. Everything
is stopped and removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pytest
import yaml
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready
from monitoring_files import RULES

from tally.simulation.simulate import write_cloud_files

CLOUD = "os-sim"
BROKEN_CLOUD = "os-misconfigured"
INTERNAL = "internal-token-of-the-prometheus-test"
# July 2026 in about 20 s of wall time.
FACTOR = 31 * 86400 / 20
MONTH = ["--seed", "1", "--period", "2026-07", "--scale", "0.3", "--faults", "duplicates,refused-shapes"]


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        message = "prometheus is not installed (Debian's prometheus package; scripts/test installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@contextmanager
def own_vhost(amqp_url: str) -> Iterator[str]:
    """The broker URL on a vhost made for this module (rabbitmqctl), deleted at the end."""
    name = f"tally-test-prometheus-{uuid.uuid4().hex[:8]}"
    user = urlsplit(amqp_url).username or "guest"
    subprocess.run(["rabbitmqctl", "-q", "add_vhost", name], check=True, capture_output=True)
    try:
        subprocess.run(
            ["rabbitmqctl", "-q", "set_permissions", "-p", name, user, ".*", ".*", ".*"],
            check=True,
            capture_output=True,
        )
        yield urlsplit(amqp_url)._replace(path="/" + quote(name, safe="")).geturl()
    finally:
        subprocess.run(["rabbitmqctl", "-q", "delete_vhost", name], capture_output=True)


@contextmanager
def prometheus(directory: Path, target: str) -> Iterator[str]:
    """Prometheus on 127.0.0.1 scraping ``target`` as job "tally" with the alert rules loaded; its URL."""
    port = free_port()
    config = directory / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [{"job_name": "tally", "static_configs": [{"targets": [target]}]}],
            }
        )
    )
    log = (directory / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prometheus_binary(),
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (directory / "prometheus.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "Prometheus not ready within 30 s"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _clouds(directory: Path, fake_cloud_url: str) -> dict[str, str]:
    """clouds.yaml and the clouds config (the simulated cloud and the misconfigured one); their env."""
    clouds_yaml, _ = write_cloud_files(directory, fake_cloud_url, CLOUD)
    entries = [
        {
            "cloud": CLOUD,
            "adapter_config": {"os_cloud": CLOUD, "include_octavia": True},
            "sync_interval_s": 3,
        },
        {"cloud": BROKEN_CLOUD, "adapter_config": {"os_cloud": "no-such-entry"}, "sync_interval_s": 0},
    ]
    config = directory / "tally-clouds.yaml"
    clouds = [{"platform": "openstack", "adapter": "openstack"} | entry for entry in entries]
    config.write_text(yaml.safe_dump({"clouds": clouds}))
    return {"OS_CLIENT_CONFIG_FILE": str(clouds_yaml), "TALLY_REPORTING_CLOUDS_CONFIG": str(config)}


def _before_the_month(base_url: str) -> None:
    """A sync of the misconfigured cloud asked by hand (a 500, a failed run) and a request without a
    token (a 401)."""
    auth = {"Authorization": f"Bearer {INTERNAL}"}
    failed = httpx.post(f"{base_url}/internal/sync/{BROKEN_CLOUD}", headers=auth, timeout=60)
    assert failed.status_code == 500, failed.text
    assert httpx.get(f"{base_url}/api/v1/resources").status_code == 401


def _publish_the_month(env: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "tally", "simulator", "run", *MONTH, "--factor", str(FACTOR)]
    done = subprocess.run(
        [*argv, "--wait-for-collector", "60"], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr


def month_in_prometheus(directory: Path, amqp_url: str) -> Iterator[str]:
    """See the module docstring; yields Prometheus' URL once the month is published, collected and
    scraped."""
    sim_port = free_port()
    with own_vhost(amqp_url) as vhost_url:
        queue = f"tally-test-prometheus-{uuid.uuid4().hex[:8]}"
        env = daemon_env(
            directory / "state",
            free_port(),
            TALLY_OSC_AMQP_URL=vhost_url,
            TALLY_OSC_QUEUE_NAME=queue,
            TALLY_OSC_CLOUD=CLOUD,
            TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
            TALLY_REPORTING_SYNC_SETTLE_S="0",
            TALLY_REPORTING_SYNC_CLOCK_URL=f"http://127.0.0.1:{sim_port}/clock",
            # Warnings only: the log goes to a pipe read at the end, which a month of INFO would fill.
            TALLY_LOG_LEVEL="WARNING",
            **_clouds(directory, f"http://127.0.0.1:{sim_port}"),
        )
        with running_daemon(env) as daemon:
            wait_until_ready(daemon.base_url)
            target = urlsplit(daemon.base_url).netloc
            with prometheus(directory, target) as url:
                _before_the_month(daemon.base_url)
                sim_env = env | {
                    "TALLY_SIM_AMQP_URL": vhost_url,
                    "TALLY_SIM_HTTP_PORT": str(sim_port),
                    "TALLY_SIM_CLOUD": CLOUD,
                }
                _publish_the_month(sim_env)
                time.sleep(3)  # the last deliveries and syncs, then a few scrapes of them
                yield url
            assert daemon.stop() == 0, daemon.log
