"""The OTLP push: traffic counters and inventory gauges, received as protobuf by a tiny local HTTP server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from tally.simulation.otlp import OtlpPush, metrics_url, traffic_until
from tally.simulator import VirtualClock, generate_month


class Receiver:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []


@pytest.fixture
def receiver() -> Iterator[tuple[str, Receiver]]:
    got = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.requests.append((self.path, self.headers["Content-Type"], body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_url_appends_the_otlp_path() -> None:
    assert metrics_url("http://collector:4318") == "http://collector:4318/v1/metrics"
    assert metrics_url("http://collector:4318/v1/metrics") == "http://collector:4318/v1/metrics"


def test_push_sends_traffic_and_inventory_at_the_virtual_instant(receiver: tuple[str, Receiver]) -> None:
    endpoint, got = receiver
    month = generate_month(1, "2026-07", scale=0.3, days=2)
    clock = VirtualClock(month.period_from + timedelta(days=1))
    push = OtlpPush(endpoint, month.oracle, month.world, clock.now, interval_s=3600)
    assert push.push_now()
    push.shutdown()

    path, content_type, body = got.requests[0]
    assert path == "/v1/metrics" and content_type == "application/x-protobuf"
    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    metrics = {m.name: m for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"sim.traffic.egress", "sim.traffic.ingress", "sim.inventory.resources"} <= set(metrics)

    expected = traffic_until(month.oracle.traffic, clock.now())
    egress = {
        next(a.value.string_value for a in p.attributes if a.key == "resource_id"): p.as_int
        for p in metrics["sim.traffic.egress"].sum.data_points
    }
    assert egress == {rid: values[0] for rid, values in expected.items()}
    assert metrics["sim.traffic.egress"].sum.is_monotonic

    view = month.world.at(clock.now())
    inventory = {
        next(a.value.string_value for a in p.attributes if a.key == "resource_type"): p.as_int
        for p in metrics["sim.inventory.resources"].gauge.data_points
    }
    assert inventory["instance"] == sum(1 for _ in view.live("instance")) > 0
    assert inventory["floating_ip"] == sum(1 for _ in view.live("floating_ip"))
