"""The app over real HTTP (Hypercorn on an ephemeral port, httpx client), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import datetime

import anyio
import httpx
import pytest
from http_support import INGEST, INTERNAL, READER, event, live_server

from tally.reconcile import RunnerOutcome


def test_ingest_and_read_back_over_http(store_url: str) -> None:
    with live_server(store_url) as server, httpx.Client(base_url=server.base_url, timeout=10) as client:
        answer = client.post(
            "/api/v1/events",
            json=[event("vm-1"), event("vm-2")],
            headers={"Authorization": f"Bearer {INGEST}"},
        )
        assert answer.status_code == 200
        assert answer.json() == {"accepted": 2, "duplicates": 0, "rejected": []}
        listed = client.get(
            "/api/v1/resources", headers={"Authorization": f"Bearer {READER}", "X-Request-ID": "trace-7"}
        )
        assert listed.headers["X-Request-ID"] == "trace-7"
        assert [r["resource_id"] for r in listed.json()["items"]] == ["vm-1", "vm-2"]
        not_json = client.post(
            "/api/v1/events",
            content=b"\x00\xff",
            headers={"Authorization": f"Bearer {INGEST}", "Content-Type": "application/json"},
        )
        assert not_json.status_code == 400
        assert not_json.headers["Content-Type"] == "application/problem+json"


class SlowRunner:
    """A sync that takes a minute; records whether it was cancelled (seen from the test thread)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def run(self, cloud: str, at: datetime | None) -> RunnerOutcome:
        self.started.set()
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        return RunnerOutcome("never")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_client_that_goes_away_cancels_the_run(store_url: str) -> None:
    runner = SlowRunner()
    with live_server(store_url, runner=runner) as server, httpx.Client(base_url=server.base_url) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post("/internal/sync/os-sim", headers={"Authorization": f"Bearer {INTERNAL}"}, timeout=1.0)
        assert runner.started.is_set()
        assert runner.cancelled.wait(5), "the run went on after its client disconnected"
