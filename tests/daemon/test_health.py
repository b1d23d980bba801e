"""/healthz, /readyz and /metrics as an operator's probe sees them."""

from __future__ import annotations

import anyio
import pytest
from quart import Quart

from tally.http import CheckResult, Readiness, health_blueprint

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
