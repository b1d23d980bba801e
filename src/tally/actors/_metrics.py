"""The runtime's Prometheus metrics, defined once on the default registry."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

ACTOR_RESTARTS = Counter(
    "tally_actor_restarts_total",
    "Restarts of a supervised actor after it crashed (or, when permanent, returned).",
    ["actor"],
)

MAILBOX_DEPTH = Gauge(
    "tally_actor_mailbox_depth",
    "Messages waiting in an actor's mailbox, read at scrape time.",
    ["actor"],
)
