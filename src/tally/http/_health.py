"""Health endpoints: ``/healthz`` (the process answers), ``/readyz`` (its dependencies answer), ``/metrics``.

``/readyz`` runs every registered readiness check and answers 503 until all pass, with the details of
each, so an operator sees which dependency holds the process back::

    {"status": "not ready", "checks": {"store": {"ok": false, "detail": "connection refused"}}}

A check is an async function returning ``CheckResult``; one that raises or takes longer than the
timeout counts as failed with that as its detail. Checks are registered by the actors that own the
dependency (the store's owner registers "store"), so the front end needs no knowledge of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from quart import Blueprint, Response, jsonify


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str = ""


ReadinessCheck = Callable[[], Awaitable[CheckResult]]


class Readiness:
    """A registry of named readiness checks. Invariant: names are unique."""

    def __init__(self, *, timeout_s: float = 2.0) -> None:
        self.timeout_s = timeout_s
        self._checks: dict[str, ReadinessCheck] = {}

    def register(self, name: str, check: ReadinessCheck) -> None:
        if name in self._checks:
            raise ValueError(f"readiness check {name!r} is registered twice")
        self._checks[name] = check

    async def evaluate(self) -> dict[str, CheckResult]:
        """Run every check concurrently; each result is the check's own or a failure naming why."""
        results: dict[str, CheckResult] = {}

        async def run_one(name: str, check: ReadinessCheck) -> None:
            try:
                with anyio.fail_after(self.timeout_s):
                    results[name] = await check()
            except TimeoutError:
                results[name] = CheckResult(False, f"no answer within {self.timeout_s:g}s")
            except Exception as exc:
                results[name] = CheckResult(False, f"{type(exc).__name__}: {exc}")

        async with anyio.create_task_group() as tg:
            for name, check in self._checks.items():
                tg.start_soon(run_one, name, check)
        return dict(sorted(results.items()))


def health_blueprint(readiness: Readiness, *, metrics_enabled: bool = True) -> Blueprint:
    """The blueprint serving ``/healthz``, ``/readyz`` and ``/metrics`` (404 when metrics are disabled)."""
    bp = Blueprint("health", __name__)

    @bp.get("/healthz")
    async def healthz() -> Response:
        return jsonify({"status": "ok"})

    @bp.get("/readyz")
    async def readyz() -> tuple[Response, int]:
        results = await readiness.evaluate()
        ready = all(r.ok for r in results.values())
        body = {
            "status": "ready" if ready else "not ready",
            "checks": {name: {"ok": r.ok, "detail": r.detail} for name, r in results.items()},
        }
        return jsonify(body), 200 if ready else 503

    @bp.get("/metrics")
    async def metrics() -> Response:
        if not metrics_enabled:
            return Response(
                "metrics are disabled (TALLY_METRICS_ENABLED=false)\n", 404, content_type="text/plain"
            )
        return Response(generate_latest(REGISTRY), 200, content_type=CONTENT_TYPE_LATEST)

    return bp
