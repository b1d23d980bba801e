"""``tally simulate``: a whole simulated month through the whole pipeline, in one process, then the verdict.

The month (world, notifications, oracle) is generated; the publisher sends it onto the in-process
bus (or RabbitMQ); the collector maps it into its outbox and its sender delivers into the ingest
pipeline of the store (SQLite in the state directory, or PostgreSQL); the fake cloud serves the
world over real HTTP on an ephemeral loopback port, named by a generated clouds.yaml and clouds
config; syncs are told the virtual instant. At the end: the held-back share is released, a last
sync runs at period_to, and the store's lifecycle intervals are compared with the oracle.

Factor 0 is *lockstep*: publish up to an instant, let the collector drain (everything published is
committed and delivered into ingest), sync at that instant, every ``sync_interval``; an instant where
the sync provably books nothing is skipped (:func:`sync_is_idle`). Nothing then depends on wall
time, so two runs give the same store. Above 0 (*paced*) the publisher is paced by the clock and the
syncs run at lockstep's instants while the notifications flow, as a deployment's do; each sees the
month at its instant (the fake cloud pinned there, nothing dated later let into the store before it
has read the rows), so only the outbox's lag sets paced apart from lockstep.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import yaml

from tally.collector import Collector, InProcessBus
from tally.config import Settings, load_clouds_config
from tally.core import Interval, format_instant
from tally.ingest import IngestPipeline
from tally.outbox import IngestSink
from tally.reconcile import RunSettings, SyncService
from tally.store import open_store

from ._gate import IngestGate
from ._metrics import SYNCS
from ._platform import platform_created
from .clock import PublishProgress, VirtualClock
from .compare import Comparison, compare
from .fakecloud import (
    ADMIN_PASSWORD,
    ADMIN_PROJECT,
    ADMIN_USER,
    FakeCloudState,
    create_fake_cloud_app,
    serve_fake_cloud,
)
from .generator import Month, generate_month
from .publisher import AmqpSink, BusSink, Publisher, Sink, add_release_route, redact
from .stored import record_of_store
from .usage_check import UsageCheck, check_usage
from .usage_export import export_of_store
from .vhost import RunBroker, run_broker

log = logging.getLogger(__name__)

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


class SimulateError(RuntimeError):
    """The run cannot start on what it was given; the message names it."""


def _shown(store_url: str) -> str:
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
class Progress:
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
    progress: Progress
    ingest: dict[str, IngestTally]
    rejected_reasons: Counter[str]
    wall_s: float
    store_url: str
    state_dir: Path
    vhost: str | None = None
    sync_interval: timedelta = DEFAULT_SYNC_INTERVAL

    @property
    def passed(self) -> bool:
        return self.comparison.passed and self.usage.passed and self.progress.failed_syncs == 0

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
            "store": _shown(self.store_url),
            "vhost": self.vhost,
            "wall_s": round(self.wall_s, 3),
            "comparison": self.comparison.to_doc(),
            "usage_export": self.usage.to_doc(),
        }


def write_cloud_files(directory: Path, base_url: str, cloud: str) -> tuple[Path, Path]:
    """The clouds.yaml naming the fake cloud's keystone, and the clouds config naming the cloud."""
    clouds_yaml = directory / "clouds.yaml"
    clouds_yaml.write_text(
        yaml.safe_dump(
            {
                "clouds": {
                    cloud: {
                        "auth_type": "password",
                        "auth": {
                            "auth_url": f"{base_url}/v3",
                            "username": ADMIN_USER,
                            "password": ADMIN_PASSWORD,
                            "project_name": ADMIN_PROJECT,
                            "user_domain_name": "Default",
                            "project_domain_name": "Default",
                        },
                        "region_name": "RegionOne",
                        "interface": "public",
                        # Plain HTTP on loopback: no TLS to verify, and skipping the CA bundle spares
                        # every run the bundle's load (0.1 s each, which is most of a small run).
                        "verify": False,
                    }
                }
            }
        )
    )
    config = directory / "clouds-config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "clouds": [
                    {
                        "cloud": cloud,
                        "platform": "openstack",
                        "adapter": "openstack",
                        "adapter_config": {"os_cloud": cloud, "include_octavia": True},
                        "sync_interval_s": 0,
                    }
                ]
            }
        )
    )
    return clouds_yaml, config


def _flush_interval(options: SimulateOptions) -> float:
    """The sender's flush interval: 5 s (the default), and 50 ms when paced. The lag it leaves in
    virtual time (37 s at factor 744) is what a paced sync finds undelivered and corrects; a resource
    created and changed again inside it before a sync is booked with the later facts from its creation,
    so the lag is kept as short as the sender's wake-ups allow."""
    return 5.0 if options.factor == 0 else 0.05


@contextlib.contextmanager
def _client_config(path: Path) -> Iterator[None]:
    # The adapter resolves clouds.yaml from the environment, as the openstack client does.
    previous = os.environ.get("OS_CLIENT_CONFIG_FILE")
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(path)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
        else:
            os.environ["OS_CLIENT_CONFIG_FILE"] = previous


class Drainer:
    """Waits until everything published reached ingest: the bus's own drain, or for RabbitMQ the
    collector having taken and committed as many deliveries as were published to its exchanges,
    then the sender's flush."""

    def __init__(self, collector: Collector, bus: InProcessBus | None) -> None:
        self._collector = collector
        self._bus = bus
        self._taken_base = collector.statistics().taken

    async def drain(self, publisher: Publisher) -> None:
        if self._bus is None:
            # Only what went to a bound exchange reaches the queue.
            published = sum(publisher.sent_by_exchange[name] for name in COLLECTOR_EXCHANGES.split(","))
            # Polling: the statistics have no event to wait on, and a drain happens once per sync.
            began = time.monotonic()
            while True:
                stats = self._collector.statistics()
                if stats.taken - self._taken_base >= published and stats.in_hand == 0:
                    break
                await anyio.sleep(0.01)
                if time.monotonic() - began > 10:
                    log.info(
                        "simulate waiting for the collector taken=%d published=%d",
                        stats.taken - self._taken_base,
                        published,
                    )
                    began = time.monotonic()
        await self._collector.drain()


@contextlib.contextmanager
def _state_dir(given: Path | None) -> Iterator[Path]:
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="tally-simulate-") as tmp:
        yield Path(tmp)


async def simulate(
    options: SimulateOptions,
    *,
    month: Month | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> SimulateResult:
    """Run the month of ``options`` through the pipeline; raises GeneratorError/FaultError/PublishError
    for bad input before anything starts."""
    began = time.monotonic()
    month = month or generate_month(
        options.seed,
        options.period,
        scale=options.scale,
        cloud=options.cloud,
        faults=options.faults,
        days=options.days,
        now=options.now,
    )
    progress = Progress(total=len(month.notifications) + len(month.held_back))

    def tell() -> None:
        if on_progress is not None:
            on_progress(progress)

    with _state_dir(options.state_dir) as state_dir:
        # The setting ``tally run`` opens (TALLY_REPORTING_DB_URL, else SQLite in the state directory).
        store_url = options.store_url or Settings(state_dir=state_dir).store_url
        async with open_store(store_url) as store:
            await store.migrate_up()
            if await store.resources_of_cloud(month.cloud):
                raise SimulateError(
                    f"the store {_shown(store_url)} already holds resources of cloud {month.cloud}: "
                    "the comparison would count them too (use an empty store, or another --cloud)"
                )
            pipeline = CountingPipeline(IngestPipeline(store, require_size_schema=False))
            clock = VirtualClock(month.period_from, 0.0)
            publish_progress = PublishProgress()
            app = create_fake_cloud_app(month.world, clock, progress=publish_progress)
            async with contextlib.AsyncExitStack() as stack:
                sink: Sink
                bus: InProcessBus | None = None
                broker: RunBroker | None = None
                if options.amqp_url is not None:
                    broker = await stack.enter_async_context(
                        run_broker(options.amqp_url, queue=options.queue_name)
                    )
                    # Declares the exchanges before the collector looks for them.
                    sink = await stack.enter_async_context(
                        AmqpSink(broker.url, allow_remote=options.allow_remote_broker)
                    )
                else:
                    bus = InProcessBus()
                    sink = BusSink(bus)
                settings = Settings(
                    state_dir=state_dir,
                    osc_amqp_url=broker.url if broker is not None else None,
                    osc_buffer_path=state_dir / "outbox.sqlite3",
                    osc_cloud=month.cloud,
                    osc_exchanges=COLLECTOR_EXCHANGES,
                    osc_queue_name=options.queue_name,
                    osc_flush_interval_s=_flush_interval(options),
                )
                publisher = Publisher(month.notifications, month.held_back, sink, clock, publish_progress)
                add_release_route(app, publisher)
                async with anyio.create_task_group() as tg:
                    port = await tg.start(serve_fake_cloud, app, "127.0.0.1", 0)
                    base_url = f"http://127.0.0.1:{port}"
                    clouds_yaml, clouds_config = write_cloud_files(state_dir, base_url, month.cloud)
                    service = SyncService(
                        load_clouds_config(clouds_config),
                        store=store,
                        pipeline=pipeline,
                        settings=RunSettings(settle_s=SETTLE_S, budget_s=600.0),
                    )
                    gate = IngestGate(pipeline)
                    collector = Collector(settings, sink=IngestSink(gate), bus=bus)
                    await tg.start(collector.serve)
                    drainer = Drainer(collector, bus)
                    log.info(
                        "simulate started cloud=%s fake_cloud=%s store=%s bus=%s factor=%s "
                        "sync_interval_s=%d",
                        month.cloud,
                        base_url,
                        _shown(store_url),
                        f"{redact(broker.url)} (vhost {broker.vhost})" if broker else "in-process",
                        options.factor,
                        options.sync_interval.total_seconds(),
                    )

                    async def sync(at: datetime) -> bool:
                        if clock.factor == 0.0:
                            clock.set(at)
                        outcome = await service.run_cloud(month.cloud, at)
                        SYNCS.labels(outcome.status.value).inc()
                        progress.syncs += 1
                        progress.virtual_now = at
                        if outcome.status.value != "completed":
                            progress.failed_syncs += 1
                            log.warning(
                                "simulate sync not completed at=%s status=%s errors=%s",
                                at.isoformat(),
                                outcome.status.value,
                                outcome.stats.get("errors"),
                            )
                        for kind in ("created", "updated", "deleted"):
                            progress.corrections[kind] += int(outcome.stats.get(kind, 0) or 0)
                        deferred: Mapping[str, int] = outcome.stats.get("deferred") or {}
                        for reason, count in deferred.items():
                            progress.deferred[reason] += int(count)
                        progress.published = publish_progress.published
                        tell()
                        return outcome.status.value == "completed"

                    def collector_accepted() -> int:
                        counted = pipeline.by_source.get("collector")
                        return counted.accepted if counted is not None else 0

                    with _client_config(clouds_yaml):
                        if options.factor == 0:
                            await _lockstep(
                                month, publisher, drainer, sync, collector_accepted, options, progress, tell
                            )
                        else:
                            await _paced(
                                month, publisher, clock, sync, options, app.config["FAKE_CLOUD"], gate
                            )
                        if publisher.progress.holding:
                            await publisher.release()
                        await drainer.drain(publisher)
                        await sync(month.period_to)
                    tg.cancel_scope.cancel()
                vhost = broker.vhost if broker is not None else None
            record = await record_of_store(store, month.cloud)
            export = await export_of_store(store, month.oracle)
    stored = record.intervals()
    comparison = compare(
        month.oracle,
        record,
        settle=timedelta(seconds=SETTLE_S),
        platform_created=platform_created(month.world),
    )
    usage = check_usage(month.oracle, export, comparison)
    progress.published = publish_progress.published
    wall = time.monotonic() - began
    log.info(
        "simulate finished passed=%s exact=%d off=%d tolerated=%d seconds_off=%.0f syncs=%d wall_s=%.1f",
        comparison.passed,
        comparison.exact,
        comparison.off,
        comparison.tolerated,
        comparison.seconds_off,
        progress.syncs,
        wall,
    )
    return SimulateResult(
        month=month,
        comparison=comparison,
        usage=usage,
        stored=stored,
        progress=progress,
        ingest=pipeline.by_source,
        rejected_reasons=pipeline.reasons,
        wall_s=wall,
        store_url=store_url,
        state_dir=state_dir,
        vhost=vhost,
        sync_interval=options.sync_interval,
    )


SyncAt = Callable[[datetime], Any]


def change_instants(month: Month) -> list[datetime]:
    """Every instant the fake cloud's answers change: a resource's segment starts (its creation
    included) and its termination, sorted. Projects, flavors and volume types are fixed for the
    period, and a listing at an instant reads only the segment in effect, its start and the
    termination (``Resource.segment_at``, ``updated_at``, nova's deleted servers)."""
    found: set[datetime] = set()
    for r in month.world.resources:
        found.update(seg.start for seg in r.timeline)
        if r.terminated_at is not None:
            found.add(r.terminated_at)
    return sorted(found)


def sync_is_idle(
    changes: Sequence[datetime],
    last_completed: datetime | None,
    at: datetime,
    *,
    events_since: int,
    settle_s: int,
) -> bool:
    """Whether the lockstep sync at ``at`` may be skipped: it provably books nothing, and skipping it
    changes no later sync, so the store comes out event for event as with ``--every-sync``.

    Idle means: the sync just before ran and completed at ``last_completed``; no collector event was
    accepted since (``events_since`` is 0: the drain before each instant runs either way, so both
    runs ingest the same deliveries at the same instants); the recent window is off (``settle_s`` 0);
    and no change instant lies in the *closed* span ``[last_completed, at]``.

    Why a sync at ``at`` would book nothing. The diff is level-based: its inputs are the listings,
    the projection rows, the run's instant and the deleted-servers window. The listings of live
    resources at ``at`` are those at ``last_completed`` (no segment starts or ends in between). The
    rows are the rows ``last_completed``'s sync left: no event arrived since, and every sync in
    between (with ``--every-sync``) booked nothing, by this same argument. That sync completed, so
    it booked every correction it decided: a create leaves the row live with the listed state,
    project and size, an update leaves the listed facts, a delete leaves the row deleted, and none
    of them is decided again against the same listing. What it deferred, it deferred as
    transitional (with settle 0 nothing is recent), and the resource is listed in the same
    transition still. Nova's deleted servers inside the window of a sync at ``at`` (it opens no
    earlier than ``last_completed``) would have to end inside ``[last_completed, at]``: none does.
    A deletion dated exactly at ``last_completed`` is why the span is closed: a later window that
    opens there lists it again, and by then a held-back create may have made its row.

    Why no later sync changes. A skipped run leaves no correction (above) and no completed run, so
    the one thing it would have moved is the bound of the next run's deleted-servers window: the
    next sync ``S`` opens it at ``last_completed`` instead of at the skipped instant just before
    ``S``, clamped to 24 h before ``S`` either way. The two windows differ only by
    ``[last_completed, S - interval]``, where every instant was idle, so no server ended there and
    the two listings are the same. A poll-dated correction is dated at the instant of the run that
    books it; since a skipped instant books nothing, every correction is booked by the same run, at
    the same instant, in both modes.

    A failed sync (``last_completed`` None) is never followed by a skip: the next run retries what
    it left, and only completed runs move the bound.
    """
    if last_completed is None or events_since != 0 or settle_s != 0:
        return False
    return bisect.bisect_left(changes, last_completed) == bisect.bisect_right(changes, at)


async def _lockstep(
    month: Month,
    publisher: Publisher,
    drainer: Drainer,
    sync: SyncAt,
    collector_accepted: Callable[[], int],
    options: SimulateOptions,
    progress: Progress,
    tell: Callable[[], None],
) -> None:
    changes = change_instants(month)
    last_completed: datetime | None = None
    accepted_then = 0
    # The first sync at the month's start, as the daemon syncs each cloud when it starts: the month's
    # deployment began there, and whatever the cloud held before is booked from what it held then.
    at = month.period_from
    while at < month.period_to:
        # Both modes drain at the same instants, so the store holds the same deliveries at each.
        if await publisher.publish_until(at):
            await drainer.drain(publisher)
        idle = sync_is_idle(
            changes,
            last_completed,
            at,
            events_since=collector_accepted() - accepted_then,
            settle_s=SETTLE_S,
        )
        if idle and options.skip_idle:
            progress.idle_skipped += 1
            progress.virtual_now = at
            progress.published = publisher.progress.published
            tell()
        else:
            completed = await sync(at)
            last_completed = at if completed else None
            accepted_then = collector_accepted()
        at += options.sync_interval
    await publisher.publish_until(month.period_to)


async def _paced(
    month: Month,
    publisher: Publisher,
    clock: VirtualClock,
    sync: SyncAt,
    options: SimulateOptions,
    cloud: FakeCloudState,
    gate: IngestGate,
) -> None:
    # The syncs run at the instants lockstep syncs at, whatever a sync costs in wall time, so no two
    # lie further apart than the interval the comparison tolerates. Each sees the month at its
    # instant: the fake cloud answers every listing from it, and the gate keeps what is dated after
    # it out of the store until the sync has read the rows. What the outbox has not delivered by then
    # is the lag seed 002 names, which the sync corrects.
    clock.rebase(options.factor)
    at = month.period_from
    gate.hold_after(at)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(publisher.publish_paced)
            while at < month.period_to:
                await _until(clock, at)
                with cloud.answering_at(at):
                    await sync(at)
                at += options.sync_interval
                gate.hold_after(at)
    finally:
        gate.hold_after(None)
    clock.rebase(0.0)


async def _until(clock: VirtualClock, instant: datetime) -> None:
    """Sleep until the running clock reaches ``instant`` (at once if it is there already)."""
    ahead = (instant - clock.now()).total_seconds()
    if ahead > 0:
        await anyio.sleep(ahead / clock.factor)
