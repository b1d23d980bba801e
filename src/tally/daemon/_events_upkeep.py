"""The ``events-upkeep`` child (PostgreSQL stores): monthly partitions made ahead, retention, and its metrics.

Every ``TALLY_EVENTS_MAINTENANCE_INTERVAL_S`` (and once at start) it runs ``tally.store.maintain_events``:
the current month and the next ``TALLY_EVENTS_PARTITIONS_AHEAD`` get their partitions, a month the
default partition holds rows of is split out, and with ``TALLY_EVENTS_RETENTION_MONTHS`` the months
before the boundary are archived and detached (dropped with ``TALLY_EVENTS_RETENTION_DROP``). Replicas
all run it; the store's advisory lock lets one work per round. A failed round is logged and retried at
the next; the gauges keep their last values meanwhile.

Before anything starts, ``retention_refusal_at_start`` asks the store whether the retention policy may
run at all (``tally run`` exits 2 with its one line when not): a policy the database already refuses is
a configuration to fix, not a daemon to start with it silently off.
"""

from __future__ import annotations

import logging

import anyio
from prometheus_client import Counter, Gauge

from tally.actors import ActorContext, ChildSpec, HeldResource
from tally.config import Settings
from tally.store import (
    RetentionPolicy,
    StoreError,
    UpkeepOutcome,
    events_retention_refusal,
    maintain_events,
    open_store,
)

from ._backbone import Backbone

log = logging.getLogger(__name__)

PARTITIONS = Gauge(
    "tally_events_partitions",
    "Month partitions of the events table: attached to it, or detached by retention and kept as tables.",
    ["state"],
)
DEFAULT_ROWS = Gauge(
    "tally_events_default_partition_rows",
    "Rows of events_default: instants no month partition covers (clock errors, late events of old months).",
)
RETENTION_REFUSED = Gauge(
    "tally_events_retention_refused",
    "1 while the database refuses the retention policy (the daemon logs why), else 0.",
)
MONTHS_RETIRED = Counter(
    "tally_events_months_retired_total",
    "Months this process's retention archived and took out of the events table.",
)
for _state in ("attached", "detached"):
    PARTITIONS.labels(_state)


def policy_of(settings: Settings) -> RetentionPolicy:
    return RetentionPolicy(settings.events_retention_months, settings.events_retention_drop)


def record(outcome: UpkeepOutcome) -> None:
    """Set the gauges from one round."""
    PARTITIONS.labels("attached").set(outcome.stats.attached)
    PARTITIONS.labels("detached").set(outcome.stats.detached)
    DEFAULT_ROWS.set(outcome.stats.default_rows)
    if not outcome.skipped:
        RETENTION_REFUSED.set(1 if outcome.refused is not None else 0)
    MONTHS_RETIRED.inc(len(outcome.retired))


async def retention_refusal_at_start(settings: Settings) -> str | None:
    """The line ``tally run`` exits 2 with when the store refuses the retention policy, or None."""
    if settings.events_retention_months is None:
        return None
    if settings.reporting_db_url is None:
        # Silently keeping everything would look like retention at work.
        return (
            f"TALLY_EVENTS_RETENTION_MONTHS={settings.events_retention_months} is set, but the store is "
            "SQLite, which keeps events in one table: retention needs PostgreSQL (TALLY_REPORTING_DB_URL)"
        )
    try:
        async with open_store(settings.store_url, max_conns=1) as store:
            return await events_retention_refusal(store, policy_of(settings))
    except StoreError as exc:
        # The store's own trouble is the backbone's to report (and retry); this check is about the policy.
        log.warning("retention policy not checked at start: %s", exc)
        return None


async def keep_events_maintained(settings: Settings, backbone: HeldResource[Backbone]) -> None:
    """Run a round now and then every interval, until cancelled."""
    policy = policy_of(settings)
    while True:
        try:
            outcome = await maintain_events(
                backbone.value.store, ahead=settings.events_partitions_ahead, policy=policy
            )
        except Exception as exc:  # a database hiccup must not take the daemon down: next round retries
            log.warning("events upkeep failed error=%s", exc)
        else:
            if outcome is not None:
                record(outcome)
        await anyio.sleep(settings.events_maintenance_interval_s)


def events_upkeep_child(settings: Settings, backbone: HeldResource[Backbone]) -> ChildSpec:
    async def run(ctx: ActorContext) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_events_maintained, settings, backbone)
            ctx.started()
            await ctx.wait_stopping()
            tg.cancel_scope.cancel()

    return ChildSpec("events-upkeep", run)
