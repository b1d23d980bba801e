"""The process's probes: ``/healthz`` (it answers), ``/readyz`` (its dependencies answer), ``/metrics``.

What the orchestrator and the monitoring ask of the process as a whole; each cloud's sync health, one of
the things ``/readyz`` shows, is the reconciliation's record (``tally.reconcile._cloud_health``).

``/readyz`` runs every registered readiness check and answers 503 until all pass, with the details of
each, so an operator sees which dependency holds the process back::

    {"status": "not ready", "checks": {"store": {"ok": false, "detail": "connection refused"}}}

A check is an async function returning ``CheckResult``; one that raises or takes longer than the
timeout counts as failed with that as its detail. Checks are registered by the actors that own the
dependency (the store's owner registers "store"), so the front end needs no knowledge of them.

A check that waits on a dependency (the store's and the outbox's write probes) is registered as a
probe (``every_s``): while ``Readiness.run`` runs (the daemon starts it), the probe runs in the
background every ``every_s`` under a deadline of its own, and ``/readyz`` answers from its last
outcome and never waits for a run: a database that hangs made every answer wait with its probe. A
request only wakes an idle probe whose good outcome is older than ``_KICK_AFTER_S`` (without waiting
for it), so a fault that fails at once (a server that ended its sessions) is told by the next
requests rather than after a period. The outcome still tells the truth when it is late: a probe
pending past its deadline is "not ready" with how long it has been pending and what it said last,
and an outcome older than a few periods (the prober stopped) is not trusted either. So a hang that
begins at t is told by ``t + every_s + deadline_s`` at the latest (the run on at t, or the next one
at most ``every_s`` later, is then pending past its deadline). Without the prober running (a test's
app) a probe runs inline like the other checks.

Each check's outcome is also the gauge ``tally_ready{check}`` (1 ready, 0 not), set by each
``/readyz`` answer and, while the prober runs, every ``_GAUGE_EVERY_S``: an alert sees what
``/readyz`` says without anyone asking it. Check names are the code's own (a bounded label).

``/healthz`` answers 200 while the process works. A check registered with ``unhealthy_after_s``
(the store's, with ``TALLY_REPORTING_UNHEALTHY_THRESHOLD_S``) turns it 503 once that check has failed
for longer than that, measured from the first failure seen (by ``/healthz``, ``/readyz`` or the
prober): a process whose database went away for good is then restarted by its supervisor, while a
short outage is only "not ready".
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Gauge, generate_latest
from prometheus_client.registry import Collector
from quart import Blueprint, Response, jsonify


@dataclass(frozen=True)
class CheckResult:
    """``extra`` members go into the check's entry of ``/readyz`` beside ``ok`` and ``detail`` (the
    "clouds" check puts each cloud's health there)."""

    ok: bool
    detail: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)


ReadinessCheck = Callable[[], Awaitable[CheckResult]]

# An outcome older than this many periods (plus the deadline) is not trusted: the prober is not running.
_STALE_PERIODS = 3
# A failing probe runs again this soon (or every_s if shorter): the fault's end is seen quickly.
_FAILING_EVERY_S = 0.5
# A request wakes an idle probe whose good outcome is older than this; a flood of requests runs the
# probe no more often.
_KICK_AFTER_S = 0.25
# While the prober runs, the gauge follows the checks this often even when nobody asks /readyz.
_GAUGE_EVERY_S = 1.0

READY = Gauge(
    "tally_ready", "1 while the readiness check passes, 0 while it fails (what /readyz says of it)", ["check"]
)


async def _outcome(check: ReadinessCheck, timeout_s: float) -> CheckResult:
    """The check's own result, or a failure naming why (it raised, or took longer than ``timeout_s``)."""
    try:
        with anyio.fail_after(timeout_s):
            return await check()
    except TimeoutError:
        return CheckResult(False, f"no answer within {timeout_s:g}s")
    except Exception as exc:
        return CheckResult(False, f"{type(exc).__name__}: {exc}")


@dataclass(slots=True)
class _Probe:
    """A check run in the background. Invariant: ``pending_since`` is set only while a run is on;
    setting ``_wake`` starts the next run early."""

    check: ReadinessCheck
    every_s: float
    deadline_s: float
    last: CheckResult | None = None
    last_at: float | None = None
    pending_since: float | None = None
    _wake: anyio.Event | None = None

    def answer(self, now: float) -> CheckResult:
        """What ``/readyz`` says of this probe at ``now``, without waiting."""
        last = f"; last: {self.last.detail}" if self.last is not None else ""
        if self.pending_since is not None and now - self.pending_since > self.deadline_s:
            pending = now - self.pending_since
            return CheckResult(
                False, f"no answer within {self.deadline_s:g}s (probe pending for {pending:.1f} s){last}"
            )
        if self.last is None or self.last_at is None:
            return CheckResult(False, "not probed yet")
        age = now - self.last_at
        if age > _STALE_PERIODS * self.every_s + self.deadline_s and self.pending_since is None:
            return CheckResult(False, f"the probe has not run for {age:.0f} s{last}")
        return self.last

    def kick(self, now: float) -> None:
        """Start the next run now if the probe is idle and its good outcome is older than
        ``_KICK_AFTER_S``; never waits for it (a failing probe runs often enough already)."""
        if self.pending_since is not None or self._wake is None or self.last is None or not self.last.ok:
            return
        if self.last_at is not None and now - self.last_at > _KICK_AFTER_S:
            self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake = anyio.Event()
            self.pending_since = time.monotonic()
            result = await _outcome(self.check, self.deadline_s)
            self.last, self.last_at, self.pending_since = result, time.monotonic(), None
            with anyio.move_on_after(self.every_s if result.ok else min(self.every_s, _FAILING_EVERY_S)):
                await self._wake.wait()


class Readiness:
    """A registry of named readiness checks. Invariant: names are unique."""

    def __init__(self, *, timeout_s: float = 2.0) -> None:
        self.timeout_s = timeout_s
        self._checks: dict[str, ReadinessCheck] = {}
        self._probes: dict[str, _Probe] = {}
        self._probing = False
        self._unhealthy_after_s: dict[str, float] = {}
        self._failing_since: dict[str, float] = {}

    def register(
        self,
        name: str,
        check: ReadinessCheck,
        *,
        unhealthy_after_s: float | None = None,
        every_s: float | None = None,
        deadline_s: float = 1.0,
    ) -> None:
        """``every_s``: a probe, run in the background that often under ``deadline_s`` (see above)."""
        if name in self._checks:
            raise ValueError(f"readiness check {name!r} is registered twice")
        if every_s is not None and self._probing:
            raise RuntimeError(f"probe {name!r} registered after the prober started")
        self._checks[name] = check
        if every_s is not None:
            self._probes[name] = _Probe(check, every_s, deadline_s)
        if unhealthy_after_s is not None:
            self._unhealthy_after_s[name] = unhealthy_after_s

    async def run(self) -> None:
        """Run the probes in the background until cancelled; ``/readyz`` answers from their outcomes."""
        try:
            async with anyio.create_task_group() as tg:
                for probe in self._probes.values():
                    tg.start_soon(probe.run)
                self._probing = True
                while True:
                    await self.evaluate(kick=False)  # the gauge, when nobody asks /readyz
                    await anyio.sleep(_GAUGE_EVERY_S)
        finally:
            self._probing = False

    async def refresh(self, *names: str) -> None:
        """Run these probes now and keep their outcomes: an actor that just opened what they check
        calls it before it says it started, so that ``/readyz`` does not answer its earlier outcome."""
        for name in names:
            probe = self._probes[name]
            result = await _outcome(probe.check, probe.deadline_s)
            probe.last, probe.last_at = result, time.monotonic()

    async def evaluate(
        self, names: Collection[str] | None = None, *, kick: bool = True
    ) -> dict[str, CheckResult]:
        """Every check's (or those ``names``') result: the inline ones run concurrently, the probes
        answer from their last outcome while the prober runs (``kick``: waking an idle one, see above)."""
        results: dict[str, CheckResult] = {}

        async def run_one(name: str, check: ReadinessCheck) -> None:
            probe = self._probes.get(name)
            if self._probing and probe is not None:
                now = time.monotonic()
                results[name] = probe.answer(now)
                if kick:
                    probe.kick(now)
            else:
                results[name] = await _outcome(check, self.timeout_s)

        async with anyio.create_task_group() as tg:
            for name, check in self._checks.items():
                if names is None or name in names:
                    tg.start_soon(run_one, name, check)
        now = time.monotonic()
        for name, result in results.items():
            READY.labels(name).set(1 if result.ok else 0)
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


def health_blueprint(
    readiness: Readiness,
    *,
    metrics_enabled: bool = True,
    registry: Collector = REGISTRY,
    liveness: bool = True,
) -> Blueprint:
    """The blueprint serving ``/healthz``, ``/readyz`` and ``/metrics`` (404 when metrics are disabled):
    the metrics of ``registry``, the process's own unless the daemon merges its HTTP workers' in.
    ``liveness`` False leaves ``/healthz`` to the app (the standalone collector says more there)."""
    bp = Blueprint("health", __name__)

    if liveness:

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
        return Response(generate_latest(registry), 200, content_type=CONTENT_TYPE_LATEST)

    return bp
