"""The outbox's and sender's metrics, defined once on the default registry."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

DEPTH = Gauge(
    "tally_collector_outbox_depth", "Events committed to the outbox and not yet accepted by the sink."
)
OLDEST_AGE = Gauge(
    "tally_collector_outbox_oldest_age_seconds",
    "Age of the oldest event waiting in the outbox; 0 when empty.",
)
BATCHES_SENT = Counter("tally_collector_batches_sent_total", "Batches the sink accepted.")
BATCHES_FAILED = Counter(
    "tally_collector_batches_failed_total", "Batches the sink did not accept, by reason.", ["reason"]
)
for _reason in ("too_large", "http_status", "network", "sink_error"):
    BATCHES_FAILED.labels(_reason)
EVENTS_DELIVERED = Counter(
    "tally_collector_events_delivered_total", "Events the sink took, by outcome.", ["outcome"]
)
for _outcome in ("accepted", "duplicate", "refused"):
    EVENTS_DELIVERED.labels(_outcome)
LAST_ACCEPTED = Gauge(
    "tally_collector_last_accepted_batch_timestamp_seconds", "Unix time of the last batch the sink accepted."
)
# Here, beside the sender's, because the collector (which imports this package) counts its own too.
WARNINGS_SUPPRESSED = Counter(
    "tally_collector_warnings_suppressed_total",
    "Warnings about bad messages left out of the log by its rate limit (10 a minute of each kind), by kind.",
    ["kind"],
)
for _kind in ("unparseable", "owner_missing", "refused"):
    WARNINGS_SUPPRESSED.labels(_kind)
BATCH_SIZE = Gauge(
    "tally_collector_batch_size", "The sender's current batch size (halved on 413, grows back)."
)
DEAD_LETTERS = Gauge(
    "tally_collector_outbox_dead_letters",
    "Events the sink could not take (5xx for them alone), kept in the outbox file until replayed.",
)
EVENTS_DEAD_LETTERED = Counter(
    "tally_collector_events_dead_lettered_total",
    "Events the sender moved to the outbox's dead letters.",
)
WRITE_FAILING = Gauge(
    "tally_collector_outbox_write_failing",
    "1 while the outbox's last write failed (disk full, read-only, I/O error): consuming has stopped, "
    "the messages wait in the broker; 0 once a write commits again.",
)
WRITE_ERRORS = Counter(
    "tally_collector_outbox_write_errors_total",
    "Outbox writes that could not commit, by reason (disk_full, read_only, io_error, cannot_open, "
    "locked, permission, lost, other).",
    ["reason"],
)
for _reason in ("disk_full", "read_only", "io_error", "cannot_open", "locked", "permission", "lost", "other"):
    WRITE_ERRORS.labels(_reason)
