"""HTTP metrics of the Reporting API (exposed by the daemon's /metrics on the default registry).

Labels come from known sets: the route template (``unmatched`` for any path no route
takes), a method of ``KNOWN_METHODS`` or ``other`` (a client may send any token as a
method), and the status the app answered (the app's own, a fixed set).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
HTTP_REQUESTS = Counter(
    "tally_http_requests_total",
    "Reporting API answers by route template, method and status",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "tally_http_request_duration_seconds",
    "Reporting API answer time by route template",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0),
)
