"""The development cloud is ready when it says so: a volume asked for as soon as a start or a restart
returns is scheduled and becomes ``available``.

cinder-scheduler and cinder-volume started in the same instant can miss each other's capability
announcements (the real-cloud lane's first volume went to ``error`` in CI on 2026-12-04). Each round
restarts the two together through ``scripts/devcloud restart``, the start's own readiness wait, and
asks for a volume at once. nova-compute is not restartable alone (its fake driver's servers live in
its memory), and ``restart`` says so.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from realcloud_support import Tenant

pytestmark = pytest.mark.realcloud
DEVCLOUD = Path(__file__).resolve().parent.parent.parent / "scripts" / "devcloud"
ROUNDS = 3


def restart(*programs: str) -> float:
    began = time.monotonic()
    done = subprocess.run(
        [str(DEVCLOUD), "restart", *programs], capture_output=True, text=True, timeout=420, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"devcloud: restarted {', '.join(programs)}; ready in ")
    return time.monotonic() - began


@pytest.fixture(scope="module")
def tenant(devcloud: dict[str, Any]) -> Tenant:
    return Tenant(devcloud)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_a_volume_asked_for_when_cinder_is_back_is_available(tenant: Tenant, round_: int) -> None:
    seconds = restart("cinder-scheduler", "cinder-volume")
    volume = tenant.conn.block_storage.create_volume(name=f"ready-{round_}", size=1)
    reached = tenant.conn.block_storage.wait_for_status(volume, status="available", wait=120)
    assert reached.status == "available"
    tenant.conn.block_storage.delete_volume(volume)
    # The backend repeats its capabilities every 10 s (deploy/devcloud/configs.py), so a scheduler
    # that missed the first announcement hears the next well within this.
    assert seconds < 90


def test_restart_refuses_a_program_the_cloud_does_not_run(devcloud: dict[str, Any]) -> None:
    done = subprocess.run(
        [str(DEVCLOUD), "restart", "nova-bogus"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("devcloud: no program named nova-bogus; restartable: cinder-api, ")
    assert "nova-compute" not in line


def test_restart_refuses_nova_compute_and_leaves_it_running(devcloud: dict[str, Any]) -> None:
    done = subprocess.run(
        [str(DEVCLOUD), "restart", "nova-compute"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("devcloud: nova-compute cannot be restarted alone: its fake virt driver")
    status = subprocess.run([str(DEVCLOUD), "status"], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stdout
