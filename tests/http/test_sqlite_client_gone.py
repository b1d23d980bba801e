"""D9 over real HTTP: a client that goes away mid-request must not cost the next caller a 500.

Quart cancels the handler of a disconnected client with asyncio's own ``Task.cancel()``. Before the
fix, a handler cancelled while its BEGIN waited (here: another connection holds the file's write
lock) left that BEGIN to open a transaction after the store's lock was released, and the next
request answered 500 "cannot start a transaction within a transaction".
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from http_support import INGEST, event, live_server


def test_the_request_after_a_vanished_client_is_served(tmp_path: Path) -> None:
    path = tmp_path / "tally.sqlite3"
    auth = {"Authorization": f"Bearer {INGEST}"}
    with live_server(f"sqlite:///{path}") as server, httpx.Client(base_url=server.base_url) as client:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(httpx.ReadTimeout):
            client.post("/api/v1/events", json=[event("vm-gone")], headers=auth, timeout=0.5)
        time.sleep(0.3)  # Quart has seen the disconnect and cancelled the handler
        other.execute("ROLLBACK")
        other.close()
        answer = client.post("/api/v1/events", json=[event("vm-next")], headers=auth, timeout=10)
        assert answer.status_code == 200, answer.text
        assert answer.json()["accepted"] == 1
