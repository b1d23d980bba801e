"""``tally simulate``: a whole simulated month through the whole pipeline, in one process, then the verdict.

The month (world, notifications, oracle) is generated; the publisher sends it onto the in-process
bus (or RabbitMQ); the collector maps it into its outbox and its sender delivers into the ingest
pipeline of the store (SQLite in the state directory, or PostgreSQL); the fake cloud serves the
world over real HTTP on an ephemeral loopback port, named by a generated clouds.yaml and clouds
config; syncs are told the virtual instant. The fake cloud's server, the clock, the publisher and the
collector are actors of one supervised tree (``_month_tree``); the drive reaches the publisher and the
clock only through their mailboxes. At the end: the held-back share is released, a last
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

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import yaml
from quart import Quart

from tally.app import collector as build_collector
from tally.app import ingest_pipeline, ingest_sink, sync_service_of
from tally.collector import InProcessBus
from tally.config import Settings, load_clouds_config
from tally.rating import read_rated
from tally.reconcile import RunSettings, SyncService
from tally.simulator.clock import PublishProgress, VirtualClock
from tally.simulator.compare import compare
from tally.simulator.fakecloud import admin_cloud_entry, create_fake_cloud_app
from tally.simulator.generator import Month, generate_month
from tally.store import Store, open_store

from ._drive import Drainer, lockstep, paced
from ._gate import IngestGate
from ._metrics import SYNCS
from ._month_actors import ClockRef
from ._month_tree import MonthTree
from ._run_state import (
    COLLECTOR_EXCHANGES,
    SETTLE_S,
    CountingPipeline,
    RunProgress,
    SimulateError,
    SimulateOptions,
    SimulateResult,
    shown_url,
)
from .publisher import AmqpSink, BusSink, Sink, redact
from .rated_check import check_rated
from .stored import record_of_store
from .usage_check import check_usage
from .usage_export import export_of_store, invoice_of_store
from .vhost import RunBroker, run_broker

__all__ = [
    "SETTLE_S",
    "RunProgress",
    "SimulateError",
    "SimulateOptions",
    "SimulateResult",
    "simulate",
    "write_cloud_files",
]

log = logging.getLogger(__name__)


def write_cloud_files(directory: Path, base_url: str, cloud: str) -> tuple[Path, Path]:
    """The clouds.yaml naming the fake cloud's keystone, and the clouds config naming the cloud."""
    clouds_yaml = directory / "clouds.yaml"
    clouds_yaml.write_text(
        yaml.safe_dump(
            {
                "clouds": {
                    cloud: {
                        **admin_cloud_entry(f"{base_url}/v3"),
                        # Plain HTTP on loopback: no TLS to verify, and skipping the CA bundle spares
                        # every run the bundle's load (most of a small run; docs/benchmarks.md, "sync").
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


@contextlib.contextmanager
def _state_dir(given: Path | None) -> Iterator[Path]:
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="tally-simulate-") as tmp:
        yield Path(tmp)


class _MonthRun:
    """One month through the pipeline: what the steps of :func:`simulate` share while it runs."""

    def __init__(
        self,
        options: SimulateOptions,
        month: Month,
        pipeline: CountingPipeline,
        on_progress: Callable[[RunProgress], None] | None,
    ) -> None:
        self.options = options
        self.month = month
        self.pipeline = pipeline
        self.progress = RunProgress(total=len(month.notifications) + len(month.held_back))
        self.publish_progress = PublishProgress()
        self._on_progress = on_progress
        self._service: SyncService | None = None
        self._clock_ref: ClockRef | None = None

    def tell(self) -> None:
        if self._on_progress is not None:
            self._on_progress(self.progress)

    def collector_accepted(self) -> int:
        counted = self.pipeline.by_source.get("collector")
        return counted.accepted if counted is not None else 0

    async def sync(self, at: datetime) -> bool:
        """One sync of the month's cloud told ``at``, counted; True when it completed."""
        assert self._service is not None and self._clock_ref is not None
        if (await self._clock_ref.reading()).factor == 0.0:
            await self._clock_ref.set(at)
        outcome = await self._service.run_cloud(self.month.cloud, at)
        SYNCS.labels(outcome.status.value).inc()
        progress = self.progress
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
        progress.published = self.publish_progress.published
        self.tell()
        return outcome.status.value == "completed"

    async def _open_bus(
        self, stack: contextlib.AsyncExitStack
    ) -> tuple[Sink, InProcessBus | None, RunBroker | None]:
        """The publisher's sink and the collector's bus: RabbitMQ (a vhost of the run's own) or in-process."""
        options = self.options
        if options.amqp_url is None:
            bus = InProcessBus()
            return BusSink(bus), bus, None
        broker = await stack.enter_async_context(run_broker(options.amqp_url, queue=options.queue_name))
        # Declares the exchanges before the collector looks for them.
        sink = await stack.enter_async_context(AmqpSink(broker.url, allow_remote=options.allow_remote_broker))
        return sink, None, broker

    def _collector_settings(self, state_dir: Path, broker: RunBroker | None) -> Settings:
        return Settings(
            state_dir=state_dir,
            osc_amqp_url=broker.url if broker is not None else None,
            osc_buffer_path=state_dir / "outbox.sqlite3",
            osc_cloud=self.month.cloud,
            osc_exchanges=COLLECTOR_EXCHANGES,
            osc_queue_name=self.options.queue_name,
        )

    async def run(self, store: Store, state_dir: Path, store_url: str) -> str | None:
        """Publish, collect, ingest and sync the whole month; the broker's vhost, if any."""
        month = self.month
        # The fake cloud and the publisher read it; only the clock actor moves it.
        clock = VirtualClock(month.period_from, 0.0)
        app = create_fake_cloud_app(month.world, clock, progress=self.publish_progress)
        async with contextlib.AsyncExitStack() as stack:
            sink, bus, broker = await self._open_bus(stack)
            gate = IngestGate(self.pipeline)
            collector = build_collector(
                self._collector_settings(state_dir, broker), sink=ingest_sink(gate), bus=bus
            )
            tree = MonthTree(month, app, sink, collector, clock, self.publish_progress)
            self._clock_ref = tree.clock
            async with anyio.create_task_group() as tg:
                await tg.start(tree.supervisor.run)
                # Not ready: a child failed to start, and the supervisor raises once the tree stopped.
                if tree.supervisor.ready:
                    try:
                        clouds_yaml, clouds_config = write_cloud_files(state_dir, tree.base_url, month.cloud)
                        self._service = sync_service_of(
                            load_clouds_config(clouds_config),
                            store=store,
                            pipeline=self.pipeline,
                            settings=RunSettings(settle_s=SETTLE_S, budget_s=600.0),
                        )
                        log.info(
                            "simulate started cloud=%s fake_cloud=%s store=%s bus=%s factor=%s "
                            "sync_interval_s=%d",
                            month.cloud,
                            tree.base_url,
                            shown_url(store_url),
                            f"{redact(broker.url)} (vhost {broker.vhost})" if broker else "in-process",
                            self.options.factor,
                            self.options.sync_interval.total_seconds(),
                        )
                        with _client_config(clouds_yaml):
                            await self._drive(app, tree, Drainer(collector, bus), gate)
                    finally:
                        tree.supervisor.stop()
            return broker.vhost if broker is not None else None

    async def _drive(self, app: Quart, tree: MonthTree, drainer: Drainer, gate: IngestGate) -> None:
        """The month's syncs and publishing, lockstep or paced, then the release and the last sync."""
        month, options, publisher = self.month, self.options, tree.publisher
        # The syncs follow each other within a second: each sends on the client of the one before
        # (closed when the month ends) instead of opening its own. Its listings go to the fake cloud's
        # app in-process, not through a socket and Hypercorn: the same app gives the same answers (and
        # counts them), for a third less of the month's CPU; keystone is still asked over the socket,
        # by keystoneauth1. Imported here, where the run loads openstacksdk anyway, not on the
        # command's start path.
        from tally.openstack import kept_connections

        # An exception in the app is a 500, as Hypercorn would answer, not the sync's. (Quart types
        # its ASGI call with hypercorn's scope types, httpx with plain mappings.)
        in_process = httpx.ASGITransport(app=cast(Any, app), raise_app_exceptions=False)
        async with kept_connections(in_process):
            if options.factor == 0:
                await lockstep(
                    month,
                    publisher,
                    drainer,
                    self.sync,
                    self.collector_accepted,
                    options,
                    self.progress,
                    self.tell,
                )
            else:
                await paced(month, publisher, tree.clock, self.sync, options, app.config["FAKE_CLOUD"], gate)
            if publisher.progress.holding:
                await publisher.release()
            await drainer.drain(publisher)
            await self.sync(month.period_to)


def _month_of(options: SimulateOptions) -> Month:
    return generate_month(
        options.seed,
        options.period,
        scale=options.scale,
        cloud=options.cloud,
        faults=options.faults,
        days=options.days,
        now=options.now,
    )


async def simulate(
    options: SimulateOptions,
    *,
    month: Month | None = None,
    on_progress: Callable[[RunProgress], None] | None = None,
) -> SimulateResult:
    """Run the month of ``options`` through the pipeline; raises GeneratorError/FaultError/PublishError
    for bad input before anything starts."""
    began = time.monotonic()
    month = month or _month_of(options)
    with _state_dir(options.state_dir) as state_dir:
        # The setting ``tally run`` opens (TALLY_REPORTING_DB_URL, else SQLite in the state directory).
        store_url = options.store_url or Settings(state_dir=state_dir).store_url
        async with open_store(store_url) as store:
            await store.migrate_up()
            if await store.resources_of_cloud(month.cloud):
                raise SimulateError(
                    f"the store {shown_url(store_url)} already holds resources of cloud {month.cloud}: "
                    "the comparison would count them too (use an empty store, or another --cloud)"
                )
            run = _MonthRun(
                options,
                month,
                CountingPipeline(ingest_pipeline(store, require_size_schema=False)),
                on_progress,
            )
            vhost = await run.run(store, state_dir, store_url)
            record = await record_of_store(store, month.cloud)
            export = await export_of_store(store, month.oracle)
            invoice = None
            if options.price_list is not None:
                invoice = await invoice_of_store(
                    store, month.oracle, options.price_list, options.invoice_format
                )
    comparison = compare(
        month.oracle,
        record,
        settle=timedelta(seconds=SETTLE_S),
        platform_created=month.oracle.platform_instants(),
    )
    rated = None
    if options.price_list is not None and invoice is not None:
        rated = check_rated(month.oracle, read_rated(invoice), options.price_list, comparison)
    progress = run.progress
    progress.published = run.publish_progress.published
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
        usage=check_usage(month.oracle, export, comparison),
        stored=record.intervals(),
        progress=progress,
        ingest=run.pipeline.by_source,
        rejected_reasons=run.pipeline.reasons,
        wall_s=wall,
        store_url=store_url,
        state_dir=state_dir,
        vhost=vhost,
        sync_interval=options.sync_interval,
        rated=rated,
        invoice=invoice,
    )
