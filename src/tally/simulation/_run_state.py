"""What a ``tally simulate`` run is given and what it gives back: its options, the counts it keeps
while it runs (the ingest per source, the syncs, the corrections) and the result with its JSON document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tally.core import Interval, format_instant
from tally.ingest import IngestPipeline
from tally.rating import PriceList
from tally.simulator.compare import Comparison
from tally.simulator.generator import Month

from .publisher import redact
from .rated_check import RatedCheck
from .usage_check import UsageCheck

#: The exchanges the simulate collector binds: the billed services' (octavia included).
COLLECTOR_EXCHANGES = "nova,neutron,openstack,glance,octavia"
DEFAULT_SYNC_INTERVAL = timedelta(minutes=60)
#: The syncs' recent window, and so the one the compare judges them by. Off: in lockstep every delivery
#: is in before the sync, so nothing is in flight to wait for, and :func:`sync_is_idle`'s proof needs it off.
SETTLE_S = 0


@dataclass(frozen=True)
class SimulateOptions:
    seed: int
    period: str
    scale: float = 1.0
    days: int | None = None
    faults: frozenset[str] = frozenset()
    factor: float = 0.0
    sync_interval: timedelta = DEFAULT_SYNC_INTERVAL
    cloud: str = "os-sim"
    store_url: str | None = None
    amqp_url: str | None = None
    allow_remote_broker: bool = False
    queue_name: str = "tally-simulate"
    skip_idle: bool = True
    state_dir: Path | None = None
    now: datetime | None = None
    #: Rate the month by this price list at the end: the invoice it would send, judged by the oracle's.
    price_list: PriceList | None = None
    invoice_format: str = "csv"


class SimulateError(RuntimeError):
    """The run cannot start on what it was given; the message names it."""


def shown_url(store_url: str) -> str:
    return redact(store_url) if store_url.startswith("postgres") else store_url


@dataclass
class IngestTally:
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0


class CountingPipeline:
    """The ingest pipeline, counting what each source got accepted, deduplicated or rejected."""

    def __init__(self, pipeline: IngestPipeline) -> None:
        self._pipeline = pipeline
        self.by_source: dict[str, IngestTally] = {}
        self.reasons: Counter[str] = Counter()

    async def ingest(self, items: Sequence[object], *, source: str = "collector", scope: Any = None) -> Any:
        result = await self._pipeline.ingest(items, source=source, scope=scope)
        tally = self.by_source.setdefault(source, IngestTally())
        tally.accepted += result.accepted
        tally.duplicates += result.duplicates
        tally.rejected += len(result.rejected)
        for r in result.rejected:
            self.reasons[str(r.reason).split(":")[0]] += 1
        return result


@dataclass
class RunProgress:
    """What the run has done so far; the command line draws it."""

    published: int = 0
    total: int = 0
    virtual_now: datetime | None = None
    syncs: int = 0
    idle_skipped: int = 0
    failed_syncs: int = 0
    corrections: Counter[str] = field(default_factory=Counter)
    deferred: Counter[str] = field(default_factory=Counter)


@dataclass
class SimulateResult:
    month: Month
    comparison: Comparison
    usage: UsageCheck
    stored: dict[tuple[str, str], tuple[Interval, ...]]
    progress: RunProgress
    ingest: dict[str, IngestTally]
    rejected_reasons: Counter[str]
    wall_s: float
    store_url: str
    state_dir: Path
    vhost: str | None = None
    sync_interval: timedelta = DEFAULT_SYNC_INTERVAL
    rated: RatedCheck | None = None
    #: The rated export of the month (``SimulateOptions.invoice_format``), with a price list.
    invoice: bytes | None = None

    @property
    def passed(self) -> bool:
        rated = self.rated is None or self.rated.check.passed
        return self.comparison.passed and self.usage.passed and rated and self.progress.failed_syncs == 0

    def to_doc(self) -> dict[str, Any]:
        """The run as one JSON document (``tally simulate --json FILE``): the month, what the pipeline
        did, and the comparison's own document under ``comparison``."""
        m, p = self.month, self.progress
        return {
            "format": 1,
            "passed": self.passed,
            "month": {
                "seed": m.seed,
                "period": m.period,
                "scale": m.scale,
                "cloud": m.cloud,
                "from": format_instant(m.period_from),
                "to": format_instant(m.period_to),
                "faults": sorted(m.faults),
            },
            "notifications": {"published": p.published, "total": p.total},
            "ingest": {
                source: {"accepted": t.accepted, "duplicates": t.duplicates, "rejected": t.rejected}
                for source, t in sorted(self.ingest.items())
            },
            "syncs": {"run": p.syncs, "idle_skipped": p.idle_skipped, "failed": p.failed_syncs},
            "corrections": dict(sorted(p.corrections.items())),
            "deferred": dict(sorted(p.deferred.items())),
            "store": shown_url(self.store_url),
            "vhost": self.vhost,
            "wall_s": round(self.wall_s, 3),
            "comparison": self.comparison.to_doc(),
            "usage_export": self.usage.to_doc(),
        } | ({"rated_export": self.rated.to_doc()} if self.rated is not None else {})
