"""A small Reporting API stand-in for sender tests: a real HTTP server that can fail, then recover.

It answers ``POST /api/v1/events`` like the Reporting API (200 with
``{accepted, duplicates, rejected}``, duplicates on ``(event_id, timestamp)``,
items refused with the core's own validation), and can be told to answer 500,
503 or 413 for a while, or 500 for every batch holding a poisoned event, so
tests can watch the sender keep, re-send and dead-letter rows.
It runs in a thread so a collector in another process can post to it too.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tally.core import EventInvalid, parse_event


class SinkServer:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.lock = threading.Lock()
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.refused: list[tuple[str, str]] = []
        self.posts: list[int] = []  # batch sizes, in order
        self.fail_status: int | None = None  # answer this status to every post while set
        self.fail_count = 0  # ... or only to the next N posts
        self.max_batch: int | None = None  # 413 for larger batches
        self.poison: set[str] = set()  # 500 for every batch holding one of these event ids
        self.unauthorized = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                status, answer = server.handle(self.path, self.headers.get("Authorization"), raw)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> SinkServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, path: str, auth: str | None, raw: bytes) -> tuple[int, dict[str, Any]]:
        if path != "/api/v1/events":
            return 404, {"title": "not found"}
        if self.token is not None and auth != f"Bearer {self.token}":
            with self.lock:
                self.unauthorized += 1
            return 401, {"title": "unauthorized"}
        items = json.loads(raw)
        with self.lock:
            self.posts.append(len(items))
            if self.fail_status is not None:
                return self.fail_status, {"title": "failing on purpose"}
            if self.fail_count > 0:
                self.fail_count -= 1
                return 500, {"title": "failing on purpose"}
            if self.max_batch is not None and len(items) > self.max_batch:
                return 413, {"title": "batch too large"}
            if any(item.get("event_id") in self.poison for item in items):
                return 500, {"title": "an item this server cannot take"}
            accepted = duplicates = 0
            rejected = []
            for index, item in enumerate(items):
                try:
                    event = parse_event(item)
                except EventInvalid as exc:
                    rejected.append(
                        {"index": index, "event_id": str(item.get("event_id", "")), "reason": exc.reason}
                    )
                    self.refused.append((str(item.get("event_id", "")), exc.reason))
                    continue
                key = (event.event_id, item["timestamp"])
                if key in self.events:
                    duplicates += 1
                else:
                    self.events[key] = item
                    accepted += 1
            return 200, {"accepted": accepted, "duplicates": duplicates, "rejected": rejected}

    def event_ids(self) -> set[str]:
        with self.lock:
            return {event_id for event_id, _ in self.events}


def outbox_rows(events: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """``Outbox.add``'s rows of wire events."""
    return [(e["event_id"], json.dumps(e).encode()) for e in events]


def volume_event(n: int, **over: Any) -> dict[str, Any]:
    """A valid wire event of volume ``n``; members overridable."""
    event = {
        "event_id": f"ev-{n}",
        "timestamp": "2026-03-01T10:00:00Z",
        "event_type": "volume.create.end",
        "platform": "openstack",
        "cloud": "os-dev",
        "resource_type": "volume",
        "resource_id": f"vol-{n}",
        "project_id": "p1",
        "source": "collector",
        "payload": {"state": "available", "size": {"size_gb": 1, "type": "ssd"}},
    }
    event.update(over)
    return event
