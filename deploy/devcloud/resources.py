"""The last steps of a start, through the real APIs as the admin: wait for the compute host and the
volume backend to report, map the host into its cell, then make a flavor, an image and a network
that a server, a volume or a floating IP can be created from at once.

"Reported" means what the schedulers need, not only a service heartbeat: a service is listed "up" as
soon as its row exists, before nova-compute has put its resource provider into placement and before
cinder-scheduler has heard the volume backend's capabilities. The backend announces those on a
fanout that the scheduler misses when both start in the same second, and repeats them only on its
stats period; a volume asked for in that gap goes to ``error`` ("No valid backend"), as the
real-cloud lane's first volume did in CI on 2026-12-04."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

from . import api
from .errors import DevcloudError
from .layout import Layout

FLAVOR = {"name": "m1.tiny", "ram": 512, "vcpus": 1, "disk": 1}
IMAGE_BYTES = b"devcloud image: the fake virt driver never reads it\n" * 16
PUBLIC_CIDR = "203.0.113.0/24"  # a documentation range: no packet ever leaves the machine


class Admin:
    """The admin's token and the endpoints the start needs."""

    def __init__(self, layout: Layout, password: str) -> None:
        self.layout = layout
        self.auth_url = f"{layout.url('keystone')}/v3"
        self.token, body = api.password_token(self.auth_url, "admin", password, "admin")
        self.project_id: str = body["project"]["id"]

    def call(self, method: str, service: str, path: str, *codes: int, **kwargs: Any) -> Any:
        answer = api.request(method, f"{self.layout.url(service)}{path}", token=self.token, **kwargs)
        return api.expect(answer, f"{method} {service} {path}", *codes)


def _until(what: str, deadline: float, check: Callable[[], bool]) -> None:
    while not check():
        if time.monotonic() > deadline:
            raise DevcloudError(f"{what} before the start's deadline")
        time.sleep(1.0)


def volume_pools(admin: Admin) -> list[dict[str, Any]]:
    """The pools cinder-scheduler knows of: empty until it has heard a backend's capabilities."""
    path = f"/v3/{admin.project_id}/scheduler-stats/get_pools"
    pools: list[dict[str, Any]] = admin.call("GET", "cinder", path, 200)["pools"]
    return pools


def wait_for_backends(admin: Admin, deadline: float) -> None:
    """nova-compute and cinder-volume up, the compute host mapped into cell1."""

    def compute_up() -> bool:
        listed = admin.call("GET", "nova", "/v2.1/os-services?binary=nova-compute", 200)["services"]
        return any(service["state"] == "up" for service in listed)

    def compute_in_placement() -> bool:
        providers = admin.call("GET", "placement", "/resource_providers", 200)["resource_providers"]
        for provider in providers:
            path = f"/resource_providers/{provider['uuid']}/inventories"
            if "VCPU" in admin.call("GET", "placement", path, 200)["inventories"]:
                return True
        return False

    def volume_up() -> bool:
        path = f"/v3/{admin.project_id}/os-services?binary=cinder-volume"
        listed = admin.call("GET", "cinder", path, 200)["services"]
        return any(service["state"] == "up" for service in listed)

    _until("nova-compute did not report up (logs/nova-compute.log)", deadline, compute_up)
    _until(
        "nova-compute put no resource provider with VCPU into placement (logs/nova-compute.log)",
        deadline, compute_in_placement,
    )  # fmt: skip
    nova_conf = str(admin.layout.etc / "nova" / "nova.conf")
    done = subprocess.run(
        [admin.layout.bin("nova-manage"), "--config-file", nova_conf, "cell_v2", "discover_hosts",
         "--verbose"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise DevcloudError(
            f"nova-manage cell_v2 discover_hosts failed: {done.stdout[-200:]}{done.stderr[-200:]}"
        )
    _until("cinder-volume did not report up (logs/cinder-volume.log)", deadline, volume_up)
    _until(
        "cinder-scheduler lists no pool of the volume backend (logs/cinder-scheduler.log)",
        deadline, lambda: bool(volume_pools(admin)),
    )  # fmt: skip


def make_resources(admin: Admin) -> dict[str, str]:
    """A flavor, an active image and an external network with a subnet; their ids."""
    flavor = admin.call("POST", "nova", "/v2.1/flavors", 200, body={"flavor": FLAVOR})["flavor"]
    image = admin.call(
        "POST", "glance", "/v2/images", 201,
        body={"name": "devcloud-image", "disk_format": "raw", "container_format": "bare",
              "visibility": "public"},
    )  # fmt: skip
    admin.call(
        "PUT", "glance", f"/v2/images/{image['id']}/file", 204,
        raw=IMAGE_BYTES, headers={"Content-Type": "application/octet-stream"},
    )  # fmt: skip
    network = admin.call(
        "POST", "neutron", "/v2.0/networks", 201,
        body={"network": {"name": "public", "shared": True, "router:external": True,
                          "provider:network_type": "flat", "provider:physical_network": "physnet1"}},
    )["network"]  # fmt: skip
    subnet = admin.call(
        "POST", "neutron", "/v2.0/subnets", 201,
        body={"subnet": {"name": "public-subnet", "network_id": network["id"], "ip_version": 4,
                         "cidr": PUBLIC_CIDR, "enable_dhcp": False}},
    )["subnet"]  # fmt: skip
    return {
        "flavor_id": flavor["id"],
        "image_id": image["id"],
        "network_id": network["id"],
        "subnet_id": subnet["id"],
    }
