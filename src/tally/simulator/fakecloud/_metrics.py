"""Metrics of the fake cloud on the default registry: the requests it answered, by service and status."""

from __future__ import annotations

from prometheus_client import Counter

REQUESTS = Counter(
    "tally_sim_api_requests_total",
    "Requests the fake OpenStack API answered, by service and HTTP status.",
    ["service", "code"],
)
