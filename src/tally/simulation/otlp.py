"""The OTLP push of a simulated month's traffic counters and inventory gauges (``TALLY_SIM_OTLP_ENDPOINT``).

What Ceilometer's OTLP publisher would push for the month: per floating IP, the bytes sent and
received up to the virtual instant (monotonic counters, linear inside each of the oracle's traffic
rows), and per resource type the resources alive at that instant (gauges). The values are read
from the oracle and the world at each collection, so they follow the virtual clock whatever its
factor. opentelemetry-sdk with its OTLP/HTTP (protobuf) exporter does the wire.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from tally.simulator.oracle import Oracle, Traffic
from tally.simulator.world import World

log = logging.getLogger(__name__)

RESOURCE_TYPES = ("instance", "volume", "floating_ip", "image", "loadbalancer")


def metrics_url(endpoint: str) -> str:
    """``http://host:4318`` → ``http://host:4318/v1/metrics`` (a full path is kept)."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/metrics") else base + "/v1/metrics"


def traffic_until(rows: Iterable[Traffic], at: datetime) -> dict[str, tuple[int, int]]:
    """Bytes (egress, ingress) per resource up to ``at``, linear inside each row."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if at <= row.start:
            continue
        span = (row.end - row.start).total_seconds()
        share = 1.0 if at >= row.end or span <= 0 else (at - row.start).total_seconds() / span
        acc = out[row.resource_id]
        acc[0] += int(row.egress_bytes * share)
        acc[1] += int(row.ingress_bytes * share)
    return {k: (v[0], v[1]) for k, v in out.items()}


class OtlpPush:
    """Pushes every ``interval_s`` wall seconds until :meth:`shutdown` (which pushes once more)."""

    def __init__(
        self,
        endpoint: str,
        oracle: Oracle,
        world: World,
        instant: Callable[[], datetime],
        *,
        interval_s: float,
    ) -> None:
        self.url = metrics_url(endpoint)
        self._oracle = oracle
        self._world = world
        self._instant = instant
        exporter = OTLPMetricExporter(endpoint=self.url, timeout=10)
        self._reader = PeriodicExportingMetricReader(
            exporter, export_interval_millis=max(interval_s, 0.1) * 1000
        )
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=Resource.create({"service.name": "tally-simulator", "cloud": oracle.cloud}),
        )
        meter = self._provider.get_meter("tally.simulator")
        meter.create_observable_counter(
            "sim.traffic.egress", callbacks=[self._egress], unit="By", description="Bytes a floating IP sent."
        )
        meter.create_observable_counter(
            "sim.traffic.ingress",
            callbacks=[self._ingress],
            unit="By",
            description="Bytes a floating IP received.",
        )
        meter.create_observable_gauge(
            "sim.inventory.resources",
            callbacks=[self._inventory],
            description="Resources alive at the virtual instant, by type.",
        )
        log.info("otlp push started url=%s interval_s=%s", self.url, interval_s)

    def _at(self) -> datetime:
        return min(self._instant(), self._oracle.period_to)

    def _traffic(self, index: int) -> Iterable[Observation]:
        for rid, values in sorted(traffic_until(self._oracle.traffic, self._at()).items()):
            yield Observation(values[index], {"resource_id": rid, "cloud": self._oracle.cloud})

    def _egress(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._traffic(0)

    def _ingress(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._traffic(1)

    def _inventory(self, options: CallbackOptions) -> Iterable[Observation]:
        view = self._world.at(self._world.answer_instant(self._at()))
        for rtype in RESOURCE_TYPES:
            count = sum(1 for _ in view.live(rtype))
            yield Observation(count, {"resource_type": rtype, "cloud": self._oracle.cloud})

    def push_now(self) -> bool:
        """Collect and export once, now; true when the exporter succeeded."""
        return bool(self._reader.force_flush(timeout_millis=10_000))

    def shutdown(self) -> None:
        self.push_now()
        self._provider.shutdown()
