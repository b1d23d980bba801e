"""The fake cloud's ``/metrics``: an exporter-style inventory of the world at the answer instant.

Names follow openstack-exporter (``openstack_nova_server_status`` and the per-service totals), on a
registry of the app's own, collected at scrape time so nothing is kept between scrapes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..world import World

# openstack-exporter's numbering of server statuses.
_SERVER_STATUS = {"active": 0, "shutoff": 10, "shelved": 15, "paused": 9, "suspended": 11, "error": 6}


class InventoryCollector(Collector):
    def __init__(self, world: World, instant: Callable[[], datetime]) -> None:
        self._world = world
        self._instant = instant

    def collect(self) -> Iterator[GaugeMetricFamily]:
        view = self._world.at(self._instant())
        status = GaugeMetricFamily(
            "openstack_nova_server_status",
            "Status of each server (openstack-exporter numbering).",
            labels=["id", "name", "tenant_id", "status"],
        )
        counts: Counter[str] = Counter()
        for resource, seg in view.live("instance"):
            counts["instance"] += 1
            status.add_metric(
                [resource.resource_id, resource.name, seg.project_id, seg.state.upper()],
                _SERVER_STATUS.get(seg.state, 0),
            )
        yield status
        for rtype in ("volume", "floating_ip", "image", "loadbalancer"):
            counts[rtype] = sum(1 for _ in view.live(rtype))
        totals = (
            ("openstack_nova_total_vms", "Servers the compute API lists.", "instance"),
            ("openstack_cinder_volumes", "Volumes the block-storage API lists.", "volume"),
            ("openstack_neutron_floating_ips", "Floating IPs the network API lists.", "floating_ip"),
            ("openstack_glance_images", "Images the image API lists.", "image"),
            ("openstack_loadbalancer_total_loadbalancers", "Load balancers octavia lists.", "loadbalancer"),
        )
        for name, text, rtype in totals:
            yield GaugeMetricFamily(name, text, value=counts[rtype])
        up = GaugeMetricFamily("openstack_fake_up", "The fake cloud answers.", value=1)
        yield up
