"""The standalone collector's HTTP surface: ``/healthz`` (turns 503 when delivery stalls), ``/readyz``
(503 with the reason while it cannot consume from the broker or its outbox cannot write) and
``/metrics``.

The daemon's health blueprint answers ``/healthz`` for a live process; the
collector's answer says more: it is unhealthy once rows waited
``TALLY_OSC_UNHEALTHY_THRESHOLD_S`` without an accepted batch, because that
is the state in which billing data piles up unseen.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from quart import Quart, Response

from ._service import Collector


def create_health_app(collector: Collector, *, metrics_enabled: bool = True) -> Quart:
    app = Quart("tally.collector")

    @app.get("/healthz")
    async def healthz() -> tuple[dict[str, Any], int]:
        health = collector.health()
        return health.to_json(), 200 if health.healthy else 503

    @app.get("/readyz")
    async def readyz() -> tuple[dict[str, Any], int]:
        problem = await collector.outbox_problem() or collector.broker_problem()
        if problem is None:
            return {"status": "ready"}, 200
        return {"status": "not ready", "detail": problem}, 503

    @app.get("/metrics")
    async def metrics() -> Response:
        if not metrics_enabled:
            return Response(
                "metrics are disabled (TALLY_METRICS_ENABLED=false)\n", 404, content_type="text/plain"
            )
        return Response(generate_latest(REGISTRY), 200, content_type=CONTENT_TYPE_LATEST)

    return app
