"""HTTP metrics of the Reporting API (exposed by the daemon's /metrics on the default registry)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

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
