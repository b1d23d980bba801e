"""Health endpoints: ``/healthz`` (the process answers), ``/readyz`` (its dependencies answer), ``/metrics``.

``/readyz`` runs every registered readiness check and answers 503 until all pass, with the details of
each, so an operator sees which dependency holds the process back::

    {"status": "not ready", "checks": {"store": {"ok": false, "detail": "connection refused"}}}

A check is an async function returning ``CheckResult``; one that raises or takes longer than the
timeout counts as failed with that as its detail. Checks are registered by the actors that own the
dependency (the store's owner registers "store"), so the front end needs no knowledge of them.

``/healthz`` answers 200 while the process works. A check registered with ``unhealthy_after_s``
(the store's, with ``TALLY_REPORTING_UNHEALTHY_THRESHOLD_S``) turns it 503 once that check has failed
for longer than that, measured from the first failure ``/healthz`` or ``/readyz`` saw: a process whose
database went away for good is then restarted by its supervisor, while a short outage is only
"not ready".
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from quart import Blueprint, Response, jsonify


@dataclass(frozen=True)
class CheckResult:
    """``extra`` members go into the check's entry of ``/readyz`` beside ``ok`` and ``detail`` (the
    "clouds" check puts each cloud's health there)."""

    ok: bool
    detail: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)


ReadinessCheck = Callable[[], Awaitable[CheckResult]]


class Readiness:
    """A registry of named readiness checks. Invariant: names are unique."""

    def __init__(self, *, timeout_s: float = 2.0) -> None:
        self.timeout_s = timeout_s
        self._checks: dict[str, ReadinessCheck] = {}
        self._unhealthy_after_s: dict[str, float] = {}
        self._failing_since: dict[str, float] = {}

    def register(self, name: str, check: ReadinessCheck, *, unhealthy_after_s: float | None = None) -> None:
        if name in self._checks:
            raise ValueError(f"readiness check {name!r} is registered twice")
        self._checks[name] = check
        if unhealthy_after_s is not None:
            self._unhealthy_after_s[name] = unhealthy_after_s

    async def evaluate(self, names: Collection[str] | None = None) -> dict[str, CheckResult]:
        """Run every check (or those ``names``) concurrently; each result is the check's own or a
        failure naming why."""
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
                if names is None or name in names:
                    tg.start_soon(run_one, name, check)
        now = time.monotonic()
        for name, result in results.items():
            if result.ok:
                self._failing_since.pop(name, None)
            else:
                self._failing_since.setdefault(name, now)
        return dict(sorted(results.items()))

    async def liveness(self) -> CheckResult:
        """Failed once a check with ``unhealthy_after_s`` has been failing for longer than that."""
        results = await self.evaluate(self._unhealthy_after_s)
        now = time.monotonic()
        for name, threshold in sorted(self._unhealthy_after_s.items()):
            since = self._failing_since.get(name)
            if since is not None and now - since > threshold:
                return CheckResult(
                    False,
                    f"{name} failing for {now - since:.0f} s (over {threshold:g} s): {results[name].detail}",
                )
        return CheckResult(True)


def health_blueprint(readiness: Readiness, *, metrics_enabled: bool = True) -> Blueprint:
    """The blueprint serving ``/healthz``, ``/readyz`` and ``/metrics`` (404 when metrics are disabled)."""
    bp = Blueprint("health", __name__)

    @bp.get("/healthz")
    async def healthz() -> tuple[Response, int]:
        live = await readiness.liveness()
        if not live.ok:
            return jsonify({"status": "unhealthy", "detail": live.detail}), 503
        return jsonify({"status": "ok"}), 200

    @bp.get("/readyz")
    async def readyz() -> tuple[Response, int]:
        results = await readiness.evaluate()
        ready = all(r.ok for r in results.values())
        body = {
            "status": "ready" if ready else "not ready",
            "checks": {name: {**r.extra, "ok": r.ok, "detail": r.detail} for name, r in results.items()},
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
