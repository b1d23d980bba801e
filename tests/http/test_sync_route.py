"""``POST /internal/sync/{cloud}``: the answers a sync loop sees (seed 002), with a runner of the protocol."""

from __future__ import annotations

from datetime import datetime

import anyio
import pytest
from http_support import ADMIN, INTERNAL, build_api

from tally.reconcile import RunnerOutcome, SyncAlreadyRunning, SyncNotStarted, UnknownCloud
from tally.store import Store

pytestmark = pytest.mark.anyio


class RecordingRunner:
    """A runner of one cloud ``os-sim`` that answers what it was told to and records its calls."""

    def __init__(
        self, *, failed: bool = False, busy: bool = False, delay: float = 0.0, no_slot: bool = False
    ) -> None:
        self.calls: list[tuple[str, datetime | None]] = []
        self.failed = failed
        self.busy = busy
        self.no_slot = no_slot
        self.delay = delay
        self.cancelled = anyio.Event()

    async def run(self, cloud: str, at: datetime | None) -> RunnerOutcome:
        if cloud != "os-sim":
            raise UnknownCloud(cloud)
        if self.busy:
            raise SyncAlreadyRunning(cloud)
        if self.no_slot:
            raise SyncNotStarted(cloud, "waited the whole budget of 45 s for a sync slot: all 5 were running")
        self.calls.append((cloud, at))
        try:
            await anyio.sleep(self.delay)
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        return RunnerOutcome("run-1", {"created": 2, "updated": 1, "deleted": 0, "deferred": 3}, self.failed)


def internal() -> dict[str, str]:
    return {"Authorization": f"Bearer {INTERNAL}"}


async def test_plain_run_answers_the_stats(store: Store) -> None:
    runner = RecordingRunner()
    api = await build_api(store, runner=runner)
    for body in (None, b"", b"{}"):
        response = await api.client.post("/internal/sync/os-sim", headers=internal(), data=body)
        assert response.status_code == 200
        assert await response.get_json() == {
            "sync_run_id": "run-1",
            "stats": {"created": 2, "updated": 1, "deleted": 0},
        }
    assert runner.calls == [("os-sim", None)] * 3


async def test_told_instant_needs_allow_at(store: Store) -> None:
    runner = RecordingRunner()
    api = await build_api(store, runner=runner)
    response = await api.client.post(
        "/internal/sync/os-sim", headers=internal(), json={"at": "2026-03-05T12:00:00Z"}
    )
    assert response.status_code == 400
    assert await response.get_json() == {
        "type": "urn:tally:error:validation",
        "title": "Validation failed",
        "status": 400,
        "detail": "this deployment does not take a sync instant; TALLY_REPORTING_SYNC_ALLOW_AT is off",
    }
    assert runner.calls == []


async def test_told_instant_is_passed_with_allow_at(store: Store) -> None:
    runner = RecordingRunner()
    api = await build_api(store, runner=runner, reporting_sync_allow_at=True)
    response = await api.client.post(
        "/internal/sync/os-sim", headers=internal(), json={"at": "2026-03-05T13:00:00+01:00"}
    )
    assert response.status_code == 200
    assert runner.calls[0][1] is not None and runner.calls[0][1].isoformat() == "2026-03-05T12:00:00+00:00"


async def test_empty_at_is_refused_by_the_contract_check(store: Store) -> None:
    """Seed 002: the loop's jq derives "" when /clock does not answer; the body is refused before any run."""
    runner = RecordingRunner()
    api = await build_api(store, runner=runner, reporting_sync_allow_at=True)
    response = await api.client.post(
        "/internal/sync/os-sim", headers={**internal(), "Content-Type": "application/json"}, data=b'{"at":""}'
    )
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = await response.get_json()
    assert problem["detail"] == "the request does not match the API contract"
    assert [e["loc"] for e in problem["errors"]] == ["body.at"]
    assert runner.calls == []


async def test_unknown_cloud_busy_and_failed(store: Store) -> None:
    api = await build_api(store, runner=RecordingRunner())
    response = await api.client.post("/internal/sync/os-other", headers=internal())
    assert response.status_code == 404
    busy = await build_api(store, runner=RecordingRunner(busy=True), seed=False)
    response = await busy.client.post("/internal/sync/os-sim", headers=internal())
    assert response.status_code == 409
    assert (await response.get_json())["detail"] == "a sync for this cloud is already running"
    failing = await build_api(store, runner=RecordingRunner(failed=True), seed=False)
    response = await failing.client.post("/internal/sync/os-sim", headers=internal())
    assert response.status_code == 500
    problem = await response.get_json()
    assert problem == {
        "type": "urn:tally:error:internal",
        "title": "Internal server error",
        "status": 500,
        "detail": "the sync run failed",
    }


async def test_without_runner_every_cloud_is_unknown(store: Store) -> None:
    api = await build_api(store)
    response = await api.client.post("/internal/sync/os-sim", headers=internal())
    assert response.status_code == 404
    assert (await response.get_json())["type"] == "urn:tally:error:not_found"


async def test_sync_needs_the_internal_token(store: Store) -> None:
    api = await build_api(store, runner=RecordingRunner())
    for headers in ({}, {"Authorization": f"Bearer {ADMIN}"}, {"Authorization": "Basic eDp5"}):
        response = await api.client.post("/internal/sync/os-sim", headers=headers)
        assert response.status_code == 401
        assert (await response.get_json())["type"] == "urn:tally:error:unauthorized"


async def test_answer_is_held_for_budget_plus_margin_then_the_run_is_cancelled(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tally.http import _routes_internal

    monkeypatch.setattr(_routes_internal, "HOLD_MARGIN_S", 0)  # the real hold is budget + 15 s
    runner = RecordingRunner(delay=30)
    api = await build_api(store, runner=runner, reporting_sync_budget_s=1)
    with anyio.fail_after(10):
        response = await api.client.post("/internal/sync/os-sim", headers=internal())
    assert response.status_code == 500
    assert (await response.get_json())["detail"] == "the sync run failed"
    assert runner.cancelled.is_set()


async def test_a_run_that_got_no_slot_within_its_budget_answers_503_naming_the_wait(store: Store) -> None:
    api = await build_api(store, runner=RecordingRunner(no_slot=True))
    response = await api.client.post("/internal/sync/os-sim", headers=internal())
    assert response.status_code == 503
    assert await response.get_json() == {
        "type": "urn:tally:error:unavailable",
        "title": "Service unavailable",
        "status": 503,
        "detail": "the sync did not start: "
        "waited the whole budget of 45 s for a sync slot: all 5 were running",
    }
