"""The development cloud is ready when it says so: a volume asked for as soon as a start or a restart
returns is scheduled and becomes ``available``.

cinder-scheduler and cinder-volume started in the same instant can miss each other's capability
announcements: the volume announces in its ``init_host`` before the scheduler's fanout queue exists,
the scheduler asks before the volume's exists, and a volume asked for then goes to ``error`` ("No
valid backend"), as the real-cloud lane's first volume did in CI on 2026-12-04. One test stages that
race for certain (the volume frozen between its announcement and its consumer) and holds the start's
readiness wait and the backend's 10 s stats period to a scheduler that hears the backend at once;
the others restart the two together through ``scripts/devcloud restart`` and ask for a volume at
once. nova-compute is not restartable alone (its fake driver's servers live in its memory), and
``restart`` says so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from realcloud_support import Tenant

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "deploy"))
from devcloud import processes, resources  # noqa: E402 (the deployment's own package, beside src/)
from devcloud.layout import Layout, from_env  # noqa: E402

pytestmark = pytest.mark.realcloud
DEVCLOUD = REPO / "scripts" / "devcloud"
ROUNDS = 2
ANNOUNCED = "Driver initialization completed"  # cinder-volume logs it right after its announcement
CONSUMING = "Initializing RPC dependent components"  # and this as it starts to consume


def restart(*programs: str) -> float:
    began = time.monotonic()
    done = subprocess.run(
        [str(DEVCLOUD), "restart", *programs], capture_output=True, text=True, timeout=420, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"devcloud: restarted {', '.join(programs)}; ready in ")
    return time.monotonic() - began


def _logged_since(layout: Layout, name: str, offset: int) -> str:
    with (layout.logs / f"{name}.log").open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def _volume_frozen_after_its_announcement(layout: Layout) -> int | None:
    """cinder-volume started alone and frozen (SIGSTOP) once it announced, before it consumes; its
    pid, or None when it was already consuming (the freeze came late: the caller tries again)."""
    offset = (layout.logs / "cinder-volume.log").stat().st_size
    pid = processes.start(layout, processes.services_by_name(layout)["cinder-volume"])
    deadline = time.monotonic() + 120
    while ANNOUNCED not in _logged_since(layout, "cinder-volume", offset):
        assert time.monotonic() < deadline, f"cinder-volume never logged {ANNOUNCED!r}"
        time.sleep(0.005)
    os.killpg(pid, signal.SIGSTOP)
    if CONSUMING in _logged_since(layout, "cinder-volume", offset):
        os.killpg(pid, signal.SIGCONT)
        return None
    return pid


@pytest.fixture(scope="module")
def tenant(devcloud: dict[str, Any]) -> Tenant:
    return Tenant(devcloud)


def test_a_scheduler_that_missed_the_backends_announcement_hears_it_before_ready(
    devcloud: dict[str, Any], tenant: Tenant
) -> None:
    layout = from_env()
    admin = resources.Admin(layout, devcloud["admin"]["password"])
    try:
        waited = _ready_after_a_missed_announcement(layout, admin)
    finally:
        for name, program in processes.services_by_name(layout).items():
            if name.startswith("cinder-") and processes.exited(layout, name):
                processes.start(layout, program)  # what a failed staging stopped: the cloud whole again
    assert resources.volume_pools(admin), "ready, yet the scheduler lists no pool"
    volume = tenant.conn.block_storage.create_volume(name="ready-after-a-missed-announcement", size=1)
    reached = tenant.conn.block_storage.wait_for_status(volume, status="available", wait=120)
    assert reached.status == "available"
    tenant.conn.block_storage.delete_volume(volume)
    # The backend announces again every 10 s from its start (deploy/devcloud/configs.py); cinder's
    # defaults (every 60 s, after a random delay of up to 60) kept this scheduler deaf for 52 s.
    assert waited < 20, f"the scheduler heard the backend {waited:.1f} s after it ran on"


def _ready_after_a_missed_announcement(layout: Layout, admin: resources.Admin) -> float:
    """The race staged, then the start's readiness wait; the seconds it waited after the thaw."""
    frozen = None
    for _attempt in range(3):
        processes.stop(layout, {"cinder-scheduler", "cinder-volume"})
        frozen = _volume_frozen_after_its_announcement(layout)
        if frozen is not None:
            break
    assert frozen is not None, "cinder-volume consumed before it could be frozen, three times"
    try:
        processes.start(layout, processes.services_by_name(layout)["cinder-scheduler"])
        # get_pools is a call to the scheduler (it waits in the scheduler's queue until it consumes):
        # answered, the scheduler has asked the backends for their capabilities, into no queue of
        # the frozen volume's.
        assert resources.volume_pools(admin) == [], (
            "the staging failed: the scheduler heard the frozen volume"
        )
    finally:
        os.killpg(frozen, signal.SIGCONT)
    thawed = time.monotonic()
    resources.wait_for_backends(admin, thawed + 120)
    return time.monotonic() - thawed


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


def refused_restart(program: str) -> str:
    done = subprocess.run(
        [str(DEVCLOUD), "restart", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    return line


def test_restart_refuses_a_program_the_cloud_does_not_run(devcloud: dict[str, Any]) -> None:
    line = refused_restart("nova-bogus")
    assert line.startswith("devcloud: no program named nova-bogus; restartable: cinder-api, ")
    assert "nova-compute" not in line


def test_restart_refuses_nova_compute_and_leaves_it_running(devcloud: dict[str, Any]) -> None:
    line = refused_restart("nova-compute")
    assert line.startswith("devcloud: nova-compute cannot be restarted alone: its fake virt driver")
    status = subprocess.run([str(DEVCLOUD), "status"], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stdout
