"""The ingest metrics of reporting-api.md, defined once on the default registry."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

EVENTS_INGESTED = Counter(
    "tally_events_ingested_total",
    "Events stored by the ingest pipeline (duplicates and refusals excluded).",
    ["platform", "cloud", "resource_type", "event_type", "source"],
)
EVENTS_DEDUPLICATED = Counter(
    "tally_events_deduplicated_total",
    "Events not stored again because their (event_id, timestamp) was already stored.",
    ["cloud"],
)
EVENTS_REJECTED = Counter(
    "tally_events_rejected_total",
    "Items the ingest pipeline refused, by reason (schema, size_schema, scope).",
    ["cloud", "reason"],
)
UNVALIDATED_SIZE = Counter(
    "tally_ingest_unvalidated_size_total",
    "Sizes accepted without validation because no schema is registered for the pair.",
    ["platform", "resource_type"],
)
PROJECTION_REPLAYS = Counter(
    "tally_projection_replays_total",
    "Resources whose projection row was rebuilt from their whole history because a late event arrived.",
    ["cloud"],
)
CURRENT_RESOURCES = Gauge(
    "tally_current_resources",
    "Rows of the projection by platform, cloud, type and state (refreshed from the store).",
    ["platform", "cloud", "resource_type", "state"],
)
BATCH_DURATION = Histogram(
    "tally_ingest_batch_duration_seconds",
    "Time to validate, deduplicate and fold one batch into the store, by source (collector, reconciliation).",
    ["source"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
for _source in ("collector", "reconciliation"):
    BATCH_DURATION.labels(_source)
