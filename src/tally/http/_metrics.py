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

# Keystone tokens (``_keystone``): cloud labels come from the clouds config, reasons from a fixed set;
# a token never appears in a label.
KEYSTONE_VALIDATIONS = Counter(
    "tally_keystone_validations_total",
    "Keystone token checks sent to a cloud's keystone, by outcome (valid, not_found, unavailable)",
    ["cloud", "outcome"],
)
KEYSTONE_CACHE_HITS = Counter(
    "tally_keystone_cache_hits_total", "Keystone tokens answered from the cache of valid tokens", ["cloud"]
)
KEYSTONE_REFUSALS = Counter(
    "tally_keystone_refusals_total",
    "Requests with a keystone token refused, by reason (malformed, not_found, expired, foreign, no_cloud, "
    "route, policy, unavailable)",
    ["reason"],
)
