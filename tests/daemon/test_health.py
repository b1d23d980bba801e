"""/healthz, /readyz and /metrics as an operator's probe sees them."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
from prometheus_client import REGISTRY
from quart import Quart

from tally.http import CheckResult, Readiness, health_blueprint
from tally.http._probes import _GAUGE_EVERY_S

pytestmark = pytest.mark.anyio


def make_app(readiness: Readiness, *, metrics_enabled: bool = True) -> Quart:
    app = Quart("health-test")
    app.register_blueprint(health_blueprint(readiness, metrics_enabled=metrics_enabled))
    return app


async def test_healthz_answers_ok() -> None:
    client = make_app(Readiness()).test_client()
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert await response.get_json() == {"status": "ok"}


async def test_readyz_is_503_until_every_check_passes() -> None:
    store_up = False
    readiness = Readiness(timeout_s=0.2)

    async def store() -> CheckResult:
        return CheckResult(store_up, "schema 8" if store_up else "connection refused")

    async def broker() -> CheckResult:
        return CheckResult(True, "connected")

    readiness.register("store", store)
    readiness.register("broker", broker)
    client = make_app(readiness).test_client()

    response = await client.get("/readyz")
    assert response.status_code == 503
    assert await response.get_json() == {
        "status": "not ready",
        "checks": {
            "broker": {"ok": True, "detail": "connected"},
            "store": {"ok": False, "detail": "connection refused"},
        },
    }
    store_up = True
    response = await client.get("/readyz")
    assert response.status_code == 200
    assert (await response.get_json())["status"] == "ready"


async def test_a_check_that_raises_or_hangs_counts_as_failed() -> None:
    readiness = Readiness(timeout_s=0.1)

    async def raises() -> CheckResult:
        raise ConnectionError("db.example:5432 refused")

    async def hangs() -> CheckResult:
        await anyio.sleep(10)
        return CheckResult(True)

    readiness.register("raises", raises)
    readiness.register("hangs", hangs)
    response = await make_app(readiness).test_client().get("/readyz")
    assert response.status_code == 503
    checks = (await response.get_json())["checks"]
    assert checks["raises"] == {"ok": False, "detail": "ConnectionError: db.example:5432 refused"}
    assert checks["hangs"] == {"ok": False, "detail": "no answer within 0.1s"}


async def test_readiness_names_are_unique() -> None:
    readiness = Readiness()

    async def check() -> CheckResult:
        return CheckResult(True)

    readiness.register("store", check)
    with pytest.raises(ValueError, match="'store' is registered twice"):
        readiness.register("store", check)


async def test_metrics_exposes_the_default_registry() -> None:
    import tally.actors  # noqa: F401  (defines the actor metrics on the default registry)

    response = await make_app(Readiness()).test_client().get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")
    body = await response.get_data(as_text=True)
    assert "# TYPE tally_actor_restarts_total counter" in body
    assert "# TYPE tally_actor_mailbox_depth gauge" in body


async def test_metrics_is_404_when_disabled() -> None:
    response = await make_app(Readiness(), metrics_enabled=False).test_client().get("/metrics")
    assert response.status_code == 404


async def test_healthz_turns_503_once_a_watched_check_failed_past_its_threshold() -> None:
    store_up = False
    readiness = Readiness(timeout_s=0.2)

    async def store() -> CheckResult:
        return CheckResult(store_up, "answers" if store_up else "connection refused")

    async def broker() -> CheckResult:
        return CheckResult(False, "not watched: never makes the process unhealthy")

    readiness.register("store", store, unhealthy_after_s=0.3)
    readiness.register("broker", broker)
    client = make_app(readiness).test_client()
    assert (await client.get("/healthz")).status_code == 200  # the first failure starts the clock
    await anyio.sleep(0.4)
    unhealthy = await client.get("/healthz")
    assert unhealthy.status_code == 503
    body = await unhealthy.get_json()
    assert body["status"] == "unhealthy"
    assert body["detail"].startswith("store failing for 0 s (over 0.3 s): connection refused")
    store_up = True
    assert (await client.get("/healthz")).status_code == 200


async def ready_within(client: Any, timeout_s: float) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if (await client.get("/readyz")).status_code == 200:
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"/readyz not 200 within {timeout_s} s")


async def test_a_probe_answers_from_its_last_outcome_without_waiting_and_says_when_it_is_late() -> None:
    """A probe (``every_s``) runs in the background: ``/readyz`` never waits for it, and a probe that
    hangs past its deadline is "not ready" with how long it is pending and what it said last."""
    readiness = Readiness(timeout_s=5)
    hang = anyio.Event()

    async def store() -> CheckResult:
        if hang.is_set():
            with anyio.CancelScope(shield=True):  # a probe that ignores its deadline (a stuck thread)
                await anyio.sleep(0.6)
        return CheckResult(True, "answers")

    readiness.register("store", store, every_s=0.05, deadline_s=0.2)
    client = make_app(readiness).test_client()
    async with anyio.create_task_group() as tg:
        tg.start_soon(readiness.run)
        await ready_within(client, 5)
        hang.set()
        await anyio.sleep(0.35)
        began = anyio.current_time()
        response = await client.get("/readyz")
        assert anyio.current_time() - began < 0.1
        assert response.status_code == 503
        detail = (await response.get_json())["checks"]["store"]["detail"]
        assert detail.startswith("no answer within 0.2s (probe pending for 0."), detail
        assert detail.endswith("; last: answers"), detail
        hang = anyio.Event()  # the probe answers again: ready once its next run ends
        await ready_within(client, 5)
        tg.cancel_scope.cancel()
    # Once the prober stopped, the probe runs inline again.
    assert (await client.get("/readyz")).status_code == 200


async def test_a_probe_that_starts_failing_is_told_within_a_few_answers_none_of_which_waits() -> None:
    """A request wakes an idle probe whose good outcome is older than a quarter second but does not
    wait for it: a fault that fails at once (a session the server ended) is told by the requests
    after the run, long before the probe's period, and no answer waits for the run."""
    readiness = Readiness()
    failing = False
    gate = anyio.Event()

    async def store() -> CheckResult:
        if failing:
            await gate.wait()  # the run the first request woke is on while that request answers
        return CheckResult(not failing, "connection lost" if failing else "answers")

    readiness.register("store", store, every_s=30, deadline_s=1)
    client = make_app(readiness).test_client()
    async with anyio.create_task_group() as tg:
        tg.start_soon(readiness.run)
        await ready_within(client, 5)
        await anyio.sleep(0.3)
        failing = True
        first = await client.get("/readyz")
        assert first.status_code == 200  # its last outcome: the request did not wait for the run
        gate.set()
        with anyio.fail_after(2):  # the period is 30 s: only the woken run can tell it
            while (response := await client.get("/readyz")).status_code == 200:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert (await response.get_json())["checks"]["store"]["detail"] == "connection lost"
        tg.cancel_scope.cancel()


async def test_a_hang_is_answered_fast_and_not_ready_within_period_plus_deadline() -> None:
    """A store that stops answering (the probe stuck in a thread, as a SIGSTOPped server leaves a
    driver): every answer within 100 ms from the onset on, and not ready within ``every_s +
    deadline_s`` of it; ready again once it answers. The gauge says the same."""
    every_s, deadline_s = 0.4, 0.3
    readiness = Readiness()
    hung = threading.Event()
    release = threading.Event()

    def query() -> None:
        if hung.is_set():
            release.wait(10)

    async def store() -> CheckResult:
        await anyio.to_thread.run_sync(query)  # not cancellable: the deadline cannot end it
        return CheckResult(True, "answers")

    readiness.register("store", store, every_s=every_s, deadline_s=deadline_s)
    client = make_app(readiness).test_client()
    async with anyio.create_task_group() as tg:
        tg.start_soon(readiness.run)
        await ready_within(client, 5)
        assert REGISTRY.get_sample_value("tally_ready", {"check": "store"}) == 1
        hung.set()
        onset = time.monotonic()
        took: list[float] = []
        while True:
            began = time.monotonic()
            response = await client.get("/readyz")
            took.append(time.monotonic() - began)
            if response.status_code == 503:
                break
            assert began - onset < every_s + deadline_s + 0.1, "still ready past the bound"
            await anyio.sleep(0.01)
        told = time.monotonic() - onset
        detail = (await response.get_json())["checks"]["store"]["detail"]
        assert detail.startswith(f"no answer within {deadline_s:g}s (probe pending for "), detail
        for _ in range(20):
            began = time.monotonic()
            assert (await client.get("/readyz")).status_code == 503
            took.append(time.monotonic() - began)
        assert max(took) < 0.1, took
        await anyio.sleep(_GAUGE_EVERY_S + 0.1)
        assert REGISTRY.get_sample_value("tally_ready", {"check": "store"}) == 0
        print(f"not ready {told:.2f} s after the hang began; slowest answer {max(took) * 1000:.1f} ms")
        hung.clear()
        release.set()
        await ready_within(client, 5)
        tg.cancel_scope.cancel()
